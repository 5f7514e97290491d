"""TensorView: slices, table, heatmap, compare, go-to, save, copy, and a 10⁸-element memmap.

A tiny App mounts only the widget; cells are read back from the surfaces' `render_line`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Input, Static

import tuidebug.tui.tensor.jobs as tensor_jobs_module
from tests.tui.support import (
    settled,
    tensor_shown,
    wait_for_notice,
    wait_for_screen,
    wait_until,
)
from tuidebug.core.tensor import BFLOAT16, Histogram, TensorStatistics, parse_slice
from tuidebug.tui.kit.colormap import (
    CODE_NAN,
    CODE_NEG_INF,
    CODE_POS_INF,
    ColorScale,
    half_block_cell,
    rarest_first,
    scale_for,
    special_counts,
)
from tuidebug.tui.kit.dialogs import PromptScreen
from tuidebug.tui.tensor.canvas import TensorCanvas
from tuidebug.tui.tensor.files import file_stem, save_file_name, slice_tag
from tuidebug.tui.tensor.format import (
    SliceGeometry,
    block_extreme,
    choose_format,
    parse_index_tuple,
    sparkline,
)
from tuidebug.tui.tensor.view import TensorView

SIZE = (100, 32)


class ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TensorView()


def lines(canvas: TensorCanvas) -> list[str]:
    return [canvas.render_line(y).text for y in range(canvas.view_size.height)]


def numbers(line: str) -> list[float]:
    """The numeric cells of a rendered table row (after the `│`)."""
    return [float(cell) for cell in line.split("│", 1)[1].split()]


def grid(rows: int = 50, cols: int = 12) -> np.ndarray:
    return (np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) - 100) / 4


def specials() -> np.ndarray:
    array = np.linspace(-1, 1, 6 * 8, dtype=np.float32).reshape(6, 8)
    array[0, 1] = np.nan
    array[2, 3] = np.inf
    array[4, 5] = -np.inf
    return array


# ------------------------------------------------------------------------ table
async def test_small_tensor_cells_and_default_slice() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        array = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) * 1.5
        view.show("Default/fc1/MatMul-op1:0", array)
        await tensor_shown(pilot, view)
        assert view.slice_text == "[0, :, :]"
        rendered = lines(view.table)
        assert rendered[0].split() == ["0", "1", "2", "3"]
        assert rendered[1].startswith("0 │")
        assert numbers(rendered[1]) == [0.0, 1.5, 3.0, 4.5]
        assert numbers(rendered[3]) == [12.0, 13.5, 15.0, 16.5]
        assert "4.5000" in rendered[1]  # 4 decimals, fixed width
        assert view.status_text.startswith("[0, 0, 0] = 0.0")
        stats = str(view.query_one("#tv-stats").content)
        assert "float32<2,3,4>" in stats and "hist" in stats


async def test_nan_and_inf_cells_are_styled() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        view.show("t", specials())
        await tensor_shown(pilot, view)
        table = view.table
        cells = table.row_cells(0, 0, 8)
        assert cells[1][0].strip() == "nan"
        nan_style = table.style_of("tensor-table--nan")
        strip = table.render_line(1)
        assert any(seg.text.strip() == "nan" and seg.style == nan_style for seg in strip)
        assert table.row_cells(2, 3, 4)[0][0].strip() == "inf"
        assert table.row_cells(4, 5, 6)[0][0].strip() == "-inf"


async def test_bad_slice_shows_inline_error_and_keeps_last_good_slice() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        array = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
        view.show("t", array)
        await tensor_shown(pilot, view)
        assert view.apply_slice("[1, :, 1:3]")
        await wait_until(
            pilot, lambda: numbers(lines(view.table)[1]) == [13.0, 14.0], what="the new slice"
        )
        good = lines(view.table)

        await pilot.press("e")  # focus the slice box and type a broken slice
        box = view.query_one("#tv-slice")
        assert box.has_focus
        box.value = "[0, :"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_until(pilot, lambda: view.error_text, what="the slice's error")
        assert "must start with '[' and end with ']'" in view.error_text
        assert view.slice_text == "[1, :, 1:3]"
        assert lines(view.table)[:4] == good[:4]

        view.apply_slice("[0, :, :, :]")
        assert "4 entries but the tensor has 3 dimensions" in view.error_text
        view.apply_slice("[0, 0:1:0, :]")
        assert "cannot be zero" in view.error_text
        assert view.slice_text == "[1, :, 1:3]"

        assert view.apply_slice("[0, -1, ::2]")  # one range → a single column
        await wait_until(
            pilot, lambda: numbers(lines(view.table)[1]) == [8.0], what="the one-column slice"
        )
        assert view.error_text == ""
        rendered = lines(view.table)
        assert numbers(rendered[1]) == [8.0] and numbers(rendered[2]) == [10.0]


async def test_index_out_of_range_message() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        view.show("t", np.zeros((2, 3, 4), np.float32))
        await tensor_shown(pilot, view)
        assert not view.apply_slice("[5, :, :]")
        assert view.error_text == "Index 5 is out of range for dimension 0 of size 2."
        assert view.slice_text == "[0, :, :]"


async def test_scalar_and_bool_and_int_tensors() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        view.show("scalar", np.array(3.25, dtype=np.float64))
        await tensor_shown(pilot, view)
        assert view.slice_text == "[]"
        assert numbers(lines(view.table)[1]) == [3.25]
        view.show("mask", np.array([[True, False]]))
        await tensor_shown(pilot, view)
        assert lines(view.table)[1].split("│")[1].split() == ["True", "False"]
        view.show("ids", np.array([[-70000, 5]], dtype=np.int64))
        await tensor_shown(pilot, view)
        assert lines(view.table)[1].split("│")[1].split() == ["-70000", "5"]


async def test_bfloat16_and_empty_selection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        array = np.array([[1.5, -2.25], [np.nan, 4.0]], dtype=np.float32).astype(BFLOAT16)
        view.show("Default/fc1/bf:0", array, short_name="fc1")
        await tensor_shown(pilot, view)
        assert lines(view.table)[1].split("│")[1].split() == ["1.5000", "-2.2500"]
        assert view.status_text.startswith("[0, 0] = 1.5")
        assert "bfloat16<2,2>" in str(view.query_one("#tv-stats").content)
        view.table.focus()
        await pilot.press("S")
        await wait_for_screen(pilot, PromptScreen)
        await pilot.press("enter")  # the offered name
        await wait_until(pilot, lambda: list(tmp_path.glob("*.npy")), what="the saved file")
        await settled(pilot)
        (saved,) = tmp_path.glob("*.npy")
        loaded = np.load(saved)
        assert loaded.dtype == np.float32  # no .npy code for bfloat16: stored as float32
        np.testing.assert_array_equal(loaded, array.astype(np.float32))

        view.show("empty", np.zeros((0, 5), np.float32))

        await tensor_shown(pilot, view)
        assert view.status_text == "The selection [:, :] is empty."
        await pilot.press("m", "i", "y")
        await settled(pilot)  # nothing to show, nothing to fail


async def test_empty_loading_and_error_states() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        message = view.query_one("#tv-message")

        async def says(text: str) -> None:
            await wait_until(
                pilot,
                lambda: str(message.content) == text,  # type: ignore[attr-defined]
                what=f"the message {text!r}",
            )

        view.show("conv1.weight:0", None, note="no value at this step")
        await says("no value at this step")
        # no table shown (none built yet: the empty state mounts the message alone)
        assert not any(table.display for table in view.query("#tv-table"))
        view.show_loading("fc1:0")
        await says("Loading fc1:0…")
        view.show_error("The tensor file is truncated.")
        await says("The tensor file is truncated.")
        assert message.has_class("-error")
        view.show("names", np.array(["a", "b"]))
        await says("Tensors of type str32 cannot be shown.")
        await pilot.press("m", "d", "i", "s", "y")  # keys without a tensor do nothing
        await settled(pilot)


# ------------------------------------------------------------------------ heatmap
async def test_heatmap_draws_nan_and_inf_glyphs_and_legend() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        view.show("t", specials())
        await tensor_shown(pilot, view)
        view.table.focus()
        await pilot.press("m")
        heatmap = view.heatmap
        await wait_until(pilot, lambda: heatmap.display, what="the heatmap")
        await settled(pilot)
        assert not view.table.display
        zoom = heatmap.zoom
        assert zoom.factor == 1 and zoom.magnify > 1  # a 6×8 slice is magnified to fill
        rendered = lines(heatmap)
        for row, col, glyph in ((0, 1, "?"), (2, 3, "+"), (4, 5, "-")):
            line = zoom.cell_of(row) // 2
            block = rendered[line][zoom.cell_of(col) : zoom.cell_of(col + 1)]
            assert set(block) == {glyph}, (row, col, block)
        assert rendered[0][0] == "X"  # the cursor
        assert rendered[0][1] == "▀"
        top, _bottom = heatmap.line_codes(0, 0, zoom.cell_of(8))
        assert top[zoom.cell_of(1)] == CODE_NAN
        legend = str(view.query_one("#tv-legend").content)
        assert "NaN" in legend and "+Inf" in legend and "−Inf" in legend
        assert "centred on 0" in legend and f"zoom ×{zoom.magnify} (exact)" in legend
        await pilot.press("plus")
        assert heatmap.zoom.magnify > zoom.magnify
        await pilot.press("minus")
        assert heatmap.zoom == zoom
        await pilot.press("m")
        assert view.table.display


async def test_heatmap_downsamples_large_slice_and_zooms() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        array = np.zeros((1000, 1000), np.float32)
        array[501, 777] = np.nan  # missed by striding, kept by block extreme
        view.show("t", array)
        await tensor_shown(pilot, view)
        view.table.focus()
        await pilot.press("m")
        heatmap = view.heatmap
        await wait_until(pilot, lambda: heatmap.display, what="the heatmap")
        await settled(pilot)
        width, height = heatmap.view_size
        assert heatmap.factor > 1
        assert heatmap.virtual_size.width <= width and heatmap.virtual_size.height <= height
        legend = str(view.query_one("#tv-legend").content)
        assert f"zoom 1:{heatmap.factor} (block extreme)" in legend
        assert any("?" in line for line in lines(heatmap))
        factor = heatmap.factor
        await pilot.press("plus")
        await wait_until(pilot, lambda: heatmap.factor == factor // 2, what="the zoom in")
        await settled(pilot)
        assert f"zoom 1:{heatmap.factor}" in str(view.query_one("#tv-legend").content)
        await pilot.press("minus")
        assert heatmap.factor == factor


# ------------------------------------------------------------------------ compare
async def test_compare_mode_shows_diff_with_tolerance() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        previous = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
        current = previous + np.array([[0.5, 1.0, -2.0, 10.0]], np.float32)
        view.show("w", current, previous)
        await tensor_shown(pilot, view)
        view.table.focus()
        await pilot.press("d")
        await wait_until(pilot, lambda: view.mode == "diff", what="the diff mode")
        await settled(pilot)
        assert numbers(lines(view.table)[1]) == [0.5, 1.0, -2.0, 10.0]
        assert "previous 1.0  current 1.5  diff 0.5" in view.status_text
        # boundary = 0.5 × max(|−2|, |10|) = 5: every |diff| ≤ 5 shows as 0
        assert view.apply_tolerance("0.5")
        await settled(pilot)
        assert numbers(lines(view.table)[1]) == [0.0, 0.0, 0.0, 10.0]
        assert not view.apply_tolerance("1.5")
        assert view.error_text == "The tolerance must be a number between 0 and 1, not '1.5'."
        await pilot.press("d")
        await wait_until(pilot, lambda: view.mode == "previous", what="the previous mode")
        await settled(pilot)
        assert numbers(lines(view.table)[1]) == [1.0, 2.0, 3.0, 4.0]
        assert "previous  float32<1,4> ∈[1, 4]" in str(view.query_one("#tv-stats").content)
        await pilot.press("d")
        assert view.mode == "current"


async def test_the_title_names_what_a_compare_mode_shows_against() -> None:
    """The slice bar's `[diff]` alone left the title saying only the tensor (issue 28)."""
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        view.show("w", np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32))
        await tensor_shown(pilot, view)
        title = view.query_one("#tv-title", Static)
        assert "diff vs" not in str(title.content)
        view.set_mode("diff")
        await wait_until(
            pilot,
            lambda: "w — diff vs the previous step" in str(title.content),
            what="the reference in the title",
        )
        view.set_mode("previous")
        await wait_until(
            pilot,
            lambda: "w — showing the previous step" in str(title.content),
            what="the previous value named in the title",
        )


async def test_the_tolerance_is_kept_for_the_same_tensor_and_reset_for_another() -> None:
    """A tolerance set for one tensor's scale silently hid the next tensor's differences
    (issue 28); stepping the same tensor keeps it, another tensor starts at 0 and says so."""
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        ones, zeros = np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)
        view.show("Default/fc1/MatMul-op1:0 @ step 3", ones, zeros, short_name="MatMul-op1")
        await tensor_shown(pilot, view)
        assert view.apply_tolerance("0.5")
        view.show("Default/fc1/MatMul-op1:0 @ step 4", ones, zeros, short_name="MatMul-op1")
        await tensor_shown(pilot, view)
        assert view.tolerance == 0.5
        view.show("Default/fc2/MatMul-op2:0 @ step 4", ones, zeros, short_name="MatMul-op2")
        await tensor_shown(pilot, view)
        assert view.tolerance == 0.0
        assert view.query_one("#tv-tolerance", Input).value == "0"
        await wait_for_notice(pilot, "The compare tolerance is back to 0 for this tensor.")


async def test_compare_unavailable_without_previous() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        view.show("w", np.ones((2, 2), np.float32))
        await tensor_shown(pilot, view)
        view.table.focus()
        await pilot.press("d")
        assert view.mode == "current"
        assert view.error_text == "There is no previous step to compare with."
        view.show("w", np.ones((2, 2), np.float32), np.ones((3, 2), np.float32))
        await tensor_shown(pilot, view)
        view.set_mode("diff")
        assert "cannot be compared" in view.error_text


# ------------------------------------------------------------------- go-to / keys
async def test_goto_element_scrolls_and_highlights() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        array = np.arange(3 * 200 * 60, dtype=np.float32).reshape(3, 200, 60)
        view.show("t", array)
        await tensor_shown(pilot, view)
        view.table.focus()
        await pilot.press("i")
        goto = view.query_one("#tv-goto")
        assert goto.display and goto.has_focus
        await pilot.press(*"150, 45", "enter")
        table = view.table
        await wait_until(
            pilot, lambda: (table.cursor_row, table.cursor_col) == (150, 45), what="the go-to"
        )
        assert not goto.display and table.has_focus
        assert view.status_text.startswith(f"[0, 150, 45] = {array[0, 150, 45]}")
        rendered = lines(table)
        row_line = next(line for line in rendered if line.startswith("150 │"))
        assert f"{array[0, 150, 45]:.1f}" in row_line  # the row is on screen
        cursor_style = table.style_of("tensor-table--cursor")
        strip = table.render_line(rendered.index(row_line))
        assert [s.text.strip() for s in strip if s.style == cursor_style] == [
            f"{array[0, 150, 45]:.4f}"
        ]
        # a full tensor index inside the slice, negatives from the end
        assert view.goto("0, -1, -1")
        assert (table.cursor_row, table.cursor_col) == (199, 59)
        assert not view.goto("2, 3, 4")
        assert view.error_text == "Element [2, 3, 4] is not in the slice [0, :, :]."
        assert not view.goto("200, 0")
        assert view.error_text == "The row 200 is out of range; the slice has 200 rows."
        assert not view.goto("one, two")
        assert "is not an index" in view.error_text
        await pilot.press("i", "escape")
        assert not goto.display


async def test_cursor_keys_and_mouse() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        view.show("t", grid(300, 40))
        await tensor_shown(pilot, view)
        assert view.state == "tensor" and view.title == "t"
        table = view.table
        view.focus()  # the App's pane key focuses the view: it hands focus to the table
        await wait_until(pilot, lambda: table.has_focus, what="the focus on the table")
        await pilot.press("down", "j", "right", "right", "k")
        assert (table.cursor_row, table.cursor_col) == (1, 2)
        await pilot.press("end")
        assert table.cursor_row == 299 and table.scroll_offset.y > 0
        await pilot.press("home", "pagedown")
        assert table.cursor_row == table.view_size.height - 2
        await pilot.press("shift+end")
        assert table.cursor_col == 39
        await pilot.press("shift+home")
        # click on the cell of row 3, column 1 (line 4; x after the header and one column)
        x = table.row_header_width + table.column_width + 2
        await pilot.click(table, offset=(x, 4 - 0))
        await wait_until(
            pilot,
            lambda: (table.cursor_row, table.cursor_col) == (table.scroll_offset.y + 3, 1),
            what="the cursor on the clicked cell",
        )


async def test_copy_value_uses_clipboard() -> None:
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        array = np.array([[0.1, 1 / 3]], dtype=np.float32)
        view.show("t", array)
        await tensor_shown(pilot, view)
        view.table.focus()
        await pilot.press("right", "y")
        assert app.clipboard == str(np.float32(1 / 3))


# ------------------------------------------------------------------------- save
async def test_save_slice_and_whole_tensor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = ViewApp()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TensorView)
        array = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
        stem = file_stem("Default/network-WithLossCell/fc1-Dense/MatMul-op1", 0, 3)
        view.show("MatMul-op1:0", array, file_stem=stem)
        await tensor_shown(pilot, view)
        view.apply_slice("[2, 1:4, ::2]")
        view.table.focus()
        await pilot.press("s")
        prompt = await wait_for_screen(pilot, PromptScreen)
        box = prompt.query_one("#prompt-input", Input)
        expected = (
            "Default--network-WithLossCell--fc1-Dense--MatMul-op1_out0_step3_2,1to4,allby2.npy"
        )
        assert box.value == expected  # prefilled with a name that says what it holds
        await pilot.press("enter")
        notice = await wait_for_notice(pilot, "Saved")
        assert notice == f"Saved slice [2, 1:4, ::2] to {tmp_path / expected}"
        np.testing.assert_array_equal(np.load(tmp_path / expected), array[2, 1:4, ::2])

        await pilot.press("S")  # the whole tensor, to a path the user types
        prompt = await wait_for_screen(pilot, PromptScreen)
        box = prompt.query_one("#prompt-input", Input)
        assert box.value.endswith("_out0_step3.npy")
        (tmp_path / "out").mkdir()
        box.value = "out/whole.npy"
        await pilot.press("enter")
        await wait_for_notice(pilot, f"Saved whole tensor to {tmp_path / 'out' / 'whole.npy'}")
        np.testing.assert_array_equal(np.load(tmp_path / "out" / "whole.npy"), array)

        await pilot.press("S")  # a folder that does not exist: one sentence, the prompt stays
        prompt = await wait_for_screen(pilot, PromptScreen)
        box = prompt.query_one("#prompt-input", Input)
        box.value = "missing/x.npy"
        await pilot.press("enter")
        error = prompt.query_one("#prompt-error", Static)
        await wait_until(pilot, lambda: str(error.content), what="the path's error")
        assert str(error.content) == "There is no folder missing."
        await pilot.press("escape")
        await settled(pilot)
        assert not (tmp_path / "missing").exists()


# ---------------------------------------------------------------- 10⁸ elements
def _mapped_bytes(path: Path) -> int:
    """Resident bytes of every mapping of `path` in this process (/proc/self/smaps)."""
    total = 0
    current = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and "-" in fields[0] and not fields[0].endswith(":"):
                current = line.rstrip().endswith(str(path))
            elif current and fields[0] == "Rss:":
                total += int(fields[1]) * 1024
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux /proc")
async def test_huge_memmap_opens_and_scrolls_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.npy"
    writer = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(10_000, 10_000))
    writer[9_999, 9_998] = 2.5
    writer[9_999, 9_999] = -np.inf
    writer[0, 1] = np.nan
    writer.flush()
    del writer
    array = np.load(path, mmap_mode="r")
    assert array.size == 10**8

    # The whole-tensor statistics worker legitimately reads everything; stub it so the
    # measurement shows what the viewer itself touches.
    def fake_statistics(a: np.ndarray, **_: object) -> TensorStatistics:
        return TensorStatistics(shape=tuple(a.shape), dtype="float32", count=int(a.size))

    def fake_histogram(a: np.ndarray, bins: int, **_: object) -> Histogram:
        return Histogram(np.zeros(0, np.int64), np.zeros(0))

    monkeypatch.setattr(tensor_jobs_module, "tensor_statistics", fake_statistics)
    monkeypatch.setattr(tensor_jobs_module, "histogram", fake_histogram)

    app = ViewApp()
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.query_one(TensorView)
        view.show("Default/big:0", array)
        await tensor_shown(pilot, view)
        table = view.table
        assert table.virtual_size.height == 10_001
        assert "nan" in lines(table)[1]
        table.focus()
        await pilot.press("pagedown", "pagedown", "down", "end", "shift+end")
        await wait_until(
            pilot, lambda: (table.cursor_row, table.cursor_col) == (9999, 9999), what="the end"
        )
        await settled(pilot)
        rendered = lines(table)
        assert rendered[-1].startswith("9999 │")
        assert rendered[-1].split()[-2:] == ["2.5000", "-inf"]
        assert view.status_text.startswith("[9999, 9999] = -inf")
        await pilot.press("m")
        await wait_until(pilot, lambda: view.heatmap.display, what="the heatmap")
        await settled(pilot)
        assert "(stride)" in str(view.query_one("#tv-legend").content)
        lines(view.heatmap)
        await pilot.press("plus", "plus", "up")
        await settled(pilot)
        lines(view.heatmap)
        touched = _mapped_bytes(path)
        assert touched < array.nbytes // 5, f"read {touched / 2**20:.0f} MiB of the tensor"


# ------------------------------------------------------------------- snapshots
def test_snapshot_table_and_heatmap(snap_compare) -> None:  # type: ignore[no-untyped-def]
    array = np.round(np.sin(np.arange(12 * 24).reshape(12, 24) / 7.0) * 3, 3).astype(np.float32)
    array[1, 2] = np.nan
    array[5, 7] = np.inf
    array[8, 20] = -np.inf

    async def open_tensor(pilot: Pilot[None]) -> None:
        view = pilot.app.query_one(TensorView)
        view.show("Default/conv1-Conv2d/Conv2D-op7:0", array[None])
        await tensor_shown(pilot, view)
        view.table.focus()
        await pilot.press("down", "right")

    assert snap_compare(ViewApp(), terminal_size=(100, 30), run_before=open_tensor)

    async def open_heatmap(pilot: Pilot[None]) -> None:
        await open_tensor(pilot)
        await pilot.press("m")
        view = pilot.app.query_one(TensorView)
        await wait_until(pilot, lambda: view.heatmap.display, what="the heatmap")
        await settled(pilot)

    assert snap_compare(ViewApp(), terminal_size=(100, 30), run_before=open_heatmap)


# -------------------------------------------------------- pure helpers (no UI)
def test_block_extreme_keeps_anomalies() -> None:
    view = np.array([[1, -5, np.nan, 0], [2, np.inf, 3, -np.inf], [0, 0, 0, 9]])
    image = block_extreme(view, 2)
    assert image is not None
    # a block with several non-finite kinds keeps the rarest (default: ±Inf before NaN)
    assert np.isposinf(image[0, 0]) and np.isneginf(image[0, 1])
    counted = block_extreme(view, 2, special_order=rarest_first(nan=1, pos_inf=5, neg_inf=9))
    assert counted is not None and np.isnan(counted[0, 1])
    assert image[1].tolist() == [0.0, 9.0]
    assert block_extreme(np.array([[1.0, -7.0], [3.0, 2.0]]), 2).tolist() == [[-7.0]]  # type: ignore[union-attr]
    assert block_extreme(view, 2, cancelled=lambda: True) is None


def test_half_block_cell_shows_the_rarest_non_finite_kind() -> None:
    nan_glyph, nan_style = half_block_cell("diverging", CODE_NAN, CODE_NAN)
    assert nan_glyph == "?"
    # NaN above +Inf (the default zoom's cell pair): the Inf is not hidden behind the NaN
    assert half_block_cell("diverging", CODE_NAN, CODE_POS_INF)[0] == "+"
    assert half_block_cell("diverging", CODE_NEG_INF, CODE_NAN)[0] == "-"
    # with counts, the rarer kind wins whichever half it is in
    order = rarest_first(nan=1, pos_inf=40, neg_inf=3)
    assert order[0] == CODE_NAN
    assert half_block_cell("diverging", CODE_POS_INF, CODE_NAN, order) == (nan_glyph, nan_style)
    assert half_block_cell("diverging", CODE_POS_INF, CODE_NEG_INF, order)[0] == "-"
    # one special value and a finite one: the special value takes the cell
    assert half_block_cell("diverging", 12, CODE_POS_INF, order)[0] == "+"
    # counted in a small slice (the view does this for slices it reads whole)
    values = np.array([[np.nan, np.nan, np.inf], [1.0, -np.inf, -np.inf]])
    assert special_counts(values) == (2, 1, 2)
    assert rarest_first(*special_counts(values))[0] == CODE_POS_INF
    assert special_counts(np.arange(4)) == (0, 0, 0)


def test_colour_scale_codes() -> None:
    scale = scale_for(-2.0, 1.0)
    assert scale.diverging and scale.extent == (-2.0, 2.0)
    codes = scale.codes(np.array([-2.0, 0.0, 2.0, np.nan, np.inf, -np.inf]))
    assert codes.tolist() == [0, 128, 255, CODE_NAN, CODE_POS_INF, CODE_NEG_INF]
    assert not scale_for(0.0, 5.0).diverging
    assert ColorScale(3.0, 3.0, False).codes(np.array([3.0])).tolist() == [128]


def test_formats_and_names() -> None:
    fmt = choose_format(np.dtype(np.float32), -3.2, 100.5)
    assert [c for c, _ in fmt.cells(np.array([1.5, 1e9]))] == ["   1.5000", "1.000e+09"]
    assert choose_format(np.dtype(np.float32), 0.0, 2e-5).spec == ".4e"
    assert choose_format(np.dtype(np.int64), -70000, 5).width == 6
    assert sparkline([0, 1, 8]) == " ▁█"
    assert parse_index_tuple("(3, -1)") == (3, -1) and parse_index_tuple("x") is None


def test_saved_file_names_say_what_they_hold() -> None:
    stem = file_stem("Default/conv1-Conv2d/Conv2D-op1", 0, 2)
    assert stem == "Default--conv1-Conv2d--Conv2D-op1_out0_step2"
    assert file_stem("fc3.bias", 1, 3, rank=1) == "fc3.bias_out1_step3_rank1"
    # nothing that a file system or a shell would read: no / : [ ] * space
    assert file_stem("a b/../c:*[x]", 0) == "a_b--c_x_out0"
    assert file_stem("Default/" + "x" * 300, 0).startswith("x" * 150 + "_out0")
    assert slice_tag(parse_slice("[0, :, 1:10:2]", (2, 3, 20))) == "0,all,1to10by2"
    assert slice_tag(parse_slice("[-1, ::-1]", (2, 3))) == "-1,allby-1"
    assert slice_tag(()) == "scalar"
    assert save_file_name(stem, None) == stem + ".npy"
    assert save_file_name(stem, (0, slice(None)), "diff") == stem + "_0,all_diff.npy"


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple),
    data=st.data(),
)
def test_geometry_maps_cells_to_tensor_indices(shape: tuple[int, ...], data: st.DataObject) -> None:
    entries = []
    ranges = 0
    for size in shape:
        if ranges < 2 and data.draw(st.booleans()):
            ranges += 1
            start = data.draw(st.integers(-size, size))
            step = data.draw(st.sampled_from([1, 2, -1, -2]))
            entries.append(f"{start}::{step}")
        else:
            entries.append(str(data.draw(st.integers(-size, size - 1))))
    index = parse_slice("[" + ", ".join(entries) + "]", shape)
    array = np.arange(int(np.prod(shape))).reshape(shape)
    geometry = SliceGeometry.of(shape, index)
    view = geometry.view(array)
    assert view.shape == (geometry.rows, geometry.cols)
    for row in range(geometry.rows):
        for col in range(geometry.cols):
            full = geometry.tensor_index(row, col)
            assert array[full] == view[row, col]
            assert geometry.locate(full) == (row, col)
