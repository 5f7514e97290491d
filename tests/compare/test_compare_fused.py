"""The chunked pass (compare/fused.py) against msprobe's whole-array arithmetic: the same
MaxAbsErr, MaxRelativeErr and ratios, the same Cosine, EucDist to float64's last bits, the
same statistics; NaN/Inf and other odd pairs fall back to the whole-array path."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tuidebug.compare.fused import _whole, measure


def _pair(dtype_t: object, dtype_g: object, size: int = 100_003) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    golden = rng.standard_normal(size).astype(np.float32)
    golden[::97] = 0.0  # zeros of the golden side: msprobe's epsilon nudge
    target = golden + rng.standard_normal(size).astype(np.float32) * np.float32(1e-3)
    return target.astype(dtype_t).reshape(-1, 1), golden.astype(dtype_g).reshape(-1, 1)


@pytest.mark.parametrize(
    ("dtype_t", "dtype_g"),
    [
        (np.float32, np.float32),
        (ml_dtypes.bfloat16, np.float32),
        (np.float16, np.float16),
        (np.float64, np.float32),
    ],
)
def test_chunked_equals_whole(dtype_t: object, dtype_g: object) -> None:
    target, golden = _pair(dtype_t, dtype_g)
    chunked = measure(target, golden, chunk=4096, fused_min=2)
    whole = _whole(target, golden, (True, True))
    c, w = chunked.metrics, whole.metrics
    assert (c.cosine, c.max_abs_err, c.max_relative_err) == (
        w.cosine,
        w.max_abs_err,
        w.max_relative_err,
    )
    assert (c.one_thousandth, c.five_thousandths, c.message) == (
        w.one_thousandth,
        w.five_thousandths,
        w.message,
    )
    assert isinstance(c.euc_dist, float) and isinstance(w.euc_dist, float)
    assert math.isclose(c.euc_dist, w.euc_dist, rel_tol=1e-12)
    for mine, theirs in ((chunked.target_stats, whole.target_stats),
                         (chunked.golden_stats, whole.golden_stats)):  # fmt: skip
        assert mine is not None and theirs is not None
        assert (mine.max, mine.min) == (theirs.max, theirs.min)
        assert math.isclose(mine.mean or 0, theirs.mean or 0, rel_tol=1e-9, abs_tol=1e-15)
        assert math.isclose(mine.norm or 0, theirs.norm or 0, rel_tol=1e-12)
    assert chunked.scale == whole.scale and not chunked.target_bad


def test_nan_or_odd_pairs_take_the_whole_array_path() -> None:
    target, golden = _pair(np.float32, np.float32)
    target = target.copy()
    target[50_000] = np.nan
    got = measure(target, golden, chunk=4096, fused_min=2)
    whole = _whole(target, golden, (True, True))
    assert (got.metrics, got.scale, got.golden_bad) == (whole.metrics, whole.scale, False)
    assert got.target_bad and got.metrics.cosine == "N/A"
    # integers, other shapes: the whole-array path
    ints = np.arange(10, dtype=np.int32)
    assert measure(ints, ints, fused_min=2).metrics.cosine == 1.0
    assert measure(golden, golden[:-1], fused_min=2).metrics.cosine == "shape unmatched"
    # statistics only where asked
    got = measure(golden, golden, stats=(False, True), chunk=4096, fused_min=2)
    assert got.target_stats is None and got.golden_stats is not None
