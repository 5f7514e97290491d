"""The tensor list's rows without Textual: selecting, sorting, columns, cells, glyphs."""

from __future__ import annotations

import pytest

from tuidebug.core.graph import Category, NodeKind
from tuidebug.core.tensor_health import Health
from tuidebug.core.tensor_listing import TensorEntry
from tuidebug.tui.tensor_list.rows import (
    ListQuery,
    columns_for,
    format_row,
    health_glyph,
    human_bytes,
    select,
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


def test_columns_fit_the_width_and_the_name_keeps_its_end() -> None:
    for width in (60, 80, 100, 140):
        columns = columns_for(width)
        assert columns.width == width
        cells = format_row(ENTRIES[0], columns)
        assert len(" ".join(["N", *cells])) == width
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
