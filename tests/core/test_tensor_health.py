"""`tensor_health`: NaN, ±Inf, all zero or normal, in chunks, cancellable."""

from __future__ import annotations

import numpy as np
import pytest

from tuidebug.core.tensor import BFLOAT16
from tuidebug.core.tensor_health import Health, HealthCancelled, tensor_health


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
