"""Find elements of a tensor slice by value: NaN, ±Inf, zero, comparisons and ranges.

The tensor viewer's `f` / `]` / `[` keys sit on this module. A search spec such as `nan`,
`> 1e3` or `[-1, 1)` is parsed once (`parse_search`) into a `SearchSpec`, compiled for the
array's dtype into a `Matcher`, and the array is walked in C order one chunk at a time
(`find_match`, `find_next`, `find_previous`, `count_matches`). Arrays are often read-only
memory maps of 10⁸+ elements, so no pass ever holds more than one chunk's temporaries,
and `cancelled()` is asked between chunks so a worker can be stopped promptly.

Comparisons are exact and follow IEEE 754: the spec's number is rounded *outwards* to the
array's precision (float16/bfloat16/float32 compare in float32, wider floats natively,
integers and bools as integers), so `x > 0.1` on float32 means what it says about the
stored value, and NaN matches nothing but `nan`, `nonfinite` and `!=`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tuidebug.core.tensor import bfloat16_dtype

if TYPE_CHECKING:
    import numpy as np  # imported where a tensor is searched: not at the start (issue 28)

DEFAULT_CHUNK = 1 << 20  # elements per chunk: 1 MiB of bool mask, a few MiB of values

Number = int | float  # integers stay exact (int64 ids beyond 2**53)
Special = Literal["nan", "inf", "+inf", "-inf", "nonfinite"]
SPECIALS: tuple[Special, ...] = ("nan", "inf", "+inf", "-inf", "nonfinite")

GRAMMAR = (
    "expected nan, inf, +inf, -inf, nonfinite, zero, a comparison like '> 1e3' "
    "or a range like '[-1, 1]'"
)


class SearchSpecError(ValueError):
    """A search spec the user typed that cannot be read; the message is one sentence."""


class SearchCancelled(Exception):
    """The caller's `cancelled()` said stop (raised between chunks)."""


# ======================================================================== the spec
@dataclass(frozen=True)
class SearchSpec:
    """What to look for, as parsed from the user's text.

    Either a `special` class of values (NaN, Inf …) or an interval of numbers: `low` ..
    `high` with per-end inclusiveness (±inf for an open end), optionally `negated` (`!=`).
    `zero` and `== t` are the one-point interval [t, t].
    """

    text: str
    special: Special | None = None
    low: Number = -math.inf
    low_inclusive: bool = True
    high: Number = math.inf
    high_inclusive: bool = True
    negated: bool = False

    def __str__(self) -> str:
        return self.text

    def matcher(self, dtype: np.dtype) -> Matcher:
        """This spec compiled for arrays of `dtype`."""
        import numpy as np

        return Matcher(self, np.dtype(dtype))


# patterns, compiled (and cached) by `re` at the first search: compiling them at import
# cost the TUI's start ~1 ms (issue 28)
_NUMBER = r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf(?:inity)?)"
_COMPARISON = rf"(?i)^(>=|<=|==|!=|=|>|<)\s*({_NUMBER})$"
_RANGE = rf"(?i)^([\[(])\s*({_NUMBER})\s*,\s*({_NUMBER})\s*([\])])$"
_NAN_NUMBER = r"(?i)^(>=|<=|==|!=|=|>|<)\s*[+-]?nan$|^[\[(].*\bnan\b"
_INTEGER = r"^[+-]?\d+$"


def _number(text: str) -> Number:
    """An integer literal stays an int (exact for any int64), anything else a float."""
    return int(text) if re.match(_INTEGER, text) else float(text)


_ALIASES: dict[str, str] = {"non-finite": "nonfinite", "±inf": "inf", "+-inf": "inf"}


def parse_search(text: str) -> SearchSpec:
    """Read a search spec (case-insensitive); raise `SearchSpecError` with one sentence.

    `nan`, `inf` (either sign), `+inf`, `-inf`, `nonfinite` (NaN or ±Inf), `zero`,
    comparisons `> t`, `>= t`, `< t`, `<= t`, `== t` (or `= t`), `!= t`, and ranges
    `[a, b]` (closed), `(a, b)` (open) or mixed `[a, b)` / `(a, b]` like tfdbg's.
    """
    stripped = " ".join(text.split())
    word = stripped.lower()
    word = _ALIASES.get(word, word)
    if word in SPECIALS:
        return SearchSpec(word, special=word)
    if word == "zero":
        return SearchSpec(word, low=0.0, high=0.0)
    comparison = re.match(_COMPARISON, stripped)
    if comparison is not None:
        op, value = comparison.group(1), _number(comparison.group(2))
        op = "==" if op == "=" else op
        canonical = f"{op} {comparison.group(2).lower()}"
        if op == ">":
            return SearchSpec(canonical, low=value, low_inclusive=False)
        if op == ">=":
            return SearchSpec(canonical, low=value)
        if op == "<":
            return SearchSpec(canonical, high=value, high_inclusive=False)
        if op == "<=":
            return SearchSpec(canonical, high=value)
        return SearchSpec(canonical, low=value, high=value, negated=op == "!=")
    bounds = re.match(_RANGE, stripped)
    if bounds is not None:
        opening, start, stop, closing = bounds.groups()
        low, high = _number(start), _number(stop)
        canonical = f"{opening}{start.lower()}, {stop.lower()}{closing}"
        if low > high:
            raise SearchSpecError(f"The range {canonical} is empty: its start is above its end.")
        return SearchSpec(
            canonical,
            low=low,
            low_inclusive=opening == "[",
            high=high,
            high_inclusive=closing == "]",
        )
    if re.search(_NAN_NUMBER, stripped):
        raise SearchSpecError(
            f"Cannot compare with NaN in {stripped!r}: NaN equals nothing, "
            "so search for 'nan' on its own."
        )
    shown = stripped or text
    raise SearchSpecError(f"Cannot read {shown!r} as a search: {GRAMMAR}.")


# ==================================================================== the matcher
def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype == bfloat16_dtype()


def _nearest(value: Number, kind: type[np.floating]) -> np.floating:
    """`value` rounded to `kind`; at most one ulp off (an int may be rounded twice), which
    the callers' single correction step absorbs."""
    import numpy as np

    try:
        with np.errstate(over="ignore"):
            return kind(value)
    except OverflowError:  # an integer literal beyond float64's range
        return kind(math.inf if value > 0 else -math.inf)


def _floor_to(value: Number, kind: type[np.floating]) -> np.floating:
    """The largest value of type `kind` that is ≤ `value` (±inf stay ±inf)."""
    import numpy as np

    rounded = _nearest(value, kind)
    # float vs int and float vs float comparisons are exact in Python.
    if float(rounded) > value:
        rounded = np.nextafter(rounded, kind(-np.inf))
    return rounded


def _ceil_to(value: Number, kind: type[np.floating]) -> np.floating:
    """The smallest value of type `kind` that is ≥ `value`."""
    import numpy as np

    rounded = _nearest(value, kind)
    if float(rounded) < value:
        rounded = np.nextafter(rounded, kind(np.inf))
    return rounded


if TYPE_CHECKING:
    Test = tuple[np.ufunc, object]  # (comparison ufunc, right-hand scalar)


class Matcher:
    """A `SearchSpec` compiled for one dtype: `mask(values)` → bool array of matches.

    `constant` is True/False when the answer is the same for every element of the dtype
    (`nan` on integers, `> -1` on bools …): scans then skip reading the data at all.
    """

    def __init__(self, spec: SearchSpec, dtype: np.dtype) -> None:
        import numpy as np

        self.spec = spec
        self.dtype = dtype
        self.constant: bool | None = None
        self._special: Special | None = None
        self._tests: list[Test] = []
        self._negated = spec.negated
        # float16/bfloat16 have few ufunc loops (bfloat16 goes through Python-level
        # casts): compare their exact float32 images instead.
        self._compute: np.dtype | None = None
        if dtype.kind == "b":
            self._compute = np.dtype(np.uint8)
            self._compile_integer(np.iinfo(np.uint8).min, 1)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            self._compile_integer(int(info.min), int(info.max))
        elif _is_float(dtype):
            if dtype.itemsize < 4:
                self._compute = np.dtype(np.float32)
            self._compile_float((self._compute or dtype).type)
        else:
            raise SearchSpecError(f"Tensors of type {dtype} cannot be searched.")

    # ------------------------------------------------------------------ compiling
    def _compile_integer(self, lowest: int, highest: int) -> None:
        import numpy as np

        spec = self.spec
        if spec.special is not None:
            self.constant = False  # integers are never NaN or infinite
            return
        # The interval as whole numbers: lo ≤ x ≤ hi (None = unbounded on that side).
        lo: int | None
        hi: int | None
        if spec.low == -math.inf:
            lo = None
        elif spec.low == math.inf:
            lo = highest + 1
        else:
            lo = math.floor(spec.low) + 1 if not spec.low_inclusive else math.ceil(spec.low)
        if spec.high == math.inf:
            hi = None
        elif spec.high == -math.inf:
            hi = lowest - 1
        else:
            hi = math.ceil(spec.high) - 1 if not spec.high_inclusive else math.floor(spec.high)
        if (lo is not None and lo > highest) or (hi is not None and hi < lowest):
            self._set_constant(False)
            return
        if lo is not None and hi is not None and lo > hi:
            self._set_constant(False)
            return
        lo = None if lo is None or lo <= lowest else lo
        hi = None if hi is None or hi >= highest else hi
        if lo is None and hi is None:
            self._set_constant(True)
            return
        # The bounds are in range, so numpy scalars of the compute type hold them exactly.
        kind = (self._compute or self.dtype).type
        if lo is not None and lo == hi:
            self._tests.append((np.equal, kind(lo)))
            return
        if lo is not None:
            self._tests.append((np.greater_equal, kind(lo)))
        if hi is not None:
            self._tests.append((np.less_equal, kind(hi)))

    def _compile_float(self, kind: type[np.floating]) -> None:
        import numpy as np

        spec = self.spec
        if spec.special is not None:
            self._special = spec.special
            return
        # Round the bounds outwards to the compute precision: for a stored value x,
        # x > t ⇔ x > floor(t) and x ≥ t ⇔ x ≥ ceil(t) (and mirrored for the upper end),
        # so the comparison is exact without widening every chunk to float64.
        if spec.low > -math.inf or not spec.low_inclusive:
            if spec.low_inclusive:
                self._tests.append((np.greater_equal, _ceil_to(spec.low, kind)))
            else:
                self._tests.append((np.greater, _floor_to(spec.low, kind)))
        if spec.high < math.inf or not spec.high_inclusive:
            if spec.high_inclusive:
                self._tests.append((np.less_equal, _floor_to(spec.high, kind)))
            else:
                self._tests.append((np.less, _ceil_to(spec.high, kind)))
        closed_point = spec.low == spec.high and spec.low_inclusive and spec.high_inclusive
        if len(self._tests) == 2 and closed_point:
            # [t, t]: one equality test (an unrepresentable t matches nothing).
            low, high = self._tests[0][1], self._tests[1][1]
            self._tests = [(np.equal, low)] if low == high else []
            if not self._tests:
                self._set_constant(False)
        elif not self._tests:
            # [-inf, inf]: every number, but not NaN (IEEE: NaN is in no interval).
            self._tests.append((np.greater_equal, kind(-np.inf)))

    def _set_constant(self, value: bool) -> None:
        self.constant = value != self._negated
        self._tests = []

    # --------------------------------------------------------------------- matching
    def mask(self, values: np.ndarray) -> np.ndarray:
        """Which elements of `values` (any shape, of this matcher's dtype) match."""
        import numpy as np

        if self.constant is not None:
            return np.full(values.shape, self.constant, dtype=bool)
        if self._compute is not None:
            values = (
                values.view(np.uint8) if values.dtype.kind == "b" else values.astype(self._compute)
            )
        special = self._special
        if special is not None:
            if special == "nan":
                return np.isnan(values)
            if special == "inf":
                return np.isinf(values)
            if special == "+inf":
                return np.equal(values, np.inf)
            if special == "-inf":
                return np.equal(values, -np.inf)
            return np.logical_not(np.isfinite(values))
        (ufunc, operand), *rest = self._tests
        out = ufunc(values, operand)
        for ufunc, operand in rest:
            if not out.any():
                break  # a rare lower bound (x ≥ 6): the upper one need not be tested
            out &= ufunc(values, operand)
        if self._negated:
            np.logical_not(out, out=out)
        return out


# ======================================================================= scanning
Cancelled = Callable[[], bool]
Progress = Callable[[int, int], None]  # (elements scanned, elements to scan)


def _read(array: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Elements [start, stop) of `array` in C order as a 1-D array.

    Contiguous arrays give a view; strided views (a slice like `[0, ::2, :]`) are copied
    one row at a time, so the memory used is O(stop − start) whatever the array size.
    """
    import numpy as np

    if array.ndim <= 1 or array.flags.c_contiguous:
        return array.reshape(-1)[start:stop]
    row = array.size // array.shape[0]
    first, last = start // row, (stop - 1) // row
    if first == last:
        return _read(array[first], start - first * row, stop - first * row)
    parts = [_read(array[first], start - first * row, row)]
    if last > first + 1:
        parts.append(np.ascontiguousarray(array[first + 1 : last]).reshape(-1))
    parts.append(_read(array[last], 0, stop - last * row))
    return np.concatenate(parts)


def _spans(start: int, stop: int, chunk: int, backward: bool) -> Iterator[tuple[int, int]]:
    """[start, stop) cut into chunk-sized spans, first to last or last to first."""
    if backward:
        for end in range(stop, start, -chunk):
            yield max(start, end - chunk), end
    else:
        for begin in range(start, stop, chunk):
            yield begin, min(stop, begin + chunk)


def _as_matcher(array: np.ndarray, spec: SearchSpec | Matcher | str) -> Matcher:
    if isinstance(spec, Matcher):
        return spec
    if isinstance(spec, str):
        spec = parse_search(spec)
    return spec.matcher(array.dtype)


def find_match(
    array: np.ndarray,
    spec: SearchSpec | Matcher | str,
    start: int = 0,
    *,
    backward: bool = False,
    chunk: int = DEFAULT_CHUNK,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
) -> int | None:
    """The flat C-order index of the first match at or after `start` (or, `backward`,
    the last one at or before it), wrapping around the array's end; None when nothing
    matches. `start` is taken modulo the size, so `cursor + 1` may step off the end.

    Raises `SearchCancelled` when `cancelled()` turns true between chunks.
    """
    size = int(array.size)
    if size == 0:
        return None
    matcher = _as_matcher(array, spec)
    start %= size
    if matcher.constant is not None:
        return start if matcher.constant else None
    chunk = max(1, int(chunk))
    # The span from start to the end in the search direction, then the wrapped rest.
    order = [(0, start + 1), (start + 1, size)] if backward else [(start, size), (0, start)]
    scanned = 0
    for lo, hi in order:
        for begin, end in _spans(lo, hi, chunk, backward):
            if cancelled is not None and cancelled():
                raise SearchCancelled
            mask = matcher.mask(_read(array, begin, end))
            if backward:
                last = mask.size - 1 - int(mask[::-1].argmax())
                if mask[last]:
                    return begin + last
            else:
                first = int(mask.argmax())  # stops at the first True (bool argmax)
                if mask[first]:
                    return begin + first
            scanned += end - begin
            if progress is not None:
                progress(scanned, size)
    return None


def find_next(
    array: np.ndarray,
    spec: SearchSpec | Matcher | str,
    after: int = -1,
    *,
    chunk: int = DEFAULT_CHUNK,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
) -> int | None:
    """The first match after flat index `after` (−1: from the start), wrapping around."""
    return find_match(array, spec, after + 1, chunk=chunk, cancelled=cancelled, progress=progress)


def find_previous(
    array: np.ndarray,
    spec: SearchSpec | Matcher | str,
    before: int | None = None,
    *,
    chunk: int = DEFAULT_CHUNK,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
) -> int | None:
    """The last match before flat index `before` (None: from the end), wrapping around."""
    start = int(array.size) - 1 if before is None else before - 1
    return find_match(
        array, spec, start, backward=True, chunk=chunk, cancelled=cancelled, progress=progress
    )


@dataclass(frozen=True)
class MatchCount:
    """How many elements of [0, stop) match; `positions` lists them (ascending flat
    indices) when there were at most `keep` of them, else it is None."""

    total: int
    positions: np.ndarray | None

    def rank(self, index: int) -> int | None:
        """1-based rank of match `index` among the kept positions (None if not kept)."""
        import numpy as np

        if self.positions is None:
            return None
        at = int(np.searchsorted(self.positions, index))
        if at < self.positions.size and int(self.positions[at]) == index:
            return at + 1
        return None


def count_matches(
    array: np.ndarray,
    spec: SearchSpec | Matcher | str,
    *,
    stop: int | None = None,
    keep: int = 0,
    chunk: int = DEFAULT_CHUNK,
    cancelled: Cancelled | None = None,
    progress: Progress | None = None,
) -> MatchCount:
    """Count the matches among flat indices [0, stop) (default: the whole array) in one
    chunked pass, keeping their positions when there are at most `keep` of them (so that
    "match k of n" and further jumps need no more passes)."""
    import numpy as np

    size = int(array.size)
    stop = size if stop is None else min(max(int(stop), 0), size)
    matcher = _as_matcher(array, spec)
    if matcher.constant is not None:
        total = stop if matcher.constant else 0
        positions = np.arange(total, dtype=np.int64) if total <= keep else None
        return MatchCount(total, positions)
    chunk = max(1, int(chunk))
    total = 0
    kept: list[np.ndarray] | None = [] if keep > 0 else None
    for begin, end in _spans(0, stop, chunk, backward=False):
        if cancelled is not None and cancelled():
            raise SearchCancelled
        mask = matcher.mask(_read(array, begin, end))
        found = int(np.count_nonzero(mask))
        total += found
        if kept is not None and found:
            if total > keep:
                kept = None  # too many to list; the count goes on
            else:
                kept.append(np.flatnonzero(mask) + begin)
        if progress is not None:
            progress(end, stop)
    if kept is None:
        return MatchCount(total, None)
    positions = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
    return MatchCount(total, positions.astype(np.int64, copy=False))


def describe_value(value: object) -> str:
    """A matched element for a status line: NaN, +Inf, −Inf or numpy's shortest repr."""
    number = float(value)  # type: ignore[arg-type]
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return str(value)
