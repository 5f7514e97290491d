"""Statistic-only MindSpore dumps (`saved_data: "statistic"`), constructed from the
documentation, not written by MindSpore.

Sources: the dump documentation (`dump.md`, zh r2.3, summarised in spec §5.1 and §5.3) for
the layout, the `saved_data` / `statistic_category` settings and both statistic.csv headers;
MindSpore's `tensor_stat_dump.cc` (2.x) for the old fixed header, the `"(2,3)"` shape
cells, the `null` cells of an all-NaN/Inf tensor and the number format (C++ `operator<<`,
6 significant digits, which Python's `{:g}` reproduces); spec §3.7 for what each count
means ("Negative/Positive Zero Count" count values < 0 and > 0).

* `write_old(root)`: MindSpore ≤ 2.3 style: the fixed 20-column header, `Op Name` the
  scope-less kernel name (`MatMul-op0`), parameters by their own name (`fc.weight`).
* `write_new(root)`: the `statistic_category` header (fixed 10-column prefix, then the
  configured categories: `Nan Count` spelling, `L2Norm Value`; no `Avg Value`, so mean
  thresholds are refused), 2.4+ names (`Default_network_MatMul-op0`, `fc_weight`).
* `write_full(root, new)`: the same net and values as full tensors (`.npy`), to compare
  checks on both.
* `write(root)`: `root/statistic_old` and `root/statistic_new` (the committed fixtures
  under `tests/data/constructed/`).

The graph, execution order and history come from `tuidebug.offline.writer.dump_writer`; an
iteration folder then gets a statistic.csv instead of tensor files. Values are chosen so
that the CSV's 6-digit numbers are exact for max and min.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from tuidebug.offline.files.names import encode_dump_name
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef, TensorKey

NET = "StatNet"
MATMUL = "Default/network/MatMul-op0"
RELU = "Default/network/ReLU-op0"
LOG = "Default/network/Log-op0"
PARAMS = (ParamDef("x", np.float32, (2, 3)), ParamDef("fc.weight", np.float32, (3, 2)))
NODES = (
    NodeDef(MATMUL, "MatMul", ("x", "fc.weight"), np.float32, (2, 2)),
    NodeDef(RELU, "ReLU", (MATMUL,), np.float32, (2, 2)),
    NodeDef(LOG, "Log", (RELU,), np.float32, (2, 2)),
)
OLD_HEADER = (
    "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,"
    "Max Value,Min Value,Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,"
    "Negative Inf Count,Positive Inf Count,Zero Count"
)
PREFIX = "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape"
# statistic_category of the new fixture, in configuration order, and the header of each
NEW_CATEGORIES = (
    ("max", "Max Value"),
    ("min", "Min Value"),
    ("count", "Count"),
    ("zero count", "Zero Count"),
    ("nan count", "Nan Count"),
    ("negative inf count", "Negative Inf Count"),
    ("positive inf count", "Positive Inf Count"),
    ("l2norm", "L2Norm Value"),
)
_START = 1_700_000_000_000_000


def tensors(iteration: int) -> dict[TensorKey, np.ndarray]:
    """The values of one iteration (outputs and parameters; MatMul's inputs too)."""
    f = np.float32
    x = np.array([[1, 2, 0], [0.5, -1, 0]], f) * (iteration + 1)
    w = np.array([[1, 0], [0.5, -2], [0, 0]], f)
    mm = x @ w
    relu = np.maximum(mm, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log = np.log(relu)  # log(0) = -inf: TensorOverflow hits
    if iteration == 1:
        log[0, 0] = np.nan
    return {
        ("x", "output", 0): x,
        ("fc.weight", "output", 0): w,
        (MATMUL, "input", 0): x,
        (MATMUL, "input", 1): w,
        (MATMUL, "output", 0): mm,
        (RELU, "output", 0): relu,
        (LOG, "output", 0): log,
    }


def _num(value: float) -> str:
    """A double as C++'s `operator<<` writes it (6 significant digits)."""
    return f"{value:g}"


def statistics(a: np.ndarray) -> dict[str, str]:
    """MindSpore's statistics of a tensor as statistic.csv cells (spec §3.7), by header."""
    v = a.astype(np.float64).ravel()
    finite = v[np.isfinite(v)]
    nan = int(np.isnan(v).sum())
    neg_inf = int(np.isneginf(v).sum())
    pos_inf = int(np.isposinf(v).sum())
    if finite.size:
        mx, mn, avg = _num(finite.max()), _num(finite.min()), _num(finite.mean())
    else:  # all NaN/Inf: tensor_stat_dump.cc writes "null"
        mx = mn = avg = "null"
    return {
        "Max Value": mx,
        "Min Value": mn,
        "Avg Value": avg,
        "Count": str(v.size),
        "Negative Zero Count": str(int((v < 0).sum())),
        "Positive Zero Count": str(int((v > 0).sum())),
        "NaN Count": str(nan),
        "Nan Count": str(nan),
        "Negative Inf Count": str(neg_inf),
        "Positive Inf Count": str(pos_inf),
        "Zero Count": str(int((v == 0).sum())),
        "L2Norm Value": _num(math.sqrt(float(np.sum(finite * finite)))),
    }


def _op_name(name: str, new: bool) -> tuple[str, str]:
    """(Op Type, Op Name) of a tensor's row."""
    if name in {p.name for p in PARAMS}:
        return "Parameter", encode_dump_name(name) if new else name
    node = next(n for n in NODES if n.full_name == name)
    return node.op_type, encode_dump_name(name) if new else name.rsplit("/", 1)[-1]


def csv_text(iteration: int, new: bool) -> str:
    """The statistic.csv of one iteration, old or new header."""
    columns = [h for _, h in NEW_CATEGORIES] if new else OLD_HEADER.split(",")[10:]
    lines = [",".join([PREFIX, *columns]) if new else OLD_HEADER]
    stamp = _START + 1000 * iteration
    for (name, io, slot), array in tensors(iteration).items():
        stamp += 37
        op_type, op_name = _op_name(name, new)
        shape = '"(' + ",".join(map(str, array.shape)) + ')"'
        cells = statistics(array)
        fixed = [op_type, op_name, "0", "0", str(stamp), io, str(slot)]
        fixed += [str(array.nbytes), str(array.dtype), shape]
        lines.append(",".join(fixed + [cells[c] for c in columns]))
    return "\n".join(lines) + "\n"


def _writer(root: Path, new: bool) -> DumpWriter:
    writer = DumpWriter(
        root,
        NET,
        start_timestamp=_START,
        ms_version="2.5.0" if new else "2.2.0",
        device_target="GPU",
        exist_ok=True,
    )
    writer.add_graph(0, NODES, PARAMS)
    return writer


def _settings(root: Path, saved_data: str, new: bool) -> None:
    """`.dump_metadata/data_dump.json` as the user's config would be copied (the path a
    fixed string, so the fixture does not depend on where it was written)."""
    common: dict[str, object] = {
        "op_debug_mode": 0,
        "dump_mode": 0,
        "path": "/tmp/statistic_dump",
        "net_name": NET,
        "iteration": "all",
        "saved_data": saved_data,
        "input_output": 0,
        "kernels": [],
        "support_device": [0, 1, 2, 3, 4, 5, 6, 7],
    }
    if new:
        common["statistic_category"] = [c for c, _ in NEW_CATEGORIES]
    settings = {"common_dump_settings": common, "e2e_dump_settings": {"enable": True}}
    path = root / "rank_0" / ".dump_metadata" / "data_dump.json"
    path.write_text(json.dumps(settings, indent=4) + "\n")


def _write_statistic(root: Path, new: bool) -> Path:
    writer = _writer(root, new)
    for iteration in (0, 1):
        # no tensors: the folder and the graph history only, then the CSV
        folder = writer.write_iteration(0, iteration, {})
        (folder / "statistic.csv").write_text(csv_text(iteration, new))
    writer.finish()
    _settings(root, "statistic", new)
    return root


def write_old(root: Path) -> Path:
    return _write_statistic(root, new=False)


def write_new(root: Path) -> Path:
    return _write_statistic(root, new=True)


def write_full(root: Path, new: bool = False) -> Path:
    """The same dump with the tensors (`.npy`) and no statistic.csv."""
    writer = _writer(root, new)
    for iteration in (0, 1):
        values = {k: v for k, v in tensors(iteration).items() if k[1] == "output"}
        writer.write_iteration(0, iteration, values)
    writer.finish()
    _settings(root, "tensor", new)
    return root


def write(root: Path) -> Path:
    """Both committed fixtures: `root/statistic_old` and `root/statistic_new`."""
    write_old(root / "statistic_old")
    write_new(root / "statistic_new")
    return root
