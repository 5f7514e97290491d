"""Issue 15: an expert's session in tmux at 80×24 and 160×48 — maximize (z and the
palette), the help at 80 columns, the hits toast counting what the hit list shows,
every part of node details reached by keys, the screenshot's folder, the watchpoint
list's Home/End and long rows, regex name filters, and the terminal's colours/glyphs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.color import Color, ColorSystem
from textual.drivers.headless_driver import HeadlessDriver
from textual.widgets import Input, OptionList, Select, Static

from tests.tui.support import (
    CONV,
    RELU,
    FakeSession,
    make_app,
    run_palette,
    screen_text,
    settled,
    wait_for_screen,
    wait_until,
)
from tuidebug.core.condition_catalogue import ParamResult, get_condition
from tuidebug.core.session import HitsArrived
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.help_screen import HelpScreen
from tuidebug.tui.kit import colormap
from tuidebug.tui.kit.ascii_glyphs import ASCII_FORMS, to_ascii
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.kit.name_filter import name_filter
from tuidebug.tui.kit.terminal_caps import TerminalCaps, color_depth, takes_unicode
from tuidebug.tui.panes.hit_list import HitList, hits_announcement
from tuidebug.tui.panes.node_details import NodeDetails
from tuidebug.tui.panes.scope_tree import GraphTree, ScopeTree, walk
from tuidebug.tui.watchpoints.list_pane import WatchpointList

SMALL = (80, 24)


async def start(pilot: Any, *, recommended: bool = False) -> None:
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("y" if recommended else "n")
    await wait_until(
        pilot, lambda: not isinstance(pilot.app.screen, ConfirmScreen), what="the offer closed"
    )
    await settled(pilot)


def hit(error: int = 0, node: str = CONV, wp: int = 1) -> WatchpointHit:
    params = () if error else (ParamResult("max_gt", 1.0, False, True, 3.0),)
    return WatchpointHit(wp, get_condition("TL"), TensorRef(node, 0, 0, 0, "g"), error, params)


# ------------------------------------------------------------------ the hits toast
def test_hits_toast_counts_real_hits_apart_from_check_errors() -> None:
    assert hits_announcement([], 0) is None
    text, real = hits_announcement([hit(), hit(4), hit(4)], 3) or ("", False)
    assert real and text == "1 watchpoint hit and 2 check errors — press 2 to see them."
    # a step whose every hit is "no previous value" is not announced as hits
    text, real = hits_announcement([hit(4)] * 8, 8) or ("", True)
    assert not real and text.startswith("No watchpoint hit; 8 checks had no previous step")
    text, _ = hits_announcement([hit(), hit()], 1) or ("", False)
    assert text.endswith("The hit list's filters show 1 of 2.")


async def test_the_hits_toast_says_what_the_hit_list_lists() -> None:
    app, session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot)
        # a weight-change watchpoint's first step: every hit is error 4 (no previous value)
        skipped = (hit(4, node=CONV), hit(4, node=RELU))
        session._hits = list(skipped)
        session.emit(HitsArrived(skipped, session.metadata.step))
        await wait_until(pilot, lambda: app.query_one(HitList).hit_count, what="hits listed")
        await settled(pilot)
        toasts = [n.message for n in app._notifications]
        assert not any("watchpoint hits —" in t for t in toasts), toasts
        status = str(app.query_one("#hit-status", Static).render())
        assert "check errors" in status


# ----------------------------------------------------------------------- maximize
async def test_z_and_the_palette_maximize_the_focused_pane_at_80x24() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot)
        await pilot.press("z")
        left = app.query_one("#left")
        assert app.screen.maximized is left
        await settled(pilot)
        assert left.region.width == 80 and left.region.height >= 20
        await pilot.press("6")  # a pane key shows that pane whole instead
        assert app.screen.maximized is app.query_one(WatchpointList)
        assert app.focused is app.query_one(WatchpointList)
        await pilot.press("escape")
        assert app.screen.maximized is None
        await pilot.press("4")
        await run_palette(pilot, "Maximize the focused")
        await wait_until(
            pilot,
            lambda: app.screen.maximized is app.query_one(NodeDetails),
            what="node details maximized from the palette",
        )
        await run_palette(pilot, "Restore the pane")
        await wait_until(pilot, lambda: app.screen.maximized is None, what="restored")


async def test_help_fits_80_columns_and_scrolls() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot)
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, HelpScreen)
        await settled(pilot)
        box = help_screen.query_one("HelpScreen > Vertical")
        assert box.region.right <= 80 and box.region.x >= 0
        rows = " ".join(key for key, _does, _why in app.help_keys())
        assert "z" in rows.split(", ") or " z " in f" {rows} "


async def test_every_pane_is_reachable_and_readable_at_80x24() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot)
        for number, pane in ((1, "#left"), (4, "#details"), (6, "#watchpoints")):
            await pilot.press(str(number))
            await settled(pilot)
            widget = app.query_one(pane)
            assert app._pane_of(app.focused) is widget
            assert widget.region.height >= 8, (pane, widget.region)  # the focused one grows


# -------------------------------------------------------------------- node details
async def test_node_details_attributes_and_stack_are_reached_by_keys() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot)
        app.go_to_node("kernel_graph_0", CONV)
        await settled(pilot)
        await pilot.press("4")
        io_list = app.query_one("#io-list", OptionList)
        assert app.focused is io_list
        for _ in range(io_list.option_count):
            if app.focused is not io_list:
                break
            await pilot.press("down")
        assert app.focused is app.query_one("#details-attrs")
        for _ in range(10):
            await pilot.press("down")
        assert app.focused is app.query_one("#details-stack")
        details = app.query_one(NodeDetails)
        stack = app.query_one("#details-stack")
        assert stack.region.bottom <= details.scrollable_content_region.bottom
        for _ in range(20):
            await pilot.press("up")
        assert app.focused is io_list


# ---------------------------------------------------------------------- screenshot
async def test_screenshot_goes_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "no-such-home"))  # no ~/Downloads either
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot)
        path = app.save_screenshot_here()
        assert path is not None and Path(path).parent == tmp_path and Path(path).is_file()
        await settled(pilot)
        assert any(str(tmp_path) in n.message for n in app._notifications)


# -------------------------------------------------------------- watchpoint list
async def test_watchpoint_list_home_end_and_long_parameters() -> None:
    app, session = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot)
        long_range = {
            "range_start_inclusive": -123456.5,
            "range_end_inclusive": 123456.5,
            "range_percentage_lt": 12.5,
        }
        for _ in range(5):
            session.create_watchpoint("TR", long_range)
        table = app.query_one(WatchpointList)
        await wait_until(pilot, lambda: table.row_count == 5, what="5 watchpoints")
        await pilot.press("6", "end")
        assert table.cursor_row == 4
        await pilot.press("home")
        assert table.cursor_row == 0
        keys = [c.key.value for c in table.columns.values()]
        widths = dict(zip(keys, table._widths, strict=True))
        assert widths["params"] >= len(
            "range_start_inclusive=-1.235e+05, range_end_inclusive=1.235e+05"
        )


# ------------------------------------------------------------------ regex filters
def test_name_filter_reads_regex_and_plain_text() -> None:
    assert name_filter("conv").matches("Default/Conv2D-op0")
    assert name_filter(r"^Default/.*op(0|1)$").matches("Default/x/Conv2D-op1")
    assert not name_filter(r"^Gradients").matches("Default/x")
    bad = name_filter("op(1")
    assert bad.problem.startswith("Not a regular expression") and bad.problem.count(".") >= 1
    assert bad.matches("Add-op(1)") and not bad.matches("Add-op1")
    assert not name_filter("  ") and name_filter("").matches("anything")


async def test_tree_filter_takes_a_regex_and_a_bad_one_is_a_sentence() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot)
        tree = app.query_one(GraphTree)
        await pilot.press("slash", *"relu-op1$")
        await wait_until(
            pilot,
            lambda: (
                [n.data.node for n in walk(tree.root) if n.data and n.data.node]
                and all(
                    n.data.node.endswith("ReLU-op1")
                    for n in walk(tree.root)
                    if n.data and n.data.node
                )
            ),
            what="only nodes ending in ReLU-op1",
        )
        box = app.query_one("#name-filter", Input)
        box.value = "op(1"
        status = app.query_one("#filter-status", Static)
        await wait_until(
            pilot, lambda: "Not a regular expression" in str(status.render()), what="the sentence"
        )
        await pilot.press("escape")
        assert not app.query_one(ScopeTree)._name_match


async def test_node_type_filter_opens_with_t() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot)
        await pilot.press("1", "t")
        select = app.query_one("#type-filter", Select)
        assert app.focused is not None and select in (app.focused, *app.focused.ancestors)
        assert select.expanded


async def test_hit_list_filter_takes_a_regex() -> None:
    app, session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot, recommended=True)
        await pilot.press("n")
        hits = app.query_one(HitList)
        await wait_until(pilot, lambda: hits.hit_count, what="hits")
        total = hits.hit_count
        await pilot.press("2", "slash")
        assert app.focused is app.query_one("#hit-filter-text", Input)
        await pilot.press(*"weight$")
        await wait_until(pilot, lambda: hits.shown_count < total, what="the filter applied")
        assert all(h.tensor.node.endswith("weight") for h in hits._filtered())
        await pilot.press("escape")
        assert hits.shown_count == total
        del session


async def test_hit_list_filter_error_with_brackets_is_a_sentence() -> None:
    app, _session = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await start(pilot, recommended=True)
        await pilot.press("n")
        hits = app.query_one(HitList)
        await wait_until(pilot, lambda: hits.hit_count, what="hits")
        await pilot.press("2", "slash")
        # re's error quotes the group name: "[/]" would close a markup tag that never opened
        app.query_one("#hit-filter-text", Input).value = "(?P<[/]>x)"
        status = hits.query_one("#hit-status", Static)
        sentence = (
            "Not a regular expression (bad character in group name '[/]' at position 4): "
            "matched as plain text."
        )
        await wait_until(pilot, lambda: sentence in str(status.render()), what="the sentence")
        assert str(status.render()).startswith(sentence + "\n")


# ----------------------------------------------------------- colours and glyphs
@pytest.mark.parametrize(
    ("environ", "depth"),
    [
        ({"TERM": "xterm"}, "256"),
        ({"TERM": "xterm-256color"}, "256"),
        ({"TERM": "xterm-256color", "COLORTERM": "truecolor"}, "truecolor"),
        ({"TERM": "linux"}, "16"),
        ({"TERM": "rxvt-16color"}, "16"),
        ({"TERM": "xterm", "TEXTUAL_COLOR_SYSTEM": "standard"}, "16"),
        ({}, "16"),
    ],
)
def test_color_depth(environ: dict[str, str], depth: str) -> None:
    assert color_depth(environ) == depth


@pytest.mark.parametrize(
    ("environ", "unicode"),
    [
        ({"LANG": "C"}, False),
        ({"LANG": "C", "LC_CTYPE": "C.UTF-8"}, False),  # Python's own coercion (PEP 538)
        ({"LC_ALL": "C"}, False),
        ({"LANG": "en_US.ISO-8859-1"}, False),
        ({"LANG": "en_US.UTF-8"}, True),
        ({"LANG": "C.utf8"}, True),
        ({"LC_ALL": "de_DE.UTF-8", "LANG": "C"}, True),
        ({}, True),
    ],
)
def test_takes_unicode(environ: dict[str, str], unicode: bool) -> None:
    assert takes_unicode(environ) is unicode


def test_heatmap_palettes_for_each_depth() -> None:
    for name, palette in colormap.palettes_for("256").items():
        for r, g, b in palette[::17]:
            colour = Color.from_rgb(int(r), int(g), int(b))
            # already a colour the terminal has: Rich's mapping leaves it as it is
            assert colour.downgrade(ColorSystem.EIGHT_BIT).get_truecolor() == (r, g, b), name
        assert len({tuple(c) for c in palette}) > 12  # still a gradient
    sixteen = colormap.palettes_for("16")["diverging"]
    numbers = [Color.from_rgb(*map(int, c)).downgrade(ColorSystem.STANDARD).number for c in sixteen]
    assert numbers[0] == 4 and numbers[-1] == 1 and len(set(numbers)) == 5
    assert np.array_equal(colormap.palettes_for("truecolor")["diverging"], colormap.DIVERGING)


async def test_a_16_colour_ascii_terminal_gets_the_ansi_theme_and_ascii_borders() -> None:
    app = DebuggerApp(FakeSession(), terminal=TerminalCaps("16", unicode=False))
    try:
        async with app.run_test(size=SMALL) as pilot:
            await settled(pilot)
            assert app.theme == "ansi-dark"
            assert app.console.color_system == "standard"
            assert app.query_one("#details").styles.border.top[0] == "ascii"
            glyph, _style = colormap.half_block_cell("diverging", 10, 200)
            assert glyph == " "
    finally:
        colormap.use_terminal()  # the other tests draw in truecolor with half blocks
    assert colormap.half_block_cell("diverging", 10, 200)[0] == colormap.HALF_BLOCK


def test_every_glyph_has_an_ascii_form_of_its_width() -> None:
    for glyph, form in ASCII_FORMS.items():
        assert len(glyph) == len(form) == 1 and form.isascii(), glyph
    assert (
        to_ascii("\u25cf paused \u2502 \u00b1Inf 3\u00d74 \u2014 ok") == "* paused | ~Inf 3x4 - ok"
    )
    # a character not in the table keeps its cells: "?" per cell, none for a combining mark
    assert to_ascii("\u5377\u7a4d/x\u0301") == "????/x"
    assert to_ascii("\x1b[1;2H plain") == "\x1b[1;2H plain"  # escape sequences untouched


@pytest.mark.parametrize("size", [SMALL, (160, 48)])
async def test_without_utf8_the_terminal_gets_only_ascii(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # LANG=C kept Unicode tree guides, badges, tab underlines and button edges: every glyph
    # now has an ASCII form, Textual's included, and the terminal write is translated.
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, terminal=TerminalCaps("256", unicode=False))
    written: list[str] = []
    # the headless driver writes nothing: record what would reach the terminal
    monkeypatch.setattr(HeadlessDriver, "write", lambda _self, data: written.append(data))
    try:
        async with app.run_test(size=size) as pilot:
            await wait_for_screen(pilot, ConfirmScreen)
            shown = {screen_text(app)}
            await pilot.press("y")
            await wait_until(pilot, lambda: len(app.screen_stack) == 1, what="the offer gone")
            await pilot.press("1")
            tree = app.query_one(GraphTree)
            for node in walk(tree.root):
                node.expand()  # guides, expand arrows and badges on screen
            await settled(pilot)
            shown.add(screen_text(app))
            await pilot.press("question_mark")
            await wait_for_screen(pilot, HelpScreen)
            shown.add(screen_text(app))
            glyphs = {ch for text in shown for ch in text if not ch.isascii()}
            assert glyphs, "the screens drew no glyph: nothing was checked"
            assert glyphs <= set(ASCII_FORMS), sorted(glyphs - set(ASCII_FORMS))
            driver = app._driver
            assert driver is not None
            written.clear()
            driver.write("\u251c\u2500 \u25b6 Default \u25c9 \u25b26")  # as Textual writes
    finally:
        colormap.use_terminal()
    assert written == ["+- > Default @ ^6"]
