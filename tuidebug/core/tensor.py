"""Tensors: references, the DataType ↔ numpy mapping, slices and overall statistics.

Everything here works on plain numpy arrays (often read-only memory maps of dump files) and
never reads more than it must: statistics, histograms and diffs walk the data in chunks so
that float64 temporaries stay bounded whatever the tensor size (DESIGN.md, performance).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, cast

# numpy and ml_dtypes load on first use, not at import: with ctypes they cost ~75 ms of
# `tuidebug offline`'s start, and nothing before the first frame computes (issue 28)
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import DTypeLike

    BFLOAT16: np.dtype  # built on first use by the module's __getattr__ below


@dataclass(frozen=True, order=True)
class TensorRef:
    """Names one tensor: a node's output (or input) slot at an iteration on a rank.

    `iteration` is the dump iteration (offline) or the step (online); None = current.
    """

    node: str
    slot: int = 0
    iteration: int | None = None
    rank: int = 0
    graph: str = ""
    is_output: bool = True

    @property
    def name(self) -> str:
        """`<node>:<slot>`, the tensor name used on the wire and in the UI."""
        return f"{self.node}:{self.slot}"


# ===================================================================== data types
class UnsupportedDataTypeError(ValueError):
    """A DataType number, dump dtype name or numpy dtype we cannot turn into numbers."""


# spec §1.3 `DataType` numbers (identical in MindSpore and MindInsight)
DT_UNDEFINED = 0
DT_BOOL = 1
DT_INT8 = 2
DT_INT16 = 3
DT_INT32 = 4
DT_INT64 = 5
DT_UINT8 = 6
DT_UINT16 = 7
DT_UINT32 = 8
DT_UINT64 = 9
DT_FLOAT16 = 10
DT_FLOAT32 = 11
DT_FLOAT64 = 12
DT_STRING = 13
DT_TENSOR = 14
DT_TUPLE = 31
DT_NONE = 34
DT_BASE_INT = 36
DT_BASE_UINT = 37
DT_BASE_FLOAT = 38
DT_TYPE = 39

# MindSpore's real number for DT_BFLOAT16 is unknown (spec §9, presumably 45 or 46). We need a
# number for our own training clients (simulator, PyTorch adapter) to send bfloat16 tensors,
# so we use one far above MindSpore's range: a future real DT_BFLOAT16/DT_INT4 can then never
# be misread as ours. Only tuidebug's own clients ever send it.
DT_BFLOAT16_TUIDEBUG = 1045

# the numpy type name of each numeric `DataType` number; the dtypes themselves are built on
# first use (`_tables`). dtype_label's answer for a number is its entry here.
_DT_TO_NUMPY_NAME: dict[int, str] = {
    DT_BOOL: "bool",
    DT_INT8: "int8",
    DT_INT16: "int16",
    DT_INT32: "int32",
    DT_INT64: "int64",
    DT_UINT8: "uint8",
    DT_UINT16: "uint16",
    DT_UINT32: "uint32",
    DT_UINT64: "uint64",
    DT_FLOAT16: "float16",
    DT_FLOAT32: "float32",
    DT_FLOAT64: "float64",
    DT_BFLOAT16_TUIDEBUG: "bfloat16",
    # spec §3.5: MindSpore reads the "base" types as int32 / float32
    DT_BASE_INT: "int32",
    DT_BASE_UINT: "uint32",
    DT_BASE_FLOAT: "float32",
}

_DT_NAMES: dict[int, str] = {
    0: "DT_UNDEFINED",
    1: "DT_BOOL",
    2: "DT_INT8",
    3: "DT_INT16",
    4: "DT_INT32",
    5: "DT_INT64",
    6: "DT_UINT8",
    7: "DT_UINT16",
    8: "DT_UINT32",
    9: "DT_UINT64",
    10: "DT_FLOAT16",
    11: "DT_FLOAT32",
    12: "DT_FLOAT64",
    13: "DT_STRING",
    14: "DT_TENSOR",
    15: "DT_GRAPH",
    16: "DT_BOOLS",
    17: "DT_INTS8",
    18: "DT_INTS16",
    19: "DT_INTS32",
    20: "DT_INTS64",
    21: "DT_UINTS8",
    22: "DT_UINTS16",
    23: "DT_UINTS32",
    24: "DT_UINTS64",
    25: "DT_FLOATS16",
    26: "DT_FLOATS32",
    27: "DT_FLOATS64",
    28: "DT_STRINGS",
    29: "DT_TENSORS",
    30: "DT_GRAPHS",
    31: "DT_TUPLE",
    32: "DT_LIST",
    33: "DT_DICT",
    34: "DT_NONE",
    35: "DT_SYM_INST",
    36: "DT_BASE_INT",
    37: "DT_BASE_UINT",
    38: "DT_BASE_FLOAT",
    39: "DT_TYPE",
    40: "DT_ANYTHING",
    41: "DT_REFKEY",
    42: "DT_REF",
    43: "DT_UMONAD",
    44: "DT_IOMONAD",
    DT_BFLOAT16_TUIDEBUG: "DT_BFLOAT16",
}

# spec §5.1: the `.{dtype}` component of 2.4+ dump file names is MindSpore's TypeId name of
# the *original* type (bfloat16 / int4 / uint1 data are stored as float32 / int8 / uint8).
_DUMP_NAMES: dict[str, str] = {
    "Bool": "bool",
    "Int8": "int8",
    "Int16": "int16",
    "Int32": "int32",
    "Int64": "int64",
    "UInt8": "uint8",
    "UInt16": "uint16",
    "UInt32": "uint32",
    "UInt64": "uint64",
    "Float16": "float16",
    "Float32": "float32",
    "Float64": "float64",
    "BFloat16": "bfloat16",
    "Int4": "int8",
    "UInt1": "uint8",
}


class _DtypeTables:
    """The tables above as numpy dtypes (a plain class: a dataclass's creation would cost
    the start what the lazy tables save)."""

    def __init__(self) -> None:
        import ml_dtypes
        import numpy as np

        bfloat16 = np.dtype(ml_dtypes.bfloat16)

        def dtype(name: str) -> np.dtype:
            return bfloat16 if name == "bfloat16" else np.dtype(name)

        self.bfloat16 = bfloat16
        self.dt_to_numpy = {num: dtype(name) for num, name in _DT_TO_NUMPY_NAME.items()}
        # the reverse direction only uses the concrete numbers (never the DT_BASE_* aliases)
        self.numpy_to_dt = {
            dt: num
            for num, dt in self.dt_to_numpy.items()
            if num not in (DT_BASE_INT, DT_BASE_UINT, DT_BASE_FLOAT)
        }
        self.dump_names = {key: dtype(name) for key, name in _DUMP_NAMES.items()}
        self.dump_names_lower = {k.lower(): v for k, v in self.dump_names.items()}
        self.numpy_to_dump_name = {
            dt: name for name, dt in self.dump_names.items() if name not in ("Int4", "UInt1")
        }


@functools.cache
def _tables() -> _DtypeTables:
    """The dtype tables, built at their first use (numpy and ml_dtypes load then)."""
    return _DtypeTables()


def bfloat16_dtype() -> np.dtype:
    """ml_dtypes' bfloat16 as a numpy dtype (`BFLOAT16`), for modules that must not load
    numpy at import."""
    return _tables().bfloat16


if not TYPE_CHECKING:  # hidden from mypy, which would type every unknown name `object`

    def __getattr__(name: str) -> object:
        """`BFLOAT16`, built on first use: importing it loads numpy and ml_dtypes."""
        if name == "BFLOAT16":
            return _tables().bfloat16
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# spec §5.2 step 5: the `descr` codes of `.npy` headers the offline engine understands
SUPPORTED_DESCR_CODES = frozenset(
    {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"}
)


def data_type_name(data_type: int) -> str:
    """`DT_FLOAT32` for 11; `DataType 77` for numbers the spec does not know."""
    return _DT_NAMES.get(data_type, f"DataType {data_type}")


def numpy_dtype(data_type: int) -> np.dtype:
    """The numpy dtype of a `DataType` number (spec §1.3 decoding, plus our bfloat16).

    Raises `UnsupportedDataTypeError` for non-numeric or unknown numbers."""
    try:
        return _tables().dt_to_numpy[data_type]
    except KeyError:
        raise UnsupportedDataTypeError(
            f"Tensors of type {data_type_name(data_type)} cannot be shown or checked."
        ) from None


def is_numeric_data_type(data_type: int) -> bool:
    return data_type in _DT_TO_NUMPY_NAME


def data_type_of(dtype: np.dtype | type | str) -> int:
    """The `DataType` number of a numpy dtype (bfloat16 → our private number)."""
    import numpy as np

    dt = np.dtype(dtype)
    try:
        return _tables().numpy_to_dt[dt.newbyteorder("=") if dt.byteorder not in "=|" else dt]
    except KeyError:
        raise UnsupportedDataTypeError(
            f"Tensors of numpy type {dtype_label(dt)} have no MindSpore DataType."
        ) from None


def dtype_from_dump_name(name: str) -> np.dtype | None:
    """The original dtype named by a 2.4+ dump file name component (`Float32`, `BFloat16`,
    `Int64`, `Bool`…), or None when the name is not a numeric type we know.
    Note `BFloat16`/`Int4`/`UInt1` files *store* float32/int8/uint8 (see `storage_dtype`)."""
    tables = _tables()
    return tables.dump_names.get(name) or tables.dump_names_lower.get(name.lower())


def dump_name_of(dtype: np.dtype | type | str) -> str:
    """The 2.4+ dump file name component for a dtype (`float32` → `Float32`)."""
    import numpy as np

    dt = np.dtype(dtype)
    if dt.byteorder not in "=|":
        dt = dt.newbyteorder("=")
    try:
        return _tables().numpy_to_dump_name[dt]
    except KeyError:
        raise UnsupportedDataTypeError(
            f"Tensors of numpy type {dtype_label(dt)} cannot be written to a dump."
        ) from None


def storage_dtype(dtype: np.dtype | type | str) -> np.dtype:
    """What MindSpore 2.4+ writes to the `.npy` for a tensor of `dtype`: bfloat16 becomes
    float32 (numpy has no native bfloat16 `descr`), everything else is kept."""
    import numpy as np

    dt = np.dtype(dtype)
    return np.dtype(np.float32) if dt == _tables().bfloat16 else dt


def dtype_from_descr(descr: str) -> np.dtype:
    """The dtype of an `.npy` header `descr` (`<f4`, `|b1`…) among the codes of spec §5.2."""
    code = descr.lstrip("<>|=")
    if code not in SUPPORTED_DESCR_CODES:
        raise UnsupportedDataTypeError(f"The npy data type {descr!r} is not supported.")
    import numpy as np

    return np.dtype(descr)


def dtype_label(dtype: DTypeLike | int) -> str:
    """A short lower-case name for the UI: `float32`, `bfloat16`, `bool`; a DataType number
    is decoded first (`11` → `float32`, `13` → `DT_STRING`: no numpy needed for a number)."""
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return _DT_TO_NUMPY_NAME.get(dtype) or data_type_name(dtype)
    import numpy as np

    dt = np.dtype(cast("DTypeLike", dtype))  # what is left once DataType numbers are out
    if dt == _tables().bfloat16:
        return "bfloat16"
    if dt == np.bool_:
        return "bool"
    return dt.name


def _is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt == _tables().bfloat16


# ========================================================================== slices
class SliceError(ValueError):
    """A slice typed by the user that does not fit the tensor; the message is one sentence."""


Index = tuple[int | slice, ...]

MAX_SLICED_DIMS = 2  # spec §6.5: the table view is 2-D
_INT = re.compile(r"[+-]?\d+")


def parse_slice(text: str, shape: tuple[int, ...], max_ranges: int = MAX_SLICED_DIMS) -> Index:
    """Parse a MindInsight slice string (spec §6.5) into a numpy index for `shape`.

    `"[0, :, 1:10, ::-1]"` → `(0, slice(None), slice(1, 10), slice(None, None, -1))`.
    Rules: brackets required; exactly one entry per dimension (`[]` for a scalar); each entry
    an integer (negatives count from the end) or `start:stop[:step]` with optional parts;
    at most two entries with `:`. Integers must be in range; slice bounds are clamped as in
    Python. Our one extension: an empty (or blank) text means `default_slice(shape)`, so
    clearing the slice box goes back to the view the tensor opened with. No `...`/`None`
    shorthand is accepted: a short entry list is rejected rather than guessed at.
    `max_ranges` lifts the 2-D limit for printers that are not a table (`pt`).
    """
    stripped = text.strip()
    if not stripped:
        return default_slice(shape)
    if not (stripped.startswith("[") and stripped.endswith("]")) or len(stripped) < 2:
        raise SliceError("A slice must start with '[' and end with ']', like [0, :, :].")
    body = stripped[1:-1].strip()
    rank = len(shape)
    entries = [] if not body else [e.strip() for e in body.split(",")]
    if len(entries) != rank:
        if rank == 0:
            raise SliceError(
                f"The tensor is a scalar, so its slice is [] (got {len(entries)} entries)."
            )
        raise SliceError(
            f"The slice has {len(entries)} {'entry' if len(entries) == 1 else 'entries'} "
            f"but the tensor has {rank} {'dimension' if rank == 1 else 'dimensions'}."
        )
    index: list[int | slice] = []
    sliced = 0
    for dim, (entry, size) in enumerate(zip(entries, shape, strict=True)):
        if not entry:
            raise SliceError(f"Entry {dim} of the slice is empty; use ':' to take every element.")
        if ":" in entry:
            sliced += 1
            index.append(_parse_range(entry, dim))
        else:
            index.append(_parse_int(entry, dim, size))
    if sliced > max_ranges:
        raise SliceError(
            f"At most {max_ranges} entries can be ranges with ':' (the table is 2-D); "
            f"this slice has {sliced}."
        )
    return tuple(index)


def _parse_int(entry: str, dim: int, size: int) -> int:
    if not _INT.fullmatch(entry):
        raise SliceError(f"Entry {dim} of the slice, {entry!r}, is not an integer or a range.")
    value = int(entry)
    if not -size <= value < size:
        raise SliceError(f"Index {value} is out of range for dimension {dim} of size {size}.")
    return value


def _parse_range(entry: str, dim: int) -> slice:
    parts = [p.strip() for p in entry.split(":")]
    if len(parts) > 3:
        raise SliceError(f"Entry {dim} of the slice, {entry!r}, has more than two ':'.")
    values: list[int | None] = []
    for part in parts:
        if not part:
            values.append(None)
        elif _INT.fullmatch(part):
            values.append(int(part))
        else:
            raise SliceError(
                f"Entry {dim} of the slice, {entry!r}, has a bound that is not an integer."
            )
    while len(values) < 3:
        values.append(None)
    start, stop, step = values
    if step == 0:
        raise SliceError(f"The step of entry {dim} of the slice cannot be zero.")
    return slice(start, stop, step)


def format_slice(index: Index) -> str:
    """The text form of an index, as `parse_slice` reads it back: `[0, :, 1:10:2]`."""

    def one(item: int | slice) -> str:
        if isinstance(item, slice):
            start = "" if item.start is None else str(item.start)
            stop = "" if item.stop is None else str(item.stop)
            text = f"{start}:{stop}"
            return f"{text}:{item.step}" if item.step is not None else text
        return str(item)

    return "[" + ", ".join(one(i) for i in index) + "]"


def default_slice(shape: tuple[int, ...]) -> Index:
    """The slice the viewer opens with: the last two dimensions whole, the others at 0.
    A tensor with an empty leading dimension cannot be indexed at 0, so it gets every
    dimension whole (the selection is empty either way)."""
    rank = len(shape)
    lead = max(rank - MAX_SLICED_DIMS, 0)
    if any(size == 0 for size in shape[:lead]):
        return tuple(slice(None) for _ in shape)
    return tuple([0] * lead + [slice(None)] * (rank - lead))


def selection_shape(index: Index, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Shape of `array[index]` for an array of `shape`, computed without touching data (to
    check the 100,000-element limit before reading anything)."""
    out: list[int] = []
    for item, size in zip(index, shape, strict=False):
        if isinstance(item, slice):
            out.append(len(range(*item.indices(size))))
    return tuple(out)


# ====================================================================== statistics
CHUNK_ELEMENTS = 8 * 1024 * 1024  # ≈ 64 MiB of float64 temporaries per chunk at most


def iter_chunks(
    array: np.ndarray, chunk: int = CHUNK_ELEMENTS, *, by_rows: bool = False
) -> Iterator[np.ndarray]:
    """Yield 1-D pieces of `array` in C order, each at most `chunk` elements (more only when
    one row of the first axis is larger). Contiguous arrays (memory maps of dump files) are
    sliced without copying; others are copied one block of rows at a time. `by_rows=True`
    always cuts at row-block boundaries, so two arrays of one shape yield aligned pieces."""
    import numpy as np

    if array.ndim == 0:
        yield array.reshape(1)
        return
    if array.size == 0:
        return
    if array.flags.c_contiguous and not by_rows:
        flat = array.reshape(-1)
        for start in range(0, flat.size, chunk):
            yield flat[start : start + chunk]
        return
    row = array.size // array.shape[0]
    rows = max(1, chunk // max(row, 1))
    for start in range(0, array.shape[0], rows):
        yield np.ascontiguousarray(array[start : start + rows]).reshape(-1)


def _as_computable(chunk: np.ndarray) -> np.ndarray:
    """bfloat16 and float16 go through float32 so every ufunc is available and fast."""
    import numpy as np

    if chunk.dtype == _tables().bfloat16 or chunk.dtype == np.float16:
        return chunk.astype(np.float32)
    return chunk


@dataclass(frozen=True)
class TensorStatistics:
    """Whole-tensor statistics shown by the viewer (spec §6.5 `overall_*`, §3.7 counters).

    min/max/mean/std are over finite values only (None when there are none, and for bool);
    `std` is the population standard deviation. `negative_count`/`positive_count` count
    finite values < 0 / > 0, so zero + negative + positive + NaN + ±Inf = count.

    Complex tensors (`magnitude`): min/max/mean/std are those of the magnitudes |z| of the
    finite elements; an element is NaN when either part is, else +Inf when either part is
    infinite (|z| = +inf), so its -Inf and negative counts are 0 — the condition engine's
    rule (`scan_engine.evaluate`)."""

    shape: tuple[int, ...]
    dtype: str
    count: int
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    nan_count: int = 0
    pos_inf_count: int = 0
    neg_inf_count: int = 0
    zero_count: int = 0
    negative_count: int = 0
    positive_count: int = 0
    true_count: int | None = None  # bool tensors only
    false_count: int | None = None
    magnitude: bool = False  # complex tensors: min/max/mean/std are those of |z|

    @property
    def is_bool(self) -> bool:
        return self.true_count is not None

    def summary_line(self) -> str:
        """One line for hit lists and headers: `float32<6,1,5,5> ∈[-0.19, 0.2] μ=0.003 σ=0.11`
        followed by `NaN:3 +Inf:1 -Inf:2` when there are any."""
        head = f"{self.dtype}<{','.join(str(d) for d in self.shape)}>"
        parts = [head]
        if self.count == 0:
            parts.append("empty")
        elif self.is_bool:
            parts.append(f"T:{self.true_count} F:{self.false_count}")
        elif self.min is not None and self.max is not None:
            of = "|z|" if self.magnitude else ""
            parts.append(f"{of}∈[{_short(self.min)}, {_short(self.max)}]")
            if self.mean is not None:
                parts.append(f"μ={_short(self.mean)}")
            if self.std is not None:
                parts.append(f"σ={_short(self.std)}")
        for label, value in (
            ("NaN", self.nan_count),
            ("+Inf", self.pos_inf_count),
            ("-Inf", self.neg_inf_count),
        ):
            if value:
                parts.append(f"{label}:{value}")
        return " ".join(parts)


def _short(value: float) -> str:
    return f"{value:.3g}"


@dataclass
class _Accumulator:
    """Running statistics merged chunk by chunk (Chan et al. for mean and M2)."""

    count: int = 0
    finite: int = 0
    mean: float = 0.0
    m2: float = 0.0
    lo: float = math.inf
    hi: float = -math.inf
    nan: int = 0
    pos_inf: int = 0
    neg_inf: int = 0
    zero: int = 0
    neg: int = 0
    true: int = 0

    def add_numbers(self, values: np.ndarray) -> None:
        """`values` are finite numbers (any real dtype)."""
        import numpy as np

        n = int(values.size)
        if n == 0:
            return
        self.lo = min(self.lo, float(values.min()))
        self.hi = max(self.hi, float(values.max()))
        self.zero += int(np.count_nonzero(values == 0))
        if values.dtype.kind != "u":
            self.neg += int(np.count_nonzero(values < 0))
        work = values.astype(np.float64)
        chunk_mean = float(work.mean())
        work -= chunk_mean
        np.square(work, out=work)
        chunk_m2 = float(work.sum())
        total = self.finite + n
        delta = chunk_mean - self.mean
        self.mean += delta * n / total
        self.m2 += chunk_m2 + delta * delta * self.finite * n / total
        self.finite = total


def tensor_statistics(array: np.ndarray, chunk: int = CHUNK_ELEMENTS) -> TensorStatistics:
    """Statistics of a whole tensor in one chunked pass (memory stays O(chunk))."""
    import numpy as np

    dt = array.dtype
    if not (dt.kind in "biufc" or dt == _tables().bfloat16):
        raise UnsupportedDataTypeError(
            f"Statistics of {dtype_label(dt)} tensors are not supported."
        )
    shape = tuple(int(d) for d in array.shape)
    count = int(array.size)
    acc = _Accumulator(count=count)
    if dt.kind == "c":
        for piece in iter_chunks(array, chunk):
            mags, nan, inf = _finite_magnitudes(piece)
            acc.nan += nan
            acc.pos_inf += inf
            acc.add_numbers(mags)
        has_finite = acc.finite > 0
        return TensorStatistics(
            shape=shape,
            dtype=dtype_label(dt),
            count=count,
            min=acc.lo if has_finite else None,
            max=acc.hi if has_finite else None,
            mean=acc.mean if has_finite else None,
            std=math.sqrt(acc.m2 / acc.finite) if has_finite else None,
            nan_count=acc.nan,
            pos_inf_count=acc.pos_inf,
            zero_count=acc.zero,
            positive_count=acc.finite - acc.zero,
            magnitude=True,
        )
    if dt == np.bool_:
        for piece in iter_chunks(array, chunk):
            acc.true += int(np.count_nonzero(piece))
        return TensorStatistics(
            shape=shape,
            dtype="bool",
            count=count,
            zero_count=count - acc.true,
            positive_count=acc.true,
            true_count=acc.true,
            false_count=count - acc.true,
        )
    floating = _is_float(dt)
    for piece in iter_chunks(array, chunk):
        values = _as_computable(piece)
        if floating:
            finite = np.isfinite(values)
            n_finite = int(np.count_nonzero(finite))
            if n_finite != values.size:
                acc.nan += int(np.count_nonzero(np.isnan(values)))
                acc.pos_inf += int(np.count_nonzero(np.isposinf(values)))
                acc.neg_inf += int(np.count_nonzero(np.isneginf(values)))
                values = values[finite]
        acc.add_numbers(values)
    has_finite = acc.finite > 0
    return TensorStatistics(
        shape=shape,
        dtype=dtype_label(dt),
        count=count,
        min=acc.lo if has_finite else None,
        max=acc.hi if has_finite else None,
        mean=acc.mean if has_finite else None,
        std=math.sqrt(acc.m2 / acc.finite) if has_finite else None,
        nan_count=acc.nan,
        pos_inf_count=acc.pos_inf,
        neg_inf_count=acc.neg_inf,
        zero_count=acc.zero,
        negative_count=acc.neg,
        positive_count=acc.finite - acc.zero - acc.neg,
    )


def _finite_magnitudes(piece: np.ndarray) -> tuple[np.ndarray, int, int]:
    """(float64 |z| of the finite elements, #elements with a NaN part, #other elements with
    an infinite part) of a 1-D complex piece. The parts are widened before hypot, so the
    magnitude of finite complex64 parts never overflows."""
    import numpy as np

    re, im = piece.real, piece.imag
    finite = np.isfinite(re) & np.isfinite(im)
    nan = inf = 0
    if not finite.all():
        nan_mask = np.isnan(re) | np.isnan(im)
        nan = int(np.count_nonzero(nan_mask))
        inf = int(piece.size - np.count_nonzero(finite)) - nan
        re, im = re[finite], im[finite]
    mags = np.hypot(re.astype(np.float64), im.astype(np.float64))
    return mags, nan, inf


@dataclass(frozen=True)
class Histogram:
    """Counts of finite values in `len(edges) - 1` equal bins; the last bin is closed."""

    counts: np.ndarray  # int64
    edges: np.ndarray  # float64

    @property
    def total(self) -> int:
        return int(self.counts.sum())


def histogram(
    array: np.ndarray,
    bins: int = 20,
    *,
    value_range: tuple[float, float] | None = None,
    stats: TensorStatistics | None = None,
    chunk: int = CHUNK_ELEMENTS,
) -> Histogram:
    """Histogram of the finite values (bool counts as 0/1; complex: the magnitudes |z| of
    the finite elements, as `tensor_statistics` takes them). The range is `value_range`, else
    the min/max from `stats` (pass them to save a pass), else computed here. Values outside
    an explicit range are not counted. A tensor with no finite value gives zero bins."""
    import numpy as np

    if bins < 1:
        raise ValueError("A histogram needs at least one bin.")
    if value_range is None:
        st = stats if stats is not None else tensor_statistics(array, chunk)
        if st.is_bool:
            value_range = (0.0, 1.0)
        elif st.min is None or st.max is None:
            return Histogram(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        else:
            value_range = (st.min, st.max)
    lo, hi = float(value_range[0]), float(value_range[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"The histogram range [{lo}, {hi}] is not a finite interval.")
    if lo == hi:  # numpy's convention for a single value
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    counts = np.zeros(bins, dtype=np.int64)
    floating = _is_float(array.dtype)
    for piece in iter_chunks(array, chunk):
        if piece.dtype.kind == "c":
            counts += np.histogram(_finite_magnitudes(piece)[0], bins=edges)[0]
            continue
        values = _as_computable(piece)
        if values.dtype == np.bool_:
            values = values.view(np.uint8)
        if floating:
            values = values[np.isfinite(values)]
        counts += np.histogram(values, bins=edges)[0]
    return Histogram(counts, edges)


# ======================================================================== compare
class CompareError(ValueError):
    """Two tensors that cannot be compared; the message is one sentence."""


@dataclass(frozen=True)
class Comparison:
    """Current vs previous step (spec §6.5). `diff` = current − previous with every element
    whose |diff| ≤ `boundary` shown as 0; statistics of the three tensors."""

    current: np.ndarray
    previous: np.ndarray
    diff: np.ndarray
    tolerance: float
    boundary: float
    current_stats: TensorStatistics
    previous_stats: TensorStatistics
    diff_stats: TensorStatistics


def _diff_dtype(dt: np.dtype) -> np.dtype:
    """A signed type wide enough for the difference: unsigned and bool would wrap, float16
    and bfloat16 would overflow early; 32/64-bit integers need float64 to stay exact-ish."""
    import numpy as np

    if dt == np.float64 or (dt.kind in "iu" and dt.itemsize >= 4):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def compare(
    current: np.ndarray,
    previous: np.ndarray,
    tolerance: float = 0.0,
    *,
    chunk: int = CHUNK_ELEMENTS,
) -> Comparison:
    """Diff a tensor against its previous-step value (spec §6.5).

    boundary = tolerance × max(|min diff|, |max diff|) over the *finite* differences (one
    ±Inf would otherwise make the boundary infinite and blank the whole diff)."""
    import numpy as np

    if not (0.0 <= tolerance <= 1.0) or math.isnan(tolerance):
        raise CompareError(f"The tolerance must be between 0 and 1, not {tolerance}.")
    if current.shape != previous.shape:
        raise CompareError(
            f"The tensor has shape {tuple(current.shape)} but its previous-step value has "
            f"shape {tuple(previous.shape)}, so they cannot be compared."
        )
    if current.dtype != previous.dtype:
        raise CompareError(
            f"The tensor is {dtype_label(current.dtype)} but its previous-step value is "
            f"{dtype_label(previous.dtype)}, so they cannot be compared."
        )
    dt = current.dtype
    if not (dt.kind in "biuf" or dt == _tables().bfloat16):
        raise CompareError(f"Tensors of type {dtype_label(dt)} cannot be compared.")
    out_dt = _diff_dtype(dt)
    diff = np.empty(current.shape, dtype=out_dt)
    flat_diff = diff.reshape(-1)
    pos = 0
    # both arrays must be cut at the same places; row blocks guarantee it whatever their layout
    by_rows = not (current.flags.c_contiguous and previous.flags.c_contiguous)
    pieces = zip(
        iter_chunks(current, chunk, by_rows=by_rows),
        iter_chunks(previous, chunk, by_rows=by_rows),
        strict=True,
    )
    for cur_piece, prev_piece in pieces:
        n = cur_piece.size
        target = flat_diff[pos : pos + n]
        with np.errstate(over="ignore", invalid="ignore"):
            np.subtract(cur_piece.astype(out_dt), prev_piece.astype(out_dt), out=target)
        pos += n
    diff_stats = tensor_statistics(diff, chunk)
    if diff_stats.min is None or diff_stats.max is None:
        boundary = 0.0
    else:
        boundary = tolerance * max(abs(diff_stats.min), abs(diff_stats.max))
    for piece in iter_chunks(diff, chunk):
        # pieces of a fresh C-contiguous array are views, so this edits `diff` in place
        piece[np.abs(piece) <= boundary] = 0
    if boundary > 0:
        diff_stats = tensor_statistics(diff, chunk)
    return Comparison(
        current=current,
        previous=previous,
        diff=diff,
        tolerance=tolerance,
        boundary=boundary,
        current_stats=tensor_statistics(current, chunk),
        previous_stats=tensor_statistics(previous, chunk),
        diff_stats=diff_stats,
    )


def write_npy(handle: BinaryIO, array: np.ndarray) -> None:
    """Write `array` as `.npy` without holding a converted copy of it in memory.

    bfloat16 has no `.npy` type code (numpy would write an opaque `|V2`), so it is stored
    as float32 like MindSpore's own dumps do, converted one chunk at a time.
    """
    import numpy as np

    if array.dtype != _tables().bfloat16:
        # np.save streams non-contiguous views through a small buffer, never a full copy.
        np.save(handle, array, allow_pickle=False)
        return
    header = {"descr": "<f4", "fortran_order": False, "shape": tuple(array.shape)}
    np.lib.format.write_array_header_2_0(handle, header)
    for piece in iter_chunks(array, by_rows=True):
        handle.write(piece.astype("<f4").tobytes())
