"""msprobe compare's metrics, number for number (msprobe 26.x, `core/compare/npy_compare.py`,
`core/compare/algorithm/builtin_algorithm/alg_*.py`, `core/compare/utils.py` and the
statistics rules of `acc_compare.py` `CalcStatsDiff`).

A metric is a float or one of msprobe's words: `unsupported` (0-d, empty or one-element
tensors where the metric has no meaning), `shape unmatched`, `Nan` (the metric came out NaN)
and `N/A` (NaN or Inf at different places on the two sides). Keeping the words, not None,
lets the CSV say what msprobe's says and lets a script written for msprobe read ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "METRIC_COLUMNS",
    "STAT_DIFF_COLUMNS",
    "Metric",
    "StatRecord",
    "TensorMetrics",
    "as_msprobe_reads",
    "cosine_from",
    "format_value",
    "stat_diffs",
    "tensor_metrics",
    "tensor_stats",
]

Metric = float | str

UNSUPPORTED = "unsupported"
SHAPE_UNMATCH = "shape unmatched"
NAN = "Nan"
N_A = "N/A"
INF = "inf"
NEG_INF = "-inf"

METRIC_COLUMNS = (
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
)
STAT_DIFF_COLUMNS = (
    "Max diff",
    "Min diff",
    "Mean diff",
    "L2norm diff",
    "MaxRelativeErr",
    "MinRelativeErr",
    "MeanRelativeErr",
    "NormRelativeErr",
)
# msprobe's constants (CompareConst / Const)
_COSINE_ROUND_ABOVE = 0.9999
_FLOAT_EPSILON = float(np.finfo(float).eps)
_ONE_THOUSANDTH = 0.001
_FIVE_THOUSANDTHS = 0.005


@dataclass(frozen=True)
class TensorMetrics:
    """The six metrics of one pair, in METRIC_COLUMNS order, and msprobe's reason when they
    could not all be computed."""

    cosine: Metric
    euc_dist: Metric
    max_abs_err: Metric
    max_relative_err: Metric
    one_thousandth: Metric
    five_thousandths: Metric
    message: str = ""

    def values(self) -> tuple[Metric, ...]:
        return (
            self.cosine,
            self.euc_dist,
            self.max_abs_err,
            self.max_relative_err,
            self.one_thousandth,
            self.five_thousandths,
        )


def _format(value: float) -> float:
    # msprobe's format_value: twelve decimals, then back to a float
    return float(f"{value:.12f}")


def format_value(value: float) -> float:
    """msprobe's format_value (twelve decimals, back to a float)."""
    return _format(value)


def as_msprobe_reads(value: np.ndarray) -> np.ndarray:
    """The array as msprobe holds it after reading a dump (`_as_msprobe_reads`)."""
    return _as_msprobe_reads(value)


def _as_msprobe_reads(value: np.ndarray) -> np.ndarray:
    """The array as msprobe holds it after reading a dump: bfloat16 (and float8) become
    float32 (`_prepare_tensor_for_numpy`), other dtypes stay. The relative errors are
    computed in that dtype, so this decides their last digits."""
    kind = value.dtype.kind
    if kind == "V" or (kind == "f" and value.dtype.itemsize < 2) or value.dtype.name == "bfloat16":
        return value.astype(np.float32)
    return value


def _relative_err(n: np.ndarray, b: np.ndarray) -> np.ndarray:
    """msprobe's get_relative_err: |n - b| / |b| in the wider of the two float dtypes (at
    least float32), a zero of the golden side nudged by that dtype's epsilon on both sides."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if n.dtype not in (np.float16, np.float32, np.float64, np.longdouble):
            n = n.astype(float)
        if b.dtype not in (np.float16, np.float32, np.float64, np.longdouble):
            b = b.astype(float)
        zero = b == 0
        result_type = np.result_type(n, b, np.float32)
        n = n.astype(result_type)  # astype copies: the caller's arrays stay untouched
        b = b.astype(result_type)
        eps = np.finfo(result_type).eps
        n[zero] += eps
        b[zero] += eps
        return np.abs(np.divide(n - b, b))


def _ratio(rel: np.ndarray, threshold: float) -> Metric:
    if not np.size(rel):
        return NAN
    return _format(float(np.sum(rel < threshold)) / rel.size)


def _cosine(n: np.ndarray, b: np.ndarray) -> tuple[Metric, str]:
    if n.size == 1 or b.size == 1:
        return UNSUPPORTED, "This is a tensor of one element, can not calculate Cosine."
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return cosine_from(float(np.dot(n, b)), float(np.linalg.norm(n)), float(np.linalg.norm(b)))


def cosine_from(num: float, a_norm: float, b_norm: float) -> tuple[Metric, str]:
    """msprobe's Cosine (and its message) from the dot product and the two L2 norms of two
    float64 tensors of two elements or more (what a chunked pass accumulates)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a_norm <= _FLOAT_EPSILON and b_norm <= _FLOAT_EPSILON:
            return 1.0, ""
        if a_norm <= _FLOAT_EPSILON:
            return (
                NAN,
                "Cannot compare by Cosine Similarity, All the data is Zero in npu dump data.",
            )
        if b_norm <= _FLOAT_EPSILON:
            return NAN, (
                "Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data."
            )
        cos = np.float64(num) / (np.float64(a_norm) * np.float64(b_norm))
    if np.isnan(cos):
        return NAN, "Cannot compare by Cosine Similarity, the dump data has NaN."
    result = _format(float(cos))
    if result > _COSINE_ROUND_ABOVE:
        result = round(result, 6)
    return result, ""


def _every(word: str, message: str) -> TensorMetrics:
    """msprobe's way with a pair it cannot compare: one word in all six columns."""
    return TensorMetrics(word, word, word, word, word, word, message)


def tensor_metrics(target: np.ndarray, golden: np.ndarray) -> TensorMetrics:
    """The six metrics of `target` (msprobe's NPU side) against `golden` (its Bench side),
    with msprobe's checks in its order: empty, shape, 0-d, NaN/Inf positions, dtype."""
    n = _as_msprobe_reads(np.asarray(target))
    b = _as_msprobe_reads(np.asarray(golden))
    if n.size == 0:
        return _every(UNSUPPORTED, "This is empty data, can not compare.")
    if n.shape != b.shape:
        return _every(SHAPE_UNMATCH, "Shape of NPU and bench tensor do not match. Skipped.")
    message = ""
    scalar = not n.shape
    if scalar:
        message = (
            "This is type of 0-d tensor, can not calculate 'Cosine', 'EucDist', "
            "'One Thousandth Err Ratio' and 'Five Thousandths Err Ratio'. "
        )
    if n.dtype.kind in "fc" or b.dtype.kind in "fc":
        n64, b64 = n.astype(float), b.astype(float)
        n_inf, b_inf, n_nan, b_nan = np.isinf(n64), np.isinf(b64), np.isnan(n64), np.isnan(b64)
        if n_inf.any() or n_nan.any() or b_inf.any() or b_nan.any():
            if not (np.array_equal(n_inf, b_inf) and np.array_equal(n_nan, b_nan)):
                return _every(
                    N_A,
                    "The position of inf or nan in NPU and bench Tensor do not match.",
                )
            # at the same places on both sides: msprobe zeroes them and compares the rest
            n, b = n.copy(), b.copy()
            n[n_inf | n_nan] = 0
            b[b_inf | b_nan] = 0
    if not message and n.dtype != b.dtype:
        message = "Dtype of NPU and bench tensor do not match."
    if scalar:
        return _scalar_metrics(n, b, message)
    nf = n.reshape(-1).astype(float)
    bf = b.reshape(-1).astype(float)
    cosine, cos_msg = _cosine(nf, bf)
    with np.errstate(over="ignore", invalid="ignore"):
        euc = float(np.linalg.norm(nf - bf, ord=2))
        max_abs = float(np.max(np.abs(nf - bf)))
    rel = _relative_err(n, b)
    max_rel = float(np.max(np.abs(rel)))
    msgs = [message, cos_msg]
    max_abs_m: Metric = _format(max_abs)
    if math.isnan(max_abs):
        max_abs_m = NAN
        msgs.append("Cannot compare by MaxAbsError, the data contains nan/inf/-inf in dump data.")
    max_rel_m: Metric = _format(max_rel)
    if math.isnan(max_rel):
        max_rel_m = NAN
        msgs.append(
            "Cannot compare by MaxRelativeError, the data contains nan/inf/-inf in dump data."
        )
    return TensorMetrics(
        cosine,
        euc,
        max_abs_m,
        max_rel_m,
        _ratio(rel, _ONE_THOUSANDTH),
        _ratio(rel, _FIVE_THOUSANDTHS),
        "".join(msgs),
    )


def _scalar_metrics(n: np.ndarray, b: np.ndarray, message: str) -> TensorMetrics:
    """A 0-d pair: only the absolute and relative errors mean something (msprobe)."""
    with np.errstate(over="ignore", invalid="ignore"):
        max_abs = float(np.abs(n.astype(float) - b.astype(float)))
    max_rel = float(np.abs(_relative_err(n, b)))
    return TensorMetrics(
        UNSUPPORTED,
        UNSUPPORTED,
        NAN if math.isnan(max_abs) else _format(max_abs),
        NAN if math.isnan(max_rel) else _format(max_rel),
        UNSUPPORTED,
        UNSUPPORTED,
        message,
    )


@dataclass(frozen=True)
class StatRecord:
    """A tensor's statistics as msprobe names them (None: the record has none)."""

    max: float | None
    min: float | None
    mean: float | None
    norm: float | None

    def values(self) -> tuple[float | None, ...]:
        return (self.max, self.min, self.mean, self.norm)


def tensor_stats(value: np.ndarray) -> StatRecord:
    """Max, Min, Mean and L2 norm of a tensor in float64 (for the CSV's NPU/Bench columns and
    the statistics compare of a tensor dump); None for an empty tensor."""
    if value.size == 0:
        return StatRecord(None, None, None, None)
    v = np.asarray(value).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return StatRecord(
            float(np.max(v)), float(np.min(v)), float(np.mean(v)), float(np.linalg.norm(v))
        )


def _stat_text(value: float) -> str:
    # pandas' astype(str) of a float64: numpy's shortest repr, as Python's repr
    return repr(float(value))


def _one_stat(npu: float | None, bench: float | None) -> tuple[Metric, Metric]:
    """msprobe's CalcStatsDiff for one statistic: (diff, relative error)."""
    if npu is None and bench is None:
        return "0", "0"  # msprobe compares the texts: 'None' equals 'None'
    if npu is None or bench is None:
        return N_A, N_A
    if _stat_text(npu) == _stat_text(bench):
        return "0", "0"
    if math.isnan(npu) or math.isnan(bench):
        return NAN, NAN
    if math.isinf(npu):
        return (INF, INF) if npu > 0 else (NEG_INF, NEG_INF)
    if math.isinf(bench):
        return (NEG_INF, NEG_INF) if bench > 0 else (INF, INF)
    diff = npu - bench
    if bench == 0:
        return diff, INF
    return diff, f"{abs(diff / bench * 100)!r}%"


def stat_diffs(target: StatRecord, golden: StatRecord) -> tuple[Metric, ...]:
    """The eight statistics columns (STAT_DIFF_COLUMNS): the four diffs, then the four
    relative errors, each a float, msprobe's `'0'` for equal values, a percentage text or
    one of its words."""
    pairs = [_one_stat(n, b) for n, b in zip(target.values(), golden.values(), strict=True)]
    return tuple(p[0] for p in pairs) + tuple(p[1] for p in pairs)
