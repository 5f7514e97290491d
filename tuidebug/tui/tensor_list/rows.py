"""The tensor list's rows without Textual: which entries show (filters), in which order
(sorts), how wide each column is and what each cell says.

Beside the health glyph, the numbers the health pass found (`TensorSummary`): min and max
of the finite values and the NaN and Inf counts, each column shown only where the name
keeps `NAME_MIN` cells (all four from 95 columns; at 80 the counts stay, min/max go).

The list may hold every tensor of a step (10⁵ of them), so selecting works on indices
into the step's entries, and a row is formatted only when it is drawn (tensor_list.py).
Names and op types come from a dump or a training: every cell passes through `printable`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tuidebug.core.graph import Category
from tuidebug.core.tensor_health import Health, TensorSummary
from tuidebug.core.tensor_listing import TensorEntry
from tuidebug.core.text import printable
from tuidebug.tui.kit.labels import number
from tuidebug.tui.kit.name_filter import name_filter

__all__ = [
    "CATEGORY_CYCLE",
    "HEALTH_GLYPHS",
    "SORT_CYCLE",
    "Columns",
    "ListQuery",
    "columns_for",
    "count_label",
    "format_numbers",
    "format_row",
    "header_cells",
    "health_glyph",
    "human_bytes",
    "select",
    "value_label",
]

# health → (glyph, ASCII glyph, style); None = not known yet
HEALTH_GLYPHS: dict[Health | None, tuple[str, str, str]] = {
    Health.NAN: ("N", "N", "bold red"),
    Health.INF: ("I", "I", "bold magenta"),
    Health.NONFINITE: ("F", "F", "bold red"),  # NaN or Inf, the dump not saying which
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
VALUE_WIDTH = 9  # a min or max: `-1.235e-4`; 4 significant digits, fewer only if too long
COUNT_WIDTH = 5  # a NaN or Inf count: `1234`, `12.3k`, `999M`
NAME_MIN = 20  # the number columns are dropped before the name gets narrower than this


@dataclass(frozen=True)
class Columns:
    """Widths of the columns after the one-character health glyph (one space before
    each): the numbers beside the glyph (0: the column is dropped at this width), then
    dtype, shape, size, op type and name."""

    dtype: int
    shape: int
    size: int
    op_type: int
    name: int
    low: int = 0
    high: int = 0
    nan: int = 0
    inf: int = 0

    @property
    def numbers(self) -> list[tuple[str, int]]:
        """(title, width) of the number columns shown, in their order."""
        titles = (("min", self.low), ("max", self.high), ("NaN", self.nan), ("Inf", self.inf))
        return [(title, size) for title, size in titles if size]

    @property
    def width(self) -> int:
        numbers = sum(size + 1 for _, size in self.numbers)
        return 1 + 5 + numbers + self.dtype + self.shape + self.size + self.op_type + self.name


# (dtype, shape, size, op type) widths, widest first. The narrowest fits `<1,6,28,28>`,
# `73.5K` (human_bytes is at most 5 cells) and `BiasAddGrad`.
_TIERS = ((9, 20, 8, 22), (8, 16, 8, 18), (7, 12, 6, 12))
_ALL_NUMBERS = 2 * (VALUE_WIDTH + 1) + 2 * (COUNT_WIDTH + 1)
ROOMY_NAME = 30  # a wider tier is taken only where the name keeps this much beside it


def columns_for(width: int) -> Columns:
    """Column widths for a list `width` cells wide; the name takes what is left. All four
    numbers from 95 columns: the wider tiers of dtype/shape/op columns once the name keeps
    `ROOMY_NAME` cells beside them (from 118 and 127 columns). Narrower, the numbers go
    before the name gets under `NAME_MIN` cells, min and max first: at 80 columns the NaN
    and Inf counts stay (the extent of what the glyph flags) and the name keeps 24 cells."""
    for dtype, shape, size, op in _TIERS[:-1]:
        name = width - (1 + 5 + dtype + shape + size + op) - _ALL_NUMBERS
        if name >= ROOMY_NAME:
            return Columns(dtype, shape, size, op, name, *_VALUES, *_COUNTS)
    dtype, shape, size, op = _TIERS[-1]
    rest = width - (1 + 5 + dtype + shape + size + op)
    if rest - _ALL_NUMBERS >= NAME_MIN:
        return Columns(dtype, shape, size, op, rest - _ALL_NUMBERS, *_VALUES, *_COUNTS)
    counts = 2 * (COUNT_WIDTH + 1)
    if rest - counts >= NAME_MIN:
        return Columns(dtype, shape, size, op, rest - counts, 0, 0, *_COUNTS)
    return Columns(dtype, shape, size, op, max(rest, 8))


_VALUES = (VALUE_WIDTH, VALUE_WIDTH)
_COUNTS = (COUNT_WIDTH, COUNT_WIDTH)


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


def value_label(value: float | None, width: int = VALUE_WIDTH, *, ascii_only: bool = False) -> str:
    """A min or max in at most `width` cells: 4 significant digits as the app writes
    numbers (`labels.number`), with a short exponent so a column reads alike (`4.542e20`,
    `-1.235e-4`), one digit fewer where that is still too long (`-1.23e-38`). An integer
    tensor's value is written in full when it fits; a float's never is (`929510208.0` is
    `9.295e8`, next to its neighbours' 4 digits)."""
    if value is None:
        return "-" if ascii_only else number(None)
    if isinstance(value, int):
        text = number(value)
        if len(text) <= width:
            return text
    text = ""
    for digits in (4, 3, 2, 1):
        # `g` picks plain or exponent; where plain is too long (`-0.0001235`), the
        # exponent may fit with the same digits (`-1.235e-4`)
        for text in (f"{value:.{digits}g}", f"{value:.{digits - 1}e}"):
            text = _short_exponent(text)
            if len(text) <= width:
                return text
    return text


def _short_exponent(text: str) -> str:
    """`4.542e+20` → `4.542e20`, `1.200e-05` → `1.2e-5`: fewer cells, the same number."""
    mantissa, e, exponent = text.partition("e")
    if not e:
        return text
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def count_label(count: int) -> str:
    """A NaN or Inf count in at most 5 cells: `1234`, `12.3k`, `100k`, `1.0M`."""
    if count < 10_000:
        return str(count)
    value = float(count)
    for unit in "kMGT":
        value /= 1000
        if value < 99.95:
            return f"{value:.1f}{unit}"
        if value < 999.5 or unit == "T":
            return f"{value:.0f}{unit}"
    return str(count)  # pragma: no cover - the loop always returns


def format_numbers(
    summary: TensorSummary | None, columns: Columns, *, ascii_only: bool = False
) -> list[tuple[str, str]]:
    """(cell, style) of the number columns `columns` shows, each padded to its width:
    blank until the health pass read the tensor (and for a missing or unreadable one), a
    NaN or Inf count in its glyph's colour when not 0 ("yes"/"no" where the dump knows
    only whether there is any)."""
    cells: list[tuple[str, str]] = []
    counted = summary is not None and summary.counted
    for title, size in columns.numbers:
        if summary is None or not counted:
            cells.append(("".rjust(size), ""))
        elif title in ("min", "max"):
            value = summary.low if title == "min" else summary.high
            cells.append((value_label(value, size, ascii_only=ascii_only).rjust(size), ""))
        else:
            count = (summary.nan if title == "NaN" else summary.inf) or 0
            style = HEALTH_GLYPHS[Health.NAN if title == "NaN" else Health.INF][2]
            # msprobe's counts are 0/1 flags from Max/Min: "yes", never a count of 1
            label = ("yes" if count else "no") if summary.presence else count_label(count)
            cells.append((label.rjust(size), style if count else "dim"))
    return cells


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
        *((title, size, True) for title, size in columns.numbers),
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
