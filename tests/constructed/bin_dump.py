"""Constructed Ascend asynchronous dump `.bin` files (issue 16 item 3), written from the
documented format, not by MindSpore or CANN.

Framing (CANN oam-tools `msaicerr/proto_parse/dump_proto_to_json.cpp`; msprobe
`AclDumpDataProcessor.cpp`): an 8-byte little-endian length, the serialized
`toolkit.dumpdata.DumpData` header (proto/dump_data.proto), then the buffers of the inputs
and then of the outputs, in order. File names: `{op_type}.{op_name}.{task_id}.{stream_id}.
{timestamp}` (MindSpore dump.md, spec §5.1).

The device layouts are written here straight from their definitions, element by element
(CANN `aclFormat` docs: NC1HWC0 pads C up to C1·C0; FRACTAL_Z puts weight [n, c, h, w] at
[(c // C0)·H·W + h·W + w, n // N0, n % N0, c % C0]; FRACTAL_NZ puts [.., h, w] at
[.., w // W0, h // H0, h % H0, w % W0]), independently of the vectorised reader in
`tuidebug/offline/files/bin.py`, so reading them back is a real round trip.

`write(root)` writes `root/bin/`; `expected()` gives the host arrays each file holds, by
file name and (io, slot).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import ml_dtypes
import numpy as np

from tuidebug._proto import dump_data_pb2 as pb

DUMP_TIME = 1700000000000000
FOLDER = "bin"

ADD = "Add.Default_network-Net_Add-op1.2.7.1700000000000001"
CONV = "Conv2D.Default_network-Net_conv1-Conv2d_Conv2D-op2.3.7.1700000000000002"
CAST = "Cast.Default_network-Net_Cast-op3.4.7.1700000000000003"
MATMUL = "MatMul.Default_network-Net_fc-Dense_MatMul-op4.5.7.1700000000000004"
TRANS = "TransData.Default_network-Net_TransData-op5.6.7.1700000000000005"
UNKNOWN_FORMAT = 200  # a number no OutputFormat has

README = """# bin (constructed)

Constructed from the documentation, **not written by MindSpore or CANN**: the Ascend
toolkit's public `dump_data.proto` (`toolkit.dumpdata.DumpData`, see `proto/dump_data.proto`),
the `.bin` framing as CANN oam-tools (`msaicerr/proto_parse/dump_proto_to_json.cpp`) and
msprobe (`ccsrc/core/AclDumpDataProcessor.cpp`) read it (8-byte little-endian header length,
header, then input buffers, then output buffers), the CANN `aclFormat` definitions of
NC1HWC0 / FRACTAL_Z / FRACTAL_NZ, and MindSpore's dump.md file name grammar
`{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`.

Regenerate with `tests/constructed/bin_dump.py` (`write(root)`, root =
`tests/data/constructed`). Files:

- `Add.…` float32 ND: two inputs and one output of shape (2, 3).
- `Conv2D.…` input 0 float16 NC1HWC0 (C0 16) of an NCHW (1, 3, 4, 4) array; input 1 float32
  FRACTAL_Z (N0 16, C0 16) of an OIHW (5, 3, 2, 2) weight; output float16 NC1HWC0 of
  (1, 5, 3, 3). Original shapes are in the header.
- `Cast.…` float32 ND input (4,), bfloat16 ND output (4,).
- `MatMul.…` input 0 float16 FRACTAL_NZ (H0 = W0 = 16) of a (3, 5) matrix; output float32 ND.
- `TransData.…` input 0 in C1HWNCoC0 (a real format the reader does not convert), output 0
  in format number 200 (no such format): both must come back raw and flagged.
"""


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _to_nc1hwc0(x: np.ndarray, c0: int) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n, _cdiv(c, c0), h, w, c0), x.dtype)
    for i, j, k, m in itertools.product(range(n), range(c), range(h), range(w)):
        out[i, j // c0, k, m, j % c0] = x[i, j, k, m]
    return out


def _to_fractal_z(weight: np.ndarray, n0: int, c0: int) -> np.ndarray:
    n, c, h, w = weight.shape
    out = np.zeros((_cdiv(c, c0) * h * w, _cdiv(n, n0), n0, c0), weight.dtype)
    for i, j, k, m in itertools.product(range(n), range(c), range(h), range(w)):
        out[(j // c0) * h * w + k * w + m, i // n0, i % n0, j % c0] = weight[i, j, k, m]
    return out


def _to_fractal_nz(x: np.ndarray, h0: int, w0: int) -> np.ndarray:
    h, w = x.shape
    out = np.zeros((_cdiv(w, w0), _cdiv(h, h0), h0, w0), x.dtype)
    for k, m in itertools.product(range(h), range(w)):
        out[m // w0, k // h0, k % h0, m % w0] = x[k, m]
    return out


def _arrays() -> dict[str, dict[tuple[str, int], np.ndarray]]:
    """The host arrays of every file (deterministic: the fixture is committed)."""
    a = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5) / 2
    b = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    x = (np.arange(48, dtype=np.float16).reshape(1, 3, 4, 4) - 24) / 8
    w = (np.arange(60, dtype=np.float32).reshape(5, 3, 2, 2) - 30) / 16
    y = (np.arange(45, dtype=np.float16).reshape(1, 5, 3, 3) - 20) / 4
    m = (np.arange(15, dtype=np.float16).reshape(3, 5) - 7) / 2
    c = np.array([1.5, -2.25, 3.0e5, 0.0], np.float32)
    return {
        ADD: {("input", 0): a, ("input", 1): b, ("output", 0): a + b},
        CONV: {("input", 0): x, ("input", 1): w, ("output", 0): y},
        CAST: {("input", 0): c, ("output", 0): c.astype(ml_dtypes.bfloat16)},
        MATMUL: {("input", 0): m, ("output", 0): np.ones((3, 2), np.float32)},
        TRANS: {
            ("input", 0): np.arange(32, dtype=np.float16).reshape(1, 1, 1, 2, 1, 16),
            ("output", 0): np.arange(8, dtype=np.int32).reshape(2, 4),
        },
    }


def expected() -> dict[str, dict[tuple[str, int], np.ndarray]]:
    """file name → (io, slot) → the host array the reader must give back (for the two
    unconverted TransData tensors: the raw values in their device shape)."""
    return _arrays()


_DT = {
    np.dtype(np.float32): pb.DT_FLOAT,
    np.dtype(np.float16): pb.DT_FLOAT16,
    np.dtype(np.int32): pb.DT_INT32,
    np.dtype(ml_dtypes.bfloat16): pb.DT_BF16,
}


def _fill(
    proto: pb.OpInput | pb.OpOutput,
    device: np.ndarray,
    fmt: int,
    original: tuple[int, ...] | None,
) -> bytes:
    proto.data_type = _DT[device.dtype]  # type: ignore[assignment]
    proto.format = fmt  # type: ignore[assignment]
    proto.shape.dim.extend(device.shape)
    if original is not None:
        proto.original_shape.dim.extend(original)
    data = device.astype(device.dtype.newbyteorder("<")).tobytes()
    proto.size = len(data)
    return data


Entry = tuple[np.ndarray, int, tuple[int, ...] | None]


def _file(
    path: Path, op_name: str, inputs: list[Entry], outputs: list[Entry], dump_time: int
) -> None:
    message = pb.DumpData(version="2.0", dump_time=dump_time, op_name=op_name)
    segment = []
    for device, fmt, original in inputs:
        segment.append(_fill(message.input.add(), device, fmt, original))
    for device, fmt, original in outputs:
        segment.append(_fill(message.output.add(), device, fmt, original))
    header = message.SerializeToString()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"".join(segment))


def write(root: Path) -> Path:
    """Write `root/bin/` (five `.bin` files and README.md); return that folder."""
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    arrays = _arrays()
    scope = "Default/network-Net/"

    add = arrays[ADD]
    _file(
        folder / ADD,
        scope + "Add-op1",
        [(add[("input", 0)], pb.FORMAT_ND, (2, 3)), (add[("input", 1)], pb.FORMAT_ND, (2, 3))],
        [(add[("output", 0)], pb.FORMAT_ND, (2, 3))],
        DUMP_TIME + 1,
    )
    conv = arrays[CONV]
    _file(
        folder / CONV,
        scope + "conv1-Conv2d/Conv2D-op2",
        [
            (_to_nc1hwc0(conv[("input", 0)], 16), pb.FORMAT_NC1HWC0, (1, 3, 4, 4)),
            (_to_fractal_z(conv[("input", 1)], 16, 16), pb.FORMAT_FRACTAL_Z, (5, 3, 2, 2)),
        ],
        [(_to_nc1hwc0(conv[("output", 0)], 16), pb.FORMAT_NC1HWC0, (1, 5, 3, 3))],
        DUMP_TIME + 2,
    )
    cast = arrays[CAST]
    _file(
        folder / CAST,
        scope + "Cast-op3",
        [(cast[("input", 0)], pb.FORMAT_ND, (4,))],
        [(cast[("output", 0)], pb.FORMAT_ND, (4,))],
        DUMP_TIME + 3,
    )
    mm = arrays[MATMUL]
    _file(
        folder / MATMUL,
        scope + "fc-Dense/MatMul-op4",
        [(_to_fractal_nz(mm[("input", 0)], 16, 16), pb.FORMAT_FRACTAL_NZ, (3, 5))],
        [(mm[("output", 0)], pb.FORMAT_ND, (3, 2))],
        DUMP_TIME + 4,
    )
    trans = arrays[TRANS]
    _file(
        folder / TRANS,
        scope + "TransData-op5",
        [(trans[("input", 0)], pb.FORMAT_C1HWNCoC0, (2, 16, 1, 1))],
        [(trans[("output", 0)], UNKNOWN_FORMAT, (2, 4))],
        DUMP_TIME + 5,
    )
    (folder / "README.md").write_text(README, encoding="utf-8")
    return folder
