"""`tensor_health` and `tensor_summary`: NaN, ±Inf, all zero or normal, min/max of the finite
values and the NaN/Inf counts, in chunks, cancellable."""

from __future__ import annotations

import numpy as np
import pytest

from tuidebug.core.tensor import BFLOAT16
from tuidebug.core.tensor_health import (
    Health,
    HealthCancelled,
    TensorSummary,
    tensor_health,
    tensor_summary,
)


@pytest.mark.parametrize(
    ("values", "dtype", "health"),
    [
        ([1.0, -2.0], np.float32, Health.NORMAL),
        ([0.0, -0.0], np.float32, Health.ZERO),
        ([0.0, np.inf], np.float32, Health.INF),
        ([-np.inf, 1.0], np.float64, Health.INF),
        ([np.inf, np.nan], np.float32, Health.NAN),  # NaN wins over Inf
        ([0.0, np.nan], np.float16, Health.NAN),
        ([0, 0], np.int32, Health.ZERO),
        ([0, 3], np.int64, Health.NORMAL),
        ([False, False], np.bool_, Health.ZERO),
        ([False, True], np.bool_, Health.NORMAL),
        ([0j, complex(0, np.inf)], np.complex64, Health.INF),
        ([1.0, np.nan], BFLOAT16, Health.NAN),
        ([0.0, 0.0], BFLOAT16, Health.ZERO),
    ],
)
def test_health(values: list[object], dtype: object, health: Health) -> None:
    assert tensor_health(np.array(values, dtype=dtype)) is health


def test_empty_scalar_and_unreadable() -> None:
    assert tensor_health(np.zeros((0, 3), np.float32)) is Health.EMPTY
    assert tensor_health(np.array(0.0, np.float32)) is Health.ZERO
    assert tensor_health(np.array(["a"])) is Health.UNREADABLE


def test_chunks_see_the_whole_tensor() -> None:
    data = np.zeros(1000, np.float32)
    data[-1] = np.inf
    assert tensor_health(data, chunk=64) is Health.INF
    data[10] = np.nan  # an Inf chunk first, a NaN chunk later: NaN
    data[-1], data[900] = 0.0, np.inf
    assert tensor_health(data, chunk=64) is Health.NAN
    strided = np.zeros((40, 40), np.float32)[:, ::2]
    strided[-1, -1] = 5.0
    assert tensor_health(strided, chunk=64) is Health.NORMAL
    assert Health.NAN.is_problem and Health.ZERO.is_problem and not Health.NORMAL.is_problem


def test_cancelled_between_chunks() -> None:
    asked = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(HealthCancelled):
        tensor_health(np.ones(1000, np.float32), chunk=100, cancelled=cancelled)
    assert len(asked) == 3


@pytest.mark.parametrize(
    ("values", "dtype", "expected"),
    [
        ([1.0, -2.0], np.float32, TensorSummary(Health.NORMAL, -2.0, 1.0, 0, 0)),
        ([0.0, -0.0], np.float32, TensorSummary(Health.ZERO, 0.0, 0.0, 0, 0)),
        # min and max of the finite values; NaN wins over Inf, and both are counted
        ([np.inf, 3.0, np.nan, -np.inf, -1.0], np.float32, TensorSummary(Health.NAN, -1, 3, 1, 2)),
        ([0.0, np.inf], np.float64, TensorSummary(Health.INF, 0.0, 0.0, 0, 1)),
        ([np.nan, np.nan], np.float32, TensorSummary(Health.NAN, None, None, 2, 0)),
        ([0.5, np.nan], np.float16, TensorSummary(Health.NAN, 0.5, 0.5, 1, 0)),
        ([1.5, -np.inf, 0.25], BFLOAT16, TensorSummary(Health.INF, 0.25, 1.5, 0, 1)),
        ([0, 0], np.int32, TensorSummary(Health.ZERO, 0, 0, 0, 0)),
        ([-7, 2**40], np.int64, TensorSummary(Health.NORMAL, -7, 2**40, 0, 0)),
        ([False, True], np.bool_, TensorSummary(Health.NORMAL, 0, 1, 0, 0)),
        ([False, False], np.bool_, TensorSummary(Health.ZERO, 0, 0, 0, 0)),
        # complex numbers have no order: counts only
        ([0j, complex(0, np.inf)], np.complex64, TensorSummary(Health.INF, None, None, 0, 1)),
        ([0j, complex(np.nan, 1)], np.complex128, TensorSummary(Health.NAN, None, None, 1, 0)),
    ],
)
def test_summary(values: list[object], dtype: object, expected: TensorSummary) -> None:
    summary = tensor_summary(np.array(values, dtype=dtype))
    assert summary == expected
    assert summary.counted
    # the list formats Python numbers: an int stays exact, a bool is 0/1, -0.0 is 0
    for value in (summary.low, summary.high):
        assert value is None or type(value) in (int, float)
    # the same word as the glyph's own pass
    assert summary.health is tensor_health(np.array(values, dtype=dtype))


def test_summary_of_what_has_no_numbers() -> None:
    assert tensor_summary(np.zeros((0, 3), np.float32)) == TensorSummary(
        Health.EMPTY, None, None, 0, 0
    )
    assert tensor_summary(np.array(["a"])) == TensorSummary(Health.UNREADABLE)
    assert not TensorSummary(Health.MISSING).counted
    assert tensor_summary(np.array(-3.5, np.float32)) == TensorSummary(
        Health.NORMAL, -3.5, -3.5, 0, 0
    )


def test_summary_reads_every_chunk() -> None:
    """No early exit at the first NaN: the counts and the extremes after it are the tensor's."""
    data = np.zeros(1000, np.float32)
    data[3] = np.nan  # in the first chunk
    data[500:510] = np.nan
    data[900] = np.inf
    data[901] = -np.inf
    data[950] = 42.0
    data[960] = -8.0
    data[640:704] = np.nan  # a chunk with no finite value leaves min/max alone
    assert tensor_summary(data, chunk=64) == TensorSummary(Health.NAN, -8.0, 42.0, 75, 2)
    strided = np.zeros((40, 40), np.float32)[:, ::2]
    strided[-1, -1] = 5.0
    strided[0, 0] = np.inf
    assert tensor_summary(strided, chunk=64) == TensorSummary(Health.INF, 0.0, 5.0, 0, 1)
    ints = np.arange(-500, 500, dtype=np.int16)
    assert tensor_summary(ints, chunk=64) == TensorSummary(Health.NORMAL, -500, 499, 0, 0)


def test_summary_cancelled_between_chunks() -> None:
    asked = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(HealthCancelled):
        tensor_summary(np.ones(1000, np.float32), chunk=100, cancelled=cancelled)
    assert len(asked) == 3  # asked before each chunk, stopped at the third
