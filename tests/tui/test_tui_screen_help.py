"""`?` / F1 on the screens of their own (tensor list, graph view, source view,
downstream, command line): the help opens with the screen's own keys on top, as it does
for a pane (help_screen.context_help reads them from the focused widget's screen)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.tui.support import CONV, make_app, settled, wait_for_screen, wait_until
from tests.tui.test_tui_source_view import graph_for, open_frame, source_file
from tuidebug.tui.keys.help_screen import HelpScreen
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.neighbours.downstream_screen import DownstreamScreen
from tuidebug.tui.neighbours.graph_screen import GraphScreen
from tuidebug.tui.tensor_list.screen import TensorListScreen

GRAPH = "kernel_graph_0"
SIZE = (100, 30)


async def start(pilot: Any) -> None:
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")  # no recommended watchpoints
    await wait_until(
        pilot, lambda: not isinstance(pilot.app.screen, ConfirmScreen), what="the offer gone"
    )
    await settled(pilot)


def has_row(text: str, key: str, does: str) -> bool:
    """The help lists `key` (as bound now) with what it does (the columns are aligned)."""
    return re.search(rf"^  {re.escape(key)} {{2,}}{re.escape(does)}", text, re.M) is not None


async def help_of(pilot: Any, key: str = "question_mark") -> tuple[str, str]:
    """Press `key` and return the help's (title, text) for where the focus was; the help
    closes again and the screen under it is back."""
    under = pilot.app.screen
    await pilot.press(key)
    screen = await wait_for_screen(pilot, HelpScreen)
    assert screen._pane_help is not None, f"no context help over {type(under).__name__}"
    title, text = screen._pane_help
    # shown as well as found: the same words (the screen reflows the lines to its width)
    assert " ".join(text.split()) in " ".join(screen.context_text.split())
    await pilot.press("escape")
    await wait_until(pilot, lambda: pilot.app.screen is under, what="the help to close")
    return title, text


async def test_graph_view_help() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        await pilot.press("G")
        await wait_for_screen(pilot, GraphScreen)
        await settled(pilot)
        title, text = await help_of(pilot)
        assert title == "Graph view"
        assert has_row(text, "enter", "centre on the selected box")
        assert has_row(text, "+ / -", "draw one level more / fewer")
        await help_of(pilot, "f1")


async def test_downstream_help() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.go_to_node(GRAPH, CONV)
        await settled(pilot)
        await pilot.press("O")
        await wait_for_screen(pilot, DownstreamScreen)
        await settled(pilot)
        title, text = await help_of(pilot)
        assert title == "Downstream"
        assert has_row(text, "Enter", "close and go to the node")
        assert has_row(text, "Esc", "close")


async def test_source_view_help(tmp_path: Path) -> None:
    path = source_file(tmp_path)
    app, _session = make_app(graph_list=[graph_for(str(path))])
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await open_frame(pilot, "Conv2D-op0", 120)
        title, text = await help_of(pilot)
        assert title == "Source view"
        assert has_row(text, "n / N", "next / previous line that created nodes")


async def test_tensor_list_help_from_the_rows_and_the_filter() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("L")
        screen = await wait_for_screen(pilot, TensorListScreen)
        await wait_until(pilot, lambda: screen.entries, what="the entries")
        title, text = await help_of(pilot)
        assert title == "Tensor list" and has_row(text, "s", "sort: execution order")
        await pilot.press("slash")  # the filter box: ? is a character there, F1 is help
        await wait_until(pilot, lambda: app.focused is not screen.rows, what="the filter")
        title, _text = await help_of(pilot, "f1")
        assert title == "Tensor list"


async def test_command_line_help_from_the_input_and_the_output() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("colon")
        await wait_until(
            pilot, lambda: type(app.focused).__name__ == "CommandInput", what="the input"
        )
        title, text = await help_of(pilot, "f1")  # ? would be typed
        assert title == "Command line" and has_row(text, "tab", "complete a command")
        await pilot.press("shift+tab")  # to the output
        await wait_until(
            pilot, lambda: type(app.focused).__name__ == "CommandOutput", what="the output"
        )
        title, text = await help_of(pilot, "f1")  # ? in the output is typed at the prompt
        assert title == "Command output" and has_row(text, "tab", "next link")
