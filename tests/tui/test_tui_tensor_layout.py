"""The tensor view in an 80×24 SSH window: rows for the numbers, labels that do not overlap,
and the slice and tolerance boxes handing the keys back to the grid after Enter."""

from __future__ import annotations

import itertools

import numpy as np
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from tests.tui.support import RELU, make_app, settled, tensor_shown, wait_for_screen, wait_until
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.tensor.view import TensorView

SSH = (80, 24)
CLEAR = ("end", *["backspace"] * 8)  # empties a short box, as a user would


class ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TensorView()


def data_rows(view: TensorView) -> int:
    """Rows of numbers on screen: table lines below the column header that show a row."""
    table = view.table
    shown = [table.render_line(y).text for y in range(1, table.view_size.height)]
    return sum("│" in line for line in shown)


def shown_parts(view: TensorView) -> list[Widget]:
    """The view's widgets that take room on screen (the slice bar's own parts included)."""
    return [w for w in view.walk_children(Widget) if w.display and w.region.area]


def assert_no_overlap(view: TensorView) -> None:
    """Every shown part lies inside the view and no two siblings share a cell."""
    parts = shown_parts(view)
    for part in parts:
        assert view.region.contains_region(part.region), (part, part.region, view.region)
    for i, one in enumerate(parts):
        for other in parts[i + 1 :]:
            if one.parent is other.parent:
                assert not one.region.overlaps(other.region), (one, other)


def tensor(rows: int = 40, cols: int = 30) -> np.ndarray:
    return np.random.default_rng(7).standard_normal((3, rows, cols)).astype(np.float32)


async def test_80x24_pane_of_the_app_shows_rows_of_numbers() -> None:
    app, _session = make_app()
    async with app.run_test(size=SSH) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="the offer gone")
        assert app.go_to_node("kernel_graph_0", RELU)
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await tensor_shown(pilot, view)
        view.focus()
        await settled(pilot)
        assert view.canvas.has_focus
        # whatever room the app's layout gives the pane, the numbers get the rows first
        assert view.region.height >= 5
        assert data_rows(view) >= min(4, view.region.height - 3)
        assert_no_overlap(view)


async def test_80x24_maximized_view_keeps_the_bar_and_many_rows() -> None:
    app = ViewApp()
    async with app.run_test(size=SSH) as pilot:
        view = app.query_one(TensorView)
        data = tensor()
        view.show("Default/net/Conv2D-op1:0  (Conv2D, step 2)", data, data * 0.5)
        await tensor_shown(pilot, view)
        view.focus()
        await settled(pilot)
        assert data_rows(view) >= 10
        bar = view.query_one("#tv-bar")
        assert bar.display and bar.region.height == 1
        order = ("tv-slice-label", "tv-slice", "tv-tolerance-label", "tv-tolerance", "tv-mode")
        regions: list[Region] = [view.query_one(f"#{name}").region for name in order]
        # left to right, each where the one before ends: labels never run into a box
        assert all(r.width > 0 for r in regions)
        assert all(a.right <= b.x for a, b in itertools.pairwise(regions))
        assert str(view.query_one("#tv-tolerance-label").render()).strip() == "tolerance"
        assert_no_overlap(view)
        assert view.query_one("#tv-slice").region.width >= 10  # room for [0, :, :]


async def test_short_pane_hides_the_bar_until_a_box_is_edited() -> None:
    app = ViewApp()
    async with app.run_test(size=(42, 7)) as pilot:  # the tensor pane of an 80×24 window
        view = app.query_one(TensorView)
        data = tensor()
        view.show("Conv2D-op1:0", data, data * 0.5)
        await tensor_shown(pilot, view)
        view.focus()
        await settled(pilot)
        bar = view.query_one("#tv-bar")
        assert not bar.display and not view.query_one("#tv-stats").display
        assert data_rows(view) >= 3
        title = str(view.query_one("#tv-title", Static).content)
        assert title.startswith("Conv2D-op1:0  slice [0, :, :]  [current]")
        assert_no_overlap(view)

        await pilot.press("e")  # the slice box opens, the keys go to it
        await wait_until(pilot, lambda: bar.display, what="the slice bar")
        assert view.query_one("#tv-slice").has_focus
        assert_no_overlap(view)
        await pilot.press("escape")  # back to the grid: the bar closes again
        await wait_until(pilot, lambda: not bar.display, what="the bar to close")
        assert view.canvas.has_focus and data_rows(view) >= 3


async def test_enter_in_the_slice_and_tolerance_boxes_returns_to_the_grid() -> None:
    app = ViewApp()
    async with app.run_test(size=SSH) as pilot:
        view = app.query_one(TensorView)
        data = tensor()
        view.show("Conv2D-op1:0", data, data * 0.5)
        await tensor_shown(pilot, view)
        view.focus()

        await pilot.press("t")
        tolerance = view.query_one("#tv-tolerance")
        assert tolerance.has_focus
        await pilot.press(*CLEAR, "0", ".", "1", "enter")
        await wait_until(pilot, lambda: view.canvas.has_focus, what="the grid to get the keys")
        assert view.tolerance == 0.1
        await pilot.press("d")  # a key of the grid again, not a letter in the box
        await wait_until(pilot, lambda: view.mode == "diff", what="the diff mode")
        assert tolerance.value == "0.1"  # type: ignore[attr-defined]

        await pilot.press("e")
        box = view.query_one("#tv-slice")
        assert box.has_focus
        box.value = "[1, :, 2:5]"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(pilot, lambda: view.canvas.has_focus, what="the grid after the slice")
        assert view.slice_text == "[1, :, 2:5]"
        await pilot.press("j")  # moves the cursor; nothing typed into the box
        await settled(pilot)
        assert box.value == "[1, :, 2:5]"  # type: ignore[attr-defined]
        assert view.canvas.cursor_row == 1

        # a mistake keeps the box focused, with its sentence, to be corrected
        await pilot.press("t", *CLEAR, "2", "enter")
        await wait_until(pilot, lambda: view.error_text, what="the tolerance's error")
        assert tolerance.has_focus and "between 0 and 1" in view.error_text
        await pilot.press("escape")  # gives up: the tolerance in use comes back
        await wait_until(pilot, lambda: view.canvas.has_focus, what="the grid after Esc")
        assert tolerance.value == "0.1" and view.error_text == ""  # type: ignore[attr-defined]


async def test_the_first_visible_column_starts_at_a_cell_boundary() -> None:
    # Scrolled to bring a right-hand column in, the table stopped inside a column and drew
    # the tail of its number first ("…3.25" for "-1.3.25"), which reads as another number.
    app = ViewApp()
    async with app.run_test(size=SSH) as pilot:
        view = app.query_one(TensorView)
        data = tensor(cols=40) * 1000
        view.show("Conv2D-op1:0", data, data * 0.5)
        await tensor_shown(pilot, view)
        view.focus()
        await settled(pilot)
        table = view.table
        col_w, header_w = table.column_width, table.row_header_width

        def first_cells() -> tuple[str, str]:
            """The column header's and the first data row's first cell on screen."""
            header = table.render_line(0).text[header_w : header_w + col_w]
            body = table.render_line(1).text[header_w : header_w + col_w]
            return header, body

        await pilot.press("shift+end")  # the last column, scrolled in from the right
        await settled(pilot)
        assert table.scroll_offset.x % col_w != 0  # the scroll stops inside a column
        # every scroll offset inside a column, as the wheel or the scrollbar leaves it
        for x in [table.scroll_offset.x, *range(3 * col_w, 4 * col_w)]:
            table.scroll_to(x, 0, animate=False, force=True)
            await settled(pilot)
            first = -(-table.scroll_offset.x // col_w)
            header, body = first_cells()
            assert header == str(first).rjust(col_w), (x, header)
            assert body == table.row_cells(0, first, first + 1)[0][0].rjust(col_w), (x, body)
            assert table.cell_at(header_w, 1) == (0, first)  # a click hits the cell drawn
        # the cursor's column is whole on screen at the right edge
        table.set_cursor(0, 39)
        await settled(pilot)
        line = table.render_line(1).text
        assert line.rstrip().endswith(table.row_cells(0, 39, 40)[0][0])
