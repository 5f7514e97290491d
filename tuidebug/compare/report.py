"""The compare: pairs → rows (metrics, verdict, reason), the summary, msprobe's CSV layout.

A row's `status`: `pass`, `diverged` (past the tolerance, tolerance.py), `unmatched` (one
side only) or `skipped` (a side could not be read: the reason says why). Rows keep the
pairs' execution order; `first` is the index of the first divergence.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from tuidebug.compare.fused import measure, nonfinite
from tuidebug.compare.metrics import (
    METRIC_COLUMNS,
    STAT_DIFF_COLUMNS,
    Metric,
    StatRecord,
    TensorMetrics,
    stat_diffs,
    tensor_stats,
)
from tuidebug.compare.pairing import Pair, Side
from tuidebug.compare.tolerance import Tolerance, run_precision, tolerance_for

__all__ = ["CompareReport", "Row", "compare_pairs", "csv_text", "judge_at_run_precision"]

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
    # the golden's own name where it differs (two MindSpore versions), else ""
    golden_name: str = ""
    # the node/call the tensor belongs to and the nodes feeding it (Pair.node/.inputs)
    node: str = ""
    inputs: tuple[str, ...] = ()
    # non-tensor arguments (msprobe): each side's value as msprobe writes it, else None
    target_scalar: str | None = None
    golden_scalar: str | None = None
    data_names: tuple[str, str] = ("", "")
    # what the verdict was made from (no values kept), so that a run-level tolerance can
    # judge the row again (tolerance.run_precision)
    evidence: _TensorEvidence | _StatEvidence | None = field(default=None, repr=False)

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
        if self.golden_name:
            out["golden_name"] = self.golden_name
        if self.target_scalar is not None or self.golden_scalar is not None:
            out["target"]["value"] = self.target_scalar  # type: ignore[index]
            out["golden"]["value"] = self.golden_scalar  # type: ignore[index]
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
    # sentences about how the compare was made (statistics on one side: compared on
    # statistics); not problems, they do not make the compare incomplete
    notes: list[str] = field(default_factory=list)
    # whether rows carry graph edges (MindSpore dumps): the chain follows them, else the
    # execution order (msprobe dumps, where data flow between calls is not recorded)
    graph_edges: bool = False

    @property
    def first(self) -> int | None:
        """The index in `rows` of the first divergence in execution order, or None."""
        return next((i for i, r in enumerate(self.rows) if r.status == "diverged"), None)

    @property
    def chain_basis(self) -> str:
        """How `chain` finds what the first divergence feeds: `graph edges` (MindSpore),
        `data flow` (msprobe records matched output to input, compare.pairing.data_flow)
        or `execution order` (nothing known)."""
        if not (self.graph_edges or any(r.inputs for r in self.rows)):
            return "execution order"
        return "graph edges" if any("/" in r.node for r in self.rows) else "data flow"

    def chain(self, limit: int | None = None) -> list[int]:
        """The divergence chain: indices in `rows` of the diverged tensors that the first
        divergence feeds (same rank and step, after it in execution order), as the origin
        trace follows a NaN. With graph edges (MindSpore dumps) or data flow (msprobe
        records matched output to input) a tensor is fed when its node is the first
        divergence's node or consumes, directly or through other nodes, a node already
        reached; with neither, every later diverged tensor of the step counts. At most `limit` indices (None: all). Empty without a divergence."""
        first = self.first
        if first is None:
            return []
        origin = self.rows[first]
        reached = {origin.node} if origin.node else set()
        if ":input." in origin.name and origin.inputs:
            # a diverged input is its producer's output: that node's consumers are fed
            slot = origin.name.rsplit(":input.", 1)[1]
            if slot.isdigit() and int(slot) < len(origin.inputs):
                reached.add(origin.inputs[int(slot)])
        out: list[int] = []
        edges = self.graph_edges or any(r.inputs for r in self.rows)
        for i in range(first + 1, len(self.rows)):
            row = self.rows[i]
            if (row.rank, row.step) != (origin.rank, origin.step):
                continue
            if edges:
                if row.node not in reached and not any(x in reached for x in row.inputs):
                    continue
                reached.add(row.node)
            if row.status == "diverged":
                out.append(i)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def iter_rows(self, status: str | None = None) -> Iterator[tuple[int, Row]]:
        """(index, row) in execution order, only those of `status` when given (`pass`,
        `diverged`, `unmatched`, `skipped`)."""
        for i, row in enumerate(self.rows):
            if status is None or row.status == status:
                yield i, row

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
    said_stats = False
    for pair, loaded in _prefetched(pairs):
        row = _row(pair, cosine, rtol, atol, loaded)
        if row.metrics is None and row.stat_diffs is not None and row.target_scalar is None:
            report.tensor_mode = False
            t, g = pair.target, pair.golden
            if not said_stats and t is not None and g is not None and (t.load or g.load):
                said_stats = True
                side = "target" if g.load is not None else "golden"
                report.notes.append(
                    f"the {side} has statistics only where the other has tensors, so those "
                    "are compared on their statistics (Max, Min, Mean, L2norm)."
                )
        if pair.inputs:
            report.graph_edges = True
        report.rows.append(row)
    judge_at_run_precision(report, cosine, rtol, atol)
    return report


def _both_load(pair: Pair) -> bool:
    t, g = pair.target, pair.golden
    return (
        t is not None
        and g is not None
        and t.load is not None
        and g.load is not None
        and t.scalar is None
        and g.scalar is None
    )


def _prefetched(
    pairs: Iterable[Pair],
) -> Iterator[tuple[Pair, Future[tuple[np.ndarray, np.ndarray]] | None]]:
    """The pairs, each tensor pair with its two values being read in a second thread while
    the pair before it is compared: reading (the file copy and the zip's CRC) and the
    numpy pass both leave the GIL, so on two cores the wall time is the larger of the two,
    not their sum. One pair is read ahead, so memory holds two pairs at most."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="compare-read") as pool:
        ahead: tuple[Pair, Future[tuple[np.ndarray, np.ndarray]] | None] | None = None
        for pair in pairs:
            future = None
            if _both_load(pair):
                assert pair.target is not None and pair.golden is not None
                future = pool.submit(_load_both, pair.target, pair.golden)
            if ahead is not None:
                yield ahead
            ahead = (pair, future)
        if ahead is not None:
            yield ahead


def _row(
    pair: Pair,
    cosine: float | None,
    rtol: float | None,
    atol: float | None,
    loaded: Future[tuple[np.ndarray, np.ndarray]] | None = None,
) -> Row:
    row = Row(pair.name, pair.rank, pair.step, "unmatched")
    row.golden_name, row.node, row.inputs = pair.golden_name, pair.node, pair.inputs
    t, g = pair.target, pair.golden
    for side, prefix in ((t, "target"), (g, "golden")):
        if side is not None:
            setattr(row, f"{prefix}_dtype", side.dtype)
            setattr(row, f"{prefix}_shape", side.shape)
            setattr(row, f"{prefix}_stats", side.stats)
            setattr(row, f"{prefix}_scalar", side.scalar)
    row.data_names = (t.data_name if t else "", g.data_name if g else "")
    row.requires_grad = (t.requires_grad if t else None, g.requires_grad if g else None)
    if t is None or g is None:
        row.reason = "only in the target dump" if g is None else "only in the golden dump"
        return row
    if t.scalar is not None or g.scalar is not None:
        return _scalar_row(row)
    if t.load is not None and g.load is not None:
        return _tensor_row(row, t, g, cosine, rtol, atol, loaded)
    # statistics on one side (or both): a tensor side is reduced to its statistics
    stats: list[StatRecord] = []
    for side, prefix in ((t, "target"), (g, "golden")):
        if side.stats is not None:
            stats.append(side.stats)
            continue
        if side.load is None:
            row.status, row.reason = "skipped", "one side has neither a tensor nor statistics"
            return row
        try:
            value = np.asarray(side.load())
        except (OSError, ValueError) as err:
            row.status, row.reason = "skipped", str(err).rstrip(".")
            return row
        setattr(row, f"{prefix}_dtype", side.dtype or _dtype_name(value))
        setattr(row, f"{prefix}_shape", tuple(value.shape))
        mindspore = g.nonfinite is not None or t.nonfinite is not None
        # against a statistic.csv row: MindSpore's statistics leave NaN and Inf out (they
        # have their own counts), so the tensor's are taken the same way
        record = _finite_stats(value) if mindspore else tensor_stats(value)
        setattr(row, f"{prefix}_stats", record)
        stats.append(record)
        if mindspore:
            side = Side(nonfinite=_nonfinite(value))
        if prefix == "target":
            t = side
        else:
            g = side
    if t.nonfinite is not None and g.nonfinite is not None and t.nonfinite != g.nonfinite:
        row.stat_diffs = stat_diffs(stats[0], stats[1])
        which = "target" if t.nonfinite else "golden"
        row.status, row.reason = "diverged", f"NaN or Inf in the {which} only"
        return row
    if (
        t.nonfinite is None
        and g.nonfinite is None
        and all(v is None for record in stats for v in record.values())
    ):
        # nothing recorded on either side (a tfdbg NO_TENSOR or SHAPE trace): no pass
        row.status, row.reason = "skipped", "neither side recorded a value or a statistic"
        return row
    return _stat_row(row, stats[0], stats[1], cosine, rtol, atol)


def _finite_stats(value: np.ndarray) -> StatRecord:
    """Max, Min, Mean and L2 norm over the finite values, as MindSpore's statistic.csv has
    them; None where no value is finite."""
    v = np.asarray(value).astype(np.float64).reshape(-1)
    finite = v[np.isfinite(v)]
    if not finite.size:
        return StatRecord(None, None, None, None)
    return StatRecord(
        float(finite.max()),
        float(finite.min()),
        float(finite.mean()),
        float(np.sqrt(np.dot(finite, finite))),
    )


def _scalar_number(text: str | None) -> float | None:
    try:
        return None if text is None or text == "None" else float(text)
    except ValueError:
        return None


def _scalar_row(row: Row) -> Row:
    """A non-tensor argument (msprobe): the values equal or not; msprobe's cells."""
    row.metrics = TensorMetrics(*(("unsupported",) * 6))
    t, g = row.target_scalar, row.golden_scalar
    tn, gn = _scalar_number(t), _scalar_number(g)
    ts = StatRecord(tn, tn, tn, tn)
    gs = StatRecord(gn, gn, gn, gn)
    row.stat_diffs = stat_diffs(ts, gs)
    if t == g:
        row.status = "pass"
    else:
        row.status, row.reason = "diverged", f"value {t} against {g}"
    return row


def _tensor_row(
    row: Row,
    t: Side,
    g: Side,
    cosine: float | None,
    rtol: float | None,
    atol: float | None,
    loaded: Future[tuple[np.ndarray, np.ndarray]] | None = None,
) -> Row:
    assert t.load is not None and g.load is not None
    try:
        if loaded is not None:
            tv, gv = loaded.result()
        else:
            tv, gv = _load_both(t, g)
    except (OSError, ValueError) as err:
        # a side's reader says why in one sentence (pairing turns its errors into ValueError)
        row.status, row.reason = "skipped", str(err).rstrip(".")
        return row
    # the dump's own dtype names and statistics where it has them (msprobe's dump.json:
    # what msprobe compare's CSV shows), else the values'
    row.target_dtype = t.dtype or _dtype_name(tv)
    row.golden_dtype = g.dtype or _dtype_name(gv)
    row.target_shape, row.golden_shape = tuple(tv.shape), tuple(gv.shape)
    # one pass for the metrics, the statistics a side lacks, NaN/Inf and the scale
    g_range = None
    g_max, g_min = (g.stats.max, g.stats.min) if g.stats is not None else (None, None)
    if g_max is not None and g_min is not None and math.isfinite(g_max + g_min):
        g_range = (g_max, g_min)
    measured = measure(tv, gv, stats=(t.stats is None, g.stats is None), golden_range=g_range)
    row.target_stats = t.stats or measured.target_stats
    row.golden_stats = g.stats or measured.golden_stats
    m = measured.metrics
    row.metrics = m
    if row.target_stats is not None and row.golden_stats is not None:
        row.stat_diffs = stat_diffs(row.target_stats, row.golden_stats)
    tol = tolerance_for(row.target_dtype, row.golden_dtype, cosine=cosine, rtol=rtol, atol=atol)
    evidence = _TensorEvidence(
        row.target_shape,
        row.golden_shape,
        measured.target_bad,
        measured.golden_bad,
        m,
        int(tv.size),
        measured.scale,
    )
    row.evidence = evidence
    row.status, row.reason = evidence.verdict(tol)
    return row


def _load_both(t: Side, g: Side) -> tuple[np.ndarray, np.ndarray]:
    assert t.load is not None and g.load is not None
    return np.asarray(t.load()), np.asarray(g.load())


def _nonfinite(value: np.ndarray) -> bool:
    return nonfinite(value)


@dataclass(frozen=True)
class _TensorEvidence:
    """What a tensor pair's verdict rests on: shapes, NaN/Inf on each side, the metrics,
    the size and the golden's largest finite |value| (the scale of `rtol`)."""

    target_shape: tuple[int, ...]
    golden_shape: tuple[int, ...]
    target_bad: bool
    golden_bad: bool
    metrics: TensorMetrics
    size: int
    scale: float

    def verdict(self, tol: Tolerance) -> tuple[str, str]:
        m = self.metrics
        if self.target_shape != self.golden_shape:
            return (
                "diverged",
                f"shapes differ: {list(self.target_shape)} against {list(self.golden_shape)}",
            )
        if self.target_bad != self.golden_bad:
            return "diverged", f"NaN or Inf in the {'target' if self.target_bad else 'golden'} only"
        if m.max_abs_err == "N/A" or m.cosine == "N/A":
            return "diverged", "NaN or Inf at different places on the two sides"
        if isinstance(m.cosine, float) and m.cosine < tol.cosine:
            return "diverged", f"cosine {m.cosine:.6g} < {tol.cosine:g}"
        if m.cosine == "Nan" and self.size > 1:
            return "diverged", "cosine undefined: one side is all zeros"
        if isinstance(m.max_abs_err, float) and self.size:
            bound = tol.atol + tol.rtol * self.scale
            if m.max_abs_err > bound:
                return "diverged", f"max abs error {m.max_abs_err:.6g} > {bound:.6g}"
        return "pass", ""


@dataclass(frozen=True)
class _StatEvidence:
    """What a statistics pair's verdict rests on."""

    target_shape: tuple[int, ...] | None
    golden_shape: tuple[int, ...] | None
    target: StatRecord
    golden: StatRecord

    def verdict(self, tol: Tolerance) -> tuple[str, str]:
        if self.target_shape != self.golden_shape:
            return "diverged", (
                f"shapes differ: {_shape_list(self.target_shape)} against "
                f"{_shape_list(self.golden_shape)}"
            )
        ts, gs = self.target, self.golden
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
                    return "diverged", f"{label} is {tv!r} against {gv!r}"
                continue
            bound = tol.atol + tol.rtol * abs(gv)
            if abs(tv - gv) > bound:
                return "diverged", f"{label} differs by {abs(tv - gv):.6g} > {bound:.6g}"
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
    evidence = _StatEvidence(row.target_shape, row.golden_shape, ts, gs)
    row.evidence = evidence
    tol = tolerance_for(row.target_dtype, row.golden_dtype, cosine=cosine, rtol=rtol, atol=atol)
    row.status, row.reason = evidence.verdict(tol)
    return row


def judge_at_run_precision(
    report: CompareReport, cosine: float | None, rtol: float | None, atol: float | None
) -> None:
    """Where the two runs differ in precision (tolerance.run_precision), every float row
    is judged again by the lower precision (compare_pairs calls it; a caller that builds a
    report from several compare_pairs calls calls it once on the whole report): an fp32 tensor computed from bf16 ones carries bf16's
    error (the loss, the gradients, the optimizer's state under autocast)."""
    run = run_precision((r.target_dtype, r.golden_dtype) for r in report.rows)
    if run is None:
        return
    report.notes.append(
        f"the two runs differ in precision ({run} against a wider float), so every float "
        f"tensor is judged by {run}'s tolerance."
    )
    for row in report.rows:
        if row.evidence is None or row.status not in ("pass", "diverged"):
            continue
        tol = tolerance_for(
            row.target_dtype, row.golden_dtype, cosine=cosine, rtol=rtol, atol=atol, floor=run
        )
        row.status, row.reason = row.evidence.verdict(tol)


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
        "None"
        if v is None
        else "Nan"  # msprobe's set_summary: a NaN statistic is its word
        if math.isnan(v)
        else int(v)
        if integral and math.isfinite(v) and v.is_integer()
        else v
        for v in stats.values()
    ]


def _csv_cell(value: object) -> object:
    """msprobe writes a float ±Inf cell as ` inf`/` -inf` (with a space, so that Excel does
    not read it as a formula); the words it computes (`inf` in a diff) stay as they are."""
    if isinstance(value, float) and math.isinf(value):
        return " inf" if value > 0 else " -inf"
    return value


def _side_cells(scalar: str | None, stats: StatRecord | None, dtype: str) -> list[object]:
    # a non-tensor argument: msprobe writes its value in all four statistics columns
    return [scalar] * 4 if scalar is not None else _stats_cells(stats, dtype)


def _data_names(row: Row) -> object:
    """msprobe's Data_name cell: both sides' file names, `-1` for a non-tensor argument."""
    if row.target_scalar is not None or row.golden_scalar is not None:
        return ["-1", "-1"]
    names = [n for n in row.data_names if n]
    return names if names else "N/A"


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
        golden_side = row.golden_dtype or row.golden_scalar is not None or row.status != "unmatched"
        line = [
            row.name,
            (row.golden_name or row.name) if golden_side else "N/A",
            row.target_dtype or "N/A",
            row.golden_dtype or "N/A",
            _shape_list(row.target_shape) if row.target_shape is not None else "N/A",
            _shape_list(row.golden_shape) if row.golden_shape is not None else "N/A",
            _cell(t_grad),
            _cell(g_grad),
            *middle,
            *_side_cells(row.target_scalar, row.target_stats, row.target_dtype),
            *_side_cells(row.golden_scalar, row.golden_stats, row.golden_dtype),
            t_grad == g_grad,
            result,
            [row.reason] if row.reason else [],
            "N/A",
        ]
        if report.tensor_mode:
            line.append(_data_names(row))
        writer.writerow([_csv_cell(v) for v in line])
    return out.getvalue()
