"""End to end over 127.0.0.1: the dump simulator replays the real LeNet dumps as a live
training and `OnlineSession` drives it (spec §2): graph, watchpoints, continue until a hit,
step N, tensor values against the `.npy` files, statistics/base levels, recheck, terminate,
node stepping, version mismatch (--strict-version) and an old MindSpore's warning."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.online.support import TIMEOUT, make_session, wait_state, wait_until
from tuidebug.client.simulator import DumpSimulator
from tuidebug.core.graph import Category, Graph, NodeKind
from tuidebug.core.session import (
    Ending,
    EventLog,
    GraphsLoaded,
    HitsArrived,
    Notice,
    SessionError,
    SessionState,
)
from tuidebug.core.tensor import TensorRef, data_type_of
from tuidebug.offline.layout.root import DumpLayout
from tuidebug.offline.layout.tensor_index import TensorIndex
from tuidebug.online.session import OnlineSession


class Live:
    """A session with a simulator attached, plus the dump read independently (offline
    index) to check what the wire delivers."""

    def __init__(
        self, dump: Path, backend: str = "Ascend", strict_version: str | None = None, **sim: object
    ) -> None:
        self.session, self.log = make_session(strict_version=strict_version)
        self.sim = DumpSimulator(dump, self.session.address, backend=backend, **sim)
        self.thread = self.sim.start_thread()
        self.dump = dump
        self._index: TensorIndex | None = None

    @property
    def graph(self) -> Graph:
        return next(iter(self.session.graphs.values()))

    @property
    def index(self) -> TensorIndex:
        if self._index is None:
            rank = DumpLayout.open(self.dump).rank(0)
            self._index = TensorIndex(rank, self.graph)
        return self._index

    def npy(self, node: str, slot: int, iteration: int, output: bool = True) -> np.ndarray:
        f = self.index.lookup(node, slot, iteration, is_output=output)
        assert f is not None, (node, slot, iteration)
        return np.load(f.path, allow_pickle=False)

    def hits_after(self, start: int) -> HitsArrived:
        wait_until(
            lambda: any(isinstance(e, HitsArrived) and e.hits for e in self.log.events[start:]),
            what="hits",
        )
        return next(e for e in self.log.events[start:] if isinstance(e, HitsArrived) and e.hits)

    def close(self) -> None:
        self.session.close()
        self.sim.abort()
        self.thread.join(TIMEOUT)


@pytest.fixture
def live(lenet_dump: Path) -> Iterator[Live]:
    env = Live(lenet_dump)
    yield env
    env.close()


def _loss_node(graph: Graph) -> str:
    return next(
        n.name for n in graph.operators if "SparseSoftmaxCrossEntropyWithLogits" in n.op_type
    )


def _reference_loss(dump: Path) -> dict[int, float]:
    """Iteration → abs_mean of the loss, as MindInsight / the reference computed it."""
    expected = dump.parent.parent / "expected"
    if dump.name == "ms2_0_0":
        data = json.loads((expected / "lenet_ms2_0_0.mindinsight.json").read_text())
        (wp,) = [
            w
            for w in data["watchpoints"]
            if w["condition"] == "TensorTooLarge" and w["params"] == {"abs_mean_gt": 1.0}
        ]
        return {h["iteration"]: h["actual"][0]["actual"] for h in wp["hits"]}
    data = json.loads((expected / "lenet_ms2_10_0.reference.json").read_text())
    return {
        h["iteration"]: h["actual"]
        for h in data["TensorTooLarge(abs_mean_gt=1.0)"]
        if h["op_type"] == "SparseSoftmaxCrossEntropyWithLogits"
    }


def test_full_session(live: Live) -> None:
    session = live.session
    loaded = live.log.wait_for(GraphsLoaded, TIMEOUT)
    assert loaded.first_time
    wait_state(session, SessionState.WAITING)
    meta = session.metadata
    assert meta.step == 0 and meta.backend == "Ascend" and meta.ms_version == "2.3.0"
    assert meta.graph_names == tuple(loaded.graphs)
    caps = session.capabilities
    assert caps.live and caps.can_pause and caps.can_terminate and not caps.can_step_node
    graph = live.graph
    loss = _loss_node(graph)
    reference = _reference_loss(live.dump)

    # continue until a hit
    wp = session.create_watchpoint("TL", {"abs_mean_gt": 1.0})
    start = len(live.log.events)
    session.continue_()
    event = live.hits_after(start)
    wait_state(session, SessionState.WAITING)
    assert session.metadata.step == 1 and event.step == 1  # the first step ran, then stopped
    (hit,) = [h for h in event.hits if h.tensor.node == loss]
    kernel_hits = [h for h in event.hits if graph.nodes[h.tensor.node].kind is NodeKind.OPERATOR]
    assert len(kernel_hits) == 1 or live.dump.name != "ms2_0_0"  # MindInsight's answer
    assert hit.tensor.node == loss and hit.tensor.slot == 0 and hit.error_code == 0
    assert hit.watchpoint_id == wp.id
    (actual,) = [p.actual for p in hit.params if p.name == "abs_mean_gt"]
    assert actual == pytest.approx(reference[0], rel=1e-12)
    assert [h.order for h in event.hits] == sorted(h.order for h in event.hits)

    # values over the wire equal the dump's files (iteration 0 = step 1)
    value = session.tensor(hit.tensor)
    np.testing.assert_array_equal(value, live.npy(loss, 0, 0))
    weight = graph.nodes["conv1.weight"]
    current = session.tensor(TensorRef(weight.name))
    np.testing.assert_array_equal(current, live.npy(weight.name, 0, 0))
    previous = session.tensor(TensorRef(weight.name), previous=True)
    # before the first update: what the parameter's consumers read at iteration 0
    readers = [weight.name] + [c.name for c in graph.consumers(weight.name) if c.op_type == "Load"]
    inputs = [
        live.index.lookup(c.name, i, 0, is_output=False)
        for r in readers
        for c in graph.consumers(r)
        for i, src in enumerate(c.inputs)
        if src == r
    ]
    before = [np.load(f.path) for f in inputs if f is not None]
    assert before and any(np.array_equal(previous, b) for b in before)
    assert not np.array_equal(current, previous)  # the optimizer did update it
    assert session.tensor(TensorRef(loss), previous=True) is None  # kernels keep no prev

    # statistics and base levels
    stats = session.tensor_statistics(TensorRef(weight.name))
    expected = live.npy(weight.name, 0, 0)
    assert stats.count == expected.size
    assert stats.max_value == pytest.approx(float(expected.max()))
    assert stats.min_value == pytest.approx(float(expected.min()))
    assert stats.negative_count + stats.positive_count + stats.zero_count == expected.size
    base = session.tensor_base(TensorRef(weight.name))
    assert base.shape == expected.shape and base.data_type == data_type_of(expected.dtype)
    assert base.data_size == expected.nbytes
    assert session.tensor_base(TensorRef("no-such-node")) is None

    # step N with the watchpoint disabled: exactly N steps
    session.update_watchpoint(wp.id, enabled=False)
    session.step(2)
    wait_until(lambda: session.metadata.step == 3, what="step 3")
    wait_state(session, SessionState.WAITING)
    np.testing.assert_array_equal(session.tensor(TensorRef(loss)), live.npy(loss, 0, 2))

    # recheck at the current step: hits of iteration 2 arrive without running
    session.update_watchpoint(wp.id, enabled=True)
    start = len(live.log.events)
    session.recheck()
    event = live.hits_after(start)
    wait_state(session, SessionState.WAITING)
    assert session.metadata.step == 3
    (hit,) = [h for h in event.hits if h.tensor.node == loss]
    assert hit.params[0].actual == pytest.approx(reference[2], rel=1e-12)

    # terminate: the training exits and says goodbye
    session.terminate()
    wait_state(session, SessionState.DONE)
    live.thread.join(TIMEOUT)
    assert not live.thread.is_alive() and live.sim.error == ""
    assert live.sim.client.terminated
    with pytest.raises(SessionError):
        session.step()


def test_change_conditions_use_the_previous_step(lenet_dump: Path) -> None:
    live = Live(lenet_dump)
    try:
        session = live.session
        wait_state(session, SessionState.WAITING)
        weights = [n.name for n in live.graph.nodes_in(Category.WEIGHT)]
        ratios = {}
        for name in weights:  # iteration 1 against iteration 0, computed from the files
            x = live.npy(name, 0, 1).astype(np.float64)
            p = live.npy(name, 0, 0).astype(np.float64)
            ratios[name] = np.abs(x - p).mean() / (np.abs(p).mean() + 1e-9)
        threshold = float(np.median(list(ratios.values())))
        session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": threshold})
        while session.metadata.step < 2:
            session.continue_()
            wait_until(lambda: session.metadata.state is not SessionState.WAITING, what="run")
            wait_state(session, SessionState.WAITING)
        assert session.metadata.step == 2  # hits stop the run at step 2 at the latest
        got = {h.tensor.node: h.params[0].actual for h in session.hits}
        assert all(h.error_code == 0 for h in session.hits)
        assert set(got) == {n for n, r in ratios.items() if r > threshold}
        for name, actual in got.items():
            assert actual == pytest.approx(ratios[name], rel=1e-9)
    finally:
        live.close()


def test_weight_initialization_runs_in_the_initial_recheck(dump_2_0: Path) -> None:
    live = Live(dump_2_0)
    try:
        session = live.session
        wait_state(session, SessionState.WAITING)
        session.create_watchpoint("WI", {"zero_percentage_ge": 100})
        start = len(live.log.events)
        session.step(1)  # MindInsight sends a recheck first at step 0: its hits stop the step
        event = live.hits_after(start)
        wait_state(session, SessionState.WAITING)
        assert session.metadata.step == 0
        assert {h.tensor.node for h in event.hits} == {"fc1.bias", "fc2.bias", "fc3.bias"}
        assert all(h.error_code == 0 and h.tensor.iteration == 0 for h in event.hits)
        # the next step evaluates no INIT any more
        session.step(1)
        wait_until(lambda: session.metadata.step == 1, what="step 1")
        wait_state(session, SessionState.WAITING)
        assert session.hits == ()
    finally:
        live.close()


def test_gpu_node_stepping(dump_2_0: Path) -> None:
    live = Live(dump_2_0, backend="GPU")
    try:
        session = live.session
        wait_state(session, SessionState.WAITING)
        assert session.capabilities.can_step_node
        order = live.index.rank.execution_order(live.graph.graph_id)
        session.step_node()
        wait_until(lambda: session.metadata.cur_node == order[0], what="first kernel")
        wait_state(session, SessionState.WAITING)
        assert session.metadata.step == 0
        first = session.tensor(TensorRef(order[0]))
        np.testing.assert_array_equal(first, live.npy(order[0], 0, 0))
        assert session.tensor(TensorRef(order[5])) is None  # not run yet in this step
        session.step_node(order[5])
        wait_until(lambda: session.metadata.cur_node == order[5], what="sixth kernel")
        wait_state(session, SessionState.WAITING)
        np.testing.assert_array_equal(session.tensor(TensorRef(order[5])), live.npy(order[5], 0, 0))
        with pytest.raises(SessionError):
            session.step_node("conv1.weight")  # parameters are not kernels

        # GPU checks per kernel: a hit suspends right at the kernel, inside the step
        loss = _loss_node(live.graph)
        session.create_watchpoint("TL", {"abs_mean_gt": 1.0}, [loss])
        start = len(live.log.events)
        session.continue_()
        event = live.hits_after(start)
        wait_state(session, SessionState.WAITING)
        assert session.metadata.cur_node == loss and session.metadata.step == 0
        assert [h.tensor.node for h in event.hits] == [loss]
    finally:
        live.close()


def test_version_mismatch_allows_only_terminate(dump_2_0: Path) -> None:
    # only with --strict-version: by default every MindSpore is accepted
    live = Live(dump_2_0, ms_version="1.10.1", strict_version="2.3")
    try:
        session = live.session
        wait_state(session, SessionState.MISMATCH)
        notice = live.log.wait_for(Notice)
        assert "1.10.1" in notice.message and notice.severity == "error"
        assert "--strict-version" in notice.message
        assert "1.10.1" in session.metadata.message
        for action in (session.step, session.continue_, session.recheck):
            with pytest.raises(SessionError):
                action()
        assert session.graphs == {}
        session.terminate()
        wait_state(session, SessionState.DONE)
        live.thread.join(TIMEOUT)
        assert not live.thread.is_alive()
        assert live.sim.client.terminated
    finally:
        live.close()


@pytest.mark.parametrize(("ms_version", "warned"), [("2.2.14", False), ("1.3.0", True)])
def test_older_mindspore_is_debugged(dump_2_0: Path, ms_version: str, warned: bool) -> None:
    live = Live(dump_2_0, ms_version=ms_version)
    try:
        session = live.session
        wait_state(session, SessionState.WAITING)
        assert session.metadata.ms_version == ms_version and session.graphs
        session.step(2)
        wait_until(lambda: session.metadata.step == 2, what="step 2")
        wait_state(session, SessionState.WAITING)
        warnings = [e for e in live.log.events if isinstance(e, Notice)]
        assert [ms_version in n.message for n in warnings] == ([True] if warned else [])
        assert (ms_version in session.metadata.message) is warned  # the header's banner
        session.terminate()
        wait_state(session, SessionState.DONE)
        live.thread.join(TIMEOUT)
        assert not live.thread.is_alive() and live.sim.client.terminated
    finally:
        live.close()


def test_training_runs_to_the_end(dump_2_0: Path) -> None:
    live = Live(dump_2_0)
    try:
        session = live.session
        wait_state(session, SessionState.WAITING)
        session.step(4)  # four steps: suspended after the last one
        wait_until(lambda: session.metadata.step == 4, what="step 4")
        wait_state(session, SessionState.WAITING)
        session.continue_()  # no watchpoints: nothing stops it before the end
        wait_state(session, SessionState.DONE)
        assert session.metadata.step == 4
        assert session.metadata.message == Ending.FINISHED.sentence
        assert session.metadata.ending is Ending.FINISHED
        live.thread.join(TIMEOUT)
        assert not live.thread.is_alive() and live.sim.error == ""
    finally:
        live.close()


def test_run_demo_online(dump_2_0: Path) -> None:
    from tuidebug.online.demo import run_demo_online

    session = run_demo_online(dump_2_0)
    try:
        log = EventLog()
        session.subscribe(log)
        wait_state(session, SessionState.WAITING)
        assert isinstance(session, OnlineSession) and session.graphs
        assert session.metadata.backend == "GPU"
    finally:
        session.close()
    assert session.metadata.state in (SessionState.WAITING, SessionState.DONE)


def test_pause_stops_a_continue_at_the_next_suspension(dump_2_0: Path) -> None:
    live = Live(dump_2_0)
    try:
        session = live.session
        wait_state(session, SessionState.WAITING)
        running = threading.Event()
        release = threading.Event()
        check = live.sim.client.check

        def gated_check(*args, **kwargs):  # the training is busy in step 1 until released
            running.set()
            assert release.wait(TIMEOUT)
            return check(*args, **kwargs)

        live.sim.client.check = gated_check  # type: ignore[method-assign]
        session.continue_()
        assert running.wait(TIMEOUT)
        assert session.metadata.state is SessionState.RUNNING
        session.pause()
        assert "Pausing" in session.metadata.message
        release.set()
        wait_until(lambda: session.metadata.step == 1, what="step 1")
        wait_state(session, SessionState.WAITING)  # not continued past the suspension
        assert session.metadata.step == 1
        with pytest.raises(SessionError):
            session.pause()  # only while running
    finally:
        live.close()


def test_continue_goes_past_a_step_whose_hits_are_all_no_previous_value(dump_2_0: Path) -> None:
    """Without the weights before step 1, the weight-change check of step 1 can only say
    "previous step value cannot be found" (error 4): continue lists those hits with step 1
    and runs on to the step with real hits, like offline."""
    live = Live(dump_2_0)
    live.sim.replay.initial_parameter = lambda g, node: None  # type: ignore[method-assign]
    try:
        session = live.session
        wait_state(session, SessionState.WAITING)
        session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": 1.0})
        start = len(live.log.events)
        session.continue_()
        wait_until(lambda: session.metadata.step >= 2, what="past step 1")
        wait_state(session, SessionState.WAITING)
        arrived = [e for e in live.log.events[start:] if isinstance(e, HitsArrived) and e.hits]
        first = next(e for e in arrived if e.step == 1)
        assert all(h.error_code == 4 for h in first.hits)
        assert session.metadata.step == 2  # stopped by real hits, as offline (iteration 1)
        assert session.hits and all(h.error_code == 0 for h in session.hits)
        assert {h.tensor.node for h in session.hits} == {"fc1.bias", "fc2.bias", "fc3.bias"}
    finally:
        live.close()
