"""A tensor's health in one word: NaN, ±Inf, all zero or normal (the tensor list's glyph),
and the few numbers the list shows beside it: min and max of the finite values, NaN and Inf
counts (`tensor_summary`).

Cheaper than `tensor.tensor_statistics`: a listing checks every tensor of a step, so nothing
is summed. `tensor_summary` costs a healthy chunk one `min` and one `max` pass: NaN
propagates through both and ±Inf shows in them, so two finite answers prove the chunk
finite, and only a chunk that is not pays for `isfinite`, the counts and the masked
min/max. `tensor_health` (the word alone) stops at the first NaN. Memory stays bounded by
one chunk of the tensor (dump files are memory-mapped).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from tuidebug.core.tensor import CHUNK_ELEMENTS, bfloat16_dtype, iter_chunks

if TYPE_CHECKING:
    import numpy as np  # imported where a tensor is read: not at the start (issue 28)

__all__ = [
    "PRESENCE_ONLY",
    "Health",
    "HealthCancelled",
    "TensorSummary",
    "presence_only",
    "tensor_health",
    "tensor_summary",
]

# A dump's statistics key (beside `nan_count`, `pos_inf_count`, `neg_inf_count`) set to 1
# when those counts only say whether there is any (msprobe's, derived from Max and Min as
# 0/1 flags), not how many: `L`, the node details and `pt` then say "yes", not "1".
PRESENCE_ONLY = "counts_are_presence"


def presence_only(stats: Mapping[str, object]) -> bool:
    """Whether a dump's statistics know the NaN/±Inf counts as presence only."""
    return bool(stats.get(PRESENCE_ONLY))


class Health(str, Enum):
    """What a listing says about one tensor at one step. NaN wins over Inf (a tensor with
    both is listed as NaN), and both over all-zero."""

    NAN = "nan"
    INF = "inf"
    # NaN or ±Inf, the dump not saying which (TensorFlow's CURT_HEALTH keeps one flag)
    NONFINITE = "nonfinite"
    ZERO = "zero"  # every element is 0 (False for bool tensors)
    NORMAL = "normal"
    EMPTY = "empty"  # no elements at all: neither zero nor normal
    MISSING = "missing"  # no value at this step
    UNREADABLE = "unreadable"  # the file or the dtype cannot be read as numbers

    @property
    def is_problem(self) -> bool:
        """NaN, Inf or all zero: what "unhealthy only" keeps."""
        return self in (Health.NAN, Health.INF, Health.NONFINITE, Health.ZERO)


class HealthCancelled(Exception):
    """`cancelled()` said stop in the middle of a tensor."""


def tensor_health(
    array: np.ndarray,
    *,
    chunk: int = CHUNK_ELEMENTS,
    cancelled: Callable[[], bool] | None = None,
) -> Health:
    """The health of a whole tensor in one chunked pass; `cancelled` is asked between
    chunks, so a huge tensor does not hold up a cancelled worker."""
    import numpy as np

    dt = array.dtype
    bfloat16 = bfloat16_dtype()
    if not (dt.kind in "biufc" or dt == bfloat16):
        return Health.UNREADABLE
    if array.size == 0:
        return Health.EMPTY
    floating = dt.kind in "fc" or dt == bfloat16
    inf = False
    nonzero = False
    for piece in iter_chunks(array, chunk):
        if cancelled is not None and cancelled():
            raise HealthCancelled
        if dt == bfloat16 or dt == np.float16:
            piece = piece.astype(np.float32)  # every ufunc exists for float32, and is fast
        if floating and not np.isfinite(piece).all():
            if np.isnan(piece).any():
                return Health.NAN  # nothing later can change the answer
            inf = True
        # NaN compares unequal to 0, so `any` counts it as non-zero: fine, NaN returned above
        nonzero = nonzero or bool(piece.any())
    if inf:
        return Health.INF
    return Health.NORMAL if nonzero else Health.ZERO


@dataclass(frozen=True)
class TensorSummary:
    """A tensor's health and its numbers. `low`/`high`: min and max of the finite values
    (None when no value is finite, for complex tensors, which have no order, and when the
    tensor was not read: missing, empty, unreadable); `nan`/`inf`: counts of the elements
    (None when not read). Integer and bool tensors give ints (bool as 0/1)."""

    health: Health
    low: float | int | None = None
    high: float | int | None = None
    nan: int | None = None
    inf: int | None = None
    # `nan`/`inf` are 0/1 presence flags, not counts (`PRESENCE_ONLY`): shown as "yes"
    presence: bool = False

    @property
    def counted(self) -> bool:
        """The tensor was read: its counts (and, where any value is finite, min/max) hold."""
        return self.nan is not None


def tensor_summary(
    array: np.ndarray,
    *,
    chunk: int = CHUNK_ELEMENTS,
    cancelled: Callable[[], bool] | None = None,
) -> TensorSummary:
    """Health, min/max of the finite values, NaN and Inf counts in one chunked pass (no
    early exit: the counts need every chunk); `cancelled` is asked between chunks."""
    import numpy as np

    dt = array.dtype
    bfloat16 = bfloat16_dtype()
    if not (dt.kind in "biufc" or dt == bfloat16):
        return TensorSummary(Health.UNREADABLE)
    if array.size == 0:
        return TensorSummary(Health.EMPTY, nan=0, inf=0)
    # decided once: a step may hold 10⁵ small tensors, where per-chunk Python is the cost
    widen = dt == bfloat16 or dt == np.float16
    floating = dt.kind == "f" or widen
    if dt.kind == "c":
        return _complex_summary(array, chunk, cancelled)
    nan = inf = 0
    low: float | int | None = None
    high: float | int | None = None
    for piece in iter_chunks(array, chunk):
        if cancelled is not None and cancelled():
            raise HealthCancelled
        if widen:
            piece = piece.astype(np.float32)  # every ufunc exists for float32, and is fast
        # Python numbers (a bool as 0/1): what the labels format, and cheap to compare
        lo, hi = piece.min().item() + 0, piece.max().item() + 0
        if floating and not (math.isfinite(lo) and math.isfinite(hi)):
            # NaN or ±Inf somewhere in this chunk (only now pay for isfinite and the counts)
            finite = np.isfinite(piece)
            good = int(np.count_nonzero(finite))
            nans = int(np.count_nonzero(np.isnan(piece)))
            nan, inf = nan + nans, inf + piece.size - good - nans
            if not good:
                continue  # nothing finite here: min/max stay as they were
            lo = np.min(piece, where=finite, initial=np.inf).item()
            hi = np.max(piece, where=finite, initial=-np.inf).item()
        low = lo if low is None or lo < low else low
        high = hi if high is None or hi > high else high
    if nan:
        health = Health.NAN
    elif inf:
        health = Health.INF
    else:
        # every value finite: all zero exactly when min and max are (-0.0 == 0, False == 0)
        health = Health.ZERO if low == 0 and high == 0 else Health.NORMAL
    return TensorSummary(health, low, high, nan, inf)


def _complex_summary(
    array: np.ndarray, chunk: int, cancelled: Callable[[], bool] | None
) -> TensorSummary:
    """A complex tensor has no order, so no min/max: the counts, and `any` for all-zero."""
    import numpy as np

    nan = inf = 0
    nonzero = False
    for piece in iter_chunks(array, chunk):
        if cancelled is not None and cancelled():
            raise HealthCancelled
        bad = piece.size - int(np.count_nonzero(np.isfinite(piece)))
        if bad:
            nans = int(np.count_nonzero(np.isnan(piece)))  # NaN in either part
            nan, inf = nan + nans, inf + bad - nans
        nonzero = nonzero or bool(piece.any())
    if nan:
        return TensorSummary(Health.NAN, nan=nan, inf=inf)
    if inf:
        return TensorSummary(Health.INF, nan=nan, inf=inf)
    return TensorSummary(Health.NORMAL if nonzero else Health.ZERO, nan=0, inf=0)


def _from_non_finite_flag(stats: Mapping[str, float]) -> TensorSummary | None:
    """A dump that keeps only whether any element is NaN or ±Inf (`non_finite_count`,
    TensorFlow's CURT_HEALTH): none is "no" in both columns; some is NONFINITE, its
    columns blank, since claiming either NaN or Inf would be a guess."""
    flag = stats.get("non_finite_count")
    if flag is None:
        return None
    if flag:
        return TensorSummary(Health.NONFINITE)
    return TensorSummary(Health.NORMAL, nan=0, inf=0, presence=True)


def summary_from_statistics(stats: Mapping[str, float]) -> TensorSummary | None:
    """A tensor whose values were not dumped, known by the statistics a dump wrote for it
    (a statistic.csv row, an msprobe record, as `DebugSession.dumped_statistics` gives
    them): health from its NaN/±Inf counts, min/max as written when finite, the counts as
    written (msprobe's, derived from Max/Min, say only whether there are any: `presence`
    then says so). None when the counts are not there to decide."""
    nan = stats.get("nan_count")
    pos, neg = stats.get("pos_inf_count"), stats.get("neg_inf_count")
    if nan is None or pos is None or neg is None:
        return _from_non_finite_flag(stats)
    inf = int(pos) + int(neg)
    low, high = stats.get("min"), stats.get("max")
    low = low if low is not None and math.isfinite(low) else None
    high = high if high is not None and math.isfinite(high) else None
    if stats.get("count") == 0:
        health = Health.EMPTY
    elif nan:
        health = Health.NAN
    elif inf:
        health = Health.INF
    elif low == 0 and high == 0:
        health = Health.ZERO
    else:
        health = Health.NORMAL
    return TensorSummary(health, low, high, int(nan), inf, presence_only(stats))
