"""Classes set on a widget alone (kit/own_class.py, navigation/focus_frames.py), issue 28.

`set_own_class` restyles only the widget it changes, which is right only while no CSS rule
styles anything inside that widget by the class: these tests read the rules of the app and
of the widgets that set such classes, so a rule like `#left.-focus Tree { … }` cannot come
back without the code that would draw it. Then, with Pilot, the focused pane's border
follows the focus as `:focus-within` did, and the command line's `:` and Esc still show
and hide it and the panes it takes the rows of.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.tui.support import make_app, settled, wait_for_screen, wait_until
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.navigation.focus_frames import FOCUS_CLASS, FRAMED
from tuidebug.tui.panes.command_line import CommandInput, CommandLine

# every class set with set_own_class, and the CSS that may style it
OWN_CLASSES = (FOCUS_CLASS, "-open", "-command-open")
APP_CSS = Path(__file__).resolve().parents[2] / "tuidebug" / "tui" / "app.tcss"


def _selectors(css: str) -> list[str]:
    """Each selector of a stylesheet's rules (comments dropped; no nesting in ours)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    heads = re.findall(r"([^{}]+)\{", css)
    return [s.strip() for head in heads for s in head.split(",") if s.strip()]


def _styles_inside(selector: str, name: str) -> bool:
    """The selector names the class on an ancestor of what it styles (`.x Child`)."""
    parts = re.split(r"\s*>\s*|\s+", selector.strip())
    return any(re.search(rf"\.{re.escape(name)}(?![\w-])", part) for part in parts[:-1])


@pytest.mark.parametrize(
    "css",
    [APP_CSS.read_text(encoding="utf-8"), CommandLine.DEFAULT_CSS],
    ids=["app.tcss", "CommandLine"],
)
def test_no_rule_styles_what_is_inside_a_widget_by_its_own_class(css: str) -> None:
    bad = [s for s in _selectors(css) for name in OWN_CLASSES if _styles_inside(s, name)]
    assert bad == []


def test_the_selector_reader_sees_a_descendant_rule() -> None:
    assert _styles_inside("#left.-focus Tree", FOCUS_CLASS)
    assert _styles_inside("CommandLine.-open > Input", "-open")
    assert not _styles_inside("Screen.-short #details.-focus", FOCUS_CLASS)
    assert not _styles_inside("#left.-focused Tree", FOCUS_CLASS)


def _framed(app: DebuggerApp) -> list[str]:
    return [s for s in FRAMED if app.query_one(s).has_class(FOCUS_CLASS)]


async def _ready(pilot: Any) -> None:
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")
    await wait_until(
        pilot, lambda: not isinstance(pilot.app.screen, ConfirmScreen), what="the offer closed"
    )
    await settled(pilot)


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_the_focused_panes_border_follows_the_focus(size: tuple[int, int]) -> None:
    app, _session = make_app()
    async with app.run_test(size=size) as pilot:
        await _ready(pilot)
        assert _framed(app) == ["#left"]  # the tree has the focus
        await pilot.press("4")
        await settled(pilot)
        assert _framed(app) == ["#details"]
        await pilot.press("2")  # another tab of the left column
        await settled(pilot)
        assert _framed(app) == ["#left"]
        await pilot.press("colon")
        await wait_until(pilot, lambda: isinstance(app.focused, CommandInput), what="the input")
        panel = app.query_one(CommandLine)
        assert _framed(app) == [] and panel.is_open and panel.display
        accent = panel.styles.border_top[1]  # the command line's focused border
        left, details = app.query_one("#left"), app.query_one("#details")
        assert left.styles.border_top[1] != accent
        await pilot.press("escape")
        await settled(pilot)
        assert not panel.is_open and not panel.display
        assert _framed(app) == ["#left"]
        # the frame is drawn: the focused pane's border in the accent colour, the others not
        assert left.styles.border_top[1] == accent != details.styles.border_top[1]
        if size[1] < 32:  # the short layout: the command line took the watchpoints' rows
            assert app.query_one("#watchpoints").display


def test_the_tensor_views_size_classes_style_the_children_it_restyles_only() -> None:
    """TensorView._fit_layout restyles #tv-table with -short and #tv-stats with -compact."""
    from tuidebug.tui.tensor.layout import BODY_CSS
    from tuidebug.tui.tensor.view import TensorView

    styled = set()
    rules = TensorView.DEFAULT_CSS + BODY_CSS + APP_CSS.read_text(encoding="utf-8")
    for selector in _selectors(rules):
        parts = re.split(r"\s*>\s*|\s+", selector)
        for part in parts[:-1]:
            if "TensorView" in part or "#tensor-view" in part:
                styled |= {(n, parts[-1]) for n in ("-short", "-compact") if f".{n}" in part}
    assert styled == {("-short", "#tv-table"), ("-compact", "#tv-stats")}
