"""core/tensor.py: DataType mapping, slice parsing, statistics, histogram and compare."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tuidebug.core import tensor as T
from tuidebug.core.tensor import (
    CompareError,
    SliceError,
    UnsupportedDataTypeError,
    compare,
    data_type_of,
    default_slice,
    dtype_from_descr,
    dtype_from_dump_name,
    dtype_label,
    dump_name_of,
    format_slice,
    histogram,
    iter_chunks,
    numpy_dtype,
    parse_slice,
    selection_shape,
    storage_dtype,
    tensor_statistics,
)

# ------------------------------------------------------------------ data types


@pytest.mark.parametrize(
    ("number", "dtype"),
    [
        (1, np.bool_),
        (2, np.int8),
        (3, np.int16),
        (4, np.int32),
        (5, np.int64),
        (6, np.uint8),
        (7, np.uint16),
        (8, np.uint32),
        (9, np.uint64),
        (10, np.float16),
        (11, np.float32),
        (12, np.float64),
    ],
)
def test_data_type_round_trip(number: int, dtype: type) -> None:
    assert numpy_dtype(number) == np.dtype(dtype)
    assert data_type_of(dtype) == number


def test_base_types_decode_as_spec_says() -> None:
    assert numpy_dtype(T.DT_BASE_INT) == np.int32
    assert numpy_dtype(T.DT_BASE_FLOAT) == np.float32
    # ...but encoding never produces them
    assert data_type_of(np.int32) == T.DT_INT32


def test_bfloat16_uses_the_private_number() -> None:
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert data_type_of(bf16) == T.DT_BFLOAT16_TUIDEBUG
    assert numpy_dtype(T.DT_BFLOAT16_TUIDEBUG) == bf16
    assert T.DT_BFLOAT16_TUIDEBUG >= 45
    assert dtype_label(T.DT_BFLOAT16_TUIDEBUG) == "bfloat16"


@pytest.mark.parametrize("number", [0, 13, 14, 31, 39, 45, 46, 999])
def test_unsupported_numbers_raise_one_sentence(number: int) -> None:
    with pytest.raises(UnsupportedDataTypeError) as err:
        numpy_dtype(number)
    message = str(err.value)
    assert message.endswith(".") and message.count(". ") == 0
    assert not T.is_numeric_data_type(number)


def test_big_endian_and_complex() -> None:
    assert data_type_of(np.dtype(">f4")) == T.DT_FLOAT32
    with pytest.raises(UnsupportedDataTypeError):
        data_type_of(np.complex64)


def test_dump_names() -> None:
    assert dtype_from_dump_name("Float32") == np.float32
    assert dtype_from_dump_name("Int64") == np.int64
    assert dtype_from_dump_name("Bool") == np.bool_
    assert dtype_from_dump_name("UInt8") == np.uint8
    assert dtype_from_dump_name("BFloat16") == np.dtype(ml_dtypes.bfloat16)
    assert dtype_from_dump_name("float16") == np.float16  # case-insensitive fallback
    assert dtype_from_dump_name("DefaultFormat") is None
    assert dtype_from_dump_name("Complex64") is None
    assert dump_name_of(np.float32) == "Float32"
    assert dump_name_of(np.dtype(ml_dtypes.bfloat16)) == "BFloat16"
    assert dump_name_of(np.uint16) == "UInt16"
    assert storage_dtype(ml_dtypes.bfloat16) == np.float32
    assert storage_dtype(np.int8) == np.int8


def test_fixture_dump_names_are_all_known(dump_2_10) -> None:
    names = {p.name.split(".")[-2] for p in dump_2_10.rglob("*.npy")}
    assert names and all(dtype_from_dump_name(n) is not None for n in names), names


def test_descr_codes() -> None:
    for code in T.SUPPORTED_DESCR_CODES:
        assert dtype_from_descr(("|" if code[1] == "1" else "<") + code).kind in "biuf"
    with pytest.raises(UnsupportedDataTypeError):
        dtype_from_descr("|O")
    with pytest.raises(UnsupportedDataTypeError):
        dtype_from_descr("<c8")


def test_labels() -> None:
    assert dtype_label(np.float32) == "float32"
    assert dtype_label(11) == "float32"
    assert dtype_label(13) == "DT_STRING"
    assert dtype_label(np.bool_) == "bool"
    assert T.data_type_name(77) == "DataType 77"


# ----------------------------------------------------------------------- slices


def test_slice_examples() -> None:
    assert parse_slice("[0, 2, 1:10, :]", (2, 3, 20, 4)) == (0, 2, slice(1, 10), slice(None))
    assert parse_slice("[ -1 , ::-2 ]", (5, 6)) == (-1, slice(None, None, -2))
    assert parse_slice("[]", ()) == ()
    assert parse_slice("[0:100]", (3,)) == (slice(0, 100),)  # bounds clamp like Python


def test_empty_text_is_the_default_slice() -> None:
    assert parse_slice("  ", (4, 5, 6)) == default_slice((4, 5, 6))


@pytest.mark.parametrize(
    ("text", "shape", "fragment"),
    [
        ("0, :", (2, 2), "start with '['"),
        ("[0, :", (2, 2), "start with '['"),
        ("[0]", (2, 2), "1 entry but the tensor has 2 dimensions"),
        ("[0, 0, 0]", (2, 2), "3 entries"),
        ("[0]", (), "scalar"),
        ("[]", (3,), "0 entries"),
        ("[7, :]", (5, 5), "Index 7 is out of range for dimension 0 of size 5"),
        ("[:, -6]", (5, 5), "Index -6 is out of range for dimension 1 of size 5"),
        ("[:, :, :]", (2, 2, 2), "At most 2 entries"),
        # the spec's own syntax example has three ranges, which its 2-D rule forbids
        ("[0, :, 1:10, :]", (2, 3, 20, 4), "this slice has 3"),
        ("[::0]", (3,), "cannot be zero"),
        ("[1.5]", (3,), "not an integer"),
        ("[a:b]", (3,), "not an integer"),
        ("[1:2:3:4]", (9,), "more than two"),
        ("[0,,1]", (2, 2, 2), "empty"),
        ("[0]", (0,), "out of range"),
    ],
)
def test_slice_errors(text: str, shape: tuple[int, ...], fragment: str) -> None:
    with pytest.raises(SliceError) as err:
        parse_slice(text, shape)
    message = str(err.value)
    assert fragment in message
    assert message.endswith(".")


def test_default_slice() -> None:
    assert default_slice(()) == ()
    assert default_slice((7,)) == (slice(None),)
    assert default_slice((3, 4)) == (slice(None), slice(None))
    assert default_slice((6, 1, 5, 5)) == (0, 0, slice(None), slice(None))
    assert default_slice((0, 2, 3)) == (slice(None),) * 3
    a = np.zeros((6, 1, 5, 5))
    assert a[default_slice(a.shape)].shape == (5, 5)


def test_selection_shape() -> None:
    assert selection_shape((0, slice(1, 10, 2), slice(None)), (3, 20, 4)) == (5, 4)
    assert selection_shape((), ()) == ()


_shapes = st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple)


@st.composite
def _shape_and_index(draw: st.DrawFn) -> tuple[tuple[int, ...], list[object]]:
    shape = draw(_shapes)
    n_ranges = draw(st.integers(0, min(2, len(shape))))
    range_dims = set(draw(st.permutations(range(len(shape))))[:n_ranges])
    parts: list[object] = []
    for dim, size in enumerate(shape):
        if dim in range_dims or size == 0:
            bound = st.one_of(st.none(), st.integers(-8, 8))
            step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
            parts.append(slice(draw(bound), draw(bound), draw(step)))
        else:
            parts.append(draw(st.integers(-size, size - 1)))
    # a zero-size dimension forces a range there, which may exceed two ranges: the test
    # then skips the case
    return shape, parts


def _render(parts: list[object], spaces: str) -> str:
    def one(p: object) -> str:
        if isinstance(p, slice):
            text = ("" if p.start is None else str(p.start)) + ":"
            text += "" if p.stop is None else str(p.stop)
            if p.step is not None:
                text += f":{p.step}"
            return text
        return str(p)

    return "[" + ("," + spaces).join(spaces + one(p) for p in parts) + spaces + "]"


@given(_shape_and_index(), st.sampled_from(["", " ", "  "]))
@settings(max_examples=300, deadline=None)
def test_slice_matches_numpy(case: tuple[tuple[int, ...], list[object]], spaces: str) -> None:
    shape, parts = case
    if sum(isinstance(p, slice) for p in parts) > 2:
        return  # too many zero-size dimensions for a legal 2-D slice
    array = np.arange(math.prod(shape)).reshape(shape)
    text = _render(parts, spaces)
    index = parse_slice(text, shape)
    expected = array[tuple(parts)]  # type: ignore[index]
    assert np.array_equal(array[index], expected)
    assert array[index].shape == selection_shape(index, shape)
    assert parse_slice(format_slice(index), shape) == index


@given(st.text(max_size=20), _shapes)
@settings(max_examples=300, deadline=None)
def test_slice_parser_only_raises_slice_error(text: str, shape: tuple[int, ...]) -> None:
    try:
        index = parse_slice(text, shape)
    except SliceError as err:
        assert str(err).endswith(".")
        return
    array = np.zeros(shape)
    array[index]  # whatever parses must be a valid index


# ------------------------------------------------------------------- statistics


def _plain_stats(a: np.ndarray) -> dict[str, object]:
    values = a.astype(np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    return {
        "count": a.size,
        "nan": int(np.isnan(values).sum()),
        "pinf": int(np.isposinf(values).sum()),
        "ninf": int(np.isneginf(values).sum()),
        "zero": int((finite == 0).sum()),
        "neg": int((finite < 0).sum()),
        "pos": int((finite > 0).sum()),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "mean": float(finite.mean()) if finite.size else None,
        "std": float(finite.std()) if finite.size else None,
    }


_float_elements = st.one_of(
    st.floats(-1e4, 1e4, allow_nan=False, width=16),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0]),
)


@given(
    hnp.arrays(
        dtype=st.sampled_from([np.float16, np.float32, np.float64]),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=7),
        elements=_float_elements,
    ),
    st.sampled_from([1, 3, 7, 1000]),
    st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_statistics_match_numpy(a: np.ndarray, chunk: int, transpose: bool) -> None:
    if transpose:
        a = a.T  # non-contiguous: exercises the row-block path
    stats = tensor_statistics(a, chunk=chunk)
    ref = _plain_stats(a)
    assert stats.count == ref["count"]
    assert stats.shape == a.shape
    assert (stats.nan_count, stats.pos_inf_count, stats.neg_inf_count) == (
        ref["nan"],
        ref["pinf"],
        ref["ninf"],
    )
    assert (stats.zero_count, stats.negative_count, stats.positive_count) == (
        ref["zero"],
        ref["neg"],
        ref["pos"],
    )
    assert stats.min == ref["min"] and stats.max == ref["max"]
    if ref["mean"] is None:
        assert stats.mean is None and stats.std is None
    else:
        assert stats.mean == pytest.approx(ref["mean"], rel=1e-9, abs=1e-9)
        assert stats.std == pytest.approx(ref["std"], rel=1e-6, abs=1e-6)
    assert (
        stats.zero_count
        + stats.negative_count
        + stats.positive_count
        + stats.nan_count
        + stats.pos_inf_count
        + stats.neg_inf_count
        == stats.count
    )


@given(
    hnp.arrays(
        dtype=st.sampled_from([np.int8, np.uint8, np.int32, np.int64, np.uint64]),
        shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=9),
    ),
    st.sampled_from([2, 5, 1000]),
)
@settings(max_examples=150, deadline=None)
def test_integer_statistics_match_numpy(a: np.ndarray, chunk: int) -> None:
    stats = tensor_statistics(a, chunk=chunk)
    ref = _plain_stats(a)
    assert stats.min == ref["min"] and stats.max == ref["max"]
    # int64 near ±2⁶³ is rounded to float64 before summing, and chunked sums round in another
    # order than numpy's: allow rounding at the scale of the data ([-9.2e18, 256, 9.2e18…]
    # has mean 3.1e11 and differs by 384 between the two orders)
    scale = float(np.abs(a.astype(np.float64)).max(initial=0.0))
    slack = 4 * a.size * np.finfo(np.float64).eps * scale
    assert stats.mean == pytest.approx(ref["mean"], rel=1e-9, abs=slack)
    assert (stats.zero_count, stats.negative_count, stats.positive_count) == (
        ref["zero"],
        ref["neg"],
        ref["pos"],
    )
    assert stats.nan_count == 0


def test_bool_statistics() -> None:
    stats = tensor_statistics(np.array([[True, False, True], [True, True, False]]))
    assert (stats.count, stats.true_count, stats.false_count) == (6, 4, 2)
    assert stats.is_bool and stats.min is None
    assert stats.summary_line() == "bool<2,3> T:4 F:2"


def test_bfloat16_statistics() -> None:
    a = np.array([1.5, -2.0, np.nan, np.inf], dtype=ml_dtypes.bfloat16)
    stats = tensor_statistics(a)
    assert stats.dtype == "bfloat16"
    assert (stats.min, stats.max, stats.nan_count, stats.pos_inf_count) == (-2.0, 1.5, 1, 1)


def test_all_nan_and_empty() -> None:
    stats = tensor_statistics(np.full((2, 2), np.nan, dtype=np.float32))
    assert stats.min is None and stats.nan_count == 4
    assert stats.summary_line() == "float32<2,2> NaN:4"
    empty = tensor_statistics(np.zeros((0, 3), dtype=np.float32))
    assert empty.count == 0 and empty.summary_line() == "float32<0,3> empty"


def test_summary_line_format() -> None:
    a = np.array([-0.19, 0.2, 0.003, np.nan, np.nan, np.nan, np.inf], dtype=np.float32)
    line = tensor_statistics(a).summary_line()
    assert line.startswith("float32<7> ∈[-0.19, 0.2] μ=")
    assert " σ=" in line
    assert line.endswith("NaN:3 +Inf:1")


def test_statistics_refuse_strings() -> None:
    with pytest.raises(UnsupportedDataTypeError):
        tensor_statistics(np.array(["a"]))


def test_iter_chunks_covers_everything() -> None:
    a = np.arange(3 * 5 * 7).reshape(3, 5, 7)
    for arr in (a, a.transpose(2, 0, 1), a[:, ::2]):
        pieces = list(iter_chunks(arr, chunk=6))
        assert np.array_equal(np.concatenate(pieces), arr.reshape(-1))
        assert np.array_equal(
            np.concatenate(list(iter_chunks(arr, chunk=6, by_rows=True))), arr.reshape(-1)
        )
    assert np.array_equal(next(iter_chunks(np.array(4.0))), [4.0])
    assert list(iter_chunks(np.zeros((0, 4)))) == []


# -------------------------------------------------------------------- histogram


@given(
    hnp.arrays(
        dtype=st.sampled_from([np.float32, np.float64]),
        shape=st.integers(0, 60),
        elements=_float_elements,
    ),
    st.integers(1, 12),
    st.sampled_from([4, 1000]),
)
@settings(max_examples=200, deadline=None)
def test_histogram_matches_numpy(a: np.ndarray, bins: int, chunk: int) -> None:
    hist = histogram(a, bins, chunk=chunk)
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        assert hist.counts.size == 0
        return
    expected, _ = np.histogram(finite, bins=hist.edges)
    assert np.array_equal(hist.counts, expected)
    assert hist.total == finite.size
    assert hist.edges[0] <= finite.min() and hist.edges[-1] >= finite.max()


def test_histogram_range_and_bool() -> None:
    hist = histogram(np.array([0.0, 1.0, 2.0, 3.0, 10.0]), 3, value_range=(0.0, 3.0))
    assert hist.counts.tolist() == [1, 1, 2]  # 10 is outside the range
    assert histogram(np.array([True, False, True]), 2).counts.tolist() == [1, 2]
    with pytest.raises(ValueError):
        histogram(np.zeros(3), 0)


# ---------------------------------------------------------------------- compare


def test_compare_basic() -> None:
    prev = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    cur = np.array([1.0, 2.5, 13.0, 4.0], dtype=np.float32)
    comp = compare(cur, prev, 0.1)
    assert comp.boundary == pytest.approx(1.0)  # 0.1 × max(|0|, |10|)
    assert comp.diff.tolist() == [0.0, 0.0, 10.0, 0.0]  # 0.5 ≤ boundary becomes 0
    assert comp.current_stats.max == 13.0 and comp.previous_stats.max == 4.0
    assert comp.diff_stats.max == 10.0
    exact = compare(cur, prev)
    assert exact.boundary == 0 and exact.diff.tolist() == [0.0, 0.5, 10.0, 0.0]


def test_compare_unsigned_does_not_wrap() -> None:
    comp = compare(np.array([1, 5], np.uint8), np.array([3, 2], np.uint8))
    assert comp.diff.tolist() == [-2, 3]


def test_compare_keeps_nan_and_ignores_inf_for_the_boundary() -> None:
    prev = np.array([0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    cur = np.array([np.inf, np.nan, 1.0, 0.05], dtype=np.float32)
    comp = compare(cur, prev, 0.1)
    assert comp.boundary == pytest.approx(0.1)
    assert np.isposinf(comp.diff[0]) and np.isnan(comp.diff[1])
    assert comp.diff[2] == 1.0 and comp.diff[3] == 0.0


def test_compare_mixed_layouts_align() -> None:
    base = np.arange(30, dtype=np.float64).reshape(5, 6)
    prev = np.ascontiguousarray(base.T)
    cur = (base * 2).T  # non-contiguous view
    comp = compare(cur, prev, chunk=4)
    assert np.array_equal(comp.diff, cur - prev)


def test_compare_scalars_and_bool() -> None:
    assert compare(np.array(3.0), np.array(1.0)).diff.item() == 2.0
    assert compare(np.array([True, False]), np.array([False, False])).diff.tolist() == [1, 0]


@pytest.mark.parametrize(
    ("cur", "prev", "tol", "fragment"),
    [
        (np.zeros((2, 3)), np.zeros((3, 2)), 0.0, "shape (2, 3)"),
        (np.zeros(3, np.float32), np.zeros(3, np.float64), 0.0, "float32"),
        (np.zeros(3), np.zeros(3), 1.5, "between 0 and 1"),
        (np.zeros(3), np.zeros(3), -0.1, "between 0 and 1"),
    ],
)
def test_compare_errors(cur: np.ndarray, prev: np.ndarray, tol: float, fragment: str) -> None:
    with pytest.raises(CompareError) as err:
        compare(cur, prev, tol)
    assert fragment in str(err.value) and str(err.value).endswith(".")
