"""Reading Ascend asynchronous dump `.bin` files (`file_format: "bin"`) without CANN.

Interface for the layout code (discovery indexes these files; this module only reads one):

* A `.bin` file holds **all inputs and outputs of one operator execution**. Its name is
  `{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}` with no extension (aclop and
  MindSpore's O2 dumps; spec §5.1); the aclnn variant puts `{op_name}.{op_type}` first, which
  the layout code knows and passes as `op_name_first=True`. `parse_bin_file_name(name)`
  splits a name (or returns None: e.g. a `mapping.csv` number standing for a long name).
* `read_bin_header(path)` → `BinDump`: the operator name stored in the file, the op type and
  timestamp from the file name when it parses, the dump time, and `inputs` / `outputs`
  (`BinTensor`: data type, device format, device shape, original shape, size, byte offset,
  and whether `read_bin_tensor` will convert it to the host layout, with the reason if not).
  Only the header is read: cheap enough to index every file.
* `read_bin_tensor(path, dump, "input" | "output", slot)` → numpy array of that one buffer,
  converted to the host layout when `BinTensor.converted` (see below), else raw in its
  device layout.
* Every failure is a `tensor_store.TensorFileError` (the project's file error) whose
  `str()` is one sentence naming the file; nothing blocks (regular files only), nothing is
  allocated from a length field before it was checked against the file's size.

File layout. An 8-byte little-endian unsigned length L, then L bytes of a serialized
`toolkit.dumpdata.DumpData` (proto/dump_data.proto), then the data segment: the buffer of
every input in order, then of every output in order, each `size` bytes as its `OpInput` /
`OpOutput` says; anything after the last output (`OpBuffer`s) is ignored. Sources that agree:
CANN oam-tools `src/msaicerr/proto_parse/dump_proto_to_json.cpp` (reads the first 8 bytes
as `uint64_t headLength`, parses the next headLength bytes as `DumpData`), and msprobe
(Ascend mstt, Apache-2.0) `ccsrc/core/AclDumpDataProcessor.cpp`: `ConcatenateData` (header
length, header, `dataSegOffset = 8 + headerSegLen`) and `DumpTensorDataToDisk` (inputs then
outputs, `offset += tensor.size()`). The proto's `bytes data` fields are empty in this
layout (msprobe never reads them); older writers may have put a tensor's bytes there, so a
tensor whose `data` is non-empty is taken from it and takes no room in the data segment
(an assumption: no sample of such a file was seen).

Data types: the proto's `OutputDataType` numbers (DT_FLOAT 1, DT_FLOAT16 2, DT_INT8 3,
DT_UINT8 4, DT_INT16 5, DT_UINT16 6, DT_INT32 7, DT_INT64 8, DT_UINT32 9, DT_UINT64 10,
DT_BOOL 11, DT_DOUBLE 12, DT_BF16 27); values are little-endian (the device's order). Other
types (strings, quantized, complex, and everything past 27, where copies of the proto
disagree) come back as raw bytes.

Formats (CANN `aclFormat` docs, e.g. hiascend.com …/appdevgapi/aclcppdevg_03_1348.html:
"NC1HWC0: C0 equals the cube unit size, e.g. 16; C1 = C/C0, the last part padded to C0";
FRACTAL_Z is the convolution weight format, FRACTAL_NZ an internal fractal format; the
index formulas below are the ones msprobe's `AclTensor.cpp` converts with):

* plain layouts (ND, NCHW, NHWC, HWCN, CHWN, NDHWC, NCDHW, DHWCN, DHWNC, NC, CN, NCL, MD):
  the buffer in its `shape`, as is;
* NC1HWC0 / NC1HWC0_C04, device (N, C1, H, W, C0): element [n, c, h, w] of NCHW is at
  [n, c // C0, h, w, c % C0]; the original shape gives C (padding dropped);
* FRACTAL_Z, device (C1·H·W, N1, N0, C0) with N1·N0 ≥ N: weight element [n, c, h, w] of the
  original (C_out, C_in, H, W) is at [(c // C0)·H·W + h·W + w, n // N0, n % N0, c % C0];
  needs a 4-D original shape; grouped weights (`sub_format` > 1) are not converted;
* FRACTAL_NZ, device (…, W1, H1, H0, W0): element […, h, w] of the original (…, H, W) is at
  […, w // W0, h // H0, h % H0, w % W0].

Anything else (an unknown format, no original shape, shapes that disagree with the size)
comes back raw in its device shape (1-D when even that does not fit) with
`BinTensor.converted = False` and `BinTensor.reason` saying why: never silently reshaped.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

import numpy as np
from google.protobuf.message import DecodeError

from tuidebug._proto import dump_data_pb2 as pb
from tuidebug.core.tensor import BFLOAT16
from tuidebug.core.text import shape_text
from tuidebug.offline.files.names import MAX_NAME_DIGITS
from tuidebug.offline.files.npy import (
    TensorFileError,
    TensorHeaderError,
    TensorMissingError,
    TensorNotRegularError,
    TensorTooLargeError,
    TensorTruncatedError,
)
from tuidebug.offline.files.regular_file import NotRegularFileError, open_regular

__all__ = [
    "LENGTH_PREFIX_BYTES",
    "MAX_HEADER_BYTES",
    "MAX_SLOTS",
    "BinBudgetError",
    "BinDump",
    "BinFileName",
    "BinTensor",
    "parse_bin_file_name",
    "read_bin_header",
    "read_bin_slot",
    "read_bin_tensor",
]

LENGTH_PREFIX_BYTES = 8
# A real header is a few hundred bytes per tensor (shapes and enums, no data); the cap
# bounds what a lying length prefix can make us read, and what parsing can build: an empty
# OpOutput is 2 bytes, so 64 MiB parsed into 33M messages (2.6 GiB, 4 s). Tensor bytes
# embedded in `data` fields (never seen, module docstring) are read up to this size.
MAX_HEADER_BYTES = 4 << 20
# Inputs plus outputs one header may describe: real operators have a handful (a concat of
# a few hundred tensors is already rare); each becomes a tensor of the dump's index, built
# while the folder is listed, so a header of millions of empty entries is refused instead.
MAX_SLOTS = 4096

IO = Literal["input", "output"]

# proto OutputDataType number → little-endian numpy dtype (numbers: proto/dump_data.proto)
_DTYPES: dict[int, np.dtype] = {
    pb.DT_FLOAT: np.dtype("<f4"),
    pb.DT_FLOAT16: np.dtype("<f2"),
    pb.DT_INT8: np.dtype("i1"),
    pb.DT_UINT8: np.dtype("u1"),
    pb.DT_INT16: np.dtype("<i2"),
    pb.DT_UINT16: np.dtype("<u2"),
    pb.DT_INT32: np.dtype("<i4"),
    pb.DT_INT64: np.dtype("<i8"),
    pb.DT_UINT32: np.dtype("<u4"),
    pb.DT_UINT64: np.dtype("<u8"),
    pb.DT_BOOL: np.dtype("?"),
    pb.DT_DOUBLE: np.dtype("<f8"),
    pb.DT_BF16: BFLOAT16,  # ml_dtypes' bfloat16, as core/tensor.py uses (byte order native)
}

# formats whose buffer is simply row-major in the tensor's `shape`
_PLAIN_FORMATS = frozenset(
    {
        pb.FORMAT_NCHW,
        pb.FORMAT_NHWC,
        pb.FORMAT_ND,
        pb.FORMAT_HWCN,
        pb.FORMAT_CHWN,
        pb.FORMAT_NDHWC,
        pb.FORMAT_NCDHW,
        pb.FORMAT_DHWCN,
        pb.FORMAT_DHWNC,
        pb.FORMAT_NC,
        pb.FORMAT_CN,
        pb.FORMAT_NCL,
        pb.FORMAT_MD,
    }
)


class BinFileName(NamedTuple):
    """The parts of a `.bin` file name."""

    op_type: str
    op_name: str
    task_id: int
    stream_id: int
    timestamp: int


@dataclass(frozen=True, slots=True)  # one per input and output indexed: no __dict__ each
class BinTensor:
    """One input or output described by a `.bin` header."""

    io: IO
    slot: int
    data_type: int  # proto OutputDataType number
    data_type_name: str  # "DT_FLOAT", or "DataType 77" for a number the proto lacks
    format: int  # proto OutputFormat number
    format_name: str  # "NC1HWC0", or "format 77"
    shape: tuple[int, ...]  # device shape
    original_shape: tuple[int, ...]  # () when the header has none
    size: int  # bytes
    offset: int | None  # where the bytes start in the file; None when inside the header
    sub_format: int
    dtype: np.dtype | None  # None: the data type has no numpy type (read as raw bytes)
    converted: bool  # read_bin_tensor gives the host layout (plain formats: as stored)
    reason: str  # why not converted ("" when converted)
    host_shape: tuple[int, ...] | None  # the shape read_bin_tensor returns when converted


@dataclass(frozen=True)
class BinDump:
    """What the header of one `.bin` file says."""

    path: Path
    op_name: str  # the DumpData `op_name` (the full scoped name)
    op_type: str | None  # from the file name, when it parses
    timestamp: int | None  # from the file name, when it parses
    dump_time: int  # the DumpData `dump_time`
    version: str
    header_bytes: int  # L of the length prefix
    file_size: int
    inputs: list[BinTensor] = field(default_factory=list)
    outputs: list[BinTensor] = field(default_factory=list)

    def tensor(self, io: IO, slot: int) -> BinTensor:
        """The input or output `slot`; `KeyError` when there is none."""
        tensors = self.inputs if io == "input" else self.outputs if io == "output" else None
        if tensors is None or not 0 <= slot < len(tensors):
            raise KeyError(f"{self.path.name} has no {io} {slot}")
        return tensors[slot]


# ---------------------------------------------------------------------------- names


def parse_bin_file_name(name: str, *, op_name_first: bool = False) -> BinFileName | None:
    """`{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}` split into its parts, or None.

    The three numbers are taken from the right, so an `op_name` with dots still parses (dump
    writers replace them with `_`, but nothing depends on it). `op_name_first` reads the
    aclnn order `{op_name}.{op_type}.…`, whose op type is the last part before the numbers.
    """
    parts = name.split(".")
    # at most MAX_NAME_DIGITS digits: a `mapping.csv` may give a name of thousands, which
    # int() refuses with ValueError (names.MAX_NAME_DIGITS)
    if len(parts) < 5 or not all(
        p.isascii() and p.isdigit() and len(p) <= MAX_NAME_DIGITS for p in parts[-3:]
    ):
        return None
    head = parts[:-3]
    if op_name_first:
        op_type, op_name = head[-1], ".".join(head[:-1])
    else:
        op_type, op_name = head[0], ".".join(head[1:])
    if not op_type or not op_name:
        return None
    task_id, stream_id, timestamp = (int(p) for p in parts[-3:])
    return BinFileName(op_type, op_name, task_id, stream_id, timestamp)


# ---------------------------------------------------------------------------- header


def _name(path: Path) -> str:
    return path.name or str(path)


def _open(path: Path) -> BinaryIO:
    """The file opened for reading, or the `TensorFileError` saying why not."""
    try:
        return open_regular(path)
    except FileNotFoundError:
        raise TensorMissingError(path, f"{_name(path)} does not exist.") from None
    except NotRegularFileError as err:
        raise TensorNotRegularError(path, f"{_name(path)} is {err.strerror}.") from None
    except IsADirectoryError:
        raise TensorNotRegularError(
            path, f"{_name(path)} is a directory, not a regular file."
        ) from None
    except OSError as err:
        reason = (err.strerror or str(err)).rstrip(".")
        reason = reason[:1].lower() + reason[1:]
        raise TensorHeaderError(path, f"{_name(path)} cannot be read: {reason}.") from None


def _read_exact(fd: int, offset: int, count: int) -> bytes | None:
    """`count` bytes at `offset`, or None when the file ends first."""
    chunks = []
    done = 0
    while done < count:
        chunk = os.pread(fd, count - done, offset + done)
        if not chunk:
            return None
        chunks.append(chunk)
        done += len(chunk)
    return b"".join(chunks)


class BinBudgetError(TensorHeaderError):
    """The file was not read: what is left of the dump's budget for `.bin` headers (header
    bytes, tensors; `budget.BinBudget`) is smaller than what this header needs: its
    `header_bytes`, and its `slots` when the header was read (None when it was not)."""

    def __init__(self, path: Path, header_bytes: int, slots: int | None) -> None:
        super().__init__(path, f"{_name(path)} was not read: the budget for headers ran out.")
        self.header_bytes = header_bytes
        self.slots = slots


def _read_message(
    fd: int,
    size: int,
    path: Path,
    max_header_bytes: int = MAX_HEADER_BYTES,
    max_slots: int = MAX_SLOTS,
) -> tuple[pb.DumpData, int]:
    """The parsed header of an open file of `size` bytes, and its length L. A header within
    the per-file caps but over `max_header_bytes` or `max_slots` (what the dump's budget has
    left) raises `BinBudgetError`: refused by the budget, not for what it is."""
    if size < LENGTH_PREFIX_BYTES:
        raise TensorHeaderError(
            path,
            f"{_name(path)} is not an Ascend dump: it has {size} bytes, fewer than the "
            f"{LENGTH_PREFIX_BYTES}-byte header length.",
        )
    prefix = _read_exact(fd, 0, LENGTH_PREFIX_BYTES)
    if prefix is None:
        raise TensorTruncatedError(path, f"{_name(path)} is truncated.")
    length = int.from_bytes(prefix, "little")
    if length > size - LENGTH_PREFIX_BYTES:
        raise TensorHeaderError(
            path,
            f"{_name(path)} is not a valid Ascend dump: its header length says {length:,} "
            f"bytes but the file has only {size - LENGTH_PREFIX_BYTES:,} after it.",
        )
    if length > MAX_HEADER_BYTES:
        raise TensorHeaderError(
            path,
            f"{_name(path)} is refused: its header of {length:,} bytes is larger than the "
            f"{MAX_HEADER_BYTES:,} a dump header may have.",
        )
    if length > max_header_bytes:  # checked before reading: the budget bounds the reads
        raise BinBudgetError(path, length, None)
    raw = _read_exact(fd, LENGTH_PREFIX_BYTES, length)
    if raw is None:
        raise TensorTruncatedError(path, f"{_name(path)} is truncated.")
    message = pb.DumpData()
    try:
        message.ParseFromString(raw)
    except (DecodeError, RecursionError, ValueError):
        raise TensorHeaderError(
            path, f"{_name(path)} is not a valid Ascend dump: its header does not parse."
        ) from None
    slots = len(message.input) + len(message.output)
    if slots > MAX_SLOTS:  # refused before one BinTensor is built
        raise TensorHeaderError(
            path,
            f"{_name(path)} is refused: its header describes {slots:,} inputs and outputs, "
            f"more than the {MAX_SLOTS:,} an operator may have.",
        )
    if slots > max_slots:  # before one BinTensor is built, as above
        raise BinBudgetError(path, length, slots)
    return message, length


@functools.lru_cache(maxsize=1024)
def _enum_name(enum: object, number: int, prefix: str, unknown: str) -> str:
    # cached: every tensor of a dump asks for a few names, each kept once in memory
    try:
        name: str = enum.Name(number)  # type: ignore[attr-defined]
    except ValueError:
        return f"{unknown} {number}"
    return name.removeprefix(prefix)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _plan(
    fmt: int,
    dtype: np.dtype | None,
    shape: tuple[int, ...],
    original: tuple[int, ...],
    size: int,
    sub_format: int,
    format_name: str,
) -> tuple[tuple[int, ...] | None, str]:
    """(host shape, "") when the buffer converts to the host layout, else (None, reason)."""
    if dtype is None:
        return None, "its data type has no numpy type"
    for kind, dims in (("shape", shape), ("original shape", original)):
        # dims are uint64: (0, 2**63) holds 0 bytes, so the size check below passes, but
        # numpy cannot make an array of it (reading it raw refuses it, see read_bin_slot)
        if not _fits_numpy(dims, dtype.itemsize):
            return None, f"its {kind} {_shape_text(dims)} is too large for an array"
    if math.prod(shape) * dtype.itemsize != size:
        return None, (
            f"its shape {_shape_text(shape)} does not match its {size:,} bytes of "
            f"{np.dtype(dtype).name}"
        )
    if fmt in _PLAIN_FORMATS:
        return shape, ""
    if fmt in (pb.FORMAT_NC1HWC0, pb.FORMAT_NC1HWC0_C04):
        return _plan_nc1hwc0(shape, original, format_name)
    if fmt == pb.FORMAT_FRACTAL_Z:
        return _plan_fractal_z(shape, original, sub_format)
    if fmt == pb.FORMAT_FRACTAL_NZ:
        return _plan_fractal_nz(shape, original)
    if format_name.startswith("format "):  # a number the proto does not name
        return None, f"its device format number {fmt} is unknown"
    return None, f"the device format {format_name} is not converted"


def _fits_numpy(dims: tuple[int, ...], itemsize: int) -> bool:
    """Whether numpy can make an array of `dims` (its own limits: every dimension, and the
    bytes of the non-zero ones, within intp)."""
    limit = int(np.iinfo(np.intp).max)
    return all(d <= limit for d in dims) and math.prod(d for d in dims if d) * itemsize <= limit


def _no_original(format_name: str) -> tuple[None, str]:
    return None, f"the header gives no original shape to convert {format_name} to"


def _pad_to_4d(original: tuple[int, ...]) -> tuple[int, ...] | None:
    """The NCHW shape a lower-rank tensor takes in a 5-D device format: (C,) → (1, C, 1, 1),
    (N, C) → (N, C, 1, 1), (C, H, W) → (1, C, H, W) (MindSpore's default 4-D padding,
    `PaddingShapeTo4dDefault` in ccsrc's format transforms). Each keeps the element order."""
    if len(original) == 4:
        return original
    if len(original) == 1:
        return (1, original[0], 1, 1)
    if len(original) == 2:
        return (original[0], original[1], 1, 1)
    if len(original) == 3:
        return (1, *original)
    return None


def _plan_nc1hwc0(
    shape: tuple[int, ...], original: tuple[int, ...], format_name: str
) -> tuple[tuple[int, ...] | None, str]:
    if len(shape) != 5:
        return None, f"a {format_name} shape must have 5 dimensions"
    if not original:
        return _no_original(format_name)
    n, c1, h, w, c0 = shape
    nchw = _pad_to_4d(original)
    # the original is taken as NCHW (padded as above); one that does not fit is not guessed at
    if nchw is None or (nchw[0], nchw[2], nchw[3]) != (n, h, w) or c0 == 0:
        return None, f"the original shape {_shape_text(original)} does not fit {format_name}"
    if _ceil_div(nchw[1], c0) != c1:
        return None, f"the original shape {_shape_text(original)} does not fit {format_name}"
    return original, ""


def _plan_fractal_z(
    shape: tuple[int, ...], original: tuple[int, ...], sub_format: int
) -> tuple[tuple[int, ...] | None, str]:
    if sub_format > 1:
        return None, f"grouped FRACTAL_Z weights ({sub_format} groups) are not converted"
    if len(shape) != 4:
        return None, "a FRACTAL_Z shape must have 4 dimensions"
    if not original:
        return _no_original("FRACTAL_Z")
    if len(original) != 4:
        return None, f"FRACTAL_Z converts only to a 4-D original, not {_shape_text(original)}"
    c1hw, n1, n0, c0 = shape
    n, c, h, w = original
    if c0 == 0 or _ceil_div(c, c0) * h * w != c1hw or n1 * n0 < n or n0 == 0:
        return None, f"the original shape {_shape_text(original)} does not fit FRACTAL_Z"
    if _ceil_div(n, n0) != n1:
        return None, f"the original shape {_shape_text(original)} does not fit FRACTAL_Z"
    return original, ""


def _nz_hw(original: tuple[int, ...]) -> tuple[int, int, int]:
    """(batch, H, W) of an FRACTAL_NZ original shape (1-D: one row)."""
    if len(original) == 1:
        return 1, 1, original[0]
    return math.prod(original[:-2]), original[-2], original[-1]


def _plan_fractal_nz(
    shape: tuple[int, ...], original: tuple[int, ...]
) -> tuple[tuple[int, ...] | None, str]:
    if len(shape) < 4:
        return None, "a FRACTAL_NZ shape must have at least 4 dimensions"
    if not original:
        return _no_original("FRACTAL_NZ")
    batch, h, w = _nz_hw(original)
    w1, h1, h0, w0 = shape[-4:]
    if (
        h0 == 0
        or w0 == 0
        or math.prod(shape[:-4]) != batch
        or _ceil_div(h, h0) != h1
        or _ceil_div(w, w0) != w1
    ):
        return None, f"the original shape {_shape_text(original)} does not fit FRACTAL_NZ"
    return original, ""


def _shape_text(shape: tuple[int, ...]) -> str:
    # shortened: a header may give a shape of a million dimensions (one clause, not 6 MB)
    return shape_text(shape)


def _tensor(io: IO, slot: int, proto: pb.OpInput | pb.OpOutput, offset: int | None) -> BinTensor:
    dtype = _DTYPES.get(proto.data_type)
    shape = tuple(int(d) for d in proto.shape.dim)
    original = tuple(int(d) for d in proto.original_shape.dim)
    format_name = _enum_name(pb.OutputFormat, proto.format, "FORMAT_", "format")
    host_shape, reason = _plan(
        proto.format, dtype, shape, original, proto.size, proto.sub_format, format_name
    )
    return BinTensor(
        io=io,
        slot=slot,
        data_type=proto.data_type,
        data_type_name=_enum_name(pb.OutputDataType, proto.data_type, "", "DataType"),
        format=proto.format,
        format_name=format_name,
        shape=shape,
        original_shape=original,
        size=int(proto.size),
        offset=offset,
        sub_format=proto.sub_format,
        dtype=dtype,
        converted=host_shape is not None,
        reason=reason,
        host_shape=host_shape,
    )


def read_bin_header(
    path: Path | str,
    *,
    op_name_first: bool = False,
    max_header_bytes: int = MAX_HEADER_BYTES,
    max_slots: int = MAX_SLOTS,
) -> BinDump:
    """The header of one `.bin` file (module docstring); raises `TensorFileError`, and
    `BinBudgetError` when the header is longer than `max_header_bytes` or describes more
    than `max_slots` tensors (what a dump's budget has left; nothing is built then).

    Reads the 8-byte length and the header only. Buffers are located, not checked against
    the file's end: a buffer past it fails when read, so the others stay readable."""
    path = Path(path)
    with _open(path) as handle:
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        message, length = _read_message(fd, size, path, max_header_bytes, max_slots)
    cursor = LENGTH_PREFIX_BYTES + length
    # inputs then outputs, each taking `size` bytes of the data segment unless its bytes
    # are inside the header (see the module docstring)
    inputs: list[BinTensor] = []
    for slot, proto_in in enumerate(message.input):
        inputs.append(_tensor("input", slot, proto_in, None if proto_in.data else cursor))
        cursor += 0 if proto_in.data else int(proto_in.size)
    outputs: list[BinTensor] = []
    for slot, proto_out in enumerate(message.output):
        outputs.append(_tensor("output", slot, proto_out, None if proto_out.data else cursor))
        cursor += 0 if proto_out.data else int(proto_out.size)
    parsed = parse_bin_file_name(path.name, op_name_first=op_name_first)
    return BinDump(
        path=path,
        op_name=message.op_name,
        op_type=parsed.op_type if parsed else None,
        timestamp=parsed.timestamp if parsed else None,
        dump_time=int(message.dump_time),
        version=message.version,
        header_bytes=length,
        file_size=size,
        inputs=inputs,
        outputs=outputs,
    )


# ---------------------------------------------------------------------------- data


def _size_text(nbytes: int) -> str:
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover - the loop always returns


def _read_buffer(path: Path, tensor: BinTensor, max_bytes: int | None) -> np.ndarray:
    """The tensor's bytes as a new uint8 array, after every size check."""
    where = f"{tensor.io} {tensor.slot}"
    if max_bytes is not None and tensor.size > max_bytes:
        raise TensorTooLargeError(
            path,
            f"{_name(path)}: {where} holds {_size_text(tensor.size)}, more than the "
            f"{_size_text(max_bytes)} limit.",
            tensor.size,
            max_bytes,
        )
    with _open(path) as handle:
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        if tensor.offset is None:
            message, _ = _read_message(fd, size, path)
            protos = message.input if tensor.io == "input" else message.output
            if tensor.slot >= len(protos) or not protos[tensor.slot].data:
                raise TensorHeaderError(path, f"{_name(path)} changed since it was indexed.")
            data = protos[tensor.slot].data
            if len(data) != tensor.size:
                raise TensorHeaderError(
                    path,
                    f"{_name(path)} is not a valid Ascend dump: {where} says {tensor.size:,} "
                    f"bytes but holds {len(data):,}.",
                )
            return np.frombuffer(data, np.uint8).copy()
        end = tensor.offset + tensor.size
        if end > size:  # checked before allocating: a lying size costs nothing
            raise TensorTruncatedError(
                path,
                f"{_name(path)} is truncated: {where} needs bytes up to {end:,} but the file "
                f"has {size:,}.",
            )
        try:
            buf = np.empty(tensor.size, np.uint8)
        except MemoryError:
            raise TensorFileError(
                path,
                f"{_name(path)}: {where} holds {_size_text(tensor.size)}, more than there is "
                "memory to read.",
            ) from None
        done = 0
        while done < tensor.size:
            got = os.preadv(fd, [buf[done:].data], tensor.offset + done)
            if got <= 0:  # the file shrank since its size was checked
                raise TensorTruncatedError(path, f"{_name(path)} is truncated.")
            done += got
        return buf


def read_bin_tensor(
    path: Path | str, dump: BinDump, io: IO, slot: int, *, max_bytes: int | None = None
) -> np.ndarray:
    """Input or output `slot` of the file `dump` was read from, in the host layout when
    `converted`, else raw in its device shape (module docstring); raises `TensorFileError`
    (`TensorTooLargeError` when it holds more than `max_bytes`)."""
    path = Path(path)
    try:
        tensor = dump.tensor(io, slot)
    except KeyError:
        raise TensorFileError(path, f"{_name(path)} has no {io} {slot}.") from None
    return read_bin_slot(path, tensor, max_bytes=max_bytes)


def read_bin_slot(
    path: Path | str, tensor: BinTensor, *, max_bytes: int | None = None
) -> np.ndarray:
    """`read_bin_tensor` of one `BinTensor` kept from an earlier `read_bin_header` (the
    dump's index keeps them, so a read does not parse the header again)."""
    path = Path(path)
    raw = _read_buffer(path, tensor, max_bytes)
    if tensor.dtype is None:
        return raw
    if tensor.size % tensor.dtype.itemsize:
        return raw  # _plan refused it already (shape and size disagree)
    values = raw.view(tensor.dtype)
    try:
        return _shaped(values, tensor)
    except ValueError:
        # a shape numpy cannot hold (dims past intp, more than its 64 dimensions) that the
        # size check let through: the header lies, and only this tensor is refused
        shape = tensor.host_shape if tensor.converted and tensor.host_shape else tensor.shape
        raise TensorHeaderError(
            path,
            f"{_name(path)} is not a valid Ascend dump: {tensor.io} {tensor.slot} has the "
            f"shape {_shape_text(shape)}, which no array can have.",
        ) from None


def _shaped(values: np.ndarray, tensor: BinTensor) -> np.ndarray:
    """`values` in the host layout when converted, else raw (`ValueError` from numpy when
    a shape cannot be made)."""
    if not tensor.converted or tensor.host_shape is None:
        # raw: in its device shape when that fits the bytes, else flat
        return values.reshape(tensor.shape) if values.size == math.prod(tensor.shape) else values
    fmt = tensor.format
    if fmt in _PLAIN_FORMATS:
        return values.reshape(tensor.shape)
    if fmt in (pb.FORMAT_NC1HWC0, pb.FORMAT_NC1HWC0_C04):
        return _from_nc1hwc0(values, tensor.shape, tensor.host_shape)
    if fmt == pb.FORMAT_FRACTAL_Z:
        return _from_fractal_z(values, tensor.shape, tensor.host_shape)
    if fmt == pb.FORMAT_FRACTAL_NZ:
        return _from_fractal_nz(values, tensor.shape, tensor.host_shape)
    raise AssertionError(f"no conversion for planned format {tensor.format_name}")


def _from_nc1hwc0(
    values: np.ndarray, shape: tuple[int, ...], original: tuple[int, ...]
) -> np.ndarray:
    n, c1, h, w, c0 = shape
    padded = _pad_to_4d(original)
    assert padded is not None  # _plan_nc1hwc0 accepted it
    c = padded[1]
    # (N, C1, H, W, C0) → (N, C1, C0, H, W) → (N, C1·C0, H, W), padding channels dropped
    nchw = values.reshape(shape).transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :c]
    return np.ascontiguousarray(nchw).reshape(original)


def _from_fractal_z(
    values: np.ndarray, shape: tuple[int, ...], original: tuple[int, ...]
) -> np.ndarray:
    _, n1, n0, c0 = shape
    n, c, h, w = original
    c1 = _ceil_div(c, c0)
    # (C1·H·W, N1, N0, C0) → (C1, H, W, N1·N0, C0) → (N1·N0, C1, C0, H, W)
    grid = values.reshape(c1, h, w, n1 * n0, c0).transpose(3, 0, 4, 1, 2)
    return np.ascontiguousarray(grid.reshape(n1 * n0, c1 * c0, h, w)[:n, :c])


def _from_fractal_nz(
    values: np.ndarray, shape: tuple[int, ...], original: tuple[int, ...]
) -> np.ndarray:
    batch, h, w = _nz_hw(original)
    w1, h1, h0, w0 = shape[-4:]
    # (B, W1, H1·H0, W0) → (B, H1·H0, W1, W0) → (B, H1·H0, W1·W0), padding dropped
    grid = values.reshape(batch, w1, h1 * h0, w0).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(grid.reshape(batch, h1 * h0, w1 * w0)[:, :h, :w]).reshape(original)
