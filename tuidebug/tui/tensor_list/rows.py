"""The tensor list's rows without Textual: which entries show (filters), in which order
(sorts), how wide each column is and what each cell says.

The list may hold every tensor of a step (10⁵ of them), so selecting works on indices
into the step's entries, and a row is formatted only when it is drawn (tensor_list.py).
Names and op types come from a dump or a training: every cell passes through `printable`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tuidebug.core.graph import Category
from tuidebug.core.tensor_health import Health
from tuidebug.core.tensor_listing import TensorEntry
from tuidebug.core.text import printable
from tuidebug.tui.kit.name_filter import name_filter

__all__ = [
    "CATEGORY_CYCLE",
    "HEALTH_GLYPHS",
    "SORT_CYCLE",
    "Columns",
    "ListQuery",
    "columns_for",
    "format_row",
    "header_cells",
    "health_glyph",
    "human_bytes",
    "select",
]

# health → (glyph, ASCII glyph, style); None = not known yet
HEALTH_GLYPHS: dict[Health | None, tuple[str, str, str]] = {
    Health.NAN: ("N", "N", "bold red"),
    Health.INF: ("I", "I", "bold magenta"),
    Health.ZERO: ("0", "0", "bold yellow"),
    Health.NORMAL: ("·", ".", "green"),
    Health.EMPTY: ("∅", "e", "dim"),
    Health.MISSING: ("-", "-", "dim"),
    Health.UNREADABLE: ("!", "!", "yellow"),
    None: ("?", "?", "dim"),
}

# What `k` steps through: all, then the categories a user looks for one by one.
CATEGORY_CYCLE: tuple[Category | None, ...] = (
    None,
    Category.WEIGHT,
    Category.GRADIENT,
    Category.ACTIVATION,
    Category.PARAMETER,
)
SORT_CYCLE: tuple[str, ...] = ("order", "size", "op type")


def health_glyph(health: Health | None, *, ascii_only: bool = False) -> tuple[str, str]:
    """(glyph, style) of a health ("?" while not known)."""
    glyph, plain, style = HEALTH_GLYPHS[health]
    return (plain if ascii_only else glyph), style


# ------------------------------------------------------------------ selecting
@dataclass(frozen=True)
class ListQuery:
    """The list's filters and sort. `pattern`: a regex searched in `node:slot` (case
    ignored); `op_type`: only this op type; `problems_only`: NaN, Inf or all-zero ones."""

    pattern: str = ""
    category: Category | None = None
    op_type: str | None = None
    problems_only: bool = False
    sort: str = "order"

    def with_(self, **changes: object) -> ListQuery:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def filtered(self) -> bool:
        return bool(self.pattern.strip() or self.category or self.op_type or self.problems_only)


def select(
    entries: Sequence[TensorEntry],
    categories: Sequence[frozenset[Category]],
    health: Sequence[Health | None],
    query: ListQuery,
) -> tuple[list[int], str]:
    """(indices of the entries to show, in the query's order; a problem sentence).
    `categories` and `health` run parallel to `entries`. The pattern reads as the other
    name filters read theirs (`name_filter`: a bad regex is plain text, and one sentence)."""
    names = name_filter(query.pattern)
    shown: list[int] = []
    for i, entry in enumerate(entries):
        if query.op_type is not None and entry.op_type != query.op_type:
            continue
        if query.category is not None and query.category not in categories[i]:
            continue
        if query.problems_only:
            known = health[i]
            if known is None or not known.is_problem:
                continue
        if names and not names.matches(entry.name):
            continue
        shown.append(i)
    if query.sort == "size":
        # largest first; unknown sizes last, each group in execution order
        shown.sort(key=lambda i: (entries[i].nbytes is None, -(entries[i].nbytes or 0), i))
    elif query.sort == "op type":
        shown.sort(key=lambda i: (entries[i].op_type.lower(), i))
    return shown, names.problem


# -------------------------------------------------------------------- drawing
@dataclass(frozen=True)
class Columns:
    """Widths of the columns after the one-character health glyph (one space between)."""

    dtype: int
    shape: int
    size: int
    op_type: int
    name: int

    @property
    def width(self) -> int:
        return 1 + 5 + self.dtype + self.shape + self.size + self.op_type + self.name


def columns_for(width: int) -> Columns:
    """Column widths for a list `width` cells wide; the name takes what is left (at 80
    columns, about 30 cells)."""
    if width >= 120:
        dtype, shape, size, op = 9, 20, 8, 22
    elif width >= 100:
        dtype, shape, size, op = 8, 16, 8, 18
    else:
        dtype, shape, size, op = 7, 13, 7, 14
    name = max(width - (1 + 5 + dtype + shape + size + op), 8)
    return Columns(dtype, shape, size, op, name)


def human_bytes(nbytes: int | None) -> str:
    """`600B`, `73.5K`, `12M`: a size that fits 7 cells."""
    if nbytes is None:
        return "?"
    value = float(nbytes)
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            if unit == "B":
                return f"{int(value)}B"
            return f"{value:.1f}{unit}" if value < 100 else f"{math.floor(value)}{unit}"
        value /= 1024
    return f"{nbytes}B"  # pragma: no cover - the loop always returns


def _shape(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "?"
    return "<" + ",".join(str(d) for d in shape) + ">"


def _fit(text: str, width: int, *, keep_end: bool = False, mark: str = "…") -> str:
    """`text` cut to `width` cells with `mark` (names keep their end, where a node name
    says what it is; other cells keep their start)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    return mark + text[-(width - 1) :] if keep_end else text[: width - 1] + mark


def header_cells(columns: Columns) -> list[tuple[str, int, bool]]:
    """(title, width, right-aligned) of each column, the glyph's first."""
    return [
        ("", 1, False),
        ("dtype", columns.dtype, False),
        ("shape", columns.shape, False),
        ("size", columns.size, True),
        ("op type", columns.op_type, False),
        ("name", columns.name, False),
    ]


def format_row(entry: TensorEntry, columns: Columns, *, ascii_only: bool = False) -> list[str]:
    """The cells of one entry after its glyph: dtype, shape, size, op type, name, each
    padded to its column (a cut cell marked "…", or "~" on an ASCII terminal)."""
    mark = "~" if ascii_only else "…"
    return [
        _fit(printable(entry.dtype or "?"), columns.dtype, mark=mark).ljust(columns.dtype),
        _fit(_shape(entry.shape), columns.shape, mark=mark).ljust(columns.shape),
        human_bytes(entry.nbytes).rjust(columns.size),
        _fit(printable(entry.op_type), columns.op_type, mark=mark).ljust(columns.op_type),
        _fit(printable(entry.name), columns.name, keep_end=True, mark=mark).ljust(columns.name),
    ]
