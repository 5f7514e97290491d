"""A constructed Ascend O2 asynchronous dump whose tensors are `.bin` files (issue 16 item 3
in the layout of item 2), written from the documentation, not by MindSpore or CANN.

Layout: GE O2 `{time}/{device_id}/{model_name}/{model_id}/{iteration_id}/` (MindSpore
dump.md, r2.3–2.5, Ascend O2 / asynchronous dump, as `async_dump.py` writes it with
`.npy`); files `{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}` with no extension,
each the `.bin` framing of `bin_dump.py` (8-byte little-endian header length, the
`toolkit.dumpdata.DumpData` header, then the input buffers and the output buffers).

`write(root)` writes `root/async_bin/`; `expected()` gives the host arrays by
(iteration, file name on disk, io, slot).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.constructed.async_dump import CONV, LONG, RELU
from tests.constructed.bin_dump import _file, _to_fractal_z, _to_nc1hwc0
from tuidebug._proto import dump_data_pb2 as pb

FOLDER = "async_bin"
TIME = "20240101120000"
MODEL = "kernel_graph1"
TRANS = "Default_TransData-op12"
NUMBERED = "1700000002"  # a name too long for the file system, as mapping.csv gives it
NAN_AT = (0, 1, 2, 1)  # where iteration 1's ReLU output holds its NaN (NCHW)

README = """# async_bin (constructed)

Constructed from the documentation, **not written by MindSpore or CANN**: the GE O2
asynchronous layout `{time}/{device_id}/{model_name}/{model_id}/{iteration_id}/` of
MindSpore's dump.md (r2.3–2.5, Ascend O2 / asynchronous dump, "Introduction to Data Object
Directory and Data File"), with `file_format: "bin"` files
`{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}` framed as the Ascend toolkit's public
`dump_data.proto` and CANN oam-tools / msprobe read them (see `tests/data/constructed/bin/`).

Regenerate with `tests/constructed/async_bin.py` (`write(root)`, root =
`tests/data/constructed`). Device 0, model `kernel_graph1` id 1, iterations 0 and 1, each:

- `Conv2D.…conv1…Conv2D-op5.2.7.…`: input 0 float16 NC1HWC0 of NCHW (1, 3, 4, 4), input 1
  float32 FRACTAL_Z of an OIHW (5, 3, 2, 2) weight, output 0 float16 NC1HWC0 of (1, 5, 3, 3);
- `ReLU.…relu…ReLU-op6.3.7.…`: input and output float16 NC1HWC0 of (1, 5, 3, 3); at
  iteration 1 the output holds a NaN at [0, 1, 2, 1] (TensorOverflow hits there);
- `1700000002` with `mapping.csv` naming it `MatMul.<a long scope>MatMul-op9.4.7.…`: float32
  ND input (3, 5) and output (3, 2);
- `TransData.Default_TransData-op12.5.7.…`: float32 ND input (2, 16, 1, 1), output 0 in
  C1HWNCoC0 (a real format tuidebug does not convert: it is shown and checked raw).
"""


def _arrays(it: int) -> dict[str, dict[tuple[str, int], np.ndarray]]:
    x = (np.arange(48, dtype=np.float16).reshape(1, 3, 4, 4) - 24 + it) / 8
    w = (np.arange(60, dtype=np.float32).reshape(5, 3, 2, 2) - 30) / 16
    y = (np.arange(45, dtype=np.float16).reshape(1, 5, 3, 3) - 20 + it) / 4
    relu = np.maximum(y, 0)
    if it == 1:
        relu[NAN_AT] = np.nan
    m = (np.arange(15, dtype=np.float32).reshape(3, 5) - 7) / 2
    t = np.arange(32, dtype=np.float32).reshape(2, 16, 1, 1) + it
    return {
        "conv": {("input", 0): x, ("input", 1): w, ("output", 0): y},
        "relu": {("input", 0): y, ("output", 0): relu},
        "matmul": {("input", 0): m, ("output", 0): m[:, :2] * 2},
        # the output's device buffer in a C1HWNCoC0-shaped (C1, H, W, N, Co, C0) box: only
        # its raw values matter (the reader does not convert the format and gives them back)
        "trans": {
            ("input", 0): t,
            ("output", 0): np.arange(32, dtype=np.float32).reshape(1, 1, 1, 2, 1, 16) - it,
        },
    }


def _names(it: int) -> dict[str, str]:
    ts = 1700000000000000 + it * 1000
    return {
        "conv": f"Conv2D.{CONV}.2.7.{ts}",
        "relu": f"ReLU.{RELU}.3.7.{ts + 1}",
        "matmul": NUMBERED,
        "matmul_real": f"MatMul.{LONG}.4.7.{ts + 2}",
        "trans": f"TransData.{TRANS}.5.7.{ts + 3}",
    }


def folder(root: Path, it: int) -> Path:
    """The iteration folder of `it` under the fixture `root` (`…/async_bin`)."""
    return root / TIME / "0" / MODEL / "1" / str(it)


def expected() -> dict[tuple[int, str, str, int], np.ndarray]:
    """(iteration, file name on disk, io, slot) → the array the reader must give back."""
    out: dict[tuple[int, str, str, int], np.ndarray] = {}
    for it in (0, 1):
        names = _names(it)
        for key, tensors in _arrays(it).items():
            for (io, slot), array in tensors.items():
                out[(it, names[key], io, slot)] = array
    return out


def _scoped(op_name: str) -> str:
    """The `DumpData.op_name` of a file's op name: its scope with `/` (dump.md: the file
    name has it with `_`); only the name's shape matters to the reader."""
    return op_name.replace("_", "/")


def write(root: Path) -> Path:
    """Write `root/async_bin/` (README.md included); return that folder."""
    out = root / FOLDER
    for it in (0, 1):
        d = folder(out, it)
        d.mkdir(parents=True, exist_ok=True)
        a = _arrays(it)
        names = _names(it)
        conv = a["conv"]
        _file(
            d / names["conv"],
            _scoped(CONV),
            [
                (_to_nc1hwc0(conv[("input", 0)], 16), pb.FORMAT_NC1HWC0, (1, 3, 4, 4)),
                (_to_fractal_z(conv[("input", 1)], 16, 16), pb.FORMAT_FRACTAL_Z, (5, 3, 2, 2)),
            ],
            [(_to_nc1hwc0(conv[("output", 0)], 16), pb.FORMAT_NC1HWC0, (1, 5, 3, 3))],
            1700000000000000 + it * 1000,
        )
        relu = a["relu"]
        _file(
            d / names["relu"],
            _scoped(RELU),
            [(_to_nc1hwc0(relu[("input", 0)], 16), pb.FORMAT_NC1HWC0, (1, 5, 3, 3))],
            [(_to_nc1hwc0(relu[("output", 0)], 16), pb.FORMAT_NC1HWC0, (1, 5, 3, 3))],
            1700000000000001 + it * 1000,
        )
        mm = a["matmul"]
        _file(
            d / names["matmul"],
            _scoped(LONG),
            [(mm[("input", 0)], pb.FORMAT_ND, (3, 5))],
            [(mm[("output", 0)], pb.FORMAT_ND, (3, 2))],
            1700000000000002 + it * 1000,
        )
        (d / "mapping.csv").write_text(f"{NUMBERED},{names['matmul_real']}\n", encoding="utf-8")
        trans = a["trans"]
        _file(
            d / names["trans"],
            _scoped(TRANS),
            [(trans[("input", 0)], pb.FORMAT_ND, (2, 16, 1, 1))],
            [(trans[("output", 0)], pb.FORMAT_C1HWNCoC0, (2, 16, 1, 1))],
            1700000000000003 + it * 1000,
        )
    (out / "README.md").write_text(README, encoding="utf-8")
    return out
