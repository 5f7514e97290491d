"""Textual-free helpers of the tensor viewer: slice geometry, cell formats, sampling,
heatmap downsampling.

Everything here reads only what it is asked for: the viewer hands in read-only memory maps
of up to 10⁸+ elements, so a helper that touched every element on the UI thread would
freeze the terminal. Whole-slice work (`block_extreme`) is meant for workers.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from tuidebug.core.tensor import BFLOAT16, Index, format_slice
from tuidebug.tui.kit.colormap import (
    CODE_NAN,
    CODE_NEG_INF,
    CODE_POS_INF,
    DEFAULT_SPECIAL_ORDER,
    SpecialOrder,
)

# Cell classes: how a table cell is styled.
CELL_PLAIN = 0
CELL_NAN = 1
CELL_POS_INF = 2
CELL_NEG_INF = 3

SAMPLE_SIDE = 128  # a bounded sample is at most SAMPLE_SIDE² elements of the slice
EXACT_LIMIT = 1 << 20  # slices up to this many elements are read whole for exact ranges

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """A small least-recently-used map (formatted rows, rendered heatmap lines)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.capacity:
            self._data.popitem(last=False)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


# ======================================================================= geometry
@dataclass(frozen=True)
class SliceGeometry:
    """How a numpy index of a tensor maps onto the 2-D grid the viewer draws.

    The first sliced dimension gives the rows and the second the columns. A slice with a
    single range is drawn as one column (row = element), a scalar selection as one cell.
    """

    shape: tuple[int, ...]
    index: Index
    rows: int
    cols: int
    row_dim: int | None
    col_dim: int | None

    @classmethod
    def of(cls, shape: tuple[int, ...], index: Index) -> SliceGeometry:
        sliced = [d for d, item in enumerate(index) if isinstance(item, slice)]
        lengths = [len(range(*index[d].indices(shape[d]))) for d in sliced]  # type: ignore[union-attr]
        row_dim = sliced[0] if sliced else None
        col_dim = sliced[1] if len(sliced) > 1 else None
        rows = lengths[0] if sliced else 1
        cols = lengths[1] if len(sliced) > 1 else 1
        return cls(tuple(shape), tuple(index), rows, cols, row_dim, col_dim)

    @property
    def text(self) -> str:
        return format_slice(self.index)

    @property
    def size(self) -> int:
        return self.rows * self.cols

    def view(self, array: np.ndarray) -> np.ndarray:
        """The selection as a 2-D view of `array` (basic indexing: never a copy)."""
        # The trailing Ellipsis makes an all-integer index return a 0-d view, not a scalar.
        # (built apart: mypy takes the parenthesized star inside [] for 3.11's `a[*i]`)
        index = (*self.index, Ellipsis)
        selected = array[index]
        return selected.reshape(self.rows, self.cols) if selected.ndim < 2 else selected

    def _position(self, dim: int, k: int) -> int:
        start, _stop, step = self.index[dim].indices(self.shape[dim])  # type: ignore[union-attr]
        return start + k * step

    def tensor_index(self, row: int, col: int) -> tuple[int, ...]:
        """The full tensor index of grid cell (row, col)."""
        out: list[int] = []
        for dim, item in enumerate(self.index):
            if isinstance(item, slice):
                out.append(self._position(dim, row if dim == self.row_dim else col))
            else:
                out.append(item % self.shape[dim])
        return tuple(out)

    def locate(self, tensor_index: Sequence[int]) -> tuple[int, int] | None:
        """The grid cell of a full tensor index, or None when the slice does not hold it."""
        row = col = 0
        for dim, (item, value) in enumerate(zip(self.index, tensor_index, strict=True)):
            size = self.shape[dim]
            if not -size <= value < size:
                return None
            value %= size
            if isinstance(item, slice):
                start, _stop, step = item.indices(size)
                k, rest = divmod(value - start, step)
                if rest or not 0 <= k < len(range(*item.indices(size))):
                    return None
                if dim == self.row_dim:
                    row = k
                else:
                    col = k
            elif item % size != value:
                return None
        return row, col


# ==================================================================== cell format
def is_floating(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype == BFLOAT16


def as_float64(values: np.ndarray) -> np.ndarray:
    """Any real array as float64 (bool → 0/1); used on bounded pieces only."""
    if values.dtype == np.bool_:
        return values.astype(np.float64)
    return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True)
class CellFormat:
    """A fixed-width number format for one table (tfdbg/numpy style, 4 decimals)."""

    kind: str  # "float" | "int" | "bool" | "complex"
    width: int
    spec: str  # a format spec without width, e.g. ".4f", ".4e", "d"

    def cells(self, values: np.ndarray) -> list[tuple[str, int]]:
        """Right-aligned texts and cell classes of a bounded 1-D piece."""
        width = self.width
        if self.kind == "bool":
            return [(("True" if v else "False").rjust(width), CELL_PLAIN) for v in values.tolist()]
        if self.kind == "complex":
            return [(_fit(f"{v:.4g}", width), CELL_PLAIN) for v in values.tolist()]
        spec = f">{width}{self.spec}"
        out: list[tuple[str, int]] = []
        items = values.tolist() if self.kind == "int" else as_float64(values).tolist()
        for value in items:
            if value != value:
                out.append(("nan".rjust(width), CELL_NAN))
            elif value == math.inf:
                out.append(("inf".rjust(width), CELL_POS_INF))
            elif value == -math.inf:
                out.append(("-inf".rjust(width), CELL_NEG_INF))
            else:
                text = format(value, spec)
                out.append((text if len(text) <= width else _squeeze(value, width), CELL_PLAIN))
        return out


def _fit(text: str, width: int) -> str:
    return text.rjust(width) if len(text) <= width else "#" * width


def _squeeze(value: float, width: int) -> str:
    """A value the sample missed: scientific notation with as many digits as fit, or ###
    (never a truncated number, which would read as a different value)."""
    for precision in range(4, -1, -1):
        text = f"{float(value):.{precision}e}"
        if len(text) <= width:
            return text.rjust(width)
    return "#" * width


MIN_FLOAT_WIDTH = 7  # "-1e+308", so any float64 fits after squeezing


def choose_format(dtype: np.dtype, low: float | None, high: float | None) -> CellFormat:
    """Pick one format for values in [low, high] (the finite range; None = no finite value).

    Fixed-point with 4 decimals for magnitudes in [1e-3, 1e6), scientific otherwise, like
    numpy's printing heuristics but biased to the narrow fixed form a grid wants.
    """
    if dtype == np.bool_:
        return CellFormat("bool", 5, "")
    if dtype.kind == "c":
        return CellFormat("complex", 22, "")
    if dtype.kind in "iu":
        lo = int(low) if low is not None else 0
        hi = int(high) if high is not None else 0
        return CellFormat("int", max(len(str(lo)), len(str(hi)), 1), "d")
    if low is None or high is None:
        return CellFormat("float", MIN_FLOAT_WIDTH, ".4f")
    magnitude = max(abs(low), abs(high))
    sign = 1 if low < 0 else 0
    if magnitude != 0 and (magnitude >= 1e6 or magnitude < 1e-3):
        exponent = len(str(abs(math.floor(math.log10(magnitude)))))
        return CellFormat("float", max(MIN_FLOAT_WIDTH, 6 + 2 + max(exponent, 2) + sign), ".4e")
    digits = len(str(int(magnitude)))
    return CellFormat("float", max(MIN_FLOAT_WIDTH, digits + 5 + sign), ".4f")


def full_value(value: object) -> str:
    """The full-precision text of one element (numpy's shortest round-trip repr)."""
    return str(value)


# ====================================================================== sampling
def sample(view: np.ndarray, side: int = SAMPLE_SIDE) -> np.ndarray:
    """A bounded, evenly strided sample of a 2-D view (the whole view when it is small).

    Striding keeps the read to about `side` rows: on a row-major memory map that is a few
    pages per sampled row instead of the whole file.
    """
    rows, cols = view.shape
    if rows * cols <= EXACT_LIMIT:
        return np.asarray(view)
    row_step = max(1, math.ceil(rows / side))
    col_step = max(1, math.ceil(cols / side))
    return np.asarray(view[::row_step, ::col_step])


def finite_range(values: np.ndarray) -> tuple[float | None, float | None]:
    """Finite min and max of a bounded array (None, None when nothing is finite)."""
    if values.size == 0:
        return None, None
    if values.dtype.kind in "iub":
        return float(values.min()), float(values.max())
    if values.dtype.kind == "c":
        return None, None
    data = as_float64(values)
    finite = data[np.isfinite(data)]
    if finite.size == 0:
        return None, None
    return float(finite.min()), float(finite.max())


def is_exact(view: np.ndarray) -> bool:
    """True when `sample(view)` is the whole view."""
    return view.size <= EXACT_LIMIT


# ================================================================== downsampling
MAX_MAGNIFY = 16


@dataclass(frozen=True)
class Zoom:
    """Heatmap scale: `factor` data elements per cell side (downsampling) or `magnify`
    cells per data element side (upsampling a small slice so it is readable); one of the
    two is always 1. Rows count in half-cells, since a `▀` cell holds two of them."""

    factor: int = 1
    magnify: int = 1

    @property
    def scale(self) -> float:
        return self.magnify / self.factor

    @property
    def label(self) -> str:
        if self.factor > 1:
            return f"1:{self.factor}"
        return f"×{self.magnify}" if self.magnify > 1 else "1:1"

    def cells(self, elements: int) -> int:
        """Cells (columns or half-rows) needed for `elements` data elements."""
        return math.ceil(elements * self.magnify / self.factor)

    def cell_of(self, element: int) -> int:
        """The first cell showing data element `element`."""
        return (element * self.magnify) // self.factor

    def element_of(self, cell: int) -> int:
        """The data element shown by cell `cell` (the block origin when downsampling)."""
        return (cell * self.factor) // self.magnify

    def elements_of(self, start: int, stop: int) -> np.ndarray:
        """Data elements shown by cells start..stop-1, as an index array."""
        return (np.arange(start, stop, dtype=np.int64) * self.factor) // self.magnify


def fit_zoom(rows: int, cols: int, width: int, height: int) -> Zoom:
    """The zoom that shows a whole rows×cols slice in width×height half-block cells:
    the smallest downsampling factor, or, for a small slice, the largest magnification."""
    width, half_rows = max(width, 1), 2 * max(height, 1)
    factor = max(1, math.ceil(cols / width), math.ceil(rows / half_rows))
    if factor > 1:
        return Zoom(factor, 1)
    return Zoom(1, max(1, min(width // max(cols, 1), half_rows // max(rows, 1), MAX_MAGNIFY)))


def zoom_levels(fit: Zoom) -> list[Zoom]:
    """Zoom steps from the fit inwards: fit, fit/2, fit/4 … 1:1, then ×2, ×4 … ×16.
    Halving from the fit keeps "zoom out" landing exactly on the whole-slice picture."""
    levels = {Zoom(max(1, fit.factor >> shift), 1) for shift in range(fit.factor.bit_length())}
    magnify = 1
    while magnify <= MAX_MAGNIFY:
        levels.add(Zoom(1, magnify))
        magnify *= 2
    levels.add(fit)
    return sorted((z for z in levels if z.scale >= fit.scale), key=lambda z: z.scale)


def block_extreme(
    view: np.ndarray,
    factor: int,
    cancelled: Callable[[], bool] | None = None,
    band_elements: int = 4 << 20,
    special_order: SpecialOrder = DEFAULT_SPECIAL_ORDER,
) -> np.ndarray | None:
    """Downsample a 2-D view by `factor` keeping each block's most alarming value.

    Per factor×factor block: the non-finite kind (NaN, +Inf, −Inf) that comes first in
    `special_order` (the rarest) among those present, else the finite value of largest
    magnitude (sign kept). Unlike striding, a single NaN or spike in a block stays
    visible. Reads the whole view in row bands; returns None when `cancelled()` says so.
    """
    rows, cols = view.shape
    out_rows, out_cols = math.ceil(rows / factor), math.ceil(cols / factor)
    image = np.empty((out_rows, out_cols), dtype=np.float64)
    bands = max(1, band_elements // max(factor * cols, 1))  # block-rows per band
    padded_cols = out_cols * factor
    for out_start in range(0, out_rows, bands):
        if cancelled is not None and cancelled():
            return None
        out_stop = min(out_rows, out_start + bands)
        chunk = as_float64(view[out_start * factor : out_stop * factor])
        n_rows = (out_stop - out_start) * factor
        if chunk.shape[0] != n_rows or chunk.shape[1] != padded_cols:
            # Pad the ragged right/bottom edge with zeros: |0| never wins the extreme.
            padded = np.zeros((n_rows, padded_cols))
            padded[: chunk.shape[0], : chunk.shape[1]] = chunk
            chunk = padded
        blocks = chunk.reshape(out_stop - out_start, factor, out_cols, factor)
        finite = np.isfinite(blocks)
        magnitudes = np.where(finite, np.abs(blocks), -1.0)
        flat = magnitudes.transpose(0, 2, 1, 3).reshape(out_stop - out_start, out_cols, -1)
        values = blocks.transpose(0, 2, 1, 3).reshape(flat.shape)
        pick = np.take_along_axis(values, flat.argmax(axis=2)[..., None], axis=2)[..., 0]
        pick = np.where(flat.max(axis=2) < 0, 0.0, pick)  # a block with no finite value
        # the last applied wins: the kinds go in from the most to the least common
        for code in reversed(special_order):
            test, value = _SPECIAL_TESTS[code]
            pick = np.where(test(values).any(axis=2), value, pick)
        image[out_start:out_stop] = pick
    return image


_SPECIAL_TESTS: dict[int, tuple[Callable[[np.ndarray], np.ndarray], float]] = {
    CODE_NAN: (np.isnan, math.nan),
    CODE_POS_INF: (np.isposinf, math.inf),
    CODE_NEG_INF: (np.isneginf, -math.inf),
}


# ===================================================================== go-to text
_GOTO = re.compile(r"^[\[(]?\s*([+-]?\d+(?:\s*,\s*[+-]?\d+)*)?\s*,?\s*[\])]?$")


def parse_index_tuple(text: str) -> tuple[int, ...] | None:
    """`3, 17`, `(3, 17)` or `[3,17]` → (3, 17); None when the text is not such a tuple."""
    match = _GOTO.match(text.strip())
    if match is None:
        return None
    body = match.group(1)
    if body is None:
        return ()
    return tuple(int(part) for part in body.split(","))


# ===================================================================== histogram
SPARK = " ▁▂▃▄▅▆▇█"


def sparkline(counts: Sequence[int] | np.ndarray) -> str:
    """One character per bin, its height proportional to the count; any non-empty bin
    gets at least the lowest bar so rare values (a few outliers) stay visible."""
    values = np.asarray(counts, dtype=np.float64)
    if values.size == 0:
        return ""
    top = float(values.max())
    if top <= 0:
        return SPARK[0] * values.size
    levels = np.ceil(values / top * (len(SPARK) - 1)).astype(int)
    return "".join(SPARK[level] for level in levels.tolist())


def short_number(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"
