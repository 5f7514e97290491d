"""Reading one dump tensor file safely: header first, then a read-only memory map.

Dump files are untrusted (DESIGN.md): pickles are refused, the header is validated before any
data is touched (so a truncated or lying file costs nothing), paths must stay inside the dump
root, and a size limit can refuse a tensor before it is mapped. Every failure is a
`TensorFileError` whose message is one sentence naming the file.

A file is opened non-blocking and its type checked on the open descriptor before anything is
read: a FIFO swapped in after the dump was indexed is refused at once, never waited on.
"""

from __future__ import annotations

import ast
import errno
import math
import mmap as mmap_module
import os
import re
import stat
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

import numpy as np
from numpy.lib import format as npy_format

from tuidebug.core.graph import TensorSpec
from tuidebug.core.tensor import (
    BFLOAT16,
    UnsupportedDataTypeError,
    dtype_label,
    is_numeric_data_type,
    numpy_dtype,
    storage_dtype,
)
from tuidebug.core.text import QUOTE_DIMS, shape_text
from tuidebug.offline.files.regular_file import NotRegularFileError, file_kind, open_regular

# numpy's own guard against hostile headers (it parses them with ast.literal_eval)
MAX_HEADER_BYTES = 10_000

# Headers as numpy and MindSpore write them (`{'descr': '<f4', 'fortran_order': False,
# 'shape': (64, 1024), }`, MindSpore without spaces in the shape) are parsed with this strict
# pattern: numpy's reader (ast.literal_eval) costs ~60 µs a file, more than checking a small
# tensor. Anything else goes through `_parse_header` and its checks. A dimension has at most
# 19 digits (int64): a longer run goes there too, whose parser refuses it with a sentence
# (int() of more than 4,300 digits raises ValueError, which `peek_header` must not see).
_SIMPLE_HEADER = re.compile(
    rb"\{'descr': *'([<>|=]?[biufc][0-9]{1,2})', *'fortran_order': *(True|False), *"
    rb"'shape': *\(((?: *[0-9]{1,19} *,)* *(?:[0-9]{1,19} *)?)\), *\} *\n"
)
_HEAD_BYTES = 256  # one read holds the whole header of nearly every file
# Tensors up to this size are read rather than mapped: a read costs less than setting up and
# faulting in a mapping.
SMALL_READ_BYTES = 1 << 16
_DTYPES: dict[bytes, np.dtype] = {}
# parsed headers by their bytes (magic to data offset); bounded, shared by every thread
# (a dict's get and set are atomic)
_HEADERS: dict[bytes, NpyHeader] = {}
_MAX_CACHED_HEADERS = 4096


class TensorFileError(Exception):
    """A tensor file that cannot be used; `str(err)` is one sentence naming the file."""

    def __init__(self, path: Path | str, sentence: str) -> None:
        super().__init__(sentence)
        self.path = Path(path)
        self.sentence = sentence


class TensorMissingError(TensorFileError):
    """The file does not exist (or vanished between discovery and reading)."""


class TensorOutsideRootError(TensorFileError):
    """The path (typically through a symlink) resolves outside the dump root."""


class TensorHeaderError(TensorFileError):
    """Not an `.npy` file, or its header cannot be parsed."""


class TensorRefusedError(TensorFileError):
    """A file discovery refused (a FIFO, a dangling or looping link, a link leaving the
    dump); the sentence is discovery's, naming the file from the dump root."""


class TensorNotRegularError(TensorHeaderError):
    """The path is a FIFO, a socket, a device, a folder or a symbolic link loop, not a file."""


class TensorPickleError(TensorFileError):
    """The file holds Python objects, which could only be read by unpickling them."""


class TensorDtypeError(TensorFileError):
    """A valid `.npy` of a type the debugger does not handle (strings, records…)."""


class TensorTruncatedError(TensorFileError):
    """The header declares more data than the file holds."""


class TensorTooLargeError(TensorFileError):
    """The tensor exceeds the memory limit; the checker reports error code 8 (spec §3.6)."""

    def __init__(self, path: Path | str, sentence: str, nbytes: int, limit: int) -> None:
        super().__init__(path, sentence)
        self.nbytes = nbytes
        self.limit = limit


class NpyHeader:
    """What the `.npy` header says: shape, dtype, layout and where the data starts.

    Headers of the usual form are cached per header bytes and shared by every file with
    those bytes, so an instance must not be changed."""

    __slots__ = ("data_offset", "dtype", "fortran_order", "nbytes", "shape", "size")

    def __init__(
        self, shape: tuple[int, ...], dtype: np.dtype, fortran_order: bool, data_offset: int
    ) -> None:
        self.shape = shape
        self.dtype = dtype
        self.fortran_order = fortran_order
        self.data_offset = data_offset
        # computed once: a cached header serves thousands of files
        self.size = math.prod(shape)
        self.nbytes = self.size * dtype.itemsize


def _name(path: Path | str) -> str:
    return os.path.basename(os.fspath(path)) or os.fspath(path)


def _check_inside(path: Path, root: Path) -> Path:
    """The resolved path, refused when it leaves the resolved root (symlinks included)."""
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        raise TensorMissingError(path, f"{_name(path)} does not exist.") from None
    except RuntimeError:  # a symbolic link loop, as Python 3.11 and 3.12 report it
        raise _loop(path) from None
    except OSError as err:
        raise _open_error(err, path) from None
    if not resolved.is_relative_to(root.resolve()):
        raise TensorOutsideRootError(
            path, f"{_name(path)} points outside the dump folder and is refused."
        )
    return resolved


def _reason(err: OSError | RuntimeError) -> str:
    """The reason alone, to follow "cannot be read: ". Never `str()` of an OSError, which
    repeats the path; only the first letter is lowered (to continue the sentence)."""
    text = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
    text = text.rstrip(".")
    return text[:1].lower() + text[1:] if text else "unknown error"


def _loop(path: Path | str) -> TensorNotRegularError:
    return TensorNotRegularError(path, f"{_name(path)} is a symbolic link loop.")


def _open_error(err: OSError, path: Path | str) -> TensorFileError:
    """The `TensorFileError` for a file that could not be opened, with its true reason."""
    if isinstance(err, FileNotFoundError):
        return TensorMissingError(path, f"{_name(path)} does not exist.")
    if isinstance(err, NotRegularFileError):
        return TensorNotRegularError(path, f"{_name(path)} is {err.strerror}.")
    if err.errno == errno.ELOOP:
        return _loop(path)
    if isinstance(err, IsADirectoryError):
        return TensorNotRegularError(path, f"{_name(path)} is a directory, not a regular file.")
    return TensorHeaderError(path, f"{_name(path)} cannot be read: {_reason(err)}.")


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# what opening a symbolic link with O_NOFOLLOW gives (EMLINK on FreeBSD)
_LINK_ERRNOS = (errno.ELOOP, errno.EMLINK)


def _open_fd(path: Path | str, flags: int = 0) -> tuple[int, int]:
    """A descriptor of `path` when it is a regular file, and its size: opened without
    blocking (a FIFO's open would wait for a writer) and checked on the descriptor (nothing
    can be swapped in between). Raises `TensorFileError` (an `OSError` of errno ELOOP passes
    through with `flags` = O_NOFOLLOW: the caller resolves the link). A bare descriptor: a
    Python file object costs more than reading a small tensor."""
    try:
        fd = os.open(path, _OPEN_FLAGS | flags)
    except OSError as err:
        if flags and err.errno in _LINK_ERRNOS:
            raise
        raise _open_error(err, path) from None
    try:
        st = os.fstat(fd)
    except OSError as err:
        os.close(fd)
        raise _open_error(err, path) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise TensorNotRegularError(
            path, f"{_name(path)} is {file_kind(st.st_mode)}, not a regular file."
        )
    return fd, st.st_size


def _clause_text(err: BaseException) -> str:
    """`_first_clause` continuing a sentence: first letter lowered, nothing else changed."""
    text = _first_clause(err)
    return text[:1].lower() + text[1:]


def _simple_header(fd: int, head: bytes) -> NpyHeader | None:
    """The header of an open file whose first bytes are `head`, when it has the usual form;
    None otherwise (then numpy's reader decides, with its error messages). Parsed once per
    distinct header: the files of a dump share a few dozen headers."""
    if head[:6] != b"\x93NUMPY" or len(head) < 10:
        return None
    if head[6] == 1:
        start, length = 10, int.from_bytes(head[8:10], "little")
    elif head[6] == 2 and len(head) >= 12:
        start, length = 12, int.from_bytes(head[8:12], "little")
    else:
        return None
    if length > MAX_HEADER_BYTES:
        return None
    end = start + length
    key = head[:end]
    if len(key) == end:
        cached = _HEADERS.get(key)
        if cached is not None:
            return cached
        text = key[start:]
    else:
        text = os.pread(fd, length, start)
        key = head[:start] + text
    match = _SIMPLE_HEADER.fullmatch(text)
    if match is None:
        return None
    descr, fortran, dims = match.groups()
    dtype = _DTYPES.get(descr)
    if dtype is None:
        try:
            dtype = _DTYPES[descr] = np.dtype(descr.decode("ascii"))
        except TypeError:
            return None
    shape = tuple(int(d) for d in dims.split(b",") if d.strip())
    header = NpyHeader(shape, dtype, fortran == b"True", end)
    if len(key) == end:
        if len(_HEADERS) >= _MAX_CACHED_HEADERS:  # a hostile dump of distinct headers
            _HEADERS.clear()
        _HEADERS[bytes(key)] = header
    return header


def _read_data(fd: int, header: NpyHeader, path: Path | str) -> np.ndarray:
    """The data of an open file into a new (writeable) array."""
    try:
        buf = np.empty(header.nbytes, np.uint8)
    except MemoryError:  # a real file that large (a sparse one costs no disk)
        raise _no_memory(path, header.nbytes) from None
    done = 0
    while done < header.nbytes:
        got = os.preadv(fd, [buf[done:].data], header.data_offset + done)
        if got <= 0:  # the file shrank since its size was checked
            raise TensorTruncatedError(path, f"{_name(path)} is truncated.")
        done += got
    return buf.view(header.dtype)


def _read_header(fp: BinaryIO, path: Path) -> NpyHeader:
    if os.fstat(fp.fileno()).st_size == 0:  # e.g. a dump interrupted while writing
        raise TensorHeaderError(path, f"{_name(path)} is empty.")
    try:
        shape, fortran_order, dtype = _parse_header(fp, path)
    except TensorFileError:
        raise
    except Exception as err:
        # The header is untrusted text read by ast and numpy's dtype parser, which raise far
        # more than ValueError (SyntaxError, TypeError, KeyError, MemoryError, RecursionError,
        # OverflowError…, depending on the Python and numpy versions): whatever it is, the
        # file is unreadable, one sentence, never a traceback.
        raise TensorHeaderError(
            path, f"{_name(path)} is not a valid .npy file ({_header_problem(err)})."
        ) from None
    if any(d < 0 for d in shape):
        raise TensorHeaderError(
            path, f"{_name(path)} is not a valid .npy file (its header has a negative dimension)."
        )
    return NpyHeader(tuple(int(d) for d in shape), dtype, fortran_order, fp.tell())


class _HeaderProblem(ValueError):
    """What is wrong with a header, as a clause ("it ends inside its header")."""


_HEADER_KEYS = frozenset({"descr", "fortran_order", "shape"})


def _parse_header(fp: BinaryIO, path: Path) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) of the header at the start of `fp`, which is left at
    the first data byte: numpy's `read_array_header_1_0`/`_2_0`, checked the same way, but
    without what those do with a hostile header. They read the whole declared header before
    comparing it with `max_header_size` (a v2 length of 4 GiB in a sparse file is 4 GiB
    read), and a header Python 3 cannot parse goes to their Python 2 fallback, which raises
    `tokenize.TokenError` on an unclosed dict and prints a `UserWarning` to stderr on
    success. Here a header is at most `MAX_HEADER_BYTES`, checked before it is read, and
    must be Python 3 literal syntax (what numpy and MindSpore have written since 2015)."""
    version = npy_format.read_magic(fp)
    if version not in ((1, 0), (2, 0)):
        raise TensorHeaderError(
            path,
            f"{_name(path)} uses npy format version {version[0]}.{version[1]}, which is not supported.",
        )
    width = 2 if version == (1, 0) else 4
    raw = fp.read(width)
    if len(raw) < width:
        raise _HeaderProblem("it ends inside its header")
    length = int.from_bytes(raw, "little")
    if length > MAX_HEADER_BYTES:
        raise _HeaderProblem(
            f"its header length says {length:,} bytes, more than the {MAX_HEADER_BYTES:,} "
            "a header may have"
        )
    text = fp.read(length)
    if len(text) < length:
        raise _HeaderProblem("it ends inside its header")
    fields = ast.literal_eval(text.decode("latin1"))
    if not isinstance(fields, dict) or fields.keys() != _HEADER_KEYS:
        raise _HeaderProblem("its header cannot be parsed")
    shape, fortran_order = fields["shape"], fields["fortran_order"]
    if not isinstance(shape, tuple) or not all(isinstance(d, int) for d in shape):
        raise _HeaderProblem("its header cannot be parsed")
    if not isinstance(fortran_order, bool):
        raise _HeaderProblem("its header cannot be parsed")
    return shape, fortran_order, np.dtype(npy_format.descr_to_dtype(fields["descr"]))


def _header_problem(err: BaseException) -> str:
    if isinstance(err, _HeaderProblem):
        return str(err)
    text = str(err)
    if "EOF" in text:
        return "it ends inside its header"
    if "magic" in text:
        return "it does not start with the npy magic string"
    return "its header cannot be parsed"


def _first_clause(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text.rstrip(".:")[:120]


def read_header(path: Path) -> NpyHeader:
    """Parse and validate an `.npy` header without reading any data."""
    try:
        with open_regular(path) as fp:
            header = _read_header(fp, path)
            file_size = os.fstat(fp.fileno()).st_size
    except OSError as err:
        raise _open_error(err, path) from None
    _validate(header, path, file_size)
    return header


def _validate(
    header: NpyHeader, path: Path | str, file_size: int, max_bytes: int | None = None
) -> None:
    """Refuse pickles, unreadable dtypes, truncated files and (with `max_bytes`) tensors
    larger than the memory limit."""
    dt = header.dtype
    if dt.hasobject:
        raise TensorPickleError(
            path, f"{_name(path)} holds Python objects (pickle) and is refused."
        )
    if not (dt.kind in "biufc" and dt.fields is None and dt.subdtype is None) and dt != BFLOAT16:
        raise TensorDtypeError(
            path, f"{_name(path)} holds data of type {dt.str!r}, which the debugger cannot read."
        )
    available = file_size - header.data_offset
    if header.nbytes > available:
        raise TensorTruncatedError(
            path,
            f"{_name(path)} is truncated: its header declares {header.nbytes} bytes of data "
            f"but the file holds {max(available, 0)}.",
        )
    if max_bytes is not None and header.nbytes > max_bytes:
        raise TensorTooLargeError(
            path,
            f"{_name(path)} holds {_size_text(header.nbytes)}, more than the memory "
            f"limit of {_size_text(max_bytes)}.",
            header.nbytes,
            max_bytes,
        )


def load_npy(
    path: Path | str,
    *,
    root: Path | None = None,
    mmap: bool = True,
    max_bytes: int | None = None,
) -> np.ndarray:
    """Load an `.npy` tensor file: a read-only memory map by default, else an in-memory copy.

    Validates the header before touching the data; `root` confines the path (after resolving
    symlinks) to the dump folder; `max_bytes` refuses larger tensors with
    `TensorTooLargeError`. Never unpickles (object arrays are refused). Files of at most
    `SMALL_READ_BYTES` are read whole, header and data in one read, into a read-only
    array (writeable with `mmap=False`) instead of mapped.

    The file is opened and its header read once, without Python file objects or `np.memmap`
    (together ~0.1 ms a file, which a dump of many small tensors pays thousands of times).
    """
    target: Path | str = _check_inside(Path(path), root) if root is not None else path
    fd, size = _open_fd(target)  # a FIFO, a folder, a missing file: refused with its reason
    return _load_open(fd, size, path, root, mmap, max_bytes)


def read_dump_tensor(path: str, root: Path | str, max_bytes: int | None = None) -> np.ndarray:
    """A dump tensor for checking it: `load_npy(path, root=root, mmap=True,
    max_bytes=max_bytes)` (same array, same errors) in the fewest system calls.

    A small file costs open, fstat, one read and close: nothing is resolved, because the
    file is opened with O_NOFOLLOW. Discovery already refused every link leaving the dump
    (folders included), so only a file that is a symbolic link now (swapped in since, or a
    link inside the dump) is resolved and confined to `root`, as `load_npy` does. The path
    must be one discovery listed (a `TensorFile.fspath` of the dump at `root`); `root` may
    be a string (a `Path` is built only for a link).
    """
    if not _NOFOLLOW:  # no O_NOFOLLOW (Windows): resolve links the slow way
        confine = Path(root) if os.path.islink(path) else None
        return load_npy(path, root=confine, mmap=True, max_bytes=max_bytes)
    try:
        fd, size = _open_fd(path, _NOFOLLOW)
    except OSError:  # the file is a symbolic link (or a loop): resolve and confine it
        return load_npy(path, root=Path(root), mmap=True, max_bytes=max_bytes)
    return _load_open(fd, size, path, root, True, max_bytes)


def _load_open(
    fd: int,
    size: int,
    path: Path | str,
    root: Path | str | None,
    mmap: bool,
    max_bytes: int | None,
) -> np.ndarray:
    """`load_npy` of an open regular file of `size` bytes; closes `fd`. `root` confines
    only an unusual header's second open (numpy's reader opens the path again)."""
    try:
        whole = size <= SMALL_READ_BYTES
        try:
            # a small file whole (header and data in one read), else its first bytes
            head = os.read(fd, size if whole else _HEAD_BYTES)
            header = _simple_header(fd, head)
        except OSError:
            header = None
        if header is None:
            confine = None if root is None else Path(root)
            return _load_npy_numpy(Path(path), root=confine, mmap=mmap, max_bytes=max_bytes)
        _validate(header, path, size, max_bytes)
        order: Literal["C", "F"] = "F" if header.fortran_order else "C"
        if whole:
            if len(head) < header.data_offset + header.nbytes:  # it shrank since the fstat
                raise TensorTruncatedError(path, f"{_name(path)} is truncated.")
            # a view of the bytes read: read-only, like a map; a copy when asked to write
            data = np.frombuffer(head, header.dtype, header.size, header.data_offset)
            if not mmap or not data.flags.aligned:  # an odd header length: align it
                data = data.copy()
                data.flags.writeable = not mmap
        elif header.size == 0 or not mmap:
            data = _read_data(fd, header, path)
            if mmap:
                data.flags.writeable = False  # like a read-only map
        else:
            # the map keeps its own handle on the file; the array keeps the map alive
            mapped = mmap_module.mmap(
                fd, header.data_offset + header.nbytes, access=mmap_module.ACCESS_READ
            )
            data = np.frombuffer(mapped, header.dtype, header.size, header.data_offset)
        return data.reshape(header.shape, order=order)
    except TensorFileError:
        raise
    except OSError as err:
        raise TensorHeaderError(path, f"{_name(path)} cannot be read: {_reason(err)}.") from None
    except ValueError as err:
        raise TensorHeaderError(
            path, f"{_name(path)} cannot be read: {_clause_text(err)}."
        ) from None
    finally:
        os.close(fd)


def _load_npy_numpy(
    path: Path,
    *,
    root: Path | None = None,
    mmap: bool = True,
    max_bytes: int | None = None,
) -> np.ndarray:
    """`load_npy` for files whose header needs numpy's reader."""
    path = Path(path)
    target = _check_inside(path, root) if root is not None else path
    try:
        with open_regular(target) as fp:
            header = _read_header(fp, path)
            _validate(header, path, os.fstat(fp.fileno()).st_size, max_bytes)
            order: Literal["C", "F"] = "F" if header.fortran_order else "C"
            if header.size == 0 or not mmap:
                # mmap cannot map zero bytes; small or explicit reads come from the open file
                try:
                    data = np.fromfile(fp, dtype=header.dtype, count=header.size)
                except MemoryError:
                    raise _no_memory(path, header.nbytes) from None
                if data.size != header.size:  # the file shrank since the size check
                    raise TensorTruncatedError(path, f"{_name(path)} is truncated.")
                return data.reshape(header.shape, order=order)
            return np.memmap(
                fp,
                dtype=header.dtype,
                mode="r",
                offset=header.data_offset,
                shape=header.shape,
                order=order,
            )
    except TensorFileError:
        raise
    except OSError as err:
        raise _open_error(err, path) from None
    except ValueError as err:
        raise TensorHeaderError(
            path, f"{_name(path)} cannot be read: {_clause_text(err)}."
        ) from None


def _no_memory(path: Path | str, nbytes: int) -> TensorFileError:
    return TensorFileError(
        path, f"{_name(path)} holds {_size_text(nbytes)}, more than there is memory to read."
    )


def _size_text(nbytes: int) -> str:
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns


def check_expected(array: np.ndarray, spec: TensorSpec | None, path: Path | str) -> str | None:
    """Compare a loaded tensor with what the graph says about its slot.

    Returns a warning sentence on a mismatch (the tensor is still usable), None when it fits
    or when the graph says nothing. See `spec_conflict` for what counts as fitting.
    """
    conflict = spec_conflict(array.dtype, tuple(array.shape), spec)
    if conflict is None:
        return None
    return f"{_name(Path(path))} {conflict.found} but the graph says {conflict.declared}."


class SpecConflict(NamedTuple):
    """How a tensor disagrees with the graph: `kind` "dtype" or "shape", and the two sides in
    words (`float32 data` / `float16`, `shape (3, 3)` / `(6, 16)`)."""

    kind: str
    actual: str
    declared: str

    @property
    def found(self) -> str:
        """What the file has, as a predicate: `holds float32 data`, `has shape (3, 3)`."""
        return f"{'holds' if self.kind == 'dtype' else 'has'} {self.actual}"


def spec_conflict(
    dtype: np.dtype, shape: tuple[int, ...], spec: TensorSpec | None, *, reshaped_ok: bool = False
) -> SpecConflict | None:
    """How a tensor of `dtype` and `shape` contradicts the graph's `spec` for its slot, or
    None when it fits or the graph says nothing.

    MindSpore 2.4+ stores bfloat16 as float32, so that pair fits; unknown graph dims (-1)
    match anything; a graph scalar `()` matches a file of shape `(1,)` and vice versa
    (MindSpore writes both for one-element parameters). With `reshaped_ok`, a shape with the
    graph's element count fits too: reshape-type kernels (Flatten, Reshape, ExpandDims…)
    share their input's memory and MindSpore dumps their output in the input's shape.
    """
    if spec is None:
        return None
    if spec.dtype is not None and is_numeric_data_type(spec.dtype):
        try:
            expected = numpy_dtype(spec.dtype)
        except UnsupportedDataTypeError:  # pragma: no cover - guarded by is_numeric
            expected = None
        actual = dtype.newbyteorder("=") if dtype.byteorder == ">" else dtype
        # storage_dtype: bfloat16 is stored as float32
        if expected is not None and actual not in (expected, storage_dtype(expected)):
            return SpecConflict("dtype", f"{dtype_label(actual)} data", dtype_label(expected))
    if spec.shape is not None and not _shape_matches(shape, spec.shape):
        same_count = -1 not in spec.shape and math.prod(shape) == math.prod(spec.shape)
        if not (reshaped_ok and same_count):
            return SpecConflict("shape", f"shape {_shape_text(shape)}", _shape_text(spec.shape))
    return None


def peek_header(path: Path | str) -> NpyHeader | None:
    """The header of a regular `.npy` file in its usual form, read without blocking; None for
    anything else (missing, not a regular file, unusual header): reading the tensor then
    reports what is wrong with it. Headers are shared (cached): do not change them."""
    try:
        fd, _size = _open_fd(path)  # a FIFO must not block the open
    except TensorFileError:
        return None
    try:
        return _simple_header(fd, os.read(fd, _HEAD_BYTES))
    except (OSError, ValueError, TypeError):
        # the pattern admits only dtypes and dimensions numpy and int() take; should one
        # still fail, reading the tensor says what is wrong (discovery must not stop here)
        return None
    finally:
        os.close(fd)


def _shape_matches(actual: tuple[int, ...], expected: tuple[int, ...]) -> bool:
    # () and (1,) hold the same single value
    one_value = len(actual) <= 1 and len(expected) <= 1 and math.prod(actual) == 1
    if one_value and all(d in (1, -1) for d in expected):
        return True
    if len(actual) != len(expected):
        return False
    return all(e < 0 or a == e for a, e in zip(actual, expected, strict=True))


def _shape_text(shape: tuple[int, ...]) -> str:
    if len(shape) > QUOTE_DIMS:  # a header's lie, quoted short (core.text.shape_text)
        return shape_text(shape)
    return "(" + ", ".join(str(d) for d in shape) + ")"
