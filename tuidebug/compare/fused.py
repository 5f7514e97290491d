"""Everything a tensor pair's row needs, in one pass over the two tensors (issue 30's
benchmark: a compare of two 1 GB dumps within 1.5× of reading them once).

`measure(target, golden)` gives the six msprobe metrics, both sides' statistics (when
asked), whether each side holds NaN or Inf, and the golden's largest |value| (the scale of
the tolerance's rtol). Small tensors, and any pair that is not two finite float tensors of
one shape, go through metrics.py as msprobe computes them, whole-array (number for number).
Large finite float pairs are walked in chunks of CHUNK elements, each chunk converted to
float64 once and reduced by every metric while it is in cache, so memory stays at a few
chunks whatever the tensor's size, and no full-size float64 copy is ever made:

- MaxAbsErr, MaxRelativeErr and the one/five-thousandth ratios are the same elementwise
  operations as msprobe's (the relative error in msprobe's dtype, float32 for float32
  dumps, the golden's zeros nudged by its epsilon), so they are identical;
- Cosine and EucDist come from dot products summed chunk by chunk instead of one `np.dot`
  over the whole tensor: the same float64 sums in another order, which may differ in the
  last bits (≈1e-16 relative). Cosine is rounded to 12 (or 6) decimals, so it agrees in
  practice; EucDist, written with all its digits, may differ in its last one or two.

A chunk's float64 sum that is not finite means a NaN or Inf (a float16/bf16/float32 value
cannot overflow a float64 sum of fewer than 10^200 elements): the pass stops and the pair
goes through the whole-array path, which knows where they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuidebug.compare.metrics import (
    NAN,
    StatRecord,
    TensorMetrics,
    as_msprobe_reads,
    cosine_from,
    format_value,
    tensor_metrics,
    tensor_stats,
)

__all__ = ["CHUNK", "FUSED_MIN", "Measured", "measure"]

# elements per chunk: 512 KiB of float64 per side, the few arrays of a chunk in L2
CHUNK = 1 << 16
# tensors of at least this many elements take the chunked pass (smaller ones: msprobe's
# whole-array arithmetic, number for number, at no cost worth saving)
FUSED_MIN = 1 << 22
_ONE_THOUSANDTH = 0.001
_FIVE_THOUSANDTHS = 0.005


@dataclass(frozen=True)
class Measured:
    """A pair's metrics, statistics (None where not asked for), NaN/Inf flags and scale."""

    metrics: TensorMetrics
    target_stats: StatRecord | None
    golden_stats: StatRecord | None
    target_bad: bool
    golden_bad: bool
    scale: float


def _is_float(value: np.ndarray) -> bool:
    return value.dtype.kind == "f" or value.dtype.name == "bfloat16"


def nonfinite(value: np.ndarray) -> bool:
    """Whether a float tensor holds NaN or ±Inf (integers never do)."""
    if value.dtype.kind not in "fcV" and value.dtype.name != "bfloat16":
        return False
    return not bool(np.isfinite(value.astype(np.float64)).all())


def measure(
    target: np.ndarray,
    golden: np.ndarray,
    *,
    stats: tuple[bool, bool] = (True, True),
    chunk: int = CHUNK,
    fused_min: int = FUSED_MIN,
    golden_range: tuple[float, float] | None = None,
) -> Measured:
    """The pair's row figures (module docstring). `stats` says which sides' statistics
    are wanted (a side whose dump already holds them needs none); `golden_range`, the
    golden's (max, min) as its dump records them, saves the pass that finds its scale."""
    tv, gv = np.asarray(target), np.asarray(golden)
    if (
        tv.shape == gv.shape
        and tv.ndim > 0
        and tv.size >= max(fused_min, 2)
        and _is_float(tv)
        and _is_float(gv)
    ):
        found = _chunked(tv, gv, stats, max(chunk, 1), golden_range)
        if found is not None:
            return found
    return _whole(tv, gv, stats)


def _whole(tv: np.ndarray, gv: np.ndarray, stats: tuple[bool, bool]) -> Measured:
    scale = 0.0
    if tv.shape == gv.shape and gv.size:
        scale = float(np.max(np.abs(np.nan_to_num(gv.astype(np.float64), posinf=0, neginf=0))))
    return Measured(
        tensor_metrics(tv, gv),
        tensor_stats(tv) if stats[0] else None,
        tensor_stats(gv) if stats[1] else None,
        nonfinite(tv),
        nonfinite(gv),
        scale,
    )


def _relative(
    n_raw: np.ndarray, b_raw: np.ndarray, rel_type: np.dtype, eps: np.generic, out: np.ndarray
) -> tuple[np.ndarray, float]:
    """msprobe's relative error |n - b| / |b| of a chunk in `rel_type`, and its maximum.
    A golden zero gives ±Inf or NaN, seen in the maximum: only then is the chunk done again
    the way msprobe does it, the zeros nudged by epsilon on both sides (on copies)."""
    n_rel = n_raw if n_raw.dtype == rel_type else n_raw.astype(rel_type)
    b_rel = b_raw if b_raw.dtype == rel_type else b_raw.astype(rel_type)
    rel = np.subtract(n_rel, b_rel, out=out)
    np.divide(rel, b_rel, out=rel)
    np.abs(rel, out=rel)
    peak = float(np.max(rel))
    if math.isfinite(peak):
        return rel, peak
    zero = b_rel == 0
    n_rel = n_rel.astype(rel_type, copy=True)
    b_rel = b_rel.astype(rel_type, copy=True)
    n_rel[zero] += eps
    b_rel[zero] += eps
    rel = np.subtract(n_rel, b_rel, out=out)
    np.divide(rel, b_rel, out=rel)
    np.abs(rel, out=rel)
    return rel, float(np.max(rel))


def _chunked(
    tv: np.ndarray,
    gv: np.ndarray,
    stats: tuple[bool, bool],
    chunk: int,
    golden_range: tuple[float, float] | None = None,
) -> Measured | None:
    """The one pass; None when a NaN or Inf is met (the whole-array path then decides)."""
    n_all, b_all = tv.reshape(-1), gv.reshape(-1)
    # the dtypes msprobe computes in: bf16 read as float32, the relative error in the
    # wider of the two and at least float32 (metrics._relative_err)
    n_type = as_msprobe_reads(n_all[:1]).dtype
    b_type = as_msprobe_reads(b_all[:1]).dtype
    rel_type = np.result_type(n_type, b_type, np.float32)
    eps = rel_type.type(np.finfo(rel_type).eps)
    size = n_all.size
    want_t, want_g = stats
    dot_nb = dot_nn = dot_bb = dot_dd = 0.0
    max_abs = max_rel = 0.0
    below_1 = below_5 = 0
    t_sum = g_sum = 0.0
    t_max = g_max = -math.inf
    t_min = g_min = math.inf
    # one set of chunk buffers for the whole pass (no allocation per chunk)
    width = min(chunk, size)
    n_buf, b_buf = np.empty(width, np.float64), np.empty(width, np.float64)
    rel_buf = np.empty(width, rel_type)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for start in range(0, size, chunk):
            n_raw, b_raw = n_all[start : start + chunk], b_all[start : start + chunk]
            k = n_raw.size
            n64, b64 = n_buf[:k], b_buf[:k]
            n64[...] = n_raw
            b64[...] = b_raw
            # einsum's own loops, not BLAS: OpenBLAS threads each ddot and, on a loaded
            # machine, spins for its threads (30× the CPU time of the single-threaded call)
            nn = float(np.einsum("i,i->", n64, n64))
            bb = float(np.einsum("i,i->", b64, b64))
            if not (math.isfinite(nn) and math.isfinite(bb)):
                # a NaN or Inf (finite values of a float32 range cannot overflow these)
                return None
            dot_nn += nn
            dot_bb += bb
            dot_nb += float(np.einsum("i,i->", n64, b64))
            if want_t:
                t_sum += float(n64.sum())
                t_max, t_min = max(t_max, float(n64.max())), min(t_min, float(n64.min()))
            if want_g:
                g_sum += float(b64.sum())
            if want_g or golden_range is None:
                g_max, g_min = max(g_max, float(b64.max())), min(g_min, float(b64.min()))
            diff = np.subtract(n64, b64, out=n64)  # n64 is not needed any more
            dot_dd += float(np.einsum("i,i->", diff, diff))
            max_abs = max(max_abs, float(np.max(np.abs(diff, out=diff))))
            rel, peak = _relative(n_raw, b_raw, rel_type, eps, rel_buf[:k])
            max_rel = max(max_rel, peak)
            below_1 += int(np.count_nonzero(rel < _ONE_THOUSANDTH))
            below_5 += int(np.count_nonzero(rel < _FIVE_THOUSANDTHS))
    cosine, cos_msg = cosine_from(dot_nb, math.sqrt(dot_nn), math.sqrt(dot_bb))
    message = "Dtype of NPU and bench tensor do not match." if n_type != b_type else ""
    max_rel_m = NAN if math.isnan(max_rel) else format_value(max_rel)
    metrics = TensorMetrics(
        cosine,
        math.sqrt(dot_dd),
        format_value(max_abs),
        max_rel_m,
        format_value(below_1 / size),
        format_value(below_5 / size),
        message + cos_msg,
    )
    return Measured(
        metrics,
        StatRecord(t_max, t_min, t_sum / size, math.sqrt(dot_nn)) if want_t else None,
        StatRecord(g_max, g_min, g_sum / size, math.sqrt(dot_bb)) if want_g else None,
        False,
        False,
        max(g_max, -g_min)
        if want_g or golden_range is None
        else max(golden_range[0], -golden_range[1]),
    )
