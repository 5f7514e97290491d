"""`OfflineSession` on the real LeNet dumps: loading events, steps (1-based, step 0 = nothing
loaded), continue stopping at hits, reset and recheck, tensors and previous values, graph runs,
watchpoint editing, and one Notice per problem of a damaged dump."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.dump_names import LOSS_2_10
from tests.offline.damaged_dumps import DAMAGES, Damage, damaged_copy
from tests.offline.dump_copy import copy_dump
from tests.offline.subgraph_dump import add_graph_without_history
from tuidebug.core.session import (
    EventLog,
    GraphsLoaded,
    HitsArrived,
    MetadataChanged,
    Notice,
    Progress,
    SessionError,
    SessionState,
    WatchpointsChanged,
)
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointError
from tuidebug.offline.session import OfflineSession

WEIGHTS = {
    "conv1.weight",
    "conv2.weight",
    "fc1.bias",
    "fc1.weight",
    "fc2.bias",
    "fc2.weight",
    "fc3.bias",
    "fc3.weight",
}


def started(root: Path, **kwargs: object) -> tuple[OfflineSession, EventLog]:
    session = OfflineSession(root, **kwargs)  # type: ignore[arg-type]
    log = EventLog()
    session.subscribe(log)
    session.start()
    return session, log


def of(log: EventLog, kind: type, after: int = 0) -> list:
    return [e for e in log.events[after:] if isinstance(e, kind)]


def notices(log: EventLog) -> list[str]:
    return [e.message for e in of(log, Notice)]


@pytest.fixture
def s210(dump_2_10: Path):  # type: ignore[no-untyped-def]
    session, log = started(dump_2_10)
    yield session, log
    session.close()


# ------------------------------------------------------------------ loading
def test_start_events_and_metadata(dump_2_0: Path) -> None:
    session, log = started(dump_2_0)
    try:
        assert len(of(log, GraphsLoaded)) == 1
        loaded = of(log, GraphsLoaded)[0]
        assert loaded.first_time is True and list(loaded.graphs) == ["kernel_graph_0"]
        assert of(log, Progress)
        md = session.metadata
        assert (md.state, md.step, md.max_step, md.rank, md.ranks) == (
            SessionState.WAITING,
            0,
            4,
            0,
            (0,),
        )
        assert (md.backend, md.ms_version, md.graph_names) == ("CPU", "2.0.0", ("kernel_graph_0",))
        assert of(log, MetadataChanged)[-1].metadata == md
        # the five constants files no graph constant claims are not worth a notice
        # (MindInsight shows none of them either): a 2.0 dump opens without any
        messages = notices(log)
        assert messages == []
        caps = session.capabilities
        assert (caps.live, caps.can_reset_step, caps.can_pause, caps.can_terminate) == (
            False,
            True,
            False,
            False,
        )
        assert session.hits == ()
    finally:
        session.close()


def test_not_a_dump_raises_one_sentence(tmp_path: Path) -> None:
    afile = tmp_path / "f"
    afile.write_text("x")
    for path, words in [(afile, "is not a folder"), (tmp_path, "holds no rank_<N> folder")]:
        session = OfflineSession(path)
        log = EventLog()
        session.subscribe(log)
        with pytest.raises(SessionError) as info:
            session.start()
        assert words in str(info.value) and "\n" not in str(info.value)
        assert str(info.value) in notices(log)
        assert session.metadata.state is SessionState.PENDING
        with pytest.raises(SessionError):
            session.step()


def test_dump_without_iterations(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(
        dump_2_10,
        tmp_path / "d",
        keep=lambda rel: not rel.startswith(("rank_0/LeNet/0/", "rank_0/execution_order")),
    )
    session, log = started(root)
    try:
        assert any("has no dumped iteration" in m for m in notices(log))
        assert session.metadata.max_step == 0 and session.graphs
        with pytest.raises(SessionError):
            session.step()
    finally:
        session.close()


# ------------------------------------------------------------------ stepping
def test_step_checks_each_iteration(s210) -> None:  # type: ignore[no-untyped-def]
    session, log = s210
    session.create_watchpoint("TO", {})
    session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": 1.0})
    mark = len(log.events)
    session.step()
    assert session.metadata.step == 1
    hits = session.hits
    assert {h.tensor.node for h in hits} == WEIGHTS
    assert all(h.error_code == 4 and h.tensor.iteration == 0 for h in hits)
    # step 1 shows dump iteration 0: the session says so, the TUI only displays it
    assert all(h.step == 1 for h in hits) and session.metadata.iteration == 0
    assert session.step_of(hits[0].tensor) == 1 and session.step_of(TensorRef("x")) == 1
    assert not session.capabilities.step_zero_has_values
    arrived = of(log, HitsArrived, mark)
    assert len(arrived) == 1 and arrived[0].step == 1 and arrived[0].hits == hits
    assert not arrived[0].partial
    # a short check says only its step (running), its hits and the end: no progress line
    kinds = [type(e).__name__ for e in log.events[mark:] if not isinstance(e, Notice)]
    assert kinds == ["MetadataChanged", "HitsArrived", "MetadataChanged"]
    assert session.metadata.state is SessionState.WAITING


def test_targets_are_resolved_once_until_the_watchpoint_or_rank_changes(
    s210, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import tuidebug.core.watch_targets as watch_targets

    calls: list[str] = []
    real = watch_targets.resolve_targets

    def counting(cond, targets, graph):  # type: ignore[no-untyped-def]
        calls.append(cond.abbr)
        return real(cond, targets, graph)

    monkeypatch.setattr(watch_targets, "resolve_targets", counting)
    session, _log = s210
    wp = session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": 1.0})
    resolved = len(calls)
    session.step()
    session.step()
    assert len(calls) == resolved  # both steps reused the creation's resolution
    session.update_watchpoint(wp.id, params={"abs_mean_update_ratio_gt": 2.0})
    after_update = len(calls)
    assert after_update > resolved
    session.step()
    assert len(calls) == after_update


def test_continue_stops_at_hits_and_at_the_last_step(s210) -> None:  # type: ignore[no-untyped-def]
    session, _log = s210
    wp = session.create_watchpoint("TL", {"abs_mean_gt": 1.0})
    session.continue_()
    assert session.metadata.step == 1  # the loss hits at every iteration
    assert session.hits[0].tensor.node == LOSS_2_10
    session.update_watchpoint(wp.id, enabled=False)
    session.create_watchpoint("TO", {})
    session.continue_()  # nothing hits: runs to the end
    assert session.metadata.step == 4 and session.hits == ()
    with pytest.raises(SessionError) as info:
        session.continue_()
    assert "last step" in str(info.value)
    with pytest.raises(SessionError):
        session.step()


def test_continue_goes_past_steps_whose_hits_are_all_no_previous_value(s210) -> None:  # type: ignore[no-untyped-def]
    """The recommended watchpoints give weight-change error-4 hits at the first iteration:
    a continue from step 0 lists them with step 1, notes them once, and keeps going."""
    session, log = s210
    session.apply_recommended()
    mark = len(log.events)
    session.continue_()
    assert session.metadata.step == 4  # nothing else hits in this dump: runs to the end
    # the hits are published once, those of the step the run stopped at
    arrived = of(log, HitsArrived, mark)
    assert [(e.step, e.hits) for e in arrived] == [(4, ())]
    noted = [m for m in notices(log) if m.startswith("Step 1:")]
    assert len(noted) == 1 and "error 4" in noted[0]
    assert session.metadata.state is SessionState.WAITING


def test_a_run_ending_on_an_error_4_step_still_lists_its_hits(s210) -> None:  # type: ignore[no-untyped-def]
    session, log = s210
    session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": 1.0})
    session.step(1)  # the run ends on step 1: its error hits stay listed
    assert session.metadata.step == 1
    assert len(session.hits) == 8 and all(h.error_code == 4 for h in session.hits)
    assert not [m for m in notices(log) if m.startswith("Step 1:")]  # no "going on"


def test_continue_stops_at_real_hits_after_error_4_steps(dump_2_0: Path) -> None:
    session, _log = started(dump_2_0)
    try:
        session.apply_recommended()
        session.continue_()
        assert session.metadata.step == 2  # weight change at iteration 1
        assert session.hits and all(h.error_code == 0 for h in session.hits)
        assert {h.tensor.node for h in session.hits} == {"fc1.bias", "fc2.bias", "fc3.bias"}
    finally:
        session.close()


def test_step_many_stops_early_on_hits(s210) -> None:  # type: ignore[no-untyped-def]
    session, _log = s210
    session.create_watchpoint("WCS", {"abs_mean_update_ratio_lt": 1e-3})
    session.step(3)
    # step 1 only has "no previous value" errors, which do not stop; step 2 has real hits
    assert session.metadata.step == 2
    assert all(h.error_code == 0 and h.tensor.iteration == 1 for h in session.hits)
    assert len(session.hits) == 6
    with pytest.raises(SessionError):
        session.step(0)


def test_reset_and_recheck(s210) -> None:  # type: ignore[no-untyped-def]
    session, log = s210
    session.create_watchpoint("TL", {"abs_mean_gt": 1.0})
    session.step()
    assert session.hits
    mark = len(log.events)
    session.reset_step(3)
    assert session.metadata.step == 3 and session.hits == ()  # outdated until recheck
    assert of(log, HitsArrived, mark)[-1].hits == ()
    session.recheck()
    assert {h.tensor.iteration for h in session.hits} == {2}
    assert {h.tensor.node for h in session.hits} == {
        LOSS_2_10,
        "Default/optimizer-Momentum/AssignAdd-op0",
        "global_step",
        "inputs1",
    }
    # hits come in execution order: kernels, then parameters
    assert session.hits[0].tensor.node == LOSS_2_10
    for bad in (5, -1):
        with pytest.raises(SessionError) as info:
            session.reset_step(bad)
        assert "out of range" in str(info.value)
    session.reset_step(0)
    mark = len(log.events)
    session.recheck()
    assert session.hits == ()
    assert any("Step 0" in e.message for e in of(log, Notice, mark))


def test_close_cancels_a_running_check(dump_2_10: Path) -> None:
    session = OfflineSession(dump_2_10)
    session.start()
    session.create_watchpoint("TO", {})

    def stop_when_running(event: object) -> None:
        if isinstance(event, MetadataChanged) and event.metadata.state is SessionState.RUNNING:
            session._cancel.set()  # what close() does, without dropping the checker

    log = EventLog()
    session.subscribe(log)
    session.subscribe(stop_when_running)
    session.step()
    assert any("stopped at step 1" in m for m in notices(log))
    session.close()
    with pytest.raises(SessionError) as info:
        session.step()
    assert str(info.value) == "The session is closed."


# ------------------------------------------------------------------ tensors and runs
def test_tensors_and_previous_values(s210, dump_2_10: Path) -> None:  # type: ignore[no-untyped-def]
    session, _log = s210
    ref = TensorRef("fc1.bias", 0, None, 0, "kernel_graph0")
    assert session.tensor(ref) is None  # step 0: nothing loaded
    assert session.tensor(TensorRef("cst2", 0, None, 0, "kernel_graph0")).item() is False
    session.reset_step(2)
    current = session.tensor(ref)
    it1 = next((dump_2_10 / "rank_0/LeNet/0/1").glob("Parameter.fc1_bias.*.npy"))
    it0 = next((dump_2_10 / "rank_0/LeNet/0/0").glob("Parameter.fc1_bias.*.npy"))
    np.testing.assert_array_equal(current, np.load(it1))
    np.testing.assert_array_equal(session.tensor(ref, previous=True), np.load(it0))
    explicit = TensorRef("fc1.bias", 0, 0, 0, "kernel_graph0")
    np.testing.assert_array_equal(session.tensor(explicit), np.load(it0))
    assert session.tensor(explicit, previous=True) is None  # the graph's first run
    # the graph name may be left out; unknown nodes are one sentence
    np.testing.assert_array_equal(session.tensor(TensorRef("fc1.bias")), np.load(it1))
    with pytest.raises(SessionError):
        session.tensor(TensorRef("no-such-node", 0, None, 0, "kernel_graph0"))


def test_graph_runs(s210) -> None:  # type: ignore[no-untyped-def]
    session, _log = s210
    runs = session.graph_runs()
    assert [(r.iteration, r.graph_name, r.has_data) for r in runs] == [
        (i, "kernel_graph0", True) for i in range(4)
    ]


def test_graph_without_history_runs_steps_and_checks(dump_2_0: Path, tmp_path: Path) -> None:
    """A control-flow dump: sub-graph 1 has iteration folders but no history file. Its runs
    are listed (marked), its steps can be gone to, and checks treat its change conditions
    with the no-history rule (error 16) while the root graph keeps its history."""
    root = copy_dump(dump_2_0, tmp_path / "d", with_data=True)
    sub = add_graph_without_history(root, 1, {1: 1, 2: 2})
    session, log = started(root)
    try:
        assert list(session.graphs) == ["kernel_graph_0", sub]
        assert session.metadata.max_step == 4
        assert any("ms_global_execution_order_graph_1.csv is missing" in m for m in notices(log))
        runs = session.graph_runs()
        assert [(r.iteration, r.graph_name, r.has_data, r.from_history) for r in runs] == [
            (0, "kernel_graph_0", True, True),
            (1, "kernel_graph_0", True, True),
            (1, sub, True, False),
            (2, "kernel_graph_0", True, True),
            (2, sub, True, False),
            (3, "kernel_graph_0", True, True),
        ]
        session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": 1.0})
        session.create_watchpoint("TL", {"abs_mean_gt": 1.0})
        session.reset_step(runs[4].iteration + 1)  # a run listed from the dumped folders
        assert session.metadata.step == 3
        session.recheck()
        hits = session.hits
        wcl = {
            g: [h for h in hits if h.condition.abbr == "WCL" and h.tensor.graph == g]
            for g in ("kernel_graph_0", sub)
        }
        assert all(h.error_code == 0 for h in wcl["kernel_graph_0"])  # it has a history
        assert {h.tensor.node for h in wcl[sub]} == WEIGHTS
        assert {h.error_code for h in wcl[sub]} == {16}
        tl = {
            g: {h.tensor.node for h in hits if h.condition.abbr == "TL" and h.tensor.graph == g}
            for g in ("kernel_graph_0", sub)
        }
        assert tl[sub] and tl[sub] == tl["kernel_graph_0"]  # the same data, checked alike
        # the previous value of a graph without history is its previous dumped iteration
        it1 = next((root / "rank_0/LeNet/1/1").glob("Parameter.fc1.bias.*.npy"))
        ref = TensorRef("fc1.bias", 0, 2, 0, sub)
        np.testing.assert_array_equal(session.tensor(ref, previous=True), np.load(it1))
        first = TensorRef("fc1.bias", 0, 1, 0, sub)
        assert session.tensor(first, previous=True) is None  # its first dumped iteration
    finally:
        session.close()


def test_select_rank(s210) -> None:  # type: ignore[no-untyped-def]
    session, log = s210
    with pytest.raises(SessionError) as info:
        session.select_rank(3)
    assert "Rank 3 is not in the dump" in str(info.value)
    mark = len(log.events)
    session.select_rank(0)
    loaded = of(log, GraphsLoaded, mark)
    assert len(loaded) == 1 and loaded[0].first_time is False


# ------------------------------------------------------------------ watchpoints
def test_watchpoint_editing(s210) -> None:  # type: ignore[no-untyped-def]
    session, log = s210
    a = session.create_watchpoint("TO", {})
    b = session.create_watchpoint(
        "tensor_too_large", {"abs_mean_gt": 1.0}, graph_name="kernel_graph0"
    )
    c = session.create_watchpoint(
        "TZ", {"zero_percentage_ge": 100}, targets=["Default/optimizer-Momentum"]
    )
    assert [w.id for w in session.watchpoints] == [1, 2, 3] == [a.id, b.id, c.id]
    assert len(of(log, WatchpointsChanged)) == 3
    with pytest.raises(WatchpointError):
        session.create_watchpoint("TL", {})
    with pytest.raises(WatchpointError):
        session.create_watchpoint("TL", {"abs_mean_gt": -1})
    with pytest.raises(WatchpointError):
        session.create_watchpoint("TO", {}, targets=["Default/nowhere"])
    with pytest.raises(WatchpointError):
        session.create_watchpoint("TO", {}, graph_name="kernel_graph_9")
    assert [w.id for w in session.watchpoints] == [1, 2, 3]  # failures consume no id
    updated = session.update_watchpoint(2, params={"abs_mean_gt": 3.0})
    assert updated.params == {"abs_mean_gt": 3.0}
    with pytest.raises(WatchpointError):
        session.update_watchpoint(2, params={"abs_mean_gt": "x"})  # type: ignore[dict-item]
    session.update_watchpoint(2, params={"abs_mean_gt": 1.0})
    session.step()
    assert {h.watchpoint_id for h in session.hits} == {2}
    session.delete_watchpoint(2)
    assert session.hits == () and [w.id for w in session.watchpoints] == [1, 3]
    with pytest.raises(SessionError):
        session.delete_watchpoint(2)
    assert session.create_watchpoint("TO", {}).id == 4


def test_recommended_watchpoints(s210) -> None:  # type: ignore[no-untyped-def]
    session, _log = s210
    created = session.apply_recommended()
    abbrs = [w.condition.abbr for w in created]
    assert "WCL" in abbrs and "TO" in abbrs
    session.step()
    assert any(h.condition.abbr == "WCL" and h.error_code == 4 for h in session.hits)


def test_missing_history_gives_error_16_to_change_conditions(
    dump_2_10: Path, tmp_path: Path
) -> None:
    root = copy_dump(
        dump_2_10,
        tmp_path / "d",
        with_data=True,
        keep=lambda rel: "ms_global_execution_order" not in rel,
    )
    session, log = started(root)
    try:
        assert any("ms_global_execution_order_graph_0.csv is missing" in m for m in notices(log))
        session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": 1.0})
        session.create_watchpoint("TL", {"abs_mean_gt": 1.0})
        session.reset_step(2)
        session.recheck()
        wcl = [h for h in session.hits if h.condition.abbr == "WCL"]
        assert {h.tensor.node for h in wcl} == WEIGHTS
        assert {h.error_code for h in wcl} == {16}
        assert wcl[0].error_messages == ["Graph history file is not available."]
        tl = [h for h in session.hits if h.condition.abbr == "TL"]
        assert tl and all(h.error_code == 0 for h in tl)  # other conditions are unaffected
    finally:
        session.close()


# ------------------------------------------------------------------ damaged dumps
@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
def test_damaged_dump(dump_2_10: Path, tmp_path: Path, damage: Damage) -> None:
    root, shown = damaged_copy(dump_2_10, tmp_path / "d", damage)
    session, log = started(root)
    try:
        assert session.metadata.state is SessionState.WAITING
        if damage.graph_lost:
            assert session.graphs == {}
            assert any("no readable graph" in m for m in notices(log))
        else:
            session.create_watchpoint("TO", {})
            session.continue_()  # TO never hits here: every iteration is checked
            assert session.metadata.step == 4
        naming = [m for m in notices(log) if shown in m]
        assert naming and any(damage.words in m for m in naming), notices(log)
        assert all(m.endswith(".") and "\n" not in m for m in notices(log))
        if damage.tensor is not None:
            node, iteration = damage.tensor
            with pytest.raises(SessionError) as info:
                session.tensor(TensorRef(node, 0, iteration, 0, "kernel_graph0"))
            assert damage.words in str(info.value)
    finally:
        session.close()
