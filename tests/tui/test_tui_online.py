"""Pilot tests of the LIVE TUI: a real `OnlineSession` with its gRPC server on a loopback
port, the dump simulator replaying a real LeNet dump as a MindSpore training in a thread,
and `DebuggerApp` driven by keys like a user: graph arrives, recommended offer, watchpoint,
continue to a hit, header, hit list → tree → tensor (loading, then the `.npy` values), step
N, pause and terminate with confirmation, and a killed training shown as disconnected.

Every wait polls a condition with a bounded timeout; nothing sleeps to assert.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.online.support import TIMEOUT, make_session, wait_state
from tests.tui.support import settled, wait_until
from tuidebug.client.simulator import DumpSimulator
from tuidebug.core.graph import Graph
from tuidebug.core.session import SessionState
from tuidebug.core.tensor import TensorRef
from tuidebug.offline.layout.root import DumpLayout
from tuidebug.offline.layout.tensor_index import TensorIndex
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen, PromptScreen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.panes.scope_tree import ScopeTree
from tuidebug.tui.run.control_bar import ControlBar
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.watchpoints.list_pane import WatchpointList

SIZE = (160, 48)
# The watchdog expects a heartbeat every (5 + 0.5) × 0.1 s: a killed training is noticed
# in well under a second instead of MindInsight's 91.5 s.
FAST_WATCHDOG: dict[str, Any] = {"heartbeat_limits": (5, 3600), "heartbeat_scale": 0.1}


class Live:
    """Server + simulated training for one test; `close()` stops both."""

    def __init__(self, dump: Path, *, fast_watchdog: bool = False) -> None:
        self.dump = dump
        options = FAST_WATCHDOG if fast_watchdog else {}
        self.session, self.log = make_session(**options)
        sim_options: dict[str, Any] = (
            {"heartbeat_period": 5, "heartbeat_interval": 0.05} if fast_watchdog else {}
        )
        self.sim = DumpSimulator(dump, self.session.address, backend="GPU", **sim_options)
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = self.sim.start_thread()

    def close(self) -> None:
        self.session.close()
        self.sim.abort()
        if self.thread is not None:
            self.thread.join(TIMEOUT)

    def npy(self, graph: Graph, node: str, slot: int, iteration: int) -> np.ndarray:
        index = TensorIndex(DumpLayout.open(self.dump).rank(0), graph)
        found = index.lookup(node, slot, iteration, is_output=True)
        assert found is not None, (node, slot, iteration)
        return np.load(found.path, allow_pickle=False)


@pytest.fixture
def live(dump_2_0: Path) -> Iterator[Live]:
    env = Live(dump_2_0)
    yield env
    env.close()


async def until(pilot: Any, predicate: Callable[[], bool], what: str) -> None:
    """Let the app run until `predicate()` holds (bounded: the live training's timeout)."""
    await wait_until(pilot, predicate, what=what, timeout=TIMEOUT)


def dialog_ready(app: DebuggerApp, kind: type) -> bool:
    """`kind` is on top, drawn, and its default control has the focus (keys go there)."""
    return isinstance(app.screen, kind) and app.screen.focused is not None


def header(app: DebuggerApp) -> str:
    return str(app.query_one(SessionHeader).render())


async def connected(pilot: Any, live: Live, *, accept: bool = False) -> DebuggerApp:
    """Start the training once the app is up, wait for its graph in the tree, and answer
    the recommended-watchpoint question."""
    app: DebuggerApp = pilot.app
    assert "waiting for training" in header(app)
    assert "Waiting for a training to connect" in str(
        app.query_one("#tree-empty").render()  # the tree pane says what to do
    )
    live.start()
    await until(pilot, lambda: app.query_one(ScopeTree).graph is not None, "the graph")
    await until(pilot, lambda: dialog_ready(app, ConfirmScreen), "the recommended offer")
    assert "recommended" in str(app.screen.query_one("#confirm-title").render())
    await pilot.press("y" if accept else "n")
    await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "the offer closed")
    await until(pilot, lambda: "paused" in header(app), "paused at the initial suspension")
    return app


def _loss(graph: Graph) -> str:
    return next(
        n.name for n in graph.operators if n.op_type == "SparseSoftmaxCrossEntropyWithLogits"
    )


# ---------------------------------------------------------------------------- the NaN hunt
async def test_graph_hit_and_tensor_over_the_wire(live: Live) -> None:
    app = DebuggerApp(live.session)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, live)
        text = header(app)
        assert "ONLINE" in text and "client 127.0.0.1:" in text and "ipv4:" not in text
        assert "backend GPU" in text and "MindSpore 2.3.0" in text and "step 0" in text
        graph = next(iter(live.session.graphs.values()))
        assert app.query_one(ScopeTree).graph is graph
        assert live.session.watchpoints == ()  # declined

        live.session.create_watchpoint("TL", {"abs_mean_gt": 1.0})
        await until(pilot, lambda: len(app.query_one(WatchpointList).watchpoints) == 1, "row")
        await pilot.press("c")
        await until(pilot, lambda: "paused at hit" in header(app), "paused at hit")
        loss = _loss(graph)
        # GPU: the training suspends right after the kernel that hit, inside step 0
        assert "step 0" in header(app) and f"node {loss.rsplit('/', 1)[-1]}" in header(app)
        hits = app.query_one(HitList)
        assert hits.hit_count >= 1
        assert "1 hit" in str(app.query_one("#control-status").render())

        # hit list → Enter: the tree jumps to the node and the tensor is fetched
        await pilot.press("2")
        leaf = next(
            leaf
            for group in hits.tree_view.root.children
            for leaf in group.children
            if leaf.data is not None and leaf.data.tensor.node == loss
        )
        hits.tree_view.move_cursor(leaf)
        view = app.query_one(TensorView)
        loading: list[str] = []
        show_loading = view.show_loading

        def spy(title: str) -> None:
            loading.append(view.state)
            show_loading(title)
            loading.append(view.state)

        view.show_loading = spy  # type: ignore[method-assign]
        await pilot.press("enter")
        await until(pilot, lambda: view.state == "tensor", "the tensor")
        assert loading == ["empty", "loading"]  # the loading note came before the values
        assert app.current_node is not None and app.current_node.name == loss
        assert app.query_one(ScopeTree).tree_view.cursor_node is not None
        assert "step 0" in view.title  # online tensors are named by training step
        np.testing.assert_array_equal(view._array, live.npy(graph, loss, 0, 0))

        # step N asks how many, then runs them one by one
        await pilot.press("1")  # back to the tree: N is the app's key there
        await pilot.press("N")
        await until(pilot, lambda: dialog_ready(app, PromptScreen), "the count prompt")
        await pilot.press("backspace", "x", "enter")
        assert "whole number" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("backspace", "2", "enter")
        await until(pilot, lambda: live.session.metadata.step >= 1, "the next step")
        await until(pilot, lambda: "paused at hit" in header(app), "stopped by the next hit")
        step = live.session.metadata.step
        assert f"step {step}" in header(app)
        # the open tensor follows the step: fetched again, equal to what the wire says now
        await until(
            pilot, lambda: view.state == "tensor" and f"step {step}" in view.title, "refresh"
        )
        again = live.session.tensor(TensorRef(loss, 0, None, 0, graph.name))
        np.testing.assert_array_equal(view._array, again)


async def test_recommended_watchpoints_accepted_on_the_first_graph(live: Live) -> None:
    app = DebuggerApp(live.session)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, live, accept=True)
        await until(pilot, lambda: len(live.session.watchpoints) > 0, "the recommendation")
        rows = app.query_one(WatchpointList)
        await until(pilot, lambda: len(rows.watchpoints) == len(live.session.watchpoints), "rows")
        assert {w.condition.abbr for w in live.session.watchpoints} >= {"TO", "WCL"}
        before = (live.session.metadata.step, live.session.metadata.cur_node)
        await pilot.press("c")

        def stopped() -> bool:
            md = live.session.metadata
            moved = (md.step, md.cur_node) != before or md.state is SessionState.DONE
            settled = md.state in {SessionState.WAITING, SessionState.DONE}
            return settled and (moved or bool(live.session.hits))

        await until(pilot, stopped, "the continue to stop")
        # the initial-suspension recheck evaluates "initial weight value" (spec §2.6): the
        # zero-initialised biases stop the run right there, at step 0
        if live.session.hits:
            await until(pilot, lambda: "paused at hit" in header(app), "paused at hit")
            assert {h.condition.abbr for h in live.session.hits} == {"WI"}
            assert app.query_one(HitList).hit_count == len(live.session.hits)
        else:
            await until(pilot, lambda: "paused" in header(app) or "finished" in header(app), "stop")


# ------------------------------------------------------------------ pause and terminate
async def test_pause_then_terminate_with_confirmation(live: Live) -> None:
    app = DebuggerApp(live.session)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, live)
        running = threading.Event()
        release = threading.Event()
        check = live.sim.client.check

        def gated_check(*args: Any, **kwargs: Any) -> Any:  # step 1 is busy until released
            running.set()
            assert release.wait(TIMEOUT)
            return check(*args, **kwargs)

        live.sim.client.check = gated_check  # type: ignore[method-assign]
        bar = app.query_one(ControlBar)
        assert bar.query_one("#control-pause").disabled  # nothing runs yet
        assert await pilot.click("#control-continue")  # the mouse works as well as c
        await until(pilot, running.is_set, "the training running")
        await until(pilot, lambda: "running" in header(app), "running in the header")
        await until(pilot, lambda: not bar.query_one("#control-pause").disabled, "pause button")
        assert bar.query_one("#control-continue").disabled
        await pilot.press("p")
        await until(pilot, lambda: "Pausing" in header(app), "the pause banner")
        live.sim.client.check = check  # type: ignore[method-assign]
        release.set()
        await until(pilot, lambda: "step 1" in header(app) and "paused" in header(app), "paused")
        wait_state(live.session, SessionState.WAITING)
        assert live.session.metadata.step == 1  # stopped at the next suspension point

        # terminate asks first; Enter lands on Cancel
        await pilot.press("T")
        await until(pilot, lambda: dialog_ready(app, ConfirmScreen), "the confirmation")
        assert app.screen.focused is not None and app.screen.focused.id == "confirm-no"
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "cancelled")
        assert live.session.metadata.state is SessionState.WAITING
        await pilot.press("T")
        await until(pilot, lambda: dialog_ready(app, ConfirmScreen), "asked again")
        await pilot.press("y")
        # named for what it was (issue 28: it said "training finished")
        await until(pilot, lambda: "terminated by you" in header(app), "terminated")
        assert "finished" not in header(app)
        assert live.thread is not None
        live.thread.join(TIMEOUT)
        assert not live.thread.is_alive() and live.sim.client.terminated
        assert not app.action_state("continue").enabled


# ------------------------------------------------------------------------- disconnects
async def test_killed_training_shows_disconnected(dump_2_0: Path) -> None:
    live = Live(dump_2_0, fast_watchdog=True)
    try:
        app = DebuggerApp(live.session)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, live)
            await pilot.press("n")
            await until(pilot, lambda: "step 1" in header(app), "step 1")
            await until(pilot, lambda: "● paused" in header(app), "paused at step 1")
            live.sim.abort()  # the process dies: no goodbye, no more heartbeats
            await until(pilot, lambda: "disconnected" in header(app), "disconnected")
            # the banner says why: its connection closed under its WaitCMD (seen at once,
            # before three heartbeats are missed)
            assert "connection closed" in header(app)
            state = app.action_state("step")
            assert not state.enabled and "disconnected" in state.reason
            await pilot.press("n")  # refused with a sentence, nothing crashes
            await settled(pilot)
            assert app.query_one(ControlBar).query_one("#control-step").disabled
            assert app.query_one(ScopeTree).graph is not None  # the graph stays browsable
    finally:
        live.close()


# ------------------------------------------------------------------------ node stepping
async def test_next_node_and_run_to_the_selected_kernel(live: Live) -> None:
    app = DebuggerApp(live.session)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, live)
        graph = next(iter(live.session.graphs.values()))
        order = [n.name for n in graph.operators]
        await pilot.press("x")  # GPU: the next kernel
        await until(pilot, lambda: bool(live.session.metadata.cur_node), "a kernel")
        await until(pilot, lambda: "● paused" in header(app), "paused at the kernel")
        first = live.session.metadata.cur_node
        assert f"node {first.rsplit('/', 1)[-1]}" in header(app)
        assert not app.action_state("run_to_node").enabled  # nothing chosen in the tree yet
        target = _loss(graph)
        assert order.index(target) > order.index(first)
        app.go_to_node(graph.name, target)
        await pilot.press("X")
        await until(pilot, lambda: live.session.metadata.cur_node == target, "the loss kernel")
        await until(pilot, lambda: "● paused" in header(app), "paused there")
        assert "step 0" in header(app)  # still inside the first step
        titles = [c.title for c in app.palette_commands()]
        assert "Go to the current kernel" in titles and "Run to the selected node" in titles
