"""The sentinel's rule for check errors (`cli.online_sentinel`), on a scripted session: a
stop whose hits are all check errors (a weight-change watchpoint with no previous value) is
continued and ends with exit 0; a stop with a real hit is exit 1 and writes the hit, then
the check errors, each with `check_error`; NaN/Inf error codes are findings, not errors."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tuidebug.cli.online_sentinel import is_check_error, run_sentinel
from tuidebug.cli.watch_options import parse_watch_option
from tuidebug.core.condition_catalogue import ParamResult, get_condition
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.session import Ending, SessionState
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import Watchpoint, WatchpointHit


@dataclass
class _Meta:
    state: SessionState = SessionState.WAITING
    message: str = ""
    ending: Ending = Ending.NONE


@dataclass
class ScriptedSession:
    """Each `continue_` moves to the next scripted stop: (hits, final state or None)."""

    stops: list[tuple[list[WatchpointHit], SessionState | None]]
    metadata: _Meta = field(default_factory=_Meta)
    hits: list[WatchpointHit] = field(default_factory=list)
    watchpoints: list[Watchpoint] = field(default_factory=list)
    terminated: bool = False
    continued: int = 0

    def subscribe(self, _fn: Callable[[Any], None]) -> Callable[[], None]:
        return lambda: None

    def create_watchpoint(self, condition: str, params: dict[str, Any]) -> Watchpoint:
        wp = Watchpoint(len(self.watchpoints) + 1, get_condition(condition), dict(params))
        self.watchpoints.append(wp)
        return wp

    def apply_recommended(self) -> list[Watchpoint]:
        return []

    def continue_(self) -> None:
        self.continued += 1
        hits, final = self.stops.pop(0)
        self.hits = hits
        if final is not None:
            self.metadata = _Meta(state=final, ending=Ending.FINISHED)

    def terminate(self) -> None:
        self.terminated = True
        self.metadata = _Meta(state=SessionState.DONE, ending=Ending.FINISHED)


def _hit(wp: int, abbr: str, node: str, code: int, step: int, hit: bool = False) -> WatchpointHit:
    params = (
        (ParamResult("abs_mean_update_ratio_gt", 1.0, False, hit=hit, actual=2.0),) if hit else ()
    )
    return WatchpointHit(
        wp, get_condition(abbr), TensorRef(node, 0, step, rank=0, graph="g"), code, params,
        step=step,
    )  # fmt: skip


def _run(session: ScriptedSession, *specs: str) -> tuple[int, list[dict[str, Any]]]:
    out = io.StringIO()
    options = [parse_watch_option(s) for s in specs]
    code = run_sentinel(session, options, recommended=False, as_json=True, out=out)  # type: ignore[arg-type]
    return code, json.loads(out.getvalue())


def test_check_errors_only_are_continued_and_exit_0() -> None:
    no_prev = _hit(1, "WCL", "fc.weight", ErrorCode.NO_PREV, 1)
    session = ScriptedSession([([no_prev], None), ([], SessionState.DONE)])
    code, records = _run(session, "WCL:abs_mean_update_ratio_gt=1", "TO")
    assert code == 0
    assert not session.terminated and session.continued == 2  # at arming, at the error stop
    assert [r["check_error"] for r in records] == [True]
    assert records[0]["error_code"] == 4 and records[0]["error_messages"]
    assert records[0]["micro_batch"] is None


def test_a_real_hit_after_check_errors_is_exit_1_hits_first() -> None:
    no_prev = _hit(1, "WCL", "fc.weight", ErrorCode.NO_PREV, 1)
    nan = replace(_hit(2, "TO", "fc-Linear/Linear-op1", ErrorCode.NAN, 3), micro_batch=2)
    session = ScriptedSession([([no_prev], None), ([no_prev, nan], None)])
    code, records = _run(session, "WCL:abs_mean_update_ratio_gt=1", "TO")
    assert code == 1 and session.terminated
    assert [(r["node"], r["check_error"]) for r in records] == [
        ("fc-Linear/Linear-op1", False),
        ("fc.weight", True),  # once, though seen at two stops
    ]
    assert records[0]["micro_batch"] == 2  # gradient accumulation: the hit's micro-batch


def test_nan_inf_codes_and_parameter_hits_are_findings() -> None:
    assert is_check_error(_hit(1, "WCL", "w", ErrorCode.NO_PREV, 1))
    assert is_check_error(_hit(1, "TL", "w", ErrorCode.OUT_OF_MEMORY, 1))
    assert not is_check_error(_hit(1, "TL", "w", ErrorCode.NAN | ErrorCode.NO_PREV, 1))
    assert not is_check_error(_hit(1, "TL", "w", ErrorCode.INF, 1))
    assert not is_check_error(_hit(1, "WCL", "w", 0, 1, hit=True))
    assert not is_check_error(_hit(1, "TO", "w", 0, 1))
