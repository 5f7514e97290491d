"""Which hits say a tensor holds NaN or ±Inf, the first such tensor to run, and the hit
list's alert line made from them (issue 28: the first offender on top)."""

from __future__ import annotations

from tuidebug.core.condition_catalogue import get_condition
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.hit_rules import NanInf, nan_inf_of, nan_inf_summary
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.panes.hit_list import nan_inf_alert

TO = get_condition("tensor_overflow")
TZ = get_condition("tensor_all_zero")
WCL = get_condition("weight_change_too_large")
FC2 = "Default/network/fc2-Dense/MatMul-op0"


def hit(cond: str, node: str, code: int = 0, order: int = 0, step: int = 4) -> WatchpointHit:
    spec = {"TO": TO, "TZ": TZ, "WCL": WCL}[cond]
    return WatchpointHit(1, spec, TensorRef(node, 0, step - 1, 0, "g"), code, (), order, step)


def test_a_hit_says_nan_or_inf_by_its_error_bits_or_its_overflow_condition() -> None:
    assert nan_inf_of(hit("TZ", "a", ErrorCode.NAN)) == NanInf(True, False)
    assert nan_inf_of(hit("TZ", "a", ErrorCode.NAN | ErrorCode.INF)) == NanInf(True, True)
    assert nan_inf_of(hit("TZ", "a", ErrorCode.INF | ErrorCode.NO_PREV)) == NanInf(False, True)
    # a tensor-overflow hit says "NaN or ±Inf", not which
    assert nan_inf_of(hit("TO", "a")) == NanInf(False, False)
    assert nan_inf_of(hit("WCL", "a", ErrorCode.NO_PREV)) is None
    assert nan_inf_of(hit("TZ", "a")) is None  # a real all-zero hit


def test_the_summary_counts_tensors_once_by_kind_and_names_the_first_to_run() -> None:
    hits = [
        hit("TZ", "w", ErrorCode.NAN, order=90),  # a parameter: after every kernel
        hit("TO", "w", order=90),
        hit("TO", "relu", order=7),
        hit("TZ", "relu", ErrorCode.INF, order=7),
        hit("TO", FC2, order=3),
        hit("TZ", FC2, ErrorCode.NAN | ErrorCode.INF, order=3),
        hit("TO", "loss", order=12),  # no other hit says which
        hit("WCL", "w2", ErrorCode.NO_PREV, order=91),  # says nothing of NaN/Inf
        hit("TO", "early", order=1, step=5),  # a later step runs later
    ]
    summary = nan_inf_summary(hits)
    assert summary is not None
    assert summary.first.tensor.node == FC2
    assert (summary.nan, summary.inf, summary.either) == (2, 1, 2)
    assert summary.tensors == 5
    assert nan_inf_summary([hit("WCL", "w", ErrorCode.NO_PREV)]) is None
    assert nan_inf_summary([]) is None


def test_the_alert_line_reads_like_tensorboard_debugger_v2s() -> None:
    hits = [hit("TO", FC2, ErrorCode.NAN, order=3)] + [
        hit("TZ", f"n{i}", ErrorCode.NAN if i < 11 else ErrorCode.INF, order=10 + i)
        for i in range(34)
    ]
    line = nan_inf_alert(nan_inf_summary(hits), "fc2-Dense/MatMul-op0")
    assert (
        line
        == "first NaN/Inf: fc2-Dense/MatMul-op0 at step 4 (iteration 3) — 12 NaN, 23 ±Inf tensors"
    )
    one = nan_inf_alert(nan_inf_summary([hit("TO", FC2)]))
    assert one == "first NaN/Inf: MatMul-op0 at step 4 (iteration 3) — 1 NaN-or-Inf tensor"
    assert nan_inf_alert(None) == ""
