"""core.tensor_search: the spec grammar, exact matching on every dtype, chunked scans with
wrap-around in both directions, counting and cancellation, checked against a plain
per-element Python predicate and `np.flatnonzero` of its mask."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tuidebug.core.tensor_search import (
    MatchCount,
    SearchCancelled,
    SearchSpec,
    SearchSpecError,
    count_matches,
    describe_value,
    find_match,
    find_next,
    find_previous,
    parse_search,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTEGERS = [np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.int64, np.uint64)]
ALL_DTYPES = [*FLOATS, *INTEGERS, np.dtype(np.bool_)]

Predicate = Callable[[float | int], bool]


def _python(value: object) -> float | int:
    """An element as an exact Python number (bool → 0/1)."""
    if isinstance(value, bool):
        return int(value)
    return value  # type: ignore[return-value]


def elements(array: np.ndarray) -> list[float | int]:
    """The elements in C order as exact Python numbers (floats via float64: exact)."""
    flat = np.asarray(array).reshape(-1)
    if flat.dtype.kind == "f" or flat.dtype == BF16:
        return flat.astype(np.float64).tolist()  # type: ignore[no-any-return]
    return [_python(v) for v in flat.tolist()]


def reference(array: np.ndarray, predicate: Predicate) -> np.ndarray:
    """Flat indices of the matches: `np.flatnonzero` of the plain per-element mask."""
    return np.flatnonzero(np.array([predicate(v) for v in elements(array)], dtype=bool))


def isnan(v: float | int) -> bool:
    return isinstance(v, float) and math.isnan(v)


def isinf(v: float | int) -> bool:
    return isinstance(v, float) and math.isinf(v)


SPECIAL_PREDICATES: dict[str, Predicate] = {
    "nan": isnan,
    "inf": isinf,
    "+inf": lambda v: v == math.inf,
    "-inf": lambda v: v == -math.inf,
    "nonfinite": lambda v: isnan(v) or isinf(v),
    "zero": lambda v: v == 0,
}
OPERATORS: dict[str, Callable[[object, object], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}


# ========================================================================= grammar
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nan", SearchSpec("nan", special="nan")),
        ("  NaN ", SearchSpec("nan", special="nan")),
        ("INF", SearchSpec("inf", special="inf")),
        ("+Inf", SearchSpec("+inf", special="+inf")),
        ("-inf", SearchSpec("-inf", special="-inf")),
        ("NonFinite", SearchSpec("nonfinite", special="nonfinite")),
        ("non-finite", SearchSpec("nonfinite", special="nonfinite")),
        ("Zero", SearchSpec("zero", low=0.0, high=0.0)),
        ("> 1e3", SearchSpec("> 1e3", low=1000.0, low_inclusive=False)),
        (">1E3", SearchSpec("> 1e3", low=1000.0, low_inclusive=False)),
        (">= -2.5", SearchSpec(">= -2.5", low=-2.5)),
        ("< .5", SearchSpec("< .5", high=0.5, high_inclusive=False)),
        ("<= 7", SearchSpec("<= 7", high=7)),
        ("== 3", SearchSpec("== 3", low=3, high=3)),
        ("= 3", SearchSpec("== 3", low=3, high=3)),
        ("!= 0", SearchSpec("!= 0", low=0, high=0, negated=True)),
        ("> -Inf", SearchSpec("> -inf", low=-math.inf, low_inclusive=False)),
        ("[-1, 1]", SearchSpec("[-1, 1]", low=-1, high=1)),
        (
            "( -1 ,1e2 )",
            SearchSpec("(-1, 1e2)", low=-1, low_inclusive=False, high=100.0, high_inclusive=False),
        ),
        ("[0, 1)", SearchSpec("[0, 1)", low=0, high=1, high_inclusive=False)),
        ("(0, 1]", SearchSpec("(0, 1]", low=0, low_inclusive=False, high=1)),
        ("[-inf, 0]", SearchSpec("[-inf, 0]", low=-math.inf, high=0)),
        ("== 9007199254740993", SearchSpec("== 9007199254740993", low=2**53 + 1, high=2**53 + 1)),
    ],
)
def test_parse_search(text: str, expected: SearchSpec) -> None:
    assert parse_search(text) == expected
    assert str(parse_search(text)) == expected.text


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        (
            "x > abc",
            "Cannot read 'x > abc' as a search: expected nan, inf, +inf, -inf, nonfinite, "
            "zero, a comparison like '> 1e3' or a range like '[-1, 1]'.",
        ),
        ("", "Cannot read '' as a search"),
        ("nans", "Cannot read 'nans' as a search"),
        (">> 3", "Cannot read '>> 3' as a search"),
        ("[1, 2", "Cannot read '[1, 2' as a search"),
        ("[1 2]", "Cannot read '[1 2]' as a search"),
        ("1e3", "Cannot read '1e3' as a search"),
        ("> 1e", "Cannot read '> 1e' as a search"),
        ("[3, 1]", "The range [3, 1] is empty: its start is above its end."),
        ("> nan", "Cannot compare with NaN in '> nan'"),
        ("[nan, 1]", "Cannot compare with NaN in '[nan, 1]'"),
    ],
)
def test_bad_specs_say_one_sentence(text: str, sentence: str) -> None:
    with pytest.raises(SearchSpecError) as caught:
        parse_search(text)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert message.startswith(sentence)
    assert message.endswith(".") and "\n" not in message


def test_complex_tensors_cannot_be_searched() -> None:
    with pytest.raises(SearchSpecError, match="cannot be searched"):
        parse_search("nan").matcher(np.dtype(np.complex64))


# ======================================================================== dtypes
FLOAT_VALUES = [0.0, -0.0, 1.0, -1.5, 0.1, 1000.0, 65504.0, math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(
    "text",
    [
        "nan",
        "inf",
        "+inf",
        "-inf",
        "nonfinite",
        "zero",
        "> 1",
        ">= 0.1",
        "< 0.1",
        "<= -1.5",
        "== 0.1",
        "!= 0.1",
        "!= 1",
        "== -0",
        "[-1.5, 1]",
        "(-1.5, 1)",
        "[0, inf]",
        "> -inf",
        "[-inf, inf]",
        "< 1e3",
        "> 1e10",
    ],
)
def test_float_dtypes_match_like_float64(dtype: np.dtype, text: str) -> None:
    array = np.array(FLOAT_VALUES, dtype=np.float64).astype(dtype)
    spec = parse_search(text)
    got = np.flatnonzero(spec.matcher(dtype).mask(array))
    assert got.tolist() == reference(array, predicate_of(text)).tolist()


def test_float32_comparisons_are_exact_about_the_stored_value() -> None:
    x = np.array([0.1, 16777217.0], dtype=np.float32)  # 0.1f > 0.1; 2**24+1 rounds to 2**24
    assert parse_search("> 0.1").matcher(x.dtype).mask(x).tolist() == [True, True]
    assert parse_search("== 0.1").matcher(x.dtype).mask(x).tolist() == [False, False]
    assert parse_search("== 16777216").matcher(x.dtype).mask(x).tolist() == [False, True]
    assert parse_search("< 16777217").matcher(x.dtype).mask(x).tolist() == [True, True]
    big = np.array([np.inf, 3e38], dtype=np.float32)
    assert parse_search("> 1" + "0" * 400).matcher(big.dtype).mask(big).tolist() == [True, False]


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
@pytest.mark.parametrize(
    "text",
    [
        "nan",
        "inf",
        "nonfinite",
        "zero",
        "> 0.5",
        ">= 1",
        "< 1",
        "<= -1",
        "== 3",
        "!= 3",
        "== 3.5",
        "[1, 200]",
        "(1, 200)",
        "[-300, 300]",
        "> 1e30",
        "< -1e30",
        "> -inf",
        "<= inf",
        "[-inf, inf]",
        "== 18446744073709551615",
    ],
)
def test_integer_dtypes_match_exactly(dtype: np.dtype, text: str) -> None:
    info = np.iinfo(dtype)
    values = [0, 1, 3, 100, 127, int(info.min), int(info.max)]
    if info.min < 0:
        values += [-1, -128]
    array = np.array(values, dtype=dtype)
    got = np.flatnonzero(parse_search(text).matcher(dtype).mask(array))
    assert got.tolist() == reference(array, predicate_of(text)).tolist()


def test_int64_beyond_float_precision() -> None:
    array = np.array([2**53, 2**53 + 1, 2**63 - 1], dtype=np.int64)
    assert find_next(array, "== 9007199254740993") == 1
    assert find_next(array, "> 9007199254740992") == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nan", []),
        ("zero", [1]),
        ("> 0", [0, 2]),
        ("== 1", [0, 2]),
        ("!= 1", [1]),
        ("< 0", []),
        ("[0, 1]", [0, 1, 2]),
        ("nonfinite", []),
    ],
)
def test_bool_tensors(text: str, expected: list[int]) -> None:
    array = np.array([True, False, True])
    assert np.flatnonzero(parse_search(text).matcher(array.dtype).mask(array)).tolist() == expected
    assert count_matches(array, text).total == len(expected)


def test_impossible_and_total_specs_do_not_read_the_data() -> None:
    class Unreadable(np.ndarray):
        def __getitem__(self, key: object) -> object:
            raise AssertionError("read")

        def reshape(self, *args: object, **kwargs: object) -> np.ndarray:  # type: ignore[override]
            raise AssertionError("read")

    array = np.zeros(10, np.int32).view(Unreadable)
    assert find_next(array, "nan") is None
    assert find_next(array, "> -1e300", after=4) == 5
    assert count_matches(array, "inf").total == 0
    assert count_matches(array, "<= inf", keep=20).positions.tolist() == list(range(10))  # type: ignore[union-attr]


# ==================================================================== scanning
def test_wrap_around_both_directions() -> None:
    array = np.zeros((4, 5), np.float32)
    array[0, 1] = array[2, 3] = array[3, 4] = np.nan  # flat 1, 13, 19
    assert find_next(array, "nan") == 1
    assert find_next(array, "nan", after=1) == 13
    assert find_next(array, "nan", after=13) == 19
    assert find_next(array, "nan", after=19) == 1  # wraps past the end
    assert find_previous(array, "nan") == 19
    assert find_previous(array, "nan", before=13) == 1
    assert find_previous(array, "nan", before=1) == 19  # wraps past the start
    assert find_match(array, "nan", 13) == 13  # start itself counts
    assert find_match(array, "nan", 13, backward=True) == 13
    assert find_match(array, "nan", 20) == 1  # start is taken modulo the size
    only = np.zeros(6, np.float32)
    only[2] = np.nan
    assert find_next(only, "nan", after=2) == 2  # the one match is found again
    assert find_previous(only, "nan", before=2) == 2
    assert find_next(np.zeros(6, np.float32), "nan") is None
    assert find_next(np.zeros(0, np.float32), "nan") is None
    assert find_next(np.float32(np.nan).reshape(()), "nan") == 0


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_chunk_boundaries(chunk: int) -> None:
    array = np.arange(20, dtype=np.float64)
    array[[0, 6, 7, 13, 19]] = np.inf
    hits = [0, 6, 7, 13, 19]
    for after in range(-1, 20):
        expected = next((h for h in hits if h > after), hits[0])
        assert find_next(array, "inf", after, chunk=chunk) == expected
    for before in range(21):
        expected = next((h for h in reversed(hits) if h < before), hits[-1])
        assert find_previous(array, "inf", before, chunk=chunk) == expected
    counted = count_matches(array, "inf", keep=10, chunk=chunk)
    assert counted.total == 5 and counted.positions.tolist() == hits  # type: ignore[union-attr]
    assert count_matches(array, "inf", stop=7, chunk=chunk).total == 2


def test_strided_views_are_searched_in_c_order() -> None:
    base = np.arange(6 * 7 * 5, dtype=np.float32).reshape(6, 7, 5)
    base[1, 2, 4] = base[4, 6, 0] = base[5, 0, 2] = np.nan
    view = base[1:, ::2, ::-2]  # not contiguous, negative strides
    expected = np.flatnonzero(np.isnan(view))
    for chunk in (1, 2, 5, 9, 1000):
        assert find_next(view, "nan", chunk=chunk) == expected[0]
        assert find_previous(view, "nan", chunk=chunk) == expected[-1]
        counted = count_matches(view, "nan", keep=100, chunk=chunk)
        assert counted.positions.tolist() == expected.tolist()  # type: ignore[union-attr]


def test_counting_keeps_positions_only_up_to_keep() -> None:
    array = np.zeros(100, np.float32)
    array[::10] = -np.inf
    full = count_matches(array, "-inf", keep=10, chunk=7)
    assert full.total == 10 and full.rank(30) == 4 and full.rank(31) is None
    over = count_matches(array, "-inf", keep=9, chunk=7)
    assert over == MatchCount(10, None) and over.rank(30) is None
    assert count_matches(array, "-inf", stop=31).total == 4
    assert count_matches(array, "-inf", stop=0).total == 0


def test_cancellation_between_chunks_and_progress() -> None:
    array = np.zeros(100, np.float32)
    asked = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(SearchCancelled):
        find_next(array, "nan", chunk=10, cancelled=cancelled)
    assert len(asked) == 4
    asked.clear()
    with pytest.raises(SearchCancelled):
        count_matches(array, "nan", chunk=10, cancelled=cancelled)
    seen: list[tuple[int, int]] = []
    assert find_next(array, "nan", chunk=40, progress=lambda d, t: seen.append((d, t))) is None
    assert seen == [(40, 100), (80, 100), (100, 100)]


def test_describe_value() -> None:
    assert describe_value(np.float32(np.nan)) == "NaN"
    assert describe_value(np.float64(-np.inf)) == "-Inf"
    assert describe_value(np.float32(np.inf)) == "+Inf"
    assert describe_value(np.float32(0.1)) == "0.1"
    assert describe_value(np.int64(7)) == "7"


# ============================================================ property tests
def predicate_of(text: str) -> Predicate:
    """The plain-Python meaning of a spec text (the test's own, independent reading)."""
    text = text.strip()
    if text in SPECIAL_PREDICATES:
        return SPECIAL_PREDICATES[text]
    if text[0] in "[(":
        low_text, high_text = text[1:-1].split(",")
        low, high = _exact(low_text), _exact(high_text)
        low_ok = operator.ge if text[0] == "[" else operator.gt
        high_ok = operator.le if text[-1] == "]" else operator.lt
        return lambda v: bool(low_ok(v, low) and high_ok(v, high))
    op, number = text.split()
    bound = _exact(number)
    compare = OPERATORS[op]
    return lambda v: bool(compare(v, bound))


def _exact(text: str) -> float | int:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


numbers = st.one_of(
    st.floats(allow_nan=False, width=64),
    st.integers(-(2**64), 2**64),
    st.sampled_from([0.0, -0.0, 0.1, 1.0, -1.0, 65504.0, 3.4e38, math.inf, -math.inf]),
)


@st.composite
def spec_texts(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["special", "compare", "range"]))
    if kind == "special":
        return draw(st.sampled_from(sorted(SPECIAL_PREDICATES)))
    if kind == "compare":
        return f"{draw(st.sampled_from(sorted(OPERATORS)))} {draw(numbers)!r}"
    low, high = sorted([draw(numbers), draw(numbers)])
    return f"{draw(st.sampled_from('[('))}{low!r}, {high!r}{draw(st.sampled_from('])'))}"


def _array_of(dtype: np.dtype, shape: tuple[int, ...], data: st.DataObject) -> np.ndarray:
    if dtype == BF16 or dtype.kind == "f":
        source = np.dtype(np.float32) if dtype == BF16 else dtype
        special = st.sampled_from([0.0, -0.0, 1.0, 0.1, math.nan, math.inf, -math.inf])
        elements_ = st.one_of(special, st.floats(width=8 * min(source.itemsize, 8)))
        array = data.draw(hnp.arrays(source, shape, elements=elements_))
        return array.astype(dtype)
    return data.draw(hnp.arrays(dtype, shape))  # type: ignore[no-any-return]


@settings(max_examples=150, deadline=None)
@given(
    dtype=st.sampled_from(ALL_DTYPES),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=7),
    text=spec_texts(),
    chunk=st.integers(1, 40),
    data=st.data(),
)
def test_property_scans_agree_with_flatnonzero(
    dtype: np.dtype, shape: tuple[int, ...], text: str, chunk: int, data: st.DataObject
) -> None:
    array = _array_of(dtype, shape, data)
    if array.ndim > 1 and data.draw(st.booleans()):
        array = array[:, ::-1]  # a non-contiguous view, as a slice of the tensor may be
    expected = reference(array, predicate_of(text)).tolist()
    spec = parse_search(text)
    counted = count_matches(array, spec, keep=1000, chunk=chunk)
    assert counted.total == len(expected)
    assert counted.positions is not None and counted.positions.tolist() == expected
    size = array.size
    starts = [0, size - 1, size // 2, data.draw(st.integers(0, max(size - 1, 0)))]
    for start in starts:
        forward = find_match(array, spec, start, chunk=chunk)
        backward = find_match(array, spec, start, backward=True, chunk=chunk)
        if not expected:
            assert forward is None and backward is None
            continue
        assert forward == next((i for i in expected if i >= start), expected[0])
        assert backward == next((i for i in reversed(expected) if i <= start), expected[-1])
        stop = data.draw(st.integers(0, size))
        assert count_matches(array, spec, stop=stop, chunk=chunk).total == sum(
            i < stop for i in expected
        )
