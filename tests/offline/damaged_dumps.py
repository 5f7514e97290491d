"""Damaged copies of the real 2.10 LeNet dump: the bad inputs `tuidebug check` and
`OfflineSession` must survive with one clear sentence naming the file.

Each `Damage` makes a fresh copy, breaks one thing and says which words (and which file) the
message must carry. `tensor` names the damaged tensor (node, iteration) when there is one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.dump_names import CONV1_2_10, RELU_2_10
from tests.offline.dump_copy import copy_dump


def _file(root: Path, iteration: int, pattern: str) -> Path:
    found = sorted((root / f"rank_0/LeNet/0/{iteration}").glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def truncate_npy(root: Path) -> str:
    f = _file(root, 1, "Conv2D.*_conv1-Conv2d_Conv2D-op0.*.output.0.*.npy")
    data = f.read_bytes()
    f.write_bytes(data[: len(data) - 8])
    return f"rank_0/LeNet/0/1/{f.name}"


def corrupt_npy(root: Path) -> str:
    f = _file(root, 2, "ReLU.*_ReLU-op0.*.output.0.*.npy")
    data = bytearray(f.read_bytes())
    data[:6] = b"GARBAG"
    f.write_bytes(bytes(data))
    return f"rank_0/LeNet/0/2/{f.name}"


def object_npy(root: Path) -> str:
    f = _file(root, 2, "Parameter.fc2_bias.*.npy")
    f.unlink()
    with open(f, "wb") as fh:
        np.save(fh, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    return f"rank_0/LeNet/0/2/{f.name}"


def symlink_outside(root: Path) -> str:
    outside = root.parent / "outside.npy"
    np.save(outside, np.full(10, 7.0, np.float32))
    f = _file(root, 3, "Parameter.fc3_bias.*.npy")
    f.unlink()
    os.symlink(outside, f)
    return f"rank_0/LeNet/0/3/{f.name}"


def garbage_files(root: Path) -> str:
    folder = root / "rank_0/LeNet/0/3"
    (folder / "notes.txt").write_text("not a tensor")
    (folder / "half.npy").write_bytes(b"\x93NUMPY")
    return "rank_0/LeNet/0/3/notes.txt"


def non_utf8_name(root: Path) -> str:
    folder = os.fsencode(root / "rank_0/LeNet/0/3")
    fd = os.open(
        os.path.join(folder, b"Conv2D.bad\xffname.0.0.1.output.0.DefaultFormat.npy"),
        os.O_CREAT | os.O_WRONLY,
    )
    os.close(fd)
    return "bad\\xffname"


def truncate_pb(root: Path) -> str:
    f = root / "rank_0/graphs/ms_output_trace_code_graph_0.pb"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    return "ms_output_trace_code_graph_0.pb"


def garbage_pb(root: Path) -> str:
    f = root / "rank_0/graphs/ms_output_trace_code_graph_0.pb"
    f.write_bytes(b"\xff\xfe garbage, not a protobuf \x00\x01" * 40)
    (root / "rank_0/graphs/ms_output_trace_code_graph_0.ir").unlink()
    return "ms_output_trace_code_graph_0.pb"


def rank_without_graphs(root: Path) -> str:
    copy_dump(
        root / "rank_0",
        root / "rank_1",
        with_data=True,
        keep=lambda rel: not rel.startswith("graphs"),
    )
    return "rank_1/graphs"


@dataclass(frozen=True)
class Damage:
    name: str
    apply: Callable[[Path], str]  # returns the file's name as messages show it
    words: str  # what the message says
    read_error: bool  # a checked tensor cannot be read (check exits 2 when nothing hit)
    graph_lost: bool = False  # rank 0 has no usable graph any more
    tensor: tuple[str, int] | None = None  # (node, iteration) of the damaged tensor


DAMAGES = [
    Damage("truncated-npy", truncate_npy, "is truncated", True, tensor=(CONV1_2_10, 1)),
    Damage("corrupt-npy", corrupt_npy, "is not a valid .npy file", True, tensor=(RELU_2_10, 2)),
    Damage("object-npy", object_npy, "holds Python objects", True, tensor=("fc2.bias", 2)),
    # refused at discovery, but a watched tensor all the same: the check is incomplete
    Damage("symlink-outside", symlink_outside, "outside the dump folder", True),
    Damage("garbage-files", garbage_files, "is not a MindSpore tensor file name", False),
    Damage("non-utf8-name", non_utf8_name, "not valid UTF-8", False),
    Damage("truncated-pb", truncate_pb, "damaged or truncated", False, graph_lost=True),
    Damage("garbage-pb", garbage_pb, "graph", False, graph_lost=True),
    Damage("rank-without-graphs", rank_without_graphs, "is missing", False),
]


def damaged_copy(src: Path, dst: Path, damage: Damage) -> tuple[Path, str]:
    root = copy_dump(src, dst, with_data=True)
    return root, damage.apply(root)
