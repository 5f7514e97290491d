"""The source view: Enter on a frame of the node's stack (the stack pane) opens its file
with the stack's line highlighted and centred, every line noting the nodes it created;
Enter or a click on a note goes to the node. A file that is not on this machine shows
the lines the stacks quote, and says so; so does a file outside the source roots (a stack
may name `/etc/shadow`), with how to allow it (issue 27 §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList

from tests.tui.support import FakeSession, make_app, settled, wait_for_screen, wait_until
from tuidebug.commands.source import ROOTS_VARIABLE
from tuidebug.core.graph import Graph, Node, NodeKind, StackFrame, TensorSpec
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.neighbours.source_screen import SourceCode, SourceScreen, line_note
from tuidebug.tui.panes.scope_tree import GraphTree

GRAPH = "kernel_graph_0"
SCOPE = "Default/net"


@pytest.fixture(autouse=True)
def source_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's files are under a source root the user named (TUIDEBUG_SOURCE_ROOTS)."""
    monkeypatch.setenv(ROOTS_VARIABLE, str(tmp_path))
    return tmp_path


def node(name: str, path: str, line: int, code: str) -> Node:
    return Node(
        name=f"{SCOPE}/{name}",
        kind=NodeKind.OPERATOR,
        op_type=name.split("-")[0],
        scope=SCOPE,
        outputs=[TensorSpec(0, 11, (2,))],
        stack=[
            StackFrame("/src/train.py", 40, "model.train(epochs)"),
            StackFrame(path, line, code),
        ],
    )


def source_file(tmp_path: Path) -> Path:
    """200 lines; line 120 makes a Conv2D, line 130 a ReLU and an Add; 140 is hostile."""
    lines = [f"x{i} = {i}  # line {i}" for i in range(1, 201)]
    lines[119] = "y = self.conv(x)"
    lines[129] = "z = self.relu(y) + y"
    lines[139] = 'evil = "\x1b[2J[bold red]boom[/]"\t# tab'
    path = tmp_path / "net.py"
    path.write_text("\n".join(lines) + "\n")
    return path


def graph_for(path: str) -> Graph:
    return Graph(
        GRAPH,
        [
            node("Conv2D-op0", path, 120, "y = self.conv(x)"),
            node("ReLU-op1", path, 130, "z = self.relu(y) + y"),
            node("Add-op2", path, 130, "z = self.relu(y) + y"),
        ],
    )


async def start(pilot: Any) -> None:
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")
    await wait_until(
        pilot, lambda: not isinstance(pilot.app.screen, ConfirmScreen), what="the offer gone"
    )
    await settled(pilot)


async def open_frame(pilot: Any, node_name: str, line: int) -> SourceScreen:
    """Select the node, go to the stack pane and press Enter on its frame at `line`."""
    app = pilot.app
    app.go_to_node(GRAPH, f"{SCOPE}/{node_name}")
    await settled(pilot)
    await pilot.press("3")
    lines = app.query_one("#stack-lines", OptionList)
    wanted = next(
        i
        for i in range(lines.option_count)
        if (lines.get_option_at_index(i).id or "").startswith("node:")
        and f"\x00{line}\x00" in (lines.get_option_at_index(i).id or "")
    )
    lines.highlighted = wanted
    await pilot.press("enter")
    screen = await wait_for_screen(pilot, SourceScreen)
    await wait_until(pilot, lambda: screen.code.lines, what="the source lines")
    await settled(pilot)
    return screen


def visible_rows(code: SourceCode) -> range:
    top = round(code.scroll_y)
    return range(top, top + code.scrollable_content_region.height)


def nodes_listed(screen: SourceScreen) -> list[str]:
    nodes = screen.query_one("#source-nodes", OptionList)
    return [str(nodes.get_option_at_index(i).prompt) for i in range(nodes.option_count)]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_enter_on_a_frame_opens_the_file_at_its_line(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    path = source_file(tmp_path)
    app, _session = make_app(graph_list=[graph_for(str(path))])
    async with app.run_test(size=size) as pilot:
        await start(pilot)
        screen = await open_frame(pilot, "Conv2D-op0", 120)
        code = screen.code
        assert screen.whole_file is True and len(code.lines) == 200
        assert code.target == 119 and code.cursor == 119 and code.lines[119].line_no == 120
        rows = visible_rows(code)
        assert 119 in rows and abs((rows.start + rows.stop) / 2 - 119) <= 1  # centred
        row = code.render_line(119 - rows.start)
        assert row.text.startswith("▶") and "y = self.conv(x)" in row.text
        assert "◂ Conv2D-op0" in row.text or size == (80, 24)  # past the edge at 80
        assert "200 lines" in str(screen.query_one("#source-note").render())
        assert nodes_listed(screen)[0].startswith("Conv2D-op0")
        await wait_until(pilot, lambda: code.coloured is not None, what="syntax colours")

        await pilot.press("enter")  # one node at this line: go there
        await wait_until(pilot, lambda: not isinstance(app.screen, SourceScreen), what="close")
        await settled(pilot)
        assert app.current_node is not None and app.current_node.name.endswith("Conv2D-op0")
        assert isinstance(app.focused, GraphTree)


async def test_next_noted_line_and_a_line_of_several_nodes(tmp_path: Path) -> None:
    path = source_file(tmp_path)
    app, _session = make_app(graph_list=[graph_for(str(path))])
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        screen = await open_frame(pilot, "Conv2D-op0", 120)
        code = screen.code
        await pilot.press("n")
        assert code.lines[code.cursor].line_no == 130
        assert [label.split()[0] for label in nodes_listed(screen)] == ["ReLU-op1", "Add-op2"]
        await pilot.press("n")  # no further line made a node
        assert code.lines[code.cursor].line_no == 130
        await pilot.press("N")
        assert code.lines[code.cursor].line_no == 120
        await pilot.press("n", "enter")  # two nodes: the list takes the focus
        nodes = screen.query_one("#source-nodes", OptionList)
        assert app.focused is nodes
        await pilot.press("escape")  # back to the code first
        assert app.focused is code and isinstance(app.screen, SourceScreen)
        await pilot.press("enter", "down", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, SourceScreen), what="close")
        await settled(pilot)
        assert app.current_node is not None and app.current_node.name.endswith("Add-op2")


async def test_a_click_on_a_note_goes_to_its_node(tmp_path: Path) -> None:
    path = source_file(tmp_path)
    app, _session = make_app(graph_list=[graph_for(str(path))])
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot)
        screen = await open_frame(pilot, "Conv2D-op0", 120)
        code = screen.code
        y = 119 - round(code.scroll_y)
        text = code.render_line(y).text
        await pilot.click(SourceCode, offset=(text.index("◂") + 2, y))
        await wait_until(pilot, lambda: not isinstance(app.screen, SourceScreen), what="close")
        await settled(pilot)
        assert app.current_node is not None and app.current_node.name.endswith("Conv2D-op0")


async def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    path = source_file(tmp_path)
    app, _session = make_app(graph_list=[graph_for(str(path))])
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot)
        screen = await open_frame(pilot, "Conv2D-op0", 120)
        code = screen.code
        await wait_until(pilot, lambda: code.coloured is not None, what="syntax colours")
        code.set_cursor(139)
        await settled(pilot)
        text = code.render_line(139 - round(code.scroll_y)).text
        assert "\x1b" not in text and "\\x1b[2J[bold red]boom[/]" in text
        assert "\t" not in text


async def test_a_file_not_here_shows_the_quoted_lines() -> None:
    missing = "/home/dev/ws/lenet/net.py"
    app, _session = make_app(graph_list=[graph_for(missing)])
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        screen = await open_frame(pilot, "ReLU-op1", 130)
        code = screen.code
        assert screen.whole_file is False
        assert [line.line_no for line in code.lines] == [120, 130]
        assert code.lines[code.cursor].line_no == 130 and code.target == code.cursor
        note = str(screen.query_one("#source-note").render())
        assert "not on this machine" in note and "2 lines" in note
        assert "z = self.relu(y) + y" in code.render_line(code.cursor).text
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, SourceScreen), what="close")


async def test_a_file_outside_the_roots_shows_the_quoted_lines_and_how_to_allow_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = source_file(tmp_path)  # on this machine, but under no source root
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv(ROOTS_VARIABLE, str(project))
    app, _session = make_app(graph_list=[graph_for(str(secret))])
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot)
        screen = await open_frame(pilot, "ReLU-op1", 130)
        assert screen.whole_file is False
        assert [line.line_no for line in screen.code.lines] == [120, 130]
        note = str(screen.query_one("#source-note").render())
        assert f"{secret} is on this machine but outside the folders" in note
        assert f"{ROOTS_VARIABLE}={tmp_path}" in note
        assert "Only the 2 lines its stacks quote are shown." in note
        assert "x1 = 1" not in "".join(line.text for line in screen.code.lines)


async def test_a_dump_from_another_machine_reads_its_files_through_a_path_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--source-root /home/dev/ws=DIR` (here the variable it sets): the stacks name the
    training machine's /home/dev/ws/net.py, read from DIR/net.py, coloured."""
    here = tmp_path / "ws"
    here.mkdir()
    source_file(here)
    monkeypatch.setenv(ROOTS_VARIABLE, f"/home/dev/ws={here}")
    app, _session = make_app(graph_list=[graph_for("/home/dev/ws/net.py")])
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        screen = await open_frame(pilot, "ReLU-op1", 130)
        assert screen.whole_file is True and len(screen.code.lines) == 200
        assert screen.found_path == str(here / "net.py")
        assert f"read from {here / 'net.py'}" in str(screen.query_one("#source-note").render())
        code = screen.code
        await wait_until(pilot, lambda: code.coloured is not None, what="syntax colours")
        assert code.lines[code.cursor].line_no == 130 and code.target == 129
        assert code.line is not None and code.line.nodes


async def test_v_opens_any_line_of_the_graph(tmp_path: Path) -> None:
    path = source_file(tmp_path)
    app, _session = make_app(graph_list=[graph_for(str(path))])
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot)
        app.go_to_node(GRAPH, f"{SCOPE}/Conv2D-op0")
        await settled(pilot)
        await pilot.press("3")
        lines = app.query_one("#stack-lines", OptionList)
        await wait_until(
            pilot,
            lambda: any(
                (lines.get_option_at_index(i).id or "").startswith("all:")
                for i in range(lines.option_count)
            ),
            what="the graph's source lines",
        )
        lines.highlighted = next(
            i
            for i in range(lines.option_count)
            if (lines.get_option_at_index(i).id or "").startswith("all:")
            and "\x00130\x00" in (lines.get_option_at_index(i).id or "")
        )
        await pilot.press("v")
        screen = await wait_for_screen(pilot, SourceScreen)
        await wait_until(pilot, lambda: screen.code.lines, what="the source lines")
        assert screen.code.lines[screen.code.cursor].line_no == 130


def test_a_line_note_tells_namesakes_apart() -> None:
    """A helper called from fc1 and fc2 creates two `MatMul-op0` on one line: the note adds
    the scope that differs; a name met once on the line stays short."""
    fc1, fc2 = f"{SCOPE}/fc1-Dense/MatMul-op0", f"{SCOPE}/fc2-Dense/MatMul-op0"
    refs = [(GRAPH, fc1), (GRAPH, f"{SCOPE}/fc1-Dense/BiasAdd-op1"), (GRAPH, fc2)]
    assert line_note(refs) == "◂ fc1-Dense/MatMul-op0, BiasAdd-op1, fc2-Dense/MatMul-op0"
    assert line_note(refs[:2]) == "◂ MatMul-op0, BiasAdd-op1"
    # the same node name in two graphs: one name (the node list adds the graph)
    assert line_note([(GRAPH, fc1), ("kernel_graph_1", fc1)]) == "◂ MatMul-op0, MatMul-op0"


async def test_the_keys_file_source_table_is_a_standing_source_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[source] roots = ["/home/dev/ws=DIR"]` in the keys file maps the stacks' paths like
    `--source-root` does, for every start of the TUI, with no option given."""
    here = tmp_path / "ws"
    here.mkdir()
    source_file(here)
    keys = tmp_path / "keys.toml"
    keys.write_text(f'[source]\nroots = ["/home/dev/ws={here}"]\n')
    monkeypatch.setenv("TUIDEBUG_KEYS", str(keys))
    monkeypatch.delenv(ROOTS_VARIABLE, raising=False)
    session = FakeSession(graph_list=[graph_for("/home/dev/ws/net.py")])
    app = DebuggerApp(session, start_session=True, user_keys=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot)
        screen = await open_frame(pilot, "ReLU-op1", 130)
        assert screen.whole_file is True
        assert screen.found_path == str(here / "net.py")
