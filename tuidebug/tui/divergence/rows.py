"""The divergence pane's rows, made from a compare report's rows: the short name, the
numbers (cosine, max abs and max relative error, or the statistics' diffs), a bar of how
far the pair is off, and the filters by name and by kind. No Textual here (Rich text only):
plain unit tests.

The bar reads `off_by` (1 − cosine, or the max abs error against the golden's scale) on a
log scale, 1e-6 (empty) to 1 (full): a float32 rounding difference draws nothing, bf16
noise about half, a wrong tensor the whole bar. It is red for a divergence whatever its
length, so a NaN on one side (no number at all) still shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text

from tuidebug.core.text import printable
from tuidebug.tui.kit.name_filter import NameFilter

if TYPE_CHECKING:
    from tuidebug.compare.metrics import Metric
    from tuidebug.compare.report import CompareReport, Row

# the kind filter, cycled by its key: which statuses each shows
KINDS: dict[str, frozenset[str]] = {
    "all": frozenset({"pass", "diverged", "unmatched", "skipped"}),
    "diverged": frozenset({"diverged"}),
    "not passing": frozenset({"diverged", "unmatched", "skipped"}),
    "unmatched or skipped": frozenset({"unmatched", "skipped"}),
    "passing": frozenset({"pass"}),
}
KIND_ORDER = tuple(KINDS)
STATUS_MARK = {"pass": "✓", "diverged": "✗", "unmatched": "?", "skipped": "!"}
STATUS_STYLE = {"pass": "green", "diverged": "bold red", "unmatched": "yellow", "skipped": "yellow"}
BAR_FLOOR = -6.0  # log10 of the relative error the bar starts at
BAR_WIDTH = 8
NUMBER_WIDTH = 9


def as_number(value: Metric | None) -> float | None:
    """A metric as a float: msprobe's words (`unsupported`, `N/A`, `Nan`) are None; its
    percentages ('12.5%') and its '0' are numbers."""
    if value is None:
        return None
    if isinstance(value, float | int):
        return float(value)
    text = value.strip()
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1], 0.01
    try:
        return float(text) * scale
    except ValueError:
        return None


def number_text(value: Metric | None, width: int = 9) -> str:
    """A metric as the pane writes it: 4 significant digits (a cosine of 0.9999xx keeps its
    nines), msprobe's words as they are, '-' for none."""
    if value is None:
        return "-"
    number = as_number(value)
    if isinstance(value, str) and value.endswith("%") and number is not None:
        return f"{number * 100:.4g}%"  # msprobe's percentages carry 16 digits
    if isinstance(value, str) and number is None:
        return value if len(value) <= width else value[: width - 1] + "…"
    if number is None:
        return "-"
    if number == 0:
        return "0"
    if 0.999 < number < 1:
        return f"{number:.7f}"[:width]  # a cosine: its nines are the news
    return f"{number:.4g}"


def off_by(row: Row) -> float | None:
    """How far off a pair is, as a fraction: the larger of 1 − cosine and the max abs error
    over the golden's largest |value| (tensor metrics), else the L2-norm relative error
    (statistics). Not the max relative error: one tiny value of a bf16 tensor makes that
    100% on a pair that matches well."""
    if row.metrics is not None:
        m = row.metrics
        cosine, max_abs = as_number(m.cosine), as_number(m.max_abs_err)
        parts: list[float] = []
        if cosine is not None and not math.isnan(cosine):
            parts.append(max(0.0, 1.0 - cosine))
        if max_abs is not None and not math.isnan(max_abs):
            g = row.golden_stats
            scale = (
                max((abs(v) for v in (g.max, g.min) if v is not None), default=0.0) if g else 0.0
            )
            parts.append(max_abs / scale if scale > 0 and math.isfinite(scale) else max_abs)
        return max(parts) if parts else None
    if row.stat_diffs is not None:
        return as_number(row.stat_diffs[7])
    return None


def bar(row: Row, width: int = BAR_WIDTH) -> Text:
    """How far off the pair is: see the module docstring."""
    rel = off_by(row)
    if row.status in ("unmatched", "skipped"):
        return Text(" " * width)
    if rel is None or math.isnan(rel) or rel == math.inf:
        fraction = 1.0 if row.status == "diverged" else 0.0
    elif rel <= 0:
        fraction = 0.0
    else:
        fraction = min(1.0, max(0.0, (math.log10(rel) - BAR_FLOOR) / -BAR_FLOOR))
    eighths = round(fraction * width * 8)
    if row.status == "diverged":
        eighths = max(eighths, 1)
    full, part = divmod(eighths, 8)
    glyphs = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    style = "red" if row.status == "diverged" else "green" if fraction < 0.5 else "yellow"
    return Text(glyphs.ljust(width), style=style)


def short_name(name: str) -> str:
    """A MindSpore pair's kernel and slot (`Conv2D-op0:output.0` of
    `kernel_graph0/Default/…/Conv2D-op0:output.0`); an msprobe name as it is."""
    return name.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Shown:
    """One row as the pane lists it: `index` into the report's rows."""

    index: int
    row: Row


def shown_rows(report: CompareReport, names: NameFilter, kind: str) -> list[Shown]:
    """The rows the filters let through, in execution order. The name filter reads the
    whole name (scopes, op type, slot)."""
    statuses = KINDS.get(kind, KINDS["all"])
    return [
        Shown(i, row)
        for i, row in enumerate(report.rows)
        if row.status in statuses and names.matches(row.name)
    ]


def figures(row: Row) -> tuple[Metric | None, Metric | None, Metric | None]:
    """The three numbers of a row: cosine, max abs and max relative error; for a
    statistics compare, the max diff, the L2-norm diff and its relative error."""
    if row.metrics is not None:
        m = row.metrics
        return m.cosine, m.max_abs_err, m.max_relative_err
    if row.stat_diffs is not None:
        d = row.stat_diffs
        return d[0], d[3], d[7]
    return None, None, None


def headers(tensor_mode: bool) -> tuple[str, str, str]:
    return (
        ("cosine", "max abs", "max rel") if tensor_mode else ("max diff", "norm diff", "norm rel")
    )


def fit_name(name: str, width: int) -> str:
    """A name cut to `width` from the left (`…conv2-Conv2d/Conv2D-op0:output.0`): its
    tail (the kernel and slot) is what tells rows apart."""
    return name if len(name) <= width else "…" + name[len(name) - width + 1 :]


def cells(row: Row, *, first: bool, numbers: int = 3, name_width: int = 40) -> list[Text]:
    """The row's cells, each with its leading space (the table pads none): mark, name, the
    first `numbers` of its three numbers, bar. The first divergence is marked ▶, bold."""
    mark = Text(
        "▶" if first else STATUS_MARK.get(row.status, " "), STATUS_STYLE.get(row.status, "")
    )
    name = Text(
        " " + fit_name(printable(short_name(row.name)), name_width), style="bold" if first else ""
    )
    out = [mark, name]
    out += [
        Text(" " + number_text(v).rjust(NUMBER_WIDTH), justify="right")
        for v in figures(row)[:numbers]
    ]
    out.append(Text(" ") + bar(row))
    return out


def detail_lines(row: Row, tensor_mode: bool) -> str:
    """The highlighted row in full, under the list: its status and numbers, why it
    diverged (or was not compared), dtypes and shape, then its whole name."""
    labels = headers(row.metrics is not None or (tensor_mode and row.stat_diffs is None))
    numbers = "  ".join(
        f"{label} {number_text(v, 14)}" for label, v in zip(labels, figures(row), strict=True)
    )
    dtypes = row.target_dtype or "?", row.golden_dtype or "?"
    shape = list(row.target_shape) if row.target_shape is not None else "?"
    lines = [f"{STATUS_MARK.get(row.status, '')} {row.status}  {numbers}"]
    if row.reason:
        lines.append(row.reason)
    lines.append(f"dtype {dtypes[0]} vs {dtypes[1]}  shape {shape}")
    lines.append(row.name)
    golden_name = getattr(row, "golden_name", "")  # matched across versions (another name)
    if golden_name and golden_name != row.name:
        lines.append(f"golden: {golden_name}")
    return "\n".join(printable(line) for line in lines)


def summary_line(report: CompareReport, stopped: bool) -> str:
    """`3 diverged (first: Conv2D-op0:output.0) of 195 compared, 0 unmatched, 0 skipped`:
    the divergences first, so a one-line status (80×24) still says them."""
    s = report.summary
    first = report.first
    where = f" (first: {short_name(report.rows[first].name)})" if first is not None else ""
    text = (
        f"{s['diverged']} diverged{where} of {s['matched']} compared, "
        f"{s['unmatched']} unmatched, {s['skipped']} skipped"
    )
    if stopped:
        text += "; stopped part-way"
    return printable(text)


__all__ = [
    "KINDS",
    "KIND_ORDER",
    "Shown",
    "as_number",
    "bar",
    "cells",
    "detail_lines",
    "figures",
    "fit_name",
    "headers",
    "number_text",
    "off_by",
    "short_name",
    "shown_rows",
    "summary_line",
]
