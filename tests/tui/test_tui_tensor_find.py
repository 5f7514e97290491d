"""TensorView find: `f` + a spec jumps to the first match from the cursor, `]` / `[` step
through the matches (wrapping), matching cells are highlighted, Esc clears the search, and a
bad spec or a search without a match is a notice, never a crash. The last tests check the
find logic (`tensor_find`) and the status line (`tensor_text`) without a running app."""

from __future__ import annotations

import numpy as np
import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Input

from tests.tui.support import (
    FakeSession,
    notices,
    settled,
    tensor_shown,
    wait_for_notice,
    wait_for_screen,
    wait_until,
)
from tuidebug.core.tensor_search import MatchCount, parse_search
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.tensor.canvas import TensorCanvas
from tuidebug.tui.tensor.find import (
    Counted,
    Landed,
    Missed,
    Progressed,
    Ranked,
    SearchEvent,
    TensorFind,
    scan,
)
from tuidebug.tui.tensor.format import SliceGeometry, full_value
from tuidebug.tui.tensor.text import GotoError, goto_cell, status_line
from tuidebug.tui.tensor.view import TensorView

SIZE = (100, 32)


class ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TensorView()


def cursor(canvas: TensorCanvas) -> tuple[int, int]:
    return canvas.cursor_row, canvas.cursor_col


async def landed(pilot: Pilot[None], canvas: TensorCanvas, at: tuple[int, int]) -> None:
    """The search put the cursor on `at`, and its worker is done (the match ranked)."""
    await wait_until(pilot, lambda: cursor(canvas) == at, what=f"the cursor on the match {at}")
    await settled(pilot)


def with_nans() -> np.ndarray:
    array = np.linspace(-3, 3, 40 * 30, dtype=np.float32).reshape(40, 30)
    array[3, 17] = np.nan
    array[25, 2] = np.nan  # below the first screen: the jump must scroll to it
    array[38, 29] = np.nan
    array[10, 10] = np.inf
    return array


async def open_view(app: ViewApp, pilot: Pilot[None], array: np.ndarray) -> TensorView:
    view = app.query_one(TensorView)
    view.show("Default/fc1/MatMul-op1:0", array)
    await tensor_shown(pilot, view)
    view.table.focus()
    await wait_until(pilot, lambda: view.table.has_focus, what="the focus on the table")
    return view


async def test_find_nan_then_next_and_previous() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_view(app, pilot, with_nans())
        table = view.table
        await pilot.press("f")
        box = view.query_one("#tv-find", Input)
        assert box.display and box.has_focus
        assert box.value == "nonfinite"  # the default spec, prefilled
        box.value = ""
        await pilot.press(*"nan", "enter")
        await landed(pilot, table, (3, 17))
        assert not box.display and table.has_focus
        assert view.status_text.startswith("NaN at [3, 17]  (match 1 of 3)")

        await pilot.press("right_square_bracket")
        await landed(pilot, table, (25, 2))
        assert view.status_text.startswith("NaN at [25, 2]  (match 2 of 3)")
        row_line = next(
            y for y in range(table.view_size.height) if table.render_line(y).text.startswith("25 ")
        )
        assert row_line > 0  # scrolled into view
        await pilot.press("right_square_bracket")
        await landed(pilot, table, (38, 29))
        await pilot.press("right_square_bracket")
        await landed(pilot, table, (3, 17))  # wrapped past the end
        await pilot.press("left_square_bracket")
        await landed(pilot, table, (38, 29))  # and back past the start
        assert "(match 3 of 3)" in view.status_text

        await pilot.press("f")  # the last spec is offered again
        assert box.value == "nan"
        await pilot.press("escape")
        assert not box.display and table.has_focus
        assert view.search is not None  # closing the box keeps the search


async def test_matches_are_highlighted_and_escape_clears() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        array = with_nans()
        view = await open_view(app, pilot, array)
        table = view.table
        assert view.find("> 2.9")
        await landed(pilot, table, (10, 10))
        match_bg = table.style_of("tensor-table--match").bgcolor
        assert match_bg is not None
        assert table.row_matches(39, 0, 30) == (array[39] > 2.9).tolist()
        assert 0 < sum(table.row_matches(39, 0, 30)) < 30
        assert cursor(table) == (10, 10)  # +Inf > 2.9 too, and it comes first
        await pilot.press("home")
        assert view.find("nonfinite")
        await landed(pilot, table, (3, 17))
        await pilot.press("right_square_bracket")  # → the Inf at [10, 10]
        await landed(pilot, table, (10, 10))
        assert view.status_text.startswith("+Inf at [10, 10]  (match 2 of 4)")
        await pilot.press("up")
        line = next(
            y for y in range(table.view_size.height) if table.render_line(y).text.startswith("10 ")
        )
        strip = table.render_line(line)
        marked = [seg.text.strip() for seg in strip if seg.style and seg.style.bgcolor == match_bg]
        assert marked == ["inf"]
        assert "find 'nonfinite': 4 matches" in view.status_text

        await pilot.press("escape")
        await wait_until(pilot, lambda: table.highlight is None, what="the highlight cleared")
        await settled(pilot)  # the table redrawn
        assert view.search is None
        strip = table.render_line(line)
        assert not [seg for seg in strip if seg.style and seg.style.bgcolor == match_bg]


async def test_bad_spec_and_no_match_are_notices() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_view(app, pilot, np.arange(12, dtype=np.int32).reshape(3, 4))
        await pilot.press("f")
        box = view.query_one("#tv-find", Input)
        box.value = "x > abc"
        await pilot.press("enter")
        await wait_for_notice(pilot, "Cannot read 'x > abc' as a search")
        assert (
            "Cannot read 'x > abc' as a search: expected nan, inf, +inf, -inf, nonfinite, "
            "zero, a comparison like '> 1e3' or a range like '[-1, 1]'."
        ) in notices(app)
        # issue 28: the box kept the keys after a bad spec; the grid has them now, the
        # error in its toast, and `f` offers the spec again to be corrected
        await wait_until(pilot, lambda: view.table.has_focus, what="the grid to take the keys")
        assert not box.display
        await pilot.press("f")
        assert box.display and box.has_focus and box.value == "x > abc"
        box.value = "nan"
        await pilot.press("enter")
        await wait_for_notice(pilot, "No element of this slice matches 'nan'.")
        await settled(pilot)
        assert view.search is None
        assert cursor(view.table) == (0, 0)
        assert view.find("[5, 7)")
        await landed(pilot, view.table, (1, 1))
        assert view.status_text.startswith("5 at [1, 1]  (match 1 of 2)")
        assert view.find("")  # an empty spec ends the search
        assert view.search is None


async def test_find_in_heatmap_and_after_slice_change() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        array = np.zeros((3, 50, 60), np.float32)
        array[1, 40, 7] = -np.inf
        array[0, 30, 59] = -np.inf
        view = await open_view(app, pilot, array)
        await pilot.press("m")
        await wait_until(pilot, lambda: view.canvas is view.heatmap, what="the heatmap")
        await settled(pilot)
        assert view.find("-inf")
        await landed(pilot, view.heatmap, (30, 59))
        assert view.status_text.startswith("-Inf at [0, 30, 59]  (match 1 of 1)")
        assert view.apply_slice("[1, :, :]")  # the search stays, over the new slice
        await settled(pilot)
        await pilot.press("right_square_bracket")
        await landed(pilot, view.heatmap, (40, 7))
        assert view.status_text.startswith("-Inf at [1, 40, 7]  (match 1 of 1)")
        await pilot.press("m")
        assert cursor(view.table) == (40, 7)


async def test_next_without_a_search_uses_the_last_spec() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_view(app, pilot, with_nans())
        await pilot.press("right_square_bracket")  # nonfinite, strictly after the cursor
        await landed(pilot, view.table, (3, 17))
        assert view.search is not None and view.search.text == "nonfinite"
        await pilot.press("escape")
        assert view.search is None
        view.show("other", np.full((2, 2), np.nan, np.float32))  # a new tensor: no search
        await tensor_shown(pilot, view)
        assert view.search is None


async def test_results_for_a_slice_no_longer_shown_are_dropped() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        array = np.zeros((2, 2000, 4000), np.float32)
        array[0, 1999, 3990] = np.nan  # the search over [0, :, :] reads nearly everything
        view = await open_view(app, pilot, array)
        assert view.find("nan")
        assert view.apply_slice("[1, :, :]")  # at once: the running search is for [0]
        await settled(pilot)  # the search for [0] ran to its end (or its cancellation)
        assert cursor(view.table) == (0, 0)
        assert view.status_text.startswith("[1, 0, 0] = 0.0")
        assert "match" not in view.status_text
        await pilot.press("right_square_bracket")  # the same spec over the new slice
        await wait_for_notice(pilot, "No element of this slice matches 'nan'.")


async def test_in_the_app_find_keys_and_escape() -> None:
    """In the debugger: open a tensor with NaN and Inf, `f` from the tensor pane, then Esc
    ends the search first and only a second Esc goes back to the previous pane."""
    relu = "Default/network-Net/layer0-Block/ReLU-op1"
    app = DebuggerApp(FakeSession(nan_node=relu), start_session=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("n")  # no recommended watchpoints
        await wait_until(
            pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the offer to close"
        )
        await settled(pilot)
        assert app.go_to_node("kernel_graph_0", relu)
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await tensor_shown(pilot, view)
        await pilot.press("5")
        assert view.table.has_focus
        await pilot.press("right", "f")
        assert view.query_one("#tv-find", Input).value == "nonfinite"
        await pilot.press("enter")  # from the cursor at [0, 1] on: the +Inf at [1, 1]
        await landed(pilot, view.table, (1, 1))
        assert view.status_text.startswith("+Inf at [1, 1]  (match 2 of 2)")
        await pilot.press("right_square_bracket")
        await landed(pilot, view.table, (0, 0))
        assert view.status_text.startswith("NaN at [0, 0]  (match 1 of 2)")
        await pilot.press("escape")
        assert view.search is None and view.table.has_focus
        await pilot.press("escape")  # now the App's "back"
        assert not view.table.has_focus


# ------------------------------------------------- the find logic, without a running app
def scan_events(array: np.ndarray, text: str, start: int = 0, **kw: object) -> list[SearchEvent]:
    events: list[SearchEvent] = []
    spec = parse_search(text)
    scan(array, spec, start, report=events.append, cancelled=lambda: False, **kw)  # type: ignore[arg-type]
    return events


def test_scan_lands_counts_and_ranks() -> None:
    flat = with_nans().reshape(-1)
    events = scan_events(flat, "nan", 200, backward=False, counted=None)
    assert [type(e) for e in events] == [Landed, Counted, Ranked]
    landed, counted, ranked = events
    assert isinstance(landed, Landed) and landed == Landed(25 * 30 + 2, None)
    assert isinstance(counted, Counted) and counted.count.total == 3
    assert ranked == Ranked(25 * 30 + 2, 2)
    # with the count known the rank comes with the landing, and nothing is counted again
    again = scan_events(flat, "nan", 0, backward=True, counted=counted.count)
    assert again == [Landed(38 * 30 + 29, 3), Ranked(38 * 30 + 29, 3)]
    assert scan_events(flat, "zero", backward=False, counted=None) == [Missed()]


def test_scan_stops_quietly_when_cancelled_and_reports_progress_late() -> None:
    events: list[SearchEvent] = []
    spec = parse_search("nan")
    array = np.zeros(3 << 20, np.float32)
    scan(array, spec, 0, backward=False, counted=None, report=events.append, cancelled=lambda: True)
    assert events == []
    ticks = iter(range(1000))  # a clock where every chunk takes a second
    scan(
        array,
        spec,
        0,
        backward=False,
        counted=None,
        report=events.append,
        cancelled=lambda: False,
        clock=lambda: float(next(ticks)),
    )
    assert events[0] == Progressed("searching 'nan'… 33%")
    assert events[-1] == Missed()


def test_find_state_keys_every_result() -> None:
    find = TensorFind()
    assert find.next_spec() == parse_search("nonfinite")  # the default spec
    spec = parse_search("nan")
    assert find.begin(spec) and not find.begin(spec)
    key, other = (spec, 1), (spec, 2)
    assert find.jump(key, 0, backward=False) is None  # nothing known: a scan must run
    find.receive(key, Counted(MatchCount(2, np.array([3, 8]))))
    assert find.jump(key, 4, backward=False) == Landed(8, 2)
    assert find.jump(key, 9, backward=False) == Landed(3, 1)  # wraps
    assert find.jump(key, 2, backward=True) == Landed(8, 2)
    assert find.jump(other, 4, backward=False) is None  # another slice knows nothing
    find.land(key, 8, None)
    assert find.rank_at(key, 8) == 0 and find.rank_at(key, 3) is None
    assert find.match_status(key, 0, np.float32("nan"), "[8]", "here").startswith(
        "NaN at [8]  (counting matches…)"
    )
    find.receive(key, Ranked(8, 2))
    assert find.rank_at(key, 8) == 2
    assert find.match_status(key, 2, np.float32("nan"), "[8]", "here") == (
        "NaN at [8]  (match 2 of 2)   here"
    )
    assert find.suffix(key) == "   find 'nan': 2 matches"
    find.receive(key, Progressed("counting 'nan'… 40%"))
    assert find.suffix(key) == "   counting 'nan'… 40%"
    find.end()
    assert find.spec is None and find.suffix(key) == "" and find.text == "nonfinite"


def test_status_line_and_goto_without_an_app() -> None:
    array = with_nans()
    geometry = SliceGeometry.of(array.shape, (slice(None), slice(None)))
    find = TensorFind()
    line = status_line(geometry, (3, 16), comparison=None, displayed=array, find=find, key=(None,))
    assert line == f"[3, 16] = {full_value(array[3, 16])}   row 3/40 col 16/30"
    assert goto_cell(geometry, "-1, 2") == (39, 2)
    with pytest.raises(GotoError, match="The column 30 is out of range"):
        goto_cell(geometry, "0, 30")
    with pytest.raises(GotoError, match=r"'x' is not an index like 3, 17\."):
        goto_cell(geometry, "x")
