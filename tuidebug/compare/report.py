"""The compare: pairs → rows (metrics, verdict, reason), the summary, msprobe's CSV layout.

A row's `status`: `pass`, `diverged` (past the tolerance, tolerance.py), `unmatched` (one
side only) or `skipped` (a side could not be read: the reason says why). Rows keep the
pairs' execution order; `first` is the index of the first divergence.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from tuidebug.compare.metrics import (
    METRIC_COLUMNS,
    STAT_DIFF_COLUMNS,
    Metric,
    StatRecord,
    TensorMetrics,
    stat_diffs,
    tensor_metrics,
    tensor_stats,
)
from tuidebug.compare.pairing import Pair, Side
from tuidebug.compare.tolerance import Tolerance, tolerance_for

__all__ = ["CompareReport", "Row", "compare_pairs", "csv_text"]

_BASIC = (
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "NPU Requires_grad",
    "Bench Requires_grad",
)
_SUMMARY = (
    "NPU max",
    "NPU min",
    "NPU mean",
    "NPU l2norm",
    "Bench max",
    "Bench min",
    "Bench mean",
    "Bench l2norm",
)
_TAIL = ("Requires_grad Consistent", "Result", "Err_message", "NPU_Stack_Info")


@dataclass
class Row:
    name: str
    rank: int
    step: int
    status: str
    reason: str = ""
    target_dtype: str = ""
    golden_dtype: str = ""
    target_shape: tuple[int, ...] | None = None
    golden_shape: tuple[int, ...] | None = None
    target_stats: StatRecord | None = None
    golden_stats: StatRecord | None = None
    metrics: TensorMetrics | None = None
    stat_diffs: tuple[Metric, ...] | None = None
    requires_grad: tuple[bool | None, bool | None] = (None, None)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "rank": self.rank,
            "step": self.step,
            "status": self.status,
            "reason": self.reason,
            "target": {"dtype": self.target_dtype, "shape": _shape_list(self.target_shape)},
            "golden": {"dtype": self.golden_dtype, "shape": _shape_list(self.golden_shape)},
        }
        if self.metrics is not None:
            out["metrics"] = dict(
                zip(METRIC_COLUMNS, map(_json_value, self.metrics.values()), strict=True)
            )
        if self.stat_diffs is not None:
            out["statistics"] = dict(
                zip(STAT_DIFF_COLUMNS, map(_json_value, self.stat_diffs), strict=True)
            )
        return out


@dataclass
class CompareReport:
    rows: list[Row] = field(default_factory=list)
    tensor_mode: bool = True

    @property
    def first(self) -> int | None:
        return next((i for i, r in enumerate(self.rows) if r.status == "diverged"), None)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r.status == status)

    @property
    def summary(self) -> dict[str, int]:
        return {
            "matched": self.count("pass") + self.count("diverged"),
            "diverged": self.count("diverged"),
            "unmatched": self.count("unmatched"),
            "skipped": self.count("skipped"),
        }


def _shape_list(shape: tuple[int, ...] | None) -> list[int] | None:
    return None if shape is None else list(shape)


def _json_value(value: Metric) -> float | str | None:
    # JSON has no NaN/Inf: those stay msprobe's words
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _dtype_name(value: np.ndarray) -> str:
    return str(value.dtype)


def compare_pairs(
    pairs: Iterable[Pair],
    *,
    cosine: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> CompareReport:
    report = CompareReport()
    for pair in pairs:
        row = _row(pair, cosine, rtol, atol)
        if row.metrics is None and row.stat_diffs is not None:
            report.tensor_mode = False
        report.rows.append(row)
    return report


def _row(pair: Pair, cosine: float | None, rtol: float | None, atol: float | None) -> Row:
    row = Row(pair.name, pair.rank, pair.step, "unmatched")
    t, g = pair.target, pair.golden
    for side, prefix in ((t, "target"), (g, "golden")):
        if side is not None:
            setattr(row, f"{prefix}_dtype", side.dtype)
            setattr(row, f"{prefix}_shape", side.shape)
            setattr(row, f"{prefix}_stats", side.stats)
    row.requires_grad = (t.requires_grad if t else None, g.requires_grad if g else None)
    if t is None or g is None:
        row.reason = "only in the target dump" if g is None else "only in the golden dump"
        return row
    if t.load is not None and g.load is not None:
        return _tensor_row(row, t, g, cosine, rtol, atol)
    if t.stats is None or g.stats is None:
        row.status, row.reason = "skipped", "one side has neither a tensor nor statistics"
        return row
    return _stat_row(row, t.stats, g.stats, cosine, rtol, atol)


def _tensor_row(
    row: Row, t: Side, g: Side, cosine: float | None, rtol: float | None, atol: float | None
) -> Row:
    assert t.load is not None and g.load is not None
    try:
        tv = np.asarray(t.load())
        gv = np.asarray(g.load())
    except (OSError, ValueError) as err:
        # a side's reader says why in one sentence (pairing turns its errors into ValueError)
        row.status, row.reason = "skipped", str(err).rstrip(".")
        return row
    row.target_dtype, row.golden_dtype = _dtype_name(tv), _dtype_name(gv)
    row.target_shape, row.golden_shape = tuple(tv.shape), tuple(gv.shape)
    row.target_stats, row.golden_stats = tensor_stats(tv), tensor_stats(gv)
    m = tensor_metrics(tv, gv)
    row.metrics = m
    tol = tolerance_for(row.target_dtype, row.golden_dtype, cosine=cosine, rtol=rtol, atol=atol)
    row.status, row.reason = _tensor_verdict(tv, gv, m, tol)
    return row


def _nonfinite(value: np.ndarray) -> bool:
    if value.dtype.kind not in "fcV" and value.dtype.name != "bfloat16":
        return False
    return not bool(np.isfinite(value.astype(np.float64)).all())


def _tensor_verdict(
    tv: np.ndarray, gv: np.ndarray, m: TensorMetrics, tol: Tolerance
) -> tuple[str, str]:
    if tv.shape != gv.shape:
        return "diverged", f"shapes differ: {list(tv.shape)} against {list(gv.shape)}"
    t_bad, g_bad = _nonfinite(tv), _nonfinite(gv)
    if t_bad != g_bad:
        return "diverged", f"NaN or Inf in the {'target' if t_bad else 'golden'} only"
    if m.max_abs_err == "N/A" or m.cosine == "N/A":
        return "diverged", "NaN or Inf at different places on the two sides"
    if isinstance(m.cosine, float) and m.cosine < tol.cosine:
        return "diverged", f"cosine {m.cosine:.6g} < {tol.cosine:g}"
    if m.cosine == "Nan" and tv.size > 1:
        return "diverged", "cosine undefined: one side is all zeros"
    if isinstance(m.max_abs_err, float) and gv.size:
        scale = float(np.max(np.abs(np.nan_to_num(gv.astype(np.float64), posinf=0, neginf=0))))
        bound = tol.atol + tol.rtol * scale
        if m.max_abs_err > bound:
            return "diverged", f"max abs error {m.max_abs_err:.6g} > {bound:.6g}"
    return "pass", ""


def _stat_row(
    row: Row,
    ts: StatRecord,
    gs: StatRecord,
    cosine: float | None,
    rtol: float | None,
    atol: float | None,
) -> Row:
    row.stat_diffs = stat_diffs(ts, gs)
    if row.target_shape != row.golden_shape:
        row.status, row.reason = (
            "diverged",
            (
                f"shapes differ: {_shape_list(row.target_shape)} against "
                f"{_shape_list(row.golden_shape)}"
            ),
        )
        return row
    tol = tolerance_for(row.target_dtype, row.golden_dtype, cosine=cosine, rtol=rtol, atol=atol)
    for label, tv, gv in (
        ("max", ts.max, gs.max),
        ("min", ts.min, gs.min),
        ("norm", ts.norm, gs.norm),
    ):
        if tv is None or gv is None:
            continue
        t_bad, g_bad = not math.isfinite(tv), not math.isfinite(gv)
        if t_bad or g_bad:
            if t_bad != g_bad or repr(tv) != repr(gv):
                row.status, row.reason = "diverged", f"{label} is {tv!r} against {gv!r}"
                return row
            continue
        bound = tol.atol + tol.rtol * abs(gv)
        if abs(tv - gv) > bound:
            row.status, row.reason = (
                "diverged",
                f"{label} differs by {abs(tv - gv):.6g} > {bound:.6g}",
            )
            return row
    row.status = "pass"
    return row


# ---------------------------------------------------------------------------- CSV


def header(tensor_mode: bool) -> list[str]:
    """msprobe compare's header: real-data mode (`Cosine`…, then `Data_name`) or statistics
    mode (`Max diff`…)."""
    middle = METRIC_COLUMNS if tensor_mode else STAT_DIFF_COLUMNS
    cols = [*_BASIC, *middle, *_SUMMARY, *_TAIL]
    return [*cols, "Data_name"] if tensor_mode else cols


def _cell(value: object) -> object:
    if value is None:
        return "N/A"
    return value


def _stats_cells(stats: StatRecord | None, dtype: str) -> list[object]:
    """A side's Max/Min/Mean/L2norm as msprobe writes them: an integer tensor's as integers,
    a missing one as `None` (so the CSVs read the same)."""
    if stats is None:
        return ["N/A"] * 4
    integral = "int" in dtype.lower()
    return [
        "None" if v is None else int(v) if integral and math.isfinite(v) and v.is_integer() else v
        for v in stats.values()
    ]


def csv_text(report: CompareReport) -> str:
    """The report as msprobe compare's CSV: the same header names and order, one row per
    pair; `Result` is pass, error (a divergence), or N/A (unmatched or skipped), and
    `Err_message` our reason."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    cols = header(report.tensor_mode)
    writer.writerow(cols)
    for row in report.rows:
        middle: list[object]
        width = len(METRIC_COLUMNS if report.tensor_mode else STAT_DIFF_COLUMNS)
        if report.tensor_mode and row.metrics is not None:
            middle = list(row.metrics.values())
        elif not report.tensor_mode and row.stat_diffs is not None:
            middle = list(row.stat_diffs)
        else:
            middle = ["N/A"] * width
        t_grad, g_grad = row.requires_grad
        result = {"pass": "pass", "diverged": "error"}.get(row.status, "N/A")
        line = [
            row.name,
            row.name if row.golden_dtype or row.status != "unmatched" else "N/A",
            row.target_dtype or "N/A",
            row.golden_dtype or "N/A",
            _shape_list(row.target_shape) if row.target_shape is not None else "N/A",
            _shape_list(row.golden_shape) if row.golden_shape is not None else "N/A",
            _cell(t_grad),
            _cell(g_grad),
            *middle,
            *_stats_cells(row.target_stats, row.target_dtype),
            *_stats_cells(row.golden_stats, row.golden_dtype),
            t_grad == g_grad,
            result,
            [row.reason] if row.reason else [],
            "N/A",
        ]
        if report.tensor_mode:
            line.append("N/A")
        writer.writerow(line)
    return out.getvalue()
