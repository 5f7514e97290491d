"""The TUI's NaN/Inf trace (`o`): from an overflow hit of the demo dump to the MatMul where
the Inf first appeared, Enter going there; the "no NaN" notice; Esc cancelling; the help
and palette listing it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static

from tests.dump_names import DEMO_FIRST_INF, DEMO_LOSS
from tests.tui.support import settled, wait_for_notice, wait_for_screen, wait_until
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.origins.screen import OriginScreen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.tensor.view import TensorView

SIZE = (160, 48)


async def answer_offer(pilot: Any, key: str) -> None:
    """Indexed, the recommended-watchpoints offer answered, nothing left pending."""
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press(key)
    await wait_until(
        pilot,
        lambda: not isinstance(pilot.app.screen, ConfirmScreen),
        what="the recommended-watchpoints offer to close",
    )
    await settled(pilot)


async def at_step(pilot: Any, step: int) -> None:
    header = pilot.app.query_one(SessionHeader)
    await wait_until(pilot, lambda: f"step {step}/" in str(header.render()), what=f"step {step}")
    await settled(pilot)


async def continue_to_overflow(pilot: Any, session: OfflineSession) -> None:
    await answer_offer(pilot, "y")  # the recommended watchpoints
    for _ in range(session.metadata.max_step or 0):
        if any(h.condition.abbr == "TO" for h in session.hits):
            break
        await pilot.press("c")
        await settled(pilot)  # the continue (a worker) and the hits it found
    assert any(h.condition.abbr == "TO" for h in session.hits)


async def test_trace_from_an_overflow_hit_finds_the_matmul_and_enter_goes_there(
    demo_dump: Path,
) -> None:
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await continue_to_overflow(pilot, session)
        await pilot.press("2")
        tree = app.query_one(HitList).tree_view
        leaf = next(
            leaf
            for group in tree.root.children
            for leaf in group.children
            if leaf.data is not None
            and leaf.data.condition.abbr == "TO"
            and leaf.data.tensor.node == DEMO_LOSS
        )
        tree.move_cursor(leaf)
        await pilot.press("o")
        screen = await wait_for_screen(pilot, OriginScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count, what="the trace's rows")
        assert table.row_count == 1
        assert "MatMul-op0" in str(table.get_row_at(0)[1])
        chain = str(screen.query_one("#origin-chain", Static).render())
        assert "MatMul-op0" in chain and "SparseSoftmaxCrossEntropyWithLogits-op0" in chain
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view.state == "tensor", what="the MatMul's tensor")
        assert not isinstance(app.screen, OriginScreen)
        assert app.current_node is not None and app.current_node.name == DEMO_FIRST_INF


async def test_finite_node_is_a_notice_and_help_and_palette_list_the_key(demo_dump: Path) -> None:
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await answer_offer(pilot, "n")  # no recommended watchpoints
        await pilot.press("o")  # nothing selected, step 0: refused with a sentence
        await settled(pilot)
        assert app.action_state("trace_origin").enabled is False
        await pilot.press("n")  # step 1: healthy
        await at_step(pilot, 1)
        assert app.go_to_node(next(iter(app.graphs)), DEMO_LOSS)
        await pilot.press("o")
        await wait_for_notice(pilot, "has no NaN or Inf at step 1 (iteration 0).")
        await settled(pilot)
        assert not isinstance(app.screen, OriginScreen)
        rows = app.help_keys()
        assert any(keys == "o" and "origin" in does for keys, does, _ in rows)
        titles = [c.title for c in app.palette_commands()]
        assert "Trace NaN/Inf to its origin" in titles


async def test_escape_cancels_a_running_trace(demo_dump: Path, monkeypatch: Any) -> None:
    import threading

    # the trace machinery loads with the first trace (cold start): patch it at its home
    import tuidebug.core.origins as tracing_module

    started = threading.Event()

    def slow_trace(*args: Any, cancelled: Any = None, **kwargs: Any) -> Any:
        started.set()
        while not cancelled():
            threading.Event().wait(0.01)
        raise tracing_module.TraceCancelled

    monkeypatch.setattr(tracing_module, "trace_in_session", slow_trace)
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await answer_offer(pilot, "n")
        await pilot.press("n")
        await at_step(pilot, 1)
        assert app.go_to_node(next(iter(app.graphs)), DEMO_LOSS)
        await pilot.press("o")
        await wait_until(pilot, started.is_set, what="the trace to start")
        assert app._tracer.running
        await pilot.press("escape")
        await wait_for_notice(pilot, "Trace cancelled.")
        await wait_until(pilot, lambda: not app._tracer.running, what="the trace to stop")


async def test_the_summary_counts_in_the_singular_for_one() -> None:
    # It said "1 non-finite nodes walked · 1 tensors read".
    from textual.app import App

    from tests.tui.support import CONV, synthetic_graph
    from tuidebug.core.origins import Origin, OriginTrace

    trace = OriginTrace(
        start=CONV, start_slots=(0,), origins=(Origin(CONV, (0,)),),
        reached_from={CONV: None}, tensors_read=1,
    )  # fmt: skip
    app: App[None] = App()
    async with app.run_test(size=(120, 30)) as pilot:
        app.push_screen(OriginScreen(trace, synthetic_graph(), "step 1"))
        screen = await wait_for_screen(pilot, OriginScreen)
        summary = str(screen.query_one("#origin-summary", Static).render())
        assert summary == "1 origin · 1 non-finite node walked · 1 tensor read"
