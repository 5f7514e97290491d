"""The tensor view's lines of text, built from plain values: the title, the heatmap legend,
the status line under the grid, the statistics panel, and the sentence for a go-to that
misses (the sentences naming what a tensor is compared with are `modes`').

Nothing here touches a widget or reads more of a tensor than the one element under the
cursor, so each line is tested without a running app.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from tuidebug.core.condition_advice import advice_for
from tuidebug.core.tensor import Comparison, Histogram, TensorStatistics, dtype_label, format_slice
from tuidebug.core.watchpoints import WatchpointHit, format_value
from tuidebug.tui.kit.colormap import SPECIALS, ColorScale, gradient, special_style
from tuidebug.tui.kit.labels import shown
from tuidebug.tui.tensor.find import SearchKey, TensorFind
from tuidebug.tui.tensor.format import (
    SliceGeometry,
    full_value,
    parse_index_tuple,
    short_number,
    sparkline,
)


class GotoError(ValueError):
    """A go-to text that names no cell of the slice; the message is one sentence."""


def title_line(
    title: str,
    array: np.ndarray,
    geometry: SliceGeometry | None,
    message: str,
    *,
    mode: str = "",
    versus: str = "",
) -> str:
    """ "Default/fc1/MatMul-op1:0  float32 [4×4]  slice [:, :]  note".

    With `mode` (a short pane, whose slice bar is hidden) the slice and the mode come
    right after the name, before the type, so a narrow pane still shows them. `versus`
    (a compare mode, `CompareState.versus`) follows the name: the title says what the
    numbers are compared with, not only the slice bar."""
    shape = "×".join(str(d) for d in array.shape) or "scalar"
    where = f"slice {geometry.text}" if geometry is not None else ""
    kind = f"{dtype_label(array.dtype)} [{shape}]"
    name = f"{shown(title)} — {shown(versus)}" if versus and not mode else shown(title)
    parts = [name, where, mode, kind] if mode else [name, kind, where]
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
    reference: str = "previous",
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
                (reference, comparison.previous),
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


def hit_context(hit: WatchpointHit) -> str:
    """The lines above a tensor opened from a hit: the condition with what it measured
    against its threshold and its other settings, then MindInsight's note on what to try.

    `▲ TL max_gt: 12.5 > 10  (other settings abs_mean_gt=1)  ·  Tensor above threshold, …`
    `  the tensor is above the threshold — try: check whether the operator's input…`
    """
    condition = hit.condition
    hit_names = {p.name for p in hit.hit_params}
    visible = {p.name for p in condition.visible_params}
    others = [
        f"{p.name}={format_value(p.value)}"
        for p in hit.params
        if not p.disabled and p.name not in hit_names and p.name in visible
    ]
    # what was measured first: a short pane shows only the start of the first line
    line = f"▲ {condition.abbr} {hit.detail()}"
    if others:
        line += "  (other settings " + ", ".join(others) + ")"
    line += f"  ·  {condition.name}, watchpoint {hit.watchpoint_id}"
    advice = None if hit.is_error else advice_for(condition.id)
    if advice is None:
        return line
    return f"{line}\n  {advice.found} — try: {advice.try_}."


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
