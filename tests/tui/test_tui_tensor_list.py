"""The tensor list (`L`): every tensor of the step in execution order, health glyphs and
the numbers beside them (min, max, NaN and Inf counts) filled in by a background pass,
filters and sorts, Enter opening the tensor, the list following the step, and all of it at
80×24."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.widgets import Static

from tests.dump_names import DEMO_FIRST_INF
from tests.tui.support import (
    CONV,
    RELU,
    FakeSession,
    make_app,
    run_palette,
    screen_text,
    settled,
    synthetic_graph,
    tensor_shown,
    wait_for_screen,
    wait_until,
)
from tuidebug.core.graph import Category
from tuidebug.core.session import SessionError
from tuidebug.core.tensor import TensorRef
from tuidebug.core.tensor_health import Health
from tuidebug.core.tensor_listing import TensorEntry
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.help_screen import HelpScreen
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.tensor_list.rows import count_label, value_label
from tuidebug.tui.tensor_list.screen import TensorListScreen, TensorRows

SMALL = (80, 24)


async def loaded_without_offer(pilot: Any) -> None:
    """The session loaded and the recommended-watchpoints offer declined."""
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")
    await wait_until(
        pilot, lambda: not isinstance(pilot.app.screen, ConfirmScreen), what="the offer to close"
    )
    await settled(pilot)


async def open_list(pilot: Any) -> TensorListScreen:
    await pilot.press("L")
    screen = await wait_for_screen(pilot, TensorListScreen)
    await wait_until(pilot, lambda: not screen.listing and screen.entries, what="the entries")
    return screen


async def health_known(pilot: Any, screen: TensorListScreen) -> None:
    await wait_until(
        pilot,
        lambda: screen.health and all(h is not None for h in screen.health),
        what="every health glyph",
        explain=screen.status_text,
    )


def row_texts(rows: TensorRows) -> list[str]:
    return [rows.render_line(y).text for y in range(rows.size.height)]


def shown_nodes(screen: TensorListScreen) -> list[str]:
    return [screen.entries[i].node for i in screen.rows.shown]


async def test_lists_every_tensor_of_a_real_step_in_execution_order(dump_2_0: Path) -> None:
    session = OfflineSession(dump_2_0)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        await pilot.press("n")  # step 1: dump iteration 0
        await wait_until(pilot, lambda: session.metadata.step == 1, what="step 1")
        await settled(pilot)
        screen = await open_list(pilot)
        expected = session.tensor_entries()
        assert len(expected) == 60  # 37 kernels, 19 parameter files, 4 constants
        assert screen.entries == expected
        assert screen.rows.shown == list(range(len(expected)))  # execution order
        orders = [e.order for e in screen.entries]
        assert orders == sorted(orders)
        assert screen.entries[0].op_type == "Conv2D"
        await health_known(pilot, screen)
        # a trained LeNet is healthy; the few tensors that are all zero say so
        assert not {Health.NAN, Health.INF, Health.UNREADABLE} & set(screen.health)
        assert Health.NORMAL in screen.health
        first = row_texts(screen.rows)[1]
        # beside the glyph at 80 columns: the NaN and Inf counts (min and max do not fit)
        assert first.startswith(("·     0     0 float32", ".     0     0 float32"))
        assert "Conv2D-op77:0" in first
        assert "Step 1" in screen.status_text() and "60 tensors" in screen.status_text()


async def test_health_glyphs_fill_in_and_mark_the_nan_tensor() -> None:
    app, _session = make_app(nan_node=CONV)
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        screen = await open_list(pilot)
        await health_known(pilot, screen)
        conv = next(i for i, e in enumerate(screen.entries) if e.node == CONV)
        assert screen.health[conv] is Health.NAN  # NaN and Inf: NaN wins
        assert all(h is Health.NORMAL for i, h in enumerate(screen.health) if i != conv)
        line = next(t for t in row_texts(screen.rows) if "Conv2D-op0:0" in t)
        assert line.startswith("N ")
        assert "health" not in screen.status_text()  # all known: no progress left


@pytest.mark.parametrize("size", [(160, 48), SMALL], ids=["160x48", "80x24"])
async def test_numbers_beside_the_glyph_at_the_demo_overflow_step(
    demo_dump: Path, size: tuple[int, int]
) -> None:
    """At the demo's first overflow step, once the pass has read the tensors, each row
    shows the NaN and Inf counts and, at 160 columns, min and max of the finite values:
    the numbers of the tensor itself."""
    session = OfflineSession(demo_dump)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=size) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("y")  # the recommended watchpoints, so `c` stops at the overflow
        await wait_until(
            pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the offer to close"
        )
        await settled(pilot)
        for _ in range(8):
            if any(h.condition.abbr == "TO" for h in session.hits):
                break
            await pilot.press("c")
            await settled(pilot)
        assert any(h.condition.abbr == "TO" for h in session.hits)
        screen = await open_list(pilot)
        await health_known(pilot, screen)
        rows = screen.rows
        header = rows.render_line(0).text.split()
        wide = size[0] >= 120
        assert header[:4] == (
            ["min", "max", "NaN", "Inf"] if wide else ["NaN", "Inf", "dtype", "shape"]
        )

        def numbers_of(index: int) -> tuple[list[str], list[str]]:
            """(the row's number cells, what the tensor's own values say they are)."""
            entry = screen.entries[index]
            ref = TensorRef(entry.node, entry.slot, entry.iteration, 0, entry.graph)
            values = np.asarray(session.tensor(ref), dtype=np.float64)
            finite = values[np.isfinite(values)]
            expected = [count_label(int(np.isnan(values).sum()))]
            expected.append(count_label(int(np.isinf(values).sum())))
            if wide:  # of the finite values; "—" where there is none
                extremes = (finite.min(), finite.max()) if finite.size else (None, None)
                expected[:0] = [value_label(value) for value in extremes]
            rows.set_cursor(rows.shown.index(index))
            line = rows.render_line(rows.cursor - rows.scroll_offset.y + 1).text
            assert len(line) == rows.view_width  # one line, never wrapped
            return line.split()[1 : 1 + len(expected)], expected

        # the first offender, fc2's MatMul: no finite value left, so no min or max
        first = next(i for i, e in enumerate(screen.entries) if e.node == DEMO_FIRST_INF)
        assert screen.health[first] in (Health.NAN, Health.INF)
        cells, expected = numbers_of(first)
        assert cells == expected and expected[-2:] != ["0", "0"]
        if wide:
            assert cells[:2] == ["—", "—"]
        # a tensor with NaN and finite values (the Tanh after it): min, max and the counts
        mixed = next(i for i, e in enumerate(screen.entries) if e.node.endswith("Tanh-op0"))
        cells, expected = numbers_of(mixed)
        assert cells == expected and expected[-2] != "0"
        if wide:
            assert cells[:2] == ["-1", "1"]
        # a healthy tensor of the step: 0 NaN, 0 Inf
        healthy = next(i for i, h in enumerate(screen.health) if h is Health.NORMAL)
        cells, expected = numbers_of(healthy)
        assert cells == expected and cells[-2:] == ["0", "0"]


async def test_filter_category_op_type_sort_and_problems_only() -> None:
    app, _session = make_app(nan_node=CONV)
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        screen = await open_list(pilot)
        await health_known(pilot, screen)
        total = len(screen.entries)

        await pilot.press("slash", *"relu-op")
        await wait_until(pilot, lambda: len(screen.rows.shown) == 4, what="the ReLU rows")
        assert all("ReLU" in n for n in shown_nodes(screen))
        assert "4 of 25 tensors" in screen.status_text()
        await pilot.press("escape")  # back to the rows, the filter kept
        assert isinstance(screen.focused, TensorRows) and len(screen.rows.shown) == 4
        await pilot.press("slash", *["backspace"] * 7, "enter")
        await wait_until(pilot, lambda: len(screen.rows.shown) == total, what="all rows back")

        await pilot.press("k")  # weights
        assert screen.query_state.category is Category.WEIGHT
        assert shown_nodes(screen) == [f"layer{i}.weight" for i in range(4)]
        await pilot.press("k")  # gradients
        assert [screen.entries[i].op_type for i in screen.rows.shown] == ["Conv2DBackpropFilter"]
        await pilot.press("k", "k", "k")  # activations, parameters, all again
        assert screen.query_state.category is None

        screen.rows.set_cursor(shown_nodes(screen).index(RELU))
        await pilot.press("t")  # only ReLU
        assert {screen.entries[i].op_type for i in screen.rows.shown} == {"ReLU"}
        assert screen.rows.cursor_entry is not None
        assert screen.entries[screen.rows.cursor_entry].node == RELU  # the cursor stayed
        await pilot.press("t")
        assert len(screen.rows.shown) == total

        await pilot.press("s")  # by size: all are 64 B, so execution order within
        assert screen.query_state.sort == "size" and screen.rows.shown == list(range(total))
        await pilot.press("s")  # by op type
        types = [screen.entries[i].op_type.lower() for i in screen.rows.shown]
        assert types == sorted(types)
        await pilot.press("s")
        assert screen.query_state.sort == "order"

        await pilot.press("u")  # NaN / Inf / all-zero only
        assert shown_nodes(screen) == [CONV]
        await pilot.press("u")
        assert len(screen.rows.shown) == total


async def test_a_bad_regex_is_searched_as_text() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        screen = await open_list(pilot)
        await pilot.press("slash", *"op0[")
        await wait_until(pilot, lambda: not screen.rows.shown, what="no row matches 'op0['")
        assert "Not a regular expression" in screen.status_text()


async def test_a_listing_error_naming_a_hostile_file_is_escaped() -> None:
    app, session = make_app()

    def unreadable(iteration: int | None = None) -> list[TensorEntry]:
        raise SessionError("Cannot read junk\x1b]0;pwned\x07[bold].npy.")

    session.tensor_entries = unreadable  # type: ignore[method-assign]
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        await pilot.press("L")
        screen = await wait_for_screen(pilot, TensorListScreen)
        await wait_until(pilot, lambda: not screen.listing, what="the listing to fail")
        status = str(screen.query_one("#tensors-status", Static).render())
        assert status == "Cannot read junk\\x1b]0;pwned\\x07[bold].npy."
        assert "\x1b" not in screen_text(app) and "\x07" not in screen_text(app)


async def test_enter_opens_the_tensor_and_the_tree_goes_to_its_node() -> None:
    app, _session = make_app(nan_node=CONV)
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        screen = await open_list(pilot)
        screen.rows.set_cursor(shown_nodes(screen).index(RELU))
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: not isinstance(app.screen, TensorListScreen), what="the list to close"
        )
        view = app.query_one(TensorView)
        await tensor_shown(pilot, view)
        assert app.current_node is not None and app.current_node.name == RELU
        assert app._open_tensor is not None and app._open_tensor[1:3] == (RELU, 0)
        # back to the list: the same screen, the cursor where it was
        again = await open_list(pilot)
        assert again is screen
        assert screen.rows.cursor_entry is not None
        assert screen.entries[screen.rows.cursor_entry].node == RELU


async def test_the_list_follows_the_step() -> None:
    app, session = make_app(nan_node=CONV)
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        screen = await open_list(pilot)
        assert screen.step == 1 and all(e.iteration == 1 for e in screen.entries)
        await pilot.press("n")  # the app's step key works here too
        await wait_until(pilot, lambda: screen.step == 2, what="the list of step 2")
        assert all(e.iteration == 2 for e in screen.entries)
        assert "Step 2" in screen.status_text()
        await health_known(pilot, screen)
        # closed, a step later it lists the new step when opened again
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, TensorListScreen), what="close")
        await pilot.press("n")
        await wait_until(pilot, lambda: session.metadata.step == 3, what="step 3")
        await settled(pilot)
        again = await open_list(pilot)
        await wait_until(pilot, lambda: again.step == 3, what="the list of step 3")


async def test_reached_from_the_palette_and_listed_in_the_help() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        await run_palette(pilot, "List the step's tensors")
        await wait_for_screen(pilot, TensorListScreen)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, TensorListScreen), what="close")
        rows = {key: does for key, does, _ in app.help_keys()}
        assert "L" in rows and "tensor" in rows["L"]
        assert "O" in rows and "downstream" in rows["O"]
        # the list's own keys are its context help
        await open_list(pilot)
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, HelpScreen)
        assert help_screen._pane_help is not None
        title, text = help_screen._pane_help
        assert title == "Tensor list" and "NaN" in text


async def test_guarded_until_the_graphs_are_loaded() -> None:
    session = FakeSession()
    app = DebuggerApp(session)  # not started: nothing loaded yet
    async with app.run_test(size=SMALL) as pilot:
        state = app.action_state("tensor_list")
        assert not state.enabled and state.reason
        session.start()
        await loaded_without_offer(pilot)
        assert app.action_state("tensor_list").enabled


async def test_a_live_training_is_asked_only_for_the_rows_on_screen() -> None:
    app, _session = make_app(live=True, graph_list=[synthetic_graph(scopes=20)])
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        screen = await open_list(pilot)
        rows = screen.rows
        await wait_until(
            pilot,
            lambda: all(screen.health[i] is not None for i in rows.visible_entries()),
            what="the health of the rows on screen",
        )
        await settled(pilot)
        known = sum(h is not None for h in screen.health)
        assert known == len(rows.visible_entries()) < len(screen.entries)
        assert "rows seen" in screen.status_text()
        await pilot.press("pagedown", "pagedown")  # the pass follows the view
        await wait_until(
            pilot,
            lambda: all(screen.health[i] is not None for i in rows.visible_entries()),
            what="the health of the rows scrolled to",
        )


async def test_ascii_glyphs_where_the_terminal_takes_no_utf8() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        app.add_class("-ascii")  # what the app does for LANG=C (terminal_caps.py)
        screen = await open_list(pilot)
        await health_known(pilot, screen)
        lines = row_texts(screen.rows)[1:]
        assert all(line.isascii() for line in lines)
        assert any("~" in line for line in lines)  # the cut names
        assert lines[0].startswith(". ")


async def test_a_pane_key_closes_the_list_and_goes_to_that_pane() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await loaded_without_offer(pilot)
        await open_list(pilot)
        await pilot.press("2")
        await wait_until(
            pilot,
            lambda: (
                not isinstance(app.screen, TensorListScreen)
                and app.focused is not None
                and app.focused.id == "hit-tree"
            ),
            what="the hit list focused",
        )
