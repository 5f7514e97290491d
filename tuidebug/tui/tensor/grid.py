"""What the tensor view's table and heatmap draw, made from the tensor a mode shows, the
slice and what is known of the whole tensor.

The grid never reads more than a bounded sample of the slice (`tensor_format.sample`) to
choose the number format and the colour scale; a slice read only in part takes the whole
tensor's range from its statistics, once they are in, so a column is never too narrow
for a value the sample missed. No widget here: `grid_data` is called by the view.
"""

from __future__ import annotations

import numpy as np

from tuidebug.core.tensor import BFLOAT16, Index, TensorStatistics
from tuidebug.tui.kit.colormap import (
    DEFAULT_SPECIAL_ORDER,
    SpecialOrder,
    rarest_first,
    scale_for,
    special_counts,
)
from tuidebug.tui.tensor.canvas import GridData
from tuidebug.tui.tensor.format import SliceGeometry, choose_format, finite_range, is_exact, sample


def viewable(dtype: np.dtype) -> bool:
    """Numbers the grid can draw (booleans, integers, floats, bfloat16)."""
    return dtype.kind in "biuf" or dtype == BFLOAT16


def special_order(
    view: np.ndarray, values: np.ndarray, stats: TensorStatistics | None
) -> SpecialOrder:
    """Rarest non-finite kind first (the heatmap draws it where kinds share a cell): counted
    in the slice when it is read whole, else in the whole tensor once its statistics are in."""
    if is_exact(view):
        return rarest_first(*special_counts(values))
    if stats is not None:
        return rarest_first(stats.nan_count, stats.pos_inf_count, stats.neg_inf_count)
    return DEFAULT_SPECIAL_ORDER


def grid_data(
    array: np.ndarray, index: Index, stats: TensorStatistics | None, token: int
) -> GridData:
    """The slice `index` of `array` as both surfaces draw it (`stats`: the whole shown
    tensor's statistics, None while unknown; `token`: new for every call)."""
    geometry = SliceGeometry.of(tuple(array.shape), index)
    view = geometry.view(array)
    values = sample(view)
    low, high = finite_range(values)
    format_low, format_high = low, high
    if not is_exact(view) and stats is not None and stats.min is not None:
        # A sample can miss the extremes; the whole tensor's range bounds the slice's.
        format_low = min(stats.min, low) if low is not None else stats.min
        format_high = max(stats.max, high) if high is not None else stats.max  # type: ignore[type-var]
    return GridData(
        view=view,
        geometry=geometry,
        fmt=choose_format(view.dtype, format_low, format_high),
        scale=scale_for(low, high, special_order(view, values, stats)),
        token=token,
    )


__all__ = ["grid_data", "special_order", "viewable"]
