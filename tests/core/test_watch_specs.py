"""Watchpoints as --watch specs and back: `Watchpoint.spec` is read back by
`parse_watch_spec` to the same condition and parameters, for all 17 conditions and any valid
parameters; the TUI's exports (a `tuidebug check` command line, a --watch-file) carry them
through the command line's own parser; hits are written in `tuidebug check --json`'s schema."""

from __future__ import annotations

import math
import shlex
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuidebug import cli
from tuidebug.cli.watch_options import parse_watch_arguments
from tuidebug.core.condition_catalogue import CONDITIONS, ConditionSpec, ParamResult, ParamSpec
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import (
    Watchpoint,
    WatchpointHit,
    hit_record,
    parse_watch_spec,
    validate_params,
    watch_file_specs,
)
from tuidebug.tui.watchpoints.export import check_command, watch_file_text


def _value(spec: ParamSpec) -> st.SearchStrategy[float]:
    if spec.is_bool:
        return st.sampled_from([0.0, 1.0])
    lo = -math.inf if spec.lo is None else spec.lo
    hi = math.inf if spec.hi is None else spec.hi
    finite = st.floats(
        min_value=None if math.isinf(lo) else lo,
        max_value=None if math.isinf(hi) else hi,
        exclude_min=not spec.lo_inclusive and not math.isinf(lo),
        exclude_max=not spec.hi_inclusive and not math.isinf(hi),
        allow_nan=False,
        allow_infinity=False,
        allow_subnormal=True,
    )
    edges = [v for v in (lo, hi) if spec.check(v) is None]  # e.g. abs_mean_gt=inf is allowed
    return st.one_of(finite, st.sampled_from(edges)) if edges else finite


@st.composite
def watchpoints(draw: st.DrawFn, condition: ConditionSpec | None = None) -> Watchpoint:
    """Any watchpoint the API rules accept: a condition, a subset of its parameters with
    at least one threshold (and the range bounds a percentage needs), values in range."""
    cond = condition or draw(st.sampled_from(list(CONDITIONS.values())))
    names = (
        set(draw(st.sets(st.sampled_from([p.name for p in cond.params])))) if cond.params else set()
    )
    checks = [p for p in cond.params if p.kind == "check" and p.visible]
    if checks and not any(cond.param(n) in checks for n in names) and cond.abbr != "WNC":
        names.add(draw(st.sampled_from(checks)).name)
    for name in list(names):
        names.update(cond.param(name).requires)
    params = {name: draw(_value(cond.param(name))) for name in sorted(names)}
    start, end = params.get("range_start_inclusive"), params.get("range_end_inclusive")
    if start is not None and end is not None and start > end:
        params["range_start_inclusive"], params["range_end_inclusive"] = end, start
    validate_params(cond, params)  # the strategy only makes valid ones
    return Watchpoint(draw(st.integers(1, 99)), cond, params)


@pytest.mark.parametrize("condition", list(CONDITIONS.values()), ids=lambda c: c.abbr)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_spec_round_trips_for_every_condition(condition: ConditionSpec, data: Any) -> None:
    wp = data.draw(watchpoints(condition))
    cond, params = parse_watch_spec(wp.spec)
    assert cond is wp.condition
    assert params == wp.params
    assert list(params) == list(wp.params)  # declared order both ways
    assert Watchpoint(0, cond, params).spec == wp.spec  # and the text is stable


@settings(max_examples=100, deadline=None)
@given(st.lists(watchpoints(), min_size=1, max_size=6), st.text(max_size=20))
def test_check_command_parses_back_through_the_cli(wps: list[Watchpoint], dump: str) -> None:
    dump = "/" + dump.replace("\x00", "")  # the app copies an absolute path; none holds NUL
    command = check_command([wp.spec for wp in wps], dump)
    words = shlex.split(command)
    assert words[:3] == ["tuidebug", "check", dump]
    args = cli.build_parser().parse_args(words[1:])
    parsed = parse_watch_arguments(args)
    assert [(o.condition, validate_params(o.condition, o.params)) for o in parsed] == [
        (wp.condition, wp.params) for wp in wps
    ]


@settings(max_examples=50, deadline=None)
@given(st.lists(watchpoints(), min_size=1, max_size=6), st.lists(watchpoints(), max_size=3))
def test_watch_file_keeps_the_enabled_ones(
    enabled: list[Watchpoint], disabled: list[Watchpoint]
) -> None:
    text = watch_file_text([wp.spec for wp in enabled], [wp.spec for wp in disabled])
    specs = [spec for _line, spec in watch_file_specs(text)]
    assert specs == [wp.spec for wp in enabled]


def test_watch_file_grammar() -> None:
    text = "# a comment\n\nTO\n  TL:abs_mean_gt=1e3   # trailing comment\n\t\n#WO\nGE\n"
    assert watch_file_specs(text) == [(3, "TO"), (4, "TL:abs_mean_gt=1e3"), (7, "GE")]


def test_online_check_command_is_only_the_watch_options() -> None:
    assert check_command(["TO", "TL:abs_mean_gt=1000"], None) == (
        "--watch TO --watch TL:abs_mean_gt=1000"
    )
    assert check_command(["TO"], "/my dumps/run") == "tuidebug check '/my dumps/run' --watch TO"


def test_hit_record_is_checks_schema() -> None:
    wp = Watchpoint(3, "TL", {"abs_mean_gt": 1.0})
    results = (
        ParamResult("abs_mean_gt", 1.0, False, hit=True, actual=2.5),
        ParamResult("max_gt", 0.0, True, hit=False, actual=None),
        ParamResult("min_gt", 0.0, True),
        ParamResult("mean_gt", 0.0, True),
    )
    hit = WatchpointHit(3, wp.condition, TensorRef("Default/Add-op1", 0, 2, 0, "g"), 0, results)
    assert hit_record(hit, wp.spec, wp.params) == {
        "watchpoint": "TL:abs_mean_gt=1",
        "condition": "tensor_too_large",
        "rank": 0,
        "graph": "g",
        "iteration": 2,
        "step": 3,  # a dump's iteration 2 is the TUI's step 3 (issue 28)
        "node": "Default/Add-op1",
        "slot": 0,
        "error_code": 0,
        "error_messages": [],
        "params": [{"name": "abs_mean_gt", "value": 1.0, "actual": 2.5, "hit": True}],
    }
    unread = (ParamResult("abs_mean_gt", 1.0, False, hit=False, actual=math.nan),)
    nan = WatchpointHit(3, wp.condition, hit.tensor, 1 | 2, unread)
    record = hit_record(nan, "TL:abs_mean_gt=1e0", {"abs_mean_gt": 1.0})
    assert record["watchpoint"] == "TL:abs_mean_gt=1e0"
    assert record["error_messages"] == ["Tensor contains NaN.", "A tensor contains +/-INF."]
    assert record["params"][0]["actual"] is None  # JSON has no NaN
    # a session's hit keeps the step it was shown at (online: the step is the iteration)
    online = WatchpointHit(3, wp.condition, hit.tensor, 0, results, step=2)
    assert hit_record(online, wp.spec, wp.params)["step"] == 2
