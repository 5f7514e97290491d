"""Watchpoint math on torch tensors: CPU goes through the shared numpy engine; the torch
statistics used for other devices must decide exactly as that engine does (checked here on
CPU tensors, where both can run)."""

from __future__ import annotations

import math
from collections import Counter
from functools import partial

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.torch.support import torch
from tuidebug.core.condition_catalogue import CheckRequest, Param
from tuidebug.core.scan_engine import evaluate
from tuidebug.core.tensor import BFLOAT16
from tuidebug.torch.deferred import launch, settle
from tuidebug.torch.stats import evaluate_tensor, evaluate_with_torch, to_numpy


def request(condition: int, *params: tuple[str, float | None]) -> CheckRequest:
    return CheckRequest(
        condition,
        tuple(Param(n, 0.0 if v is None else v, v is None) for n, v in params),
    )


REQUESTS = [
    request(13),  # TO
    request(17, ("zero_percentage_ge", 50.0)),  # TZ
    request(15, ("abs_mean_gt", 0.5), ("max_gt", None), ("min_gt", None), ("mean_gt", 0.1)),
    request(16, ("abs_mean_lt", 2.0), ("max_lt", 3.0), ("min_lt", -1.0), ("mean_lt", None)),
    request(
        21,
        ("range_start_inclusive", -1.0),
        ("range_end_inclusive", 0.0),
        ("range_percentage_lt", None),
        ("range_percentage_gt", 30.0),
        ("max_min_lt", None),
        ("max_min_gt", 2.0),
    ),
    request(18, ("abs_mean_update_ratio_gt", 0.5), ("epsilon", 1e-9)),
    request(19, ("abs_mean_update_ratio_lt", 0.5), ("epsilon", 1e-9)),
    request(20, ("rtol", 1e-5), ("atol", 1e-8), ("equal_nan", 0.0)),
    request(14, ("zero_percentage_ge", 10.0), ("max_gt", 1.0), ("min_lt", -1.0)),
]

values = st.one_of(
    st.floats(-4, 4, width=32),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf]),
)


@settings(max_examples=60, deadline=None)
@example(data=[1.0, -1.0, 1.84e-10], change=0.0, with_prev=False, dtype=torch.float32)
@given(
    data=st.lists(values, min_size=1, max_size=40),
    change=st.floats(-2, 2, width=32),
    with_prev=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.float16]),
)
def test_torch_statistics_decide_like_the_engine(
    data: list[float], change: float, with_prev: bool, dtype: torch.dtype
) -> None:
    x = torch.tensor(data, dtype=dtype)
    prev = (x.to(torch.float64) * 0.5 + change).to(dtype) if with_prev else None
    expected = evaluate(to_numpy(x), REQUESTS, to_numpy(prev) if prev is not None else None)
    got = evaluate_with_torch(x, REQUESTS, prev, chunk_elements=7)
    # sums are exact only to rounding relative to the data's magnitude: the two engines add
    # in different orders, so [1, -1, 1.84e-10] may lose 1e-16 against 1.84e-10 in either
    finite = [abs(v) for v in data if math.isfinite(v)]
    scale = 1e-14 * (1.0 + max(finite, default=0.0) * (1.0 + abs(change)))
    _same_decisions(expected, got, scale)


def _same_decisions(expected: list, got: list | None, scale: float) -> None:
    assert got is not None
    for e, g in zip(expected, got, strict=True):
        assert (g.hit, g.error_code) == (e.hit, e.error_code)
        for pe, pg in zip(e.params, g.params, strict=True):
            assert pg.hit == pe.hit, pe.name
            if pe.actual is None:
                assert pg.actual is None
            else:
                assert pg.actual == pytest.approx(pe.actual, rel=1e-12, abs=scale), pe.name


def test_integer_and_bool_tensors_and_size_mismatch() -> None:
    for x in (torch.arange(-3, 9, dtype=torch.int64), torch.tensor([True, False, False])):
        assert evaluate_with_torch(x, REQUESTS[:5]) == evaluate(x.numpy(), REQUESTS[:5])
    x = torch.ones(4)
    prev = torch.ones(3)
    assert evaluate_with_torch(x, REQUESTS[5:8], prev) == evaluate(
        x.numpy(), REQUESTS[5:8], prev.numpy()
    )


def test_cpu_tensors_use_the_engine_itself() -> None:
    x = torch.randn(1000)
    x[17] = math.nan
    assert evaluate_tensor(x, REQUESTS) == evaluate(x.numpy(), REQUESTS)


def test_bfloat16_becomes_the_same_bits() -> None:
    x = torch.tensor([1.5, -2.0, 3.25], dtype=torch.bfloat16)
    arr = to_numpy(x)
    assert arr is not None and arr.dtype == BFLOAT16
    np.testing.assert_array_equal(arr.astype(np.float32), x.float().numpy())
    assert to_numpy(torch.zeros(2, dtype=torch.complex64)) is None


# ----------------------------------------------------------- deferred (one read-back)
@settings(max_examples=60, deadline=None)
@given(
    tensors=st.lists(st.lists(values, min_size=1, max_size=30), min_size=1, max_size=4),
    change=st.floats(-2, 2, width=32),
    with_prev=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16]),
    stale=st.booleans(),
)
def test_deferred_statistics_decide_like_the_engine(
    tensors: list[list[float]], change: float, with_prev: bool, dtype: torch.dtype, stale: bool
) -> None:
    """Several tensors launched, then settled together: every condition's decision and
    statistic equals the numpy engine's on the same values, whether the tensor is still at
    hand for an exact NaN/Inf decision or not (then only TensorOverflow, whose answer the
    NaN-propagating max decides alone, is compared)."""
    xs = [torch.tensor(d, dtype=dtype) for d in tensors]
    prevs = [(x.to(torch.float64) * 0.5 + change).to(dtype) if with_prev else None for x in xs]
    launched = [
        launch(x, REQUESTS, p, None if stale else partial(evaluate_tensor, x, REQUESTS, p))
        for x, p in zip(xs, prevs, strict=True)
    ]
    got = settle(launched)
    for x, p, g, data in zip(xs, prevs, got, tensors, strict=True):
        expected = evaluate(to_numpy(x), REQUESTS, to_numpy(p) if p is not None else None)
        finite = [abs(v) for v in data if math.isfinite(v)]
        scale = 1e-14 * (1.0 + max(finite, default=0.0) * (1.0 + abs(change)))
        if stale and not all(math.isfinite(v) for v in to_numpy(x).astype(np.float64)):
            assert g is None or (g[0].hit, g[0].error_code) == (expected[0].hit, 0)
            continue
        _same_decisions(expected, g, scale)


def test_deferred_integer_bool_and_size_mismatch() -> None:
    for x in (torch.arange(-3, 9, dtype=torch.int64), torch.tensor([True, False, False])):
        assert settle([launch(x, REQUESTS[:5])]) == [evaluate(x.numpy(), REQUESTS[:5])]
    x, prev = torch.ones(4), torch.ones(3)
    got = settle([launch(x, REQUESTS[5:8], prev)])
    assert got == [evaluate(x.numpy(), REQUESTS[5:8], prev.numpy())]


def test_deferred_check_reads_back_once_for_many_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host read-backs of a check point do not grow with the number of tensors."""
    counts = count_read_backs(monkeypatch)
    seen = []
    for n in (3, 60):
        xs = [torch.randn(50) for _ in range(n)]
        counts.clear()
        settle([launch(x, REQUESTS[:5]) for x in xs])
        seen.append(dict(counts))
    assert seen[0] == seen[1] == {"cpu": 1, "tolist": 1}  # one copy to the host, then a list


def count_read_backs(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Wrap every way a tensor's values reach the host; returns the live counts."""
    counts: Counter[str] = Counter()
    for name in ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__"):
        original = getattr(torch.Tensor, name)

        def wrapped(self: torch.Tensor, *a: object, _o=original, _n=name, **k: object) -> object:
            counts[_n] += 1
            return _o(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, wrapped)
    return counts
