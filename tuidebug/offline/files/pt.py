"""Reading a PyTorch `.pt` tensor file (a `torch.save` zip) without torch and without
running its pickle (issue 29: msprobe's tensor dumps save each tensor this way).

A `.pt` is a zip of `<archive>/data.pkl` (a pickle that rebuilds the tensor from storages),
`<archive>/data/<key>` (each storage's raw bytes) and small records (`byteorder`, `version`).
`torch.load` unpickles `data.pkl`, and a pickle can call any function it names: a dump file
that is a pickle is a program. So here the pickle is never run as one:

- the zip is bounded before it is parsed: a regular file only (`regular_file`), at most
  `MAX_FILE_BYTES`, its central directory found as `zipfile` finds it and refused when it
  lists more than `MAX_MEMBERS` members or takes more than `MAX_DIRECTORY_BYTES`; members
  are read by their names in that directory (never extracted, so a `../` name reaches
  nothing, and is refused anyway), each read bounded by its declared size and checked
  against it (a zip bomb costs what it declares, and what it declares is checked first);
- `data.pkl` (at most `MAX_PICKLE_BYTES`) is scanned opcode by opcode first: only the
  opcodes that build tuples, lists, dicts, numbers and strings, name a global, call one
  (REDUCE) and load a storage (BINPERSID) pass; BUILD, INST, OBJ, NEWOBJ, EXT… and memo
  indexes past `MAX_MEMO` are refused before anything is unpickled;
- the unpickler's `find_class` admits only the names `torch.load(weights_only=True)` admits
  for a tensor (the rebuild functions, the storage classes, `collections.OrderedDict` for
  the empty backward hooks, the dtypes of `_rebuild_tensor_v3`), each mapped to a local
  stand-in that only records its arguments; anything else is one sentence naming the file;
- the storage record (`('storage', type, key, location, numel)`) names a member; its bytes
  are read only after the rebuilt tensor's offset, size and stride are checked to stay
  inside the storage's `numel`, and the member's size is checked to be `numel` elements.

Every failure is a `PtFileError` (a `TensorFileError`) whose message is one sentence
naming the file; a tensor larger than `max_bytes` is a `PtTooLargeError` (also a
`TensorTooLargeError`, the checker's memory-limit error).
"""

from __future__ import annotations

import io
import math
import mmap as mmap_module
import os
import pickle
import pickletools
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import ml_dtypes
import numpy as np

from tuidebug.core.text import printable, shortened
from tuidebug.offline.files.npy import TensorFileError, TensorTooLargeError
from tuidebug.offline.files.regular_file import NotRegularFileError, open_regular

__all__ = [
    "MAX_DIRECTORY_BYTES",
    "MAX_FILE_BYTES",
    "MAX_MEMBERS",
    "MAX_MEMO",
    "MAX_PICKLE_BYTES",
    "MAX_PICKLE_OPS",
    "PtFileError",
    "PtTooLargeError",
    "load_pt",
]

# The limits are far above what torch writes for one tensor (7 members, a directory of
# ~1 KiB, a pickle of ~150 bytes and ~50 opcodes) and read at each call (tests lower them).
MAX_FILE_BYTES = 64 << 30
MAX_MEMBERS = 1024
MAX_DIRECTORY_BYTES = 1 << 20
MAX_PICKLE_BYTES = 1 << 20
MAX_PICKLE_OPS = 10_000
MAX_MEMO = 10_000
# torch allows 64 dimensions at most; more is a lie
MAX_DIMS = 64
# the small records (`byteorder`, a storage key) are a few bytes
_MAX_RECORD_BYTES = 64
_KEY = re.compile(r"[A-Za-z0-9_]{1,64}")

_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_LOCATOR_SIZE = 20
_ZIP64_EOCD = b"PK\x06\x06"
_ZIP64_EOCD_SIZE = 56


class PtFileError(TensorFileError):
    """A `.pt` file that cannot be used; `str(err)` is one sentence naming the file."""


class PtTooLargeError(TensorTooLargeError, PtFileError):
    """The tensor (or the storage it is read from) exceeds the memory limit."""


# --- stand-ins for what the pickle may name: they record, they run nothing ---------------


class _StorageType:
    """`torch.FloatStorage` and friends: the dtype of a storage (None: untyped, bytes)."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str, dtype: np.dtype | None) -> None:
        self.name = name
        self.dtype = dtype


class _Dtype:
    """A `torch.<dtype>` global (the dtype argument of `_rebuild_tensor_v3`)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype


class _Storage:
    """One storage record of the pickle: which member holds it and how many elements."""

    __slots__ = ("key", "kind", "numel")

    def __init__(self, kind: _StorageType, key: str, numel: int) -> None:
        self.kind = kind
        self.key = key
        self.numel = numel


class _Tensor:
    """What a rebuild call asked for, checked when the pickle is done."""

    __slots__ = ("conj", "dtype", "neg", "offset", "size", "storage", "stride")

    def __init__(
        self,
        storage: _Storage,
        dtype: np.dtype,
        offset: int,
        size: tuple[int, ...],
        stride: tuple[int, ...],
        metadata: dict[str, bool],
    ) -> None:
        self.storage = storage
        self.dtype = dtype
        self.offset = offset
        self.size = size
        self.stride = stride
        self.conj = metadata.get("conj", False)
        self.neg = metadata.get("neg", False)


class _Refused(Exception):
    """Why the pickle is refused, as a clause ("its pickle names os.system, …")."""


def _index_tuple(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or len(value) > MAX_DIMS:
        raise _Refused(f"its tensor's {what} is not a tuple of at most {MAX_DIMS} integers")
    for item in value:
        # bool is an int to Python, not to torch; 2**63 and more is no int64
        if type(item) is not int or not 0 <= item < 1 << 63:
            raise _Refused(f"its tensor's {what} holds {shortened(repr(item), 40)}")
    return value


def _tensor(
    storage: object,
    storage_offset: object,
    size: object,
    stride: object,
    dtype: np.dtype | None,
    metadata: object,
) -> _Tensor:
    if not isinstance(storage, _Storage):
        raise _Refused("its tensor is not rebuilt from a storage record")
    if type(storage_offset) is not int or not 0 <= storage_offset < 1 << 63:
        raise _Refused("its tensor's storage offset is not a non-negative integer")
    shape = _index_tuple(size, "size")
    strides = _index_tuple(stride, "stride")
    if len(shape) != len(strides):
        raise _Refused(f"its tensor has {len(shape)} dimensions but {len(strides)} strides")
    if metadata is None:
        metadata = {}
    # torch's metadata says which lazy bits (conjugate, negative) the tensor carries
    if not isinstance(metadata, dict) or not all(
        k in ("conj", "neg") and type(v) is bool for k, v in metadata.items()
    ):
        raise _Refused("its tensor carries metadata other than the conj and neg bits")
    if dtype is None:
        dtype = storage.kind.dtype
    if dtype is None:  # an untyped storage rebuilt by the v2 function, which has no dtype
        raise _Refused("its tensor is rebuilt from an untyped storage without a dtype")
    return _Tensor(storage, dtype, storage_offset, shape, strides, metadata)


def _check_hooks(hooks: object) -> None:
    # torch writes an empty OrderedDict (hooks are not serialized); a filled one would be
    # callables torch itself refuses with weights_only
    if not isinstance(hooks, dict) or hooks:
        raise _Refused("its tensor carries backward hooks")


def _rebuild_tensor(storage: object, offset: object, size: object, stride: object) -> _Tensor:
    return _tensor(storage, offset, size, stride, None, None)


def _rebuild_tensor_v2(
    storage: object,
    offset: object,
    size: object,
    stride: object,
    requires_grad: object,
    backward_hooks: object,
    metadata: object = None,
) -> _Tensor:
    _check_hooks(backward_hooks)
    return _tensor(storage, offset, size, stride, None, metadata)


def _rebuild_tensor_v3(
    storage: object,
    offset: object,
    size: object,
    stride: object,
    requires_grad: object,
    backward_hooks: object,
    dtype: object,
    metadata: object = None,
) -> _Tensor:
    _check_hooks(backward_hooks)
    if not isinstance(dtype, _Dtype):
        raise _Refused("its tensor's dtype is not a torch dtype")
    return _tensor(storage, offset, size, stride, dtype.dtype, metadata)


def _rebuild_parameter(data: object, requires_grad: object, backward_hooks: object) -> _Tensor:
    # a saved nn.Parameter: the tensor inside it is all a debugger reads
    _check_hooks(backward_hooks)
    if not isinstance(data, _Tensor):
        raise _Refused("its parameter does not hold a tensor")
    return data


def _ordered_dict() -> dict[object, object]:
    # the backward hooks; called with no arguments (REDUCE of `OrderedDict, ()`)
    return {}


_STORAGE_DTYPES: dict[str, np.dtype | None] = {
    "DoubleStorage": np.dtype("<f8"),
    "FloatStorage": np.dtype("<f4"),
    "HalfStorage": np.dtype("<f2"),
    "BFloat16Storage": np.dtype(ml_dtypes.bfloat16),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
    "ShortStorage": np.dtype("<i2"),
    "CharStorage": np.dtype("i1"),
    "ByteStorage": np.dtype("u1"),
    "BoolStorage": np.dtype("?"),
    "ComplexFloatStorage": np.dtype("<c8"),
    "ComplexDoubleStorage": np.dtype("<c16"),
    "UntypedStorage": None,
}
_DTYPES: dict[str, np.dtype] = {
    "float64": np.dtype("<f8"),
    "float32": np.dtype("<f4"),
    "float16": np.dtype("<f2"),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "int64": np.dtype("<i8"),
    "int32": np.dtype("<i4"),
    "int16": np.dtype("<i2"),
    "int8": np.dtype("i1"),
    "uint64": np.dtype("<u8"),
    "uint32": np.dtype("<u4"),
    "uint16": np.dtype("<u2"),
    "uint8": np.dtype("u1"),
    "bool": np.dtype("?"),
    "complex64": np.dtype("<c8"),
    "complex128": np.dtype("<c16"),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "float8_e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "float8_e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz),
}

# (module, name) → stand-in: the tensor subset of torch's weights_only allow-list
_GLOBALS: dict[tuple[str, str], object] = {
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("collections", "OrderedDict"): _ordered_dict,
    ("torch.storage", "UntypedStorage"): _StorageType("UntypedStorage", None),
    **{("torch", name): _StorageType(name, dt) for name, dt in _STORAGE_DTYPES.items()},
    **{("torch", name): _Dtype(dt) for name, dt in _DTYPES.items()},
}

# The opcodes of a pickle that builds plain data and calls admitted globals (protocols 2
# to 5, binary forms). Not BUILD (`__setstate__` or `__dict__` of whatever is below it),
# INST/OBJ/NEWOBJ/NEWOBJ_EX (instantiate a class), EXT1/2/4 (globals by registry number),
# the text forms (PERSID, PUT/GET with a decimal index) or buffers: torch writes none.
_OPCODES = frozenset(
    {
        "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP",
        "NONE", "NEWTRUE", "NEWFALSE",
        "BININT", "BININT1", "BININT2", "LONG1", "LONG4", "BINFLOAT",
        "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
        "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
        "EMPTY_LIST", "APPEND", "APPENDS", "LIST",
        "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
        "GLOBAL", "STACK_GLOBAL", "REDUCE", "BINPERSID",
        "BINPUT", "LONG_BINPUT", "MEMOIZE", "BINGET", "LONG_BINGET",
    }
)  # fmt: skip
_MEMO_OPS = frozenset({"BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET"})


def _scan(data: bytes) -> None:
    """Refuse a pickle with an opcode outside `_OPCODES`, more than `MAX_PICKLE_OPS`
    opcodes or a memo index past `MAX_MEMO` (the C unpickler grows its memo to the index it
    is given: one LONG_BINPUT of 4e9 is 32 GB), before any of it is unpickled."""
    for count, (opcode, arg, _pos) in enumerate(pickletools.genops(data), 1):
        if count > MAX_PICKLE_OPS:
            raise _Refused(f"its pickle has more than {MAX_PICKLE_OPS:,} opcodes")
        if opcode.name not in _OPCODES:
            raise _Refused(
                f"its pickle uses the {opcode.name} opcode, which a tensor file never needs"
            )
        if opcode.name in _MEMO_OPS and isinstance(arg, int) and arg > MAX_MEMO:
            raise _Refused(f"its pickle uses memo index {arg:,}")


class _Unpickler(pickle.Unpickler):
    """An unpickler that resolves names only to the stand-ins of `_GLOBALS`."""

    def __init__(self, file: BinaryIO) -> None:
        super().__init__(file)
        self.storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        found = _GLOBALS.get((module, name))
        if found is None:
            raise _Refused(
                f"its pickle names {shortened(printable(f'{module}.{name}'), 80)}, which "
                "is not a tensor's"
            )
        return found

    def persistent_load(self, pid: Any) -> Any:
        # ('storage', storage type, key, location, numel), as torch.save writes it
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise _Refused("its pickle loads something other than a storage")
        _tag, kind, key, location, numel = pid
        if not isinstance(kind, _StorageType):
            raise _Refused("its storage record has no storage type")
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise _Refused(f"its storage key {shortened(printable(repr(key)), 40)} is not a name")
        if not isinstance(location, str) or len(location) > _MAX_RECORD_BYTES:
            raise _Refused("its storage record has no device location")
        if type(numel) is not int or not 0 <= numel < 1 << 63:
            raise _Refused(f"its storage {key} has no element count")
        seen = self.storages.get(key)
        if seen is None:
            seen = self.storages[key] = _Storage(kind, key, numel)
        elif seen.kind is not kind or seen.numel != numel:
            raise _Refused(f"its storage {key} is described twice, differently")
        return seen


# --- the zip ------------------------------------------------------------------------------


def _name(path: Path | str) -> str:
    return os.path.basename(os.fspath(path)) or os.fspath(path)


def _fail(path: Path | str, clause: str) -> PtFileError:
    return PtFileError(path, f"{_name(path)} cannot be read: {clause}.")


def _size_text(nbytes: int) -> str:
    return f"{nbytes:,} bytes"


_LOCAL_HEADER_SIZE = 30


def _check_directory(fp: BinaryIO, size: int) -> None:
    """Refuse a central directory over `MAX_DIRECTORY_BYTES` or `MAX_MEMBERS` before
    `zipfile` reads it whole and makes an object per entry. The end record is looked for
    as `zipfile` looks for it: the last 22 bytes, else the last signature in the final
    64 KiB (the comment), with the zip64 record before it when its locator is there."""
    if size < _EOCD_SIZE:
        raise _Refused("it is not a zip file (too short)")
    fp.seek(size - _EOCD_SIZE)
    tail = fp.read(_EOCD_SIZE)
    if tail[:4] == _EOCD and tail[-2:] == b"\x00\x00":
        at = size - _EOCD_SIZE
        record = tail
    else:
        start = max(size - _EOCD_SIZE - 0xFFFF, 0)
        fp.seek(start)
        tail = fp.read(size - start)
        found = tail.rfind(_EOCD)
        if found < 0 or len(tail) - found < _EOCD_SIZE:
            raise _Refused("it is not a zip file (no end of central directory)")
        at = start + found
        record = tail[found : found + _EOCD_SIZE]
    _sig, _disk, _cd_disk, _here, entries, cd_bytes, _offset, _comment = struct.unpack(
        "<4s4H2LH", record
    )
    if at >= _ZIP64_LOCATOR_SIZE:
        fp.seek(at - _ZIP64_LOCATOR_SIZE)
        if fp.read(4) == _ZIP64_LOCATOR and at >= _ZIP64_LOCATOR_SIZE + _ZIP64_EOCD_SIZE:
            fp.seek(at - _ZIP64_LOCATOR_SIZE - _ZIP64_EOCD_SIZE)
            record64 = fp.read(_ZIP64_EOCD_SIZE)
            if record64[:4] == _ZIP64_EOCD:
                fields = struct.unpack("<4sQ2H2L4Q", record64)
                entries = max(fields[6], fields[7])
                cd_bytes = fields[8]
    if entries > MAX_MEMBERS:
        raise _Refused(f"its zip lists {entries:,} members, more than the {MAX_MEMBERS:,} allowed")
    if cd_bytes > MAX_DIRECTORY_BYTES:
        raise _Refused(
            f"its zip directory takes {cd_bytes:,} bytes, more than the "
            f"{MAX_DIRECTORY_BYTES:,} allowed"
        )


def _members(zf: zipfile.ZipFile, size: int) -> tuple[str, dict[str, zipfile.ZipInfo]]:
    """(archive folder, members by name), every member checked: a plain relative name
    under the one archive folder, listed once, not encrypted, stored or deflated, and
    inside the file as declared."""
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _Refused(f"its zip lists more than {MAX_MEMBERS:,} members")
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename
        parts = name.split("/")
        if (
            not name
            or name.startswith("/")
            or "\\" in name
            or "\x00" in name
            or any(p in ("", ".", "..") for p in parts[:-1])
            or parts[-1] in (".", "..")
            or re.match(r"[A-Za-z]:", name)
        ):
            raise _Refused(f"its zip has a member named {shortened(printable(repr(name)), 80)}")
        if name in members:
            raise _Refused(f"its zip lists {shortened(printable(name), 80)} twice")
        if info.flag_bits & 0x1:
            raise _Refused(f"its member {shortened(printable(name), 80)} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _Refused(
                f"its member {shortened(printable(name), 80)} is compressed with method "
                f"{info.compress_type}"
            )
        if info.header_offset + info.compress_size > size or (
            info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size
        ):
            raise _Refused(
                f"its member {shortened(printable(name), 80)} declares "
                f"{info.file_size:,} bytes, more than the file holds"
            )
        members[name] = info
    pickles = [n for n in members if n.count("/") == 1 and n.endswith("/data.pkl")]
    if len(pickles) != 1:
        raise _Refused(
            "it is not a torch.save zip (no archive/data.pkl)"
            if not pickles
            else "its zip holds more than one data.pkl"
        )
    return pickles[0][: -len("/data.pkl")], members


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A member's bytes: refused when it declares more than `limit`, and read bounded by
    what it declares (a deflated member may inflate to anything: only that much is taken)."""
    if info.file_size > limit:
        raise _Refused(
            f"its member {shortened(printable(info.filename), 80)} declares "
            f"{info.file_size:,} bytes, more than the {limit:,} it may have"
        )
    with zf.open(info) as member:
        data = member.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise _Refused(
            f"its member {shortened(printable(info.filename), 80)} holds {len(data):,} "
            f"bytes, not the {info.file_size:,} it declares"
        )
    return data


def _map_member(fp: BinaryIO, size: int, info: zipfile.ZipInfo) -> memoryview:
    """A stored member's bytes as a read-only map of the file: its local header checked as
    `zipfile` checks it (signature, name), its extent inside the file, its CRC computed
    over the mapped bytes and compared with the directory's."""
    label = shortened(printable(info.filename), 80)
    fp.seek(info.header_offset)
    header = fp.read(_LOCAL_HEADER_SIZE)
    if len(header) != _LOCAL_HEADER_SIZE or header[:4] != b"PK\x03\x04":
        raise _Refused(f"its member {label} has no local header")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    name = fp.read(name_len)
    if name.decode("utf-8", "replace") != info.filename:
        raise _Refused(f"its member {label} is named otherwise in its local header")
    start = info.header_offset + _LOCAL_HEADER_SIZE + name_len + extra_len
    if start + info.file_size > size:
        raise _Refused(f"its member {label} runs past the end of the file")
    mapped = mmap_module.mmap(fp.fileno(), 0, access=mmap_module.ACCESS_READ)
    view = memoryview(mapped)[start : start + info.file_size]
    if zlib.crc32(view) != info.CRC:
        raise _Refused(f"its member {label} fails its CRC check")
    return view


def _confine(path: Path, root: Path) -> Path:
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as err:  # RuntimeError: a link loop on Python 3.10-3.12
        raise _fail(path, _reason(err)) from None
    if not resolved.is_relative_to(root.resolve()):
        raise PtFileError(path, f"{_name(path)} points outside the dump folder and is refused.")
    return resolved


def _reason(err: BaseException) -> str:
    text = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
    # an exception's text may quote the zip's own names: printable, and short
    text = shortened(printable(text).rstrip("."), 120) or type(err).__name__
    return text[:1].lower() + text[1:]


# --- the tensor ---------------------------------------------------------------------------


def _array(tensor: _Tensor, raw: bytes | memoryview, big_endian: bool) -> np.ndarray:
    """The tensor as a read-only array over (or copied from) its storage's bytes; its
    layout was checked against the storage before the bytes were read."""
    dtype = tensor.dtype
    if big_endian and dtype.itemsize > 1:
        # swap each scalar (each half of a complex) as unsigned integers of its width:
        # ml_dtypes' bfloat16 has no big-endian form of its own
        unit = dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize
        base = np.frombuffer(raw, np.dtype(f"<u{unit}")).byteswap().view(dtype)
    else:
        base = np.frombuffer(raw, dtype)
    if math.prod(tensor.size) == 0:
        array = np.empty(tensor.size, dtype)
    else:
        array = np.lib.stride_tricks.as_strided(
            base[tensor.offset :],
            shape=tensor.size,
            strides=tuple(s * dtype.itemsize for s in tensor.stride),
            writeable=False,
        )
        if not array.flags.c_contiguous:
            # a transposed or expanded view: a plain array, not one that aliases itself
            array = np.ascontiguousarray(array)
    if tensor.conj:
        array = np.conj(array)
    if tensor.neg:
        array = np.negative(array)
    array.flags.writeable = False
    return array


def _check_layout(tensor: _Tensor) -> None:
    """Every element the size and stride reach lies inside the storage (torch's own check
    on `set_`); an empty tensor reaches nothing."""
    storage = tensor.storage
    numel = storage.numel
    if storage.kind.dtype is None:  # an untyped storage counts bytes
        if numel % tensor.dtype.itemsize:
            raise _Refused(
                f"its storage {storage.key} of {numel:,} bytes is no whole number of "
                f"{tensor.dtype.itemsize}-byte elements"
            )
        numel //= tensor.dtype.itemsize
    elif storage.kind.dtype != tensor.dtype:
        raise _Refused(f"its storage {storage.key} is of another dtype than its tensor")
    if math.prod(tensor.size) == 0:
        return
    last = tensor.offset + sum((n - 1) * s for n, s in zip(tensor.size, tensor.stride, strict=True))
    if last >= numel:
        raise _Refused(
            f"its tensor reaches element {last:,} of storage {storage.key}, which holds {numel:,}"
        )


def load_pt(
    path: Path | str,
    *,
    root: Path | str | None = None,
    max_bytes: int | None = None,
    mmap: bool = False,
) -> np.ndarray:
    """The tensor of a `torch.save` file as a read-only numpy array, read without torch
    and without running the pickle (module docstring). `root` confines the path (after
    resolving links) to the dump folder; `max_bytes` refuses a tensor whose storage is
    larger (`PtTooLargeError`). bfloat16 and float8 come as ml_dtypes' types; a view
    (slice, transpose, expand) comes as the values it shows, not its whole storage.
    `mmap=True` maps a stored (uncompressed, as torch.save writes it) storage member
    instead of copying it into memory: the same checks (its local header, its extent, its
    CRC over the mapped bytes), one copy fewer (a compare of two 1 GB dumps reads 2 GB).

    Raises `PtFileError` (one sentence naming the file) for anything else: not a regular
    file, not a zip, a pickle that names anything but a tensor's rebuild, a layout outside
    its storage, a member whose size is not what it declares."""
    target = _confine(Path(path), Path(root)) if root is not None else path
    try:
        with open_regular(target) as fp:
            size = os.fstat(fp.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise _fail(
                    path,
                    f"it is {_size_text(size)}, more than the {MAX_FILE_BYTES:,} a tensor "
                    "file may have",
                )
            return _load_open(fp, size, path, max_bytes, mmap)
    except TensorFileError:
        raise
    except _Refused as err:
        raise _fail(path, str(err)) from None
    except OSError as err:
        if isinstance(err, FileNotFoundError):
            raise PtFileError(path, f"{_name(path)} does not exist.") from None
        if isinstance(err, NotRegularFileError):  # "is a FIFO (named pipe), not a regular file"
            raise PtFileError(path, f"{_name(path)} is {err.strerror}.") from None
        raise _fail(path, _reason(err)) from None


def _load_open(
    fp: BinaryIO, size: int, path: Path | str, max_bytes: int | None, mapped: bool = False
) -> np.ndarray:
    try:
        _check_directory(fp, size)
        zf = zipfile.ZipFile(fp)
    except _Refused:
        raise
    except Exception as err:
        # zipfile raises BadZipFile, but also struct.error, ValueError, OverflowError,
        # UnicodeDecodeError… on a crafted directory: whatever it is, not a usable zip
        raise _Refused(f"it is not a valid zip file ({_reason(err)})") from None
    with zf:
        try:
            prefix, members = _members(zf, size)
            big_endian = _byteorder(zf, members, prefix)
            pickled = _read_member(zf, members[f"{prefix}/data.pkl"], MAX_PICKLE_BYTES)
        except _Refused:
            raise
        except Exception as err:  # a member that lies to zipfile (bad CRC, local header…)
            raise _Refused(f"its zip is damaged ({_reason(err)})") from None
        tensor = _unpickle(pickled)
        _check_layout(tensor)
        storage = tensor.storage
        itemsize = 1 if storage.kind.dtype is None else tensor.dtype.itemsize
        nbytes = storage.numel * itemsize
        if max_bytes is not None and nbytes > max_bytes:
            raise PtTooLargeError(
                path,
                f"{_name(path)} holds {_size_text(nbytes)} of tensor data, more than the "
                f"memory limit of {_size_text(max_bytes)}.",
                nbytes,
                max_bytes,
            )
        info = members.get(f"{prefix}/data/{storage.key}")
        if info is None:
            raise _Refused(f"its storage {storage.key} has no data/{storage.key} member")
        if info.file_size != nbytes:
            raise _Refused(
                f"its storage {storage.key} declares {nbytes:,} bytes but "
                f"data/{storage.key} holds {info.file_size:,}"
            )
        try:
            raw: bytes | memoryview
            if mapped and info.compress_type == zipfile.ZIP_STORED and nbytes:
                raw = _map_member(fp, size, info)
            else:
                raw = _read_member(zf, info, nbytes)
        except _Refused:
            raise
        except MemoryError:
            raise _Refused(
                f"its {nbytes:,} bytes of data are more than there is memory for"
            ) from None
        except Exception as err:
            raise _Refused(f"its zip is damaged ({_reason(err)})") from None
        return _array(tensor, raw, big_endian)


def _byteorder(zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], prefix: str) -> bool:
    """Whether the storages are big-endian (`byteorder` says "big"); torch writes
    "little" on every machine it runs on today, and a file without the record is little."""
    info = members.get(f"{prefix}/byteorder")
    if info is None:
        return False
    order = _read_member(zf, info, _MAX_RECORD_BYTES)
    if order not in (b"little", b"big"):
        raise _Refused(f"its byteorder record says {shortened(printable(repr(order)), 40)}")
    return order == b"big"


def _unpickle(pickled: bytes) -> _Tensor:
    try:
        _scan(pickled)
        result = _Unpickler(io.BytesIO(pickled)).load()
    except _Refused:
        raise
    except Exception as err:
        # a damaged pickle raises UnpicklingError, EOFError, ValueError, TypeError (a
        # stand-in called with the wrong arguments), KeyError (a missing memo entry)…
        raise _Refused(f"its pickle is damaged ({_reason(err)})") from None
    if not isinstance(result, _Tensor):
        raise _Refused(f"its pickle holds a {type(result).__name__}, not a tensor")
    return result
