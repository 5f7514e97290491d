"""The tensor view's lines of text, built from plain values: the title, the heatmap legend,
the status line under the grid, the statistics panel, and the sentences for a go-to that
misses or a previous step that cannot be compared.

Nothing here touches a widget or reads more of a tensor than the one element under the
cursor, so each line is tested without a running app.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from tuidebug.core.tensor import Comparison, Histogram, TensorStatistics, dtype_label, format_slice
from tuidebug.tui.colormap import SPECIALS, ColorScale, gradient, special_style
from tuidebug.tui.labels import shown
from tuidebug.tui.tensor_find import SearchKey, TensorFind
from tuidebug.tui.tensor_format import (
    SliceGeometry,
    full_value,
    parse_index_tuple,
    short_number,
    sparkline,
)


class GotoError(ValueError):
    """A go-to text that names no cell of the slice; the message is one sentence."""


def compare_problem(array: np.ndarray, previous: np.ndarray | None) -> str:
    """Why `array` cannot be compared with `previous` ("" when it can)."""
    if previous is None:
        return "There is no previous step to compare with."
    if previous.shape != array.shape:
        return (
            f"The previous step has shape {tuple(previous.shape)}, not "
            f"{tuple(array.shape)}, so it cannot be compared."
        )
    if previous.dtype != array.dtype:
        return (
            f"The previous step is {dtype_label(previous.dtype)}, not "
            f"{dtype_label(array.dtype)}, so it cannot be compared."
        )
    return ""


def title_line(title: str, array: np.ndarray, geometry: SliceGeometry | None, message: str) -> str:
    """ "Default/fc1/MatMul-op1:0  float32 [4×4]  slice [:, :]  note"."""
    shape = "×".join(str(d) for d in array.shape) or "scalar"
    parts = [shown(title), f"{dtype_label(array.dtype)} [{shape}]"]
    if geometry is not None:
        parts.append(f"slice {geometry.text}")
    if message:
        parts.append(shown(message))
    return "  ".join(p for p in parts if p)


def legend(scale: ColorScale, zoom: str, method: str) -> Text:
    """The heatmap's colour scale, its special glyphs, and its zoom."""
    start, stop = scale.extent
    text = Text()
    text.append(f"{short_number(start)} ")
    for style in gradient(scale.palette_name, 16):
        text.append(" ", style)
    text.append(f" {short_number(stop)}")
    text.append("  centred on 0" if scale.diverging else "  sequential")
    for special in SPECIALS:
        text.append("  ")
        text.append(special.glyph, special_style(special))
        text.append(f" {special.label}")
    text.append(f"  zoom {zoom} ({method})  +/- zoom")
    return text


def status_line(
    geometry: SliceGeometry,
    cursor: tuple[int, int],
    *,
    comparison: Comparison | None,
    displayed: np.ndarray | None,
    find: TensorFind,
    key: SearchKey,
) -> str:
    """The element under the cursor (with the previous step's and the difference when
    comparing), where the cursor is, and how an active search stands."""
    if geometry.size == 0:
        return f"The selection {geometry.text} is empty."
    row, col = cursor
    index = geometry.tensor_index(row, col)
    where = f"row {row}/{geometry.rows} col {col}/{geometry.cols}"
    if comparison is not None:
        values = "  ".join(
            f"{name} {full_value(array[index])}"
            for name, array in (
                ("previous", comparison.previous),
                ("current", comparison.current),
                ("diff", comparison.diff),
            )
        )
        return f"{format_slice(index)}  {values}   {where}{find.suffix(key)}"
    if displayed is None:
        return f"{format_slice(index)} = –   {where}"
    value = displayed[index]
    rank = find.rank_at(key, row * geometry.cols + col)
    if rank is not None:
        return find.match_status(key, rank, value, format_slice(index), where)
    return f"{format_slice(index)} = {full_value(value)}   {where}{find.suffix(key)}"


def statistics_lines(
    mode: str, stats: TensorStatistics, hist: Histogram | None, *, compact: bool
) -> str:
    """The statistics panel: the summary line, then (unless `compact`) the counts and the
    histogram's sparkline."""
    lines = [f"{mode:>8}  {stats.summary_line()}"]
    if compact:
        # a short pane (100×30): the numbers need the rows more than the counts do
        return lines[0]
    if not stats.is_bool:
        lines.append(
            f"{'counts':>8}  n={stats.count} zero={stats.zero_count} "
            f"<0={stats.negative_count} >0={stats.positive_count} NaN={stats.nan_count} "
            f"+Inf={stats.pos_inf_count} -Inf={stats.neg_inf_count}"
        )
    if hist is not None and hist.counts.size:
        lo, hi = float(hist.edges[0]), float(hist.edges[-1])
        lines.append(
            f"{'hist':>8}  {short_number(lo)} {sparkline(hist.counts)} {short_number(hi)}"
            f"  ({hist.total} finite)"
        )
    return "\n".join(lines)


def goto_cell(geometry: SliceGeometry, text: str) -> tuple[int, int]:
    """The cell of `row, col` of the slice, or of a full tensor index that the slice
    contains (negative numbers count from the end); GotoError says why not."""
    numbers = parse_index_tuple(text)
    sliced = sum(isinstance(item, slice) for item in geometry.index)
    if numbers is None:
        raise GotoError(f"{text.strip()!r} is not an index like 3, 17.")
    if len(numbers) == len(geometry.shape) and len(numbers) != sliced:
        cell = geometry.locate(numbers)
        if cell is None:
            raise GotoError(f"Element {format_slice(numbers)} is not in the slice {geometry.text}.")
        return cell
    if len(numbers) == sliced:
        padded = [*numbers, 0, 0][:2]
        limits = (geometry.rows, geometry.cols)
        for axis, (value, limit) in enumerate(zip(padded, limits, strict=True)):
            if not -limit <= value < limit:
                what = "row" if axis == 0 else "column"
                raise GotoError(
                    f"The {what} {value} is out of range; the slice has {limit} {what}s."
                )
        return (padded[0] % geometry.rows, padded[1] % geometry.cols)
    raise GotoError(
        f"Give {sliced} numbers for the slice or {len(geometry.shape)} for the tensor, "
        f"not {len(numbers)}."
    )
