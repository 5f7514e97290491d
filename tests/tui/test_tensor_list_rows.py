"""The tensor list's rows without Textual: selecting, sorting, columns, cells, glyphs, and
the numbers beside the glyph."""

from __future__ import annotations

import pytest

from tuidebug.core.graph import Category, NodeKind
from tuidebug.core.tensor_health import Health, TensorSummary
from tuidebug.core.tensor_listing import TensorEntry
from tuidebug.tui.tensor_list.rows import (
    ListQuery,
    columns_for,
    count_label,
    format_numbers,
    format_row,
    header_cells,
    health_glyph,
    human_bytes,
    select,
    value_label,
)


def entry(node: str, op: str, nbytes: int | None, order: int) -> TensorEntry:
    shape = None if nbytes is None else (nbytes // 4,)
    kind = NodeKind.PARAMETER if op == "Parameter" else NodeKind.OPERATOR
    return TensorEntry("g", node, 0, op, kind, "float32", shape, nbytes, order)


ENTRIES = [
    entry("net/conv-Conv2D/Conv2D-op0", "Conv2D", 400, 0),
    entry("net/relu-ReLU/ReLU-op1", "ReLU", 4000, 1),
    entry("conv.weight", "Parameter", 40, 2),
    entry("Gradients/net/Conv2DBackpropFilter-op2", "Conv2DBackpropFilter", None, 3),
]
T = Category.TENSOR
CATEGORIES = [
    frozenset({T, Category.ACTIVATION}),
    frozenset({T, Category.ACTIVATION}),
    frozenset({T, Category.PARAMETER, Category.WEIGHT}),
    frozenset({T, Category.GRADIENT}),
]
HEALTH = [Health.NAN, Health.NORMAL, None, Health.ZERO]


def shown(query: ListQuery) -> list[int]:
    return select(ENTRIES, CATEGORIES, HEALTH, query)[0]


def test_no_query_shows_all_in_execution_order() -> None:
    assert shown(ListQuery()) == [0, 1, 2, 3]
    assert not ListQuery().filtered


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (ListQuery(pattern="relu"), [1]),  # case ignored
        (ListQuery(pattern=r"op\d:0$"), [0, 1, 3]),  # the name is node:slot
        (ListQuery(category=Category.WEIGHT), [2]),
        (ListQuery(category=Category.GRADIENT), [3]),
        (ListQuery(category=Category.ACTIVATION, pattern="conv"), [0]),
        (ListQuery(op_type="ReLU"), [1]),
        (ListQuery(problems_only=True), [0, 3]),  # NaN and all-zero; unknown is not shown
        (ListQuery(sort="size"), [1, 0, 2, 3]),  # largest first, unknown size last
        (ListQuery(sort="op type"), [0, 3, 2, 1]),
    ],
)
def test_filters_and_sorts(query: ListQuery, expected: list[int]) -> None:
    assert shown(query) == expected
    assert query.filtered == bool(
        query.pattern or query.category or query.op_type or query.problems_only
    )


def test_a_bad_regex_is_plain_text_and_says_so() -> None:
    indices, problem = select(ENTRIES, CATEGORIES, HEALTH, ListQuery(pattern="op0["))
    assert indices == [] and problem.startswith("Not a regular expression")
    hostile = [entry("net/a(b-op9", "Add", 4, 0), entry("net/ab-op8", "Add", 4, 1)]
    indices, problem = select(hostile, CATEGORIES[:2], HEALTH[:2], ListQuery(pattern="("))
    assert indices == [0] and problem  # "(" searched as text: only the name holding one
    assert select(hostile, CATEGORIES[:2], HEALTH[:2], ListQuery(pattern="")) == ([0, 1], "")


def line(entry: TensorEntry, summary: TensorSummary | None, width: int) -> str:
    """A row as the screen draws it: glyph, the numbers, then the entry's cells."""
    columns = columns_for(width)
    numbers = [cell for cell, _style in format_numbers(summary, columns)]
    return " ".join(["N", *numbers, *format_row(entry, columns)])


def test_columns_fit_the_width_and_the_name_keeps_its_end() -> None:
    for width in (60, 78, 80, 98, 100, 118, 120, 140, 158, 160, 200):
        columns = columns_for(width)
        assert columns.width == width
        assert len(line(ENTRIES[0], NAN_SUMMARY, width)) == width  # never wraps
        assert len(line(ENTRIES[0], None, width)) == width  # blank until read
        header = header_cells(columns)
        assert sum(size for _, size, _ in header) + len(header) - 1 == width
    cells = format_row(ENTRIES[0], columns_for(60))
    assert cells[-1].rstrip().endswith("Conv2D-op0:0") and cells[-1].startswith("…")
    assert cells[2].strip() == "400B"
    unknown = format_row(ENTRIES[3], columns_for(80))
    assert unknown[1].strip() == "?" and unknown[2].strip() == "?"


def test_untrusted_names_are_escaped() -> None:
    hostile = entry("net/\x1b]0;owned\x07Conv", "Conv\x1b[2J", 4, 0)
    text = " ".join(format_row(hostile, columns_for(140)))
    assert "\x1b" not in text and "\\x1b" in text


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (None, "?"),
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0K"),
        (75264, "73.5K"),
        (200 << 20, "200M"),
    ],
)
def test_human_bytes(nbytes: int | None, text: str) -> None:
    assert human_bytes(nbytes) == text
    assert len(text) <= 7


def test_glyphs_and_their_ascii_fallback() -> None:
    assert health_glyph(Health.NAN)[0] == "N"
    assert health_glyph(Health.INF)[0] == "I"
    assert health_glyph(Health.ZERO)[0] == "0"
    assert health_glyph(None)[0] == "?"
    assert health_glyph(Health.NORMAL)[0] == "·"
    for health in (*Health, None):
        assert health_glyph(health, ascii_only=True)[0].isascii()


NAN_SUMMARY = TensorSummary(Health.NAN, -1.2345678e-38, 123456.7, 1234567, 3)


def numbers(summary: TensorSummary | None, width: int) -> dict[str, str]:
    columns = columns_for(width)
    cells = format_numbers(summary, columns)
    return {title: cell for (title, _), (cell, _) in zip(columns.numbers, cells, strict=True)}


@pytest.mark.parametrize("width", [158, 160])
def test_wide_rows_show_min_max_nan_and_inf(width: int) -> None:
    """At 160×48 (the list is 158 or 160 cells, with or without its scrollbar): all four,
    4 significant digits, the name keeping more than 50 cells."""
    columns = columns_for(width)
    assert [title for title, _ in columns.numbers] == ["min", "max", "NaN", "Inf"]
    assert columns.name > 50
    assert {k: v.strip() for k, v in numbers(NAN_SUMMARY, width).items()} == {
        "min": "-1.23e-38",  # too long for 4 digits in 9 cells: one fewer
        "max": "1.235e5",
        "NaN": "1.2M",
        "Inf": "3",
    }
    text = line(ENTRIES[0], NAN_SUMMARY, width)
    assert text.startswith("N -1.23e-38   1.235e5  1.2M     3 float32")
    assert text.rstrip().endswith("net/conv-Conv2D/Conv2D-op0:0")  # the whole name


@pytest.mark.parametrize("width", [78, 80])
def test_narrow_rows_keep_the_counts_and_drop_min_and_max(width: int) -> None:
    """At 80×24 the NaN and Inf counts stay beside the glyph; min and max do not fit with
    a name of 20 cells, so they are dropped (the tensor view shows them)."""
    columns = columns_for(width)
    assert [title for title, _ in columns.numbers] == ["NaN", "Inf"]
    assert columns.name >= 20
    text = line(ENTRIES[1], TensorSummary(Health.NORMAL, -3.0, 7.5, 0, 0), width)
    assert text.startswith("N     0     0 float32 <1000>")
    assert text.rstrip().endswith("relu-ReLU/ReLU-op1:0")  # the name keeps 20 cells or more


def test_number_cells_blank_until_read_and_coloured_when_not_zero() -> None:
    columns = columns_for(160)
    unread = format_numbers(None, columns)
    assert [cell.strip() for cell, _ in unread] == ["", "", "", ""]
    missing = format_numbers(TensorSummary(Health.MISSING), columns)
    assert [cell.strip() for cell, _ in missing] == ["", "", "", ""]
    all_nan = format_numbers(TensorSummary(Health.NAN, None, None, 6, 0), columns)
    assert [cell.strip() for cell, _ in all_nan] == ["—", "—", "6", "0"]  # no finite value
    assert [style for _, style in all_nan] == ["", "", "bold red", "dim"]
    ascii_cells = format_numbers(
        TensorSummary(Health.NAN, None, None, 6, 0), columns, ascii_only=True
    )
    assert all(cell.isascii() for cell, _ in ascii_cells)
    inf = format_numbers(TensorSummary(Health.INF, 0, 1, 0, 2), columns)
    assert [style for _, style in inf][2:] == ["dim", "bold magenta"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "—"),
        (0.0, "0"),
        (-3, "-3"),
        (0.1234567, "0.1235"),  # as labels.number writes numbers: 4 significant digits
        (1.2345678e-5, "1.235e-5"),  # a short exponent, so a column reads alike
        (4.542e20, "4.542e20"),
        (-0.00012345678, "-1.235e-4"),  # `-0.0001235` is 10 cells: the exponent form
        (929510208.0, "9.295e8"),  # a float: 4 digits, even where it is an integer
        (-1.2345678e-38, "-1.23e-38"),
        (123456789012, "1.235e11"),  # an integer too long to write in full
        (-(2**63), "-9.223e18"),
        (-1.5e308, "-1.5e308"),
    ],
)
def test_value_label(value: float | None, text: str) -> None:
    assert value_label(value) == text
    assert len(text) <= 9


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0, "0"),
        (9999, "9999"),
        (12345, "12.3k"),
        (99960, "100k"),
        (999600, "1.0M"),
        (123456789, "123M"),
        (10**13, "10.0T"),
    ],
)
def test_count_label(count: int, text: str) -> None:
    assert count_label(count) == text
    assert len(text) <= 5
