"""SVG snapshots of every screen of its own, each at 80×24 and at 160×48
(pytest-textual-snapshot): the help, the run history, the origin trace, downstream, the
graph view, the source view, the tensor list, the command line, and the watchpoint
editor once for each form its conditions give it.

Deterministic by construction, as test_tui_snapshots.py: the in-memory session (fixed
graph, seeded tensors, the fixed source "/dumps/fake"), a source file read by a relative
path from a tmp folder (so no tmp path shows), no command history of the developer's;
before the picture is taken each flow waits for what the screen shows, then for the app's
pending work. Notifications are cleared before a dialog opens (the toasts of the screen
under a dialog are not redrawn when cleared later) and again at the end; an input that
keeps the focus gets a steady cursor (a blinking one is drawn or not by the clock).
Update after an intended change with
`pytest tests/tui/test_screen_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.widgets import DataTable, OptionList

from tests.tui.support import (
    CONV,
    RELU,
    FakeSession,
    make_app,
    settled,
    wait_for_screen,
    wait_until,
)
from tests.tui.test_tui_source_view import graph_for, open_frame, source_file
from tuidebug.core.tensor import TensorRef
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.help_screen import HelpScreen
from tuidebug.tui.kit.dialogs import HistoryScreen
from tuidebug.tui.neighbours.downstream_screen import DownstreamScreen
from tuidebug.tui.neighbours.graph_screen import GraphScreen
from tuidebug.tui.origins.screen import OriginScreen
from tuidebug.tui.panes.command_line import CommandInput, CommandLine
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.tensor_list.screen import TensorListScreen
from tuidebug.tui.watchpoints.editor import WatchpointEditor

GRAPH = "kernel_graph_0"
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]

# in synthetic_graph(): the operators after the first scope's ReLU
MATMUL = "Default/network-Net/layer0-Block/MatMul-op2"
ADD = "Default/network-Net/layer0-Block/Add-op3"


async def ready(pilot: Any) -> None:
    """The graphs loaded, nothing left pending. The sessions here are not opened for the
    first time (`first_time=False`): no recommended-watchpoints offer to answer."""
    await wait_until(pilot, lambda: pilot.app.graphs, what="the graphs")
    await settled(pilot)


async def at_step_with_hits(pilot: Any, step: int) -> None:
    """`n` until the header shows `step`, and the hit list has the step's hits."""
    header = pilot.app.query_one(SessionHeader)
    hits = pilot.app.query_one(HitList)
    while f"step {step}/" not in str(header.render()):
        await pilot.press("n")
        await settled(pilot)
    await wait_until(pilot, lambda: hits.hit_count, what=f"the hits of step {step}")
    await settled(pilot)


async def finish(pilot: Any) -> None:
    """Nothing pending, no toast on the picture."""
    await settled(pilot)
    pilot.app.clear_notifications()
    await wait_until(pilot, lambda: not pilot.app.screen.query("Toast"), what="no toasts")
    await settled(pilot)


def shoot(
    snap_compare: Any, app: Any, size: tuple[int, int], flow: Callable[[Any], Awaitable[None]]
) -> None:
    """The snapshot of `app` at `size` once `flow` has run. A wait of the flow that fails
    (`pytest.fail`, which Textual's autopilot does not catch) ends the app and fails the
    test, instead of leaving the app running with no one to close it."""
    failed: list[BaseException] = []

    async def run_before(pilot: Any) -> None:
        try:
            await flow(pilot)
        except BaseException as error:
            failed.append(error)
            pilot.app.exit()

    matched = snap_compare(app, terminal_size=size, run_before=run_before)
    if failed:
        raise failed[0]
    assert matched


@dataclass
class SpreadSession(FakeSession):
    """The in-memory session with NaN/Inf in several nodes, so that a trace has a chain to
    walk, and whose input tensors are their producers' outputs (as in a dump)."""

    nan_nodes: frozenset[str] = frozenset()

    def tensor(self, ref: TensorRef, previous: bool = False) -> np.ndarray | None:
        if not ref.is_output:
            producer = self._graphs[ref.graph or GRAPH].nodes[ref.node].inputs[ref.slot]
            ref = replace(ref, node=producer, slot=0, is_output=True)
        data = super().tensor(ref, previous)
        if data is not None and ref.node in self.nan_nodes:
            data[0, 0] = np.nan
            data[1, 1] = np.inf
            data[2, 2] = -np.inf
        return data


# ------------------------------------------------------------------ the screens


@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare: Any, size: tuple[int, int]) -> None:
    """`?` over the tree: the help, the tree's own keys on top."""
    app, _session = make_app(nan_node=RELU, first_time=False)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        app.go_to_node(GRAPH, CONV)
        await finish(pilot)
        await pilot.press("question_mark")
        await wait_for_screen(pilot, HelpScreen)
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)


@pytest.mark.parametrize("size", SIZES)
def test_run_history(snap_compare: Any, size: tuple[int, int]) -> None:
    """`h`: the graph runs of the dump, the current step's row marked."""
    app, _session = make_app(nan_node=RELU, first_time=False)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        await pilot.press("n")  # step 2: the marked row is not the first
        await finish(pilot)
        await pilot.press("h")
        screen = await wait_for_screen(pilot, HistoryScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count, what="the history rows")
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)


@pytest.mark.parametrize("size", SIZES)
def test_origin_trace(snap_compare: Any, size: tuple[int, int]) -> None:
    """`o` on a tensor-overflow hit on the Add: the trace walks back through the MatMul to
    the ReLU, whose input (the Conv2D) is finite."""
    session = SpreadSession(first_time=False, nan_nodes=frozenset({RELU, MATMUL, ADD}))
    app = DebuggerApp(session, start_session=True)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        session.create_watchpoint("tensor_overflow", {}, [ADD])
        await settled(pilot)
        await at_step_with_hits(pilot, 2)
        await pilot.press("2")
        tree = app.query_one(HitList).tree_view
        leaf = next(
            leaf
            for group in tree.root.children
            for leaf in group.children
            if leaf.data is not None and leaf.data.tensor.node == ADD
        )
        tree.move_cursor(leaf)
        await finish(pilot)
        await pilot.press("o")
        screen = await wait_for_screen(pilot, OriginScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count, what="the trace's rows")
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)


@pytest.mark.parametrize("size", SIZES)
def test_downstream(snap_compare: Any, size: tuple[int, int]) -> None:
    """`O` on the first Conv2D at a step with hits on two of the nodes it feeds: every
    node it feeds, nearest first, with their hits."""
    app, session = make_app(nan_node=RELU, first_time=False)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        session.create_watchpoint("tensor_overflow", {}, [RELU, ADD])
        await at_step_with_hits(pilot, 2)
        app.go_to_node(GRAPH, CONV)
        await finish(pilot)
        await pilot.press("O")
        screen = await wait_for_screen(pilot, DownstreamScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count, what="the downstream rows")
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)


@pytest.mark.parametrize("size", SIZES)
def test_graph_view(snap_compare: Any, size: tuple[int, int]) -> None:
    """`G` on the first ReLU: its neighbourhood drawn as boxes, the ReLU selected."""
    app, _session = make_app(nan_node=RELU, first_time=False)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        app.go_to_node(GRAPH, RELU)
        await finish(pilot)
        await pilot.press("G")
        await wait_for_screen(pilot, GraphScreen)
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)


@pytest.mark.parametrize("size", SIZES)
def test_source_view(
    snap_compare: Any, size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enter on a stack frame: the file at the frame's line, the nodes its lines made. The
    stacks name the file relative to the tmp folder, the working directory here, so the
    title is the same on every machine."""
    source_file(tmp_path)  # tmp_path / "net.py"
    monkeypatch.chdir(tmp_path)
    app, _session = make_app(graph_list=[graph_for("net.py")], first_time=False)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        await finish(pilot)
        screen = await open_frame(pilot, "Conv2D-op0", 120)
        # Pygments colours the file in a worker after the first paint: on a loaded machine
        # the picture could be taken before them
        code = screen.code
        await wait_until(pilot, lambda: code.coloured is not None, what="syntax colours")

        def centred() -> bool:
            height = code.scrollable_content_region.height
            return round(code.scroll_y) == max(0, code.cursor - height // 2)

        # centred after the layout's final height, which a loaded machine can reach late
        await wait_until(pilot, centred, what="the stack's line centred")
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)


@pytest.mark.parametrize("size", SIZES)
def test_tensor_list(snap_compare: Any, size: tuple[int, int]) -> None:
    """`L`: every tensor of the step in execution order, each one's health known."""
    app, _session = make_app(nan_node=RELU, first_time=False)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        await finish(pilot)
        await pilot.press("L")
        screen = await wait_for_screen(pilot, TensorListScreen)
        await wait_until(pilot, lambda: not screen.listing and screen.entries, what="entries")
        await wait_until(
            pilot,
            lambda: screen.health and all(h is not None for h in screen.health),
            what="every health glyph",
            explain=screen.status_text,
        )
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)


@pytest.mark.parametrize("size", SIZES)
def test_command_line(
    snap_compare: Any, size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`:` then `ni Conv2D-op0`: the command line's output under the panes."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))  # no history of the developer's
    app, _session = make_app(nan_node=RELU, first_time=False)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        await pilot.press("colon")
        await wait_until(pilot, lambda: isinstance(app.focused, CommandInput), what="the input")
        panel = app.query_one(CommandLine)
        await pilot.press(*"ni Conv2D-op0", "enter")
        await wait_until(
            pilot, lambda: panel.running is None and panel.output.line_count > 3, what="ni"
        )
        panel.input.cursor_blink = False  # the input keeps the focus: a steady cursor
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)


# One condition for each form the editor takes: no parameters (tensors: every node or the
# selected one; gradients: the whole category), four thresholds, the prefilled bounds of
# the initial weight values, the tolerance of a condition that compares with the previous
# step, and the range bounds with their percentages (activations). Left out as the same
# forms again: TZ (one prefilled percentage, as WI's), WCL/WCS (one ratio, as WNC's).
EDITOR_CONDITIONS = [
    "tensor_overflow",
    "tensor_too_large",
    "weight_initialization",
    "weight_not_changed",
    "gradient_exploding",
    "activation_range",
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("condition", EDITOR_CONDITIONS)
def test_watchpoint_editor(snap_compare: Any, condition: str, size: tuple[int, int]) -> None:
    """`w` on the first Conv2D, then the condition highlighted in the list."""
    app, _session = make_app(nan_node=RELU, first_time=False)

    async def run_before(pilot: Any) -> None:
        await ready(pilot)
        app.go_to_node(GRAPH, CONV)
        await finish(pilot)
        await pilot.press("w")
        editor = await wait_for_screen(pilot, WatchpointEditor)
        await settled(pilot)  # its first condition's fields drawn
        conditions = editor.query_one("#condition-list", OptionList)
        conditions.highlighted = next(
            i
            for i in range(conditions.option_count)
            if conditions.get_option_at_index(i).id == condition
        )
        await wait_until(
            pilot,
            lambda: editor.spec is not None and editor.spec.id == condition,
            what=f"the {condition} form",
        )
        await finish(pilot)

    shoot(snap_compare, app, size, run_before)
