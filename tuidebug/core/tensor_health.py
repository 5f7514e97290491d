"""A tensor's health in one word: NaN, ±Inf, all zero or normal (the tensor list's glyph).

Cheaper than `tensor.tensor_statistics`: a listing checks every tensor of a step, and only
needs to know which of these it is, so each chunk costs one `isfinite` and one `any` pass
(NaN vs Inf is told apart only in a chunk that is not all finite), and nothing is summed.
Memory stays bounded by one chunk of the tensor (dump files are memory-mapped).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

import numpy as np

from tuidebug.core.tensor import BFLOAT16, CHUNK_ELEMENTS, iter_chunks

__all__ = ["Health", "HealthCancelled", "tensor_health"]


class Health(str, Enum):
    """What a listing says about one tensor at one step. NaN wins over Inf (a tensor with
    both is listed as NaN), and both over all-zero."""

    NAN = "nan"
    INF = "inf"
    ZERO = "zero"  # every element is 0 (False for bool tensors)
    NORMAL = "normal"
    EMPTY = "empty"  # no elements at all: neither zero nor normal
    MISSING = "missing"  # no value at this step
    UNREADABLE = "unreadable"  # the file or the dtype cannot be read as numbers

    @property
    def is_problem(self) -> bool:
        """NaN, Inf or all zero: what "unhealthy only" keeps."""
        return self in (Health.NAN, Health.INF, Health.ZERO)


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
    dt = array.dtype
    if not (dt.kind in "biufc" or dt == BFLOAT16):
        return Health.UNREADABLE
    if array.size == 0:
        return Health.EMPTY
    floating = dt.kind in "fc" or dt == BFLOAT16
    inf = False
    nonzero = False
    for piece in iter_chunks(array, chunk):
        if cancelled is not None and cancelled():
            raise HealthCancelled
        if dt == BFLOAT16 or dt == np.float16:
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
