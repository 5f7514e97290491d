"""The command line (`:`): tfdbg's commands in the TUI, their output, links, history.

Driven with Pilot on the in-memory session (`make_app`) and on the real LeNet 2.0.0 dump.
Every test points the persistent history at its own tmp folder (`XDG_STATE_HOME`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.tui.support import CONV, make_app, settled, wait_for_screen, wait_until
from tuidebug.commands import History
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.navigation import kept_views
from tuidebug.tui.panes.command_line import (
    CommandInput,
    CommandLine,
    CommandOutput,
    command_history_file,
    load_history,
    save_history,
)
from tuidebug.tui.panes.command_output import wrap_offsets
from tuidebug.tui.tensor.view import TensorView

SIZE = (160, 48)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The command history of these tests lives in a tmp folder, never the user's."""
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


async def ready(pilot: Any) -> None:
    """Loaded, the recommended-watchpoints offer declined, nothing pending."""
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")
    await wait_until(
        pilot,
        lambda: not isinstance(pilot.app.screen, ConfirmScreen),
        what="the recommended-watchpoints offer to close",
    )
    await settled(pilot)


async def open_command_line(pilot: Any) -> CommandLine:
    await pilot.press("colon")
    await wait_until(
        pilot,
        lambda: isinstance(pilot.app.focused, CommandInput),
        what="the command line's input to take the focus",
    )
    return pilot.app.query_one(CommandLine)


async def run(pilot: Any, panel: CommandLine, line: str) -> list[str]:
    """Type `line`, Enter, wait for its output; the output pane's lines from its echo on."""
    before = panel.output.line_count
    if pilot.app.focused is not panel.input:
        await open_command_line(pilot)
    panel.input.value = line
    panel.input.cursor_position = len(line)
    await pilot.press("enter")
    await wait_until(
        pilot, lambda: panel.running is None and panel.output.line_count > before + 1, what=line
    )
    lines = panel.output.plain_lines()
    return lines[
        len(lines) - next(i for i, t in enumerate(reversed(lines)) if t == f"> {line}") - 1 :
    ]


# ------------------------------------------------------------------- the pane
async def test_lt_output_shows_and_escape_returns_focus() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        tree = app.query_one("#scope-tree")
        assert app.focused is tree
        panel = await open_command_line(pilot)
        assert panel.is_open and panel.region.height >= 10
        lines = await run(pilot, panel, "lt -t Conv")
        assert lines[0] == "> lt -t Conv"
        assert lines[1] == "5 of 25 tensors of step 1"  # 4 Conv2D, 1 backprop
        assert any(line.rstrip().endswith(f"{CONV}:0") for line in lines)
        await pilot.press("escape")
        assert not panel.is_open and not panel.display
        assert app.focused is tree
        # the output stays for the next `:`
        await open_command_line(pilot)
        assert "> lt -t Conv" in panel.output.plain_lines()


async def test_an_error_is_one_sentence_in_the_error_style() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        lines = await run(pilot, panel, "pt no-such-node")
        assert lines == ["> pt no-such-node", "No node is named 'no-such-node'."]
        last = panel.output._lines[-1]
        assert [piece.style for piece in last] == ["error"]
        lines = await run(pilot, panel, "frobnicate")
        assert len(lines) == 2 and lines[1].startswith("There is no command 'frobnicate'")


async def test_history_up_searches_by_prefix_and_persists(state_home: Path) -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        for line in ("pt layer0.weight", "lt", "ni layer1.weight", "lt -s size"):
            await run(pilot, panel, line)
        await pilot.press("up")
        assert panel.input.value == "lt -s size"
        await pilot.press("up")
        assert panel.input.value == "ni layer1.weight"
        await pilot.press("down", "down")
        assert panel.input.value == ""  # past the newest: what was typed
        panel.input.value = ""
        await pilot.press("p", "t", "up")
        assert panel.input.value == "pt layer0.weight"
        await pilot.press("up")
        assert panel.input.value == "pt layer0.weight"  # no older one starts with pt
    saved = command_history_file().read_text().splitlines()
    assert saved == ["pt layer0.weight", "lt", "ni layer1.weight", "lt -s size"]
    assert command_history_file().is_relative_to(state_home)

    app, _session = make_app()  # the next run of the app finds it
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        await pilot.press("up")
        assert panel.input.value == "lt -s size"


def test_history_file_failures_are_harmless(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    history = History()
    history.add("lt")
    assert save_history(history, blocker / "sub" / "command_history") is False
    assert load_history(blocker / "sub" / "command_history").lines == []
    odd = tmp_path / "odd"
    odd.write_bytes(b"lt\n\x1b[31mpt x\n\xff\xfe\n" + b"a" * 5000 + b"\nni y\n")
    assert load_history(odd).lines == ["lt", "ni y"]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert load_history(fifo).lines == []  # refused at once: opening it must not block
    assert command_history_file({"XDG_STATE_HOME": "relative"}).parts[-3:] == (
        "state",
        "tuidebug",
        "command_history",
    )


def test_wrap_offsets_counts_cells() -> None:
    assert wrap_offsets("", 4) == [(0, 0)]
    assert wrap_offsets("abcdefghij", 4) == [(0, 4), (4, 8), (8, 10)]
    assert wrap_offsets("日本語ab", 4) == [(0, 2), (2, 5)]  # two cells a character
    assert wrap_offsets("ab日本", 3) == [(0, 2), (2, 3), (3, 4)]  # 日 does not fit after ab


async def test_tab_completes_commands_and_node_names() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        await pilot.press("p", "tab")
        assert panel.input.value == "p"  # pt and ps: the candidates are listed
        assert "ps" in str(panel.hint.render()) and "pt" in str(panel.hint.render())
        await pilot.press("t", "tab")
        assert panel.input.value == "pt "
        await pilot.press(*"layer1.w", "tab")
        assert panel.input.value == "pt layer1.weight "
        panel.input.value = "ni Default/net"
        panel.input.cursor_position = len(panel.input.value)
        await pilot.press("tab")
        assert panel.input.value == "ni Default/network-Net/"  # one scope level at a time
        await pilot.press("tab")
        assert panel.input.value == "ni Default/network-Net/layer"
        assert "4 candidates: layer0-Block/" in str(panel.hint.render())
        await pilot.press("ctrl+a", "tab")  # completes at the cursor, keeps the rest
        assert panel.input.value.startswith("ni Default/network-Net/layer")


# ---------------------------------------------------------------------- links
async def test_following_a_node_link_selects_the_node() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        await run(pilot, panel, f"li {CONV}")
        relu_input = "Default/network-Net/layer0-Block/Conv2D-op0"
        await run(pilot, panel, "lo layer0.weight")
        await pilot.press("shift+tab")
        assert app.focused is panel.output
        await pilot.press("tab")
        link = panel.output._links[panel.output.selected or 0][1]
        assert link.node == relu_input and link.slot is None
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: app.current_node is not None and app.current_node.name == relu_input,
            what="the linked node to be selected",
        )
        assert app.focused is app.query_one("#scope-tree")
        entry = app.selected_tree_entry()
        assert entry is not None and getattr(entry, "name", relu_input) == relu_input
        assert panel.is_open  # the output stays up beside the tree
        await pilot.press("escape")  # back to where the jump came from: the output
        assert app.focused is panel.output


async def test_clicking_a_tensor_link_opens_the_tensor() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        await run(pilot, panel, "lt -n layer1")
        positions = [
            (link, x, y)
            for link, x, y in panel.output.link_positions()
            if link.slot == 0 and "Block/" in link.node
        ]
        link, x, y = positions[0]
        assert link.node.startswith("Default/network-Net/layer1-Block/")
        await pilot.click(CommandOutput, offset=(x + 1, y))
        view = app.query_one(TensorView)
        await wait_until(
            pilot,
            lambda: view.state == "tensor" and app._open_tensor is not None,
            what="the linked tensor to open",
        )
        assert app._open_tensor == (link.graph, link.node, 0, link.iteration)
        assert app.current_node is not None and app.current_node.name == link.node


async def test_redirect_writes_the_file(tmp_path: Path) -> None:
    app, _session = make_app()
    target = tmp_path / "tensors.txt"
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        lines = await run(pilot, panel, f"lt > {target}")
        assert lines[1] == f"Wrote {len(target.read_text().splitlines())} lines to {target}."
        assert CONV in target.read_text()


async def test_redirect_never_replaces_a_file_without_being_told(tmp_path: Path) -> None:
    """Issue 27 §5: the `:` line refuses an existing file with a sentence naming `>|`, and
    a FIFO at once (never opened, so never a hang)."""
    app, _session = make_app()
    target = tmp_path / "notes.txt"
    target.write_text("the user's notes\n")
    os.mkfifo(tmp_path / "fifo")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        lines = await run(pilot, panel, f"lt > {target}")
        assert lines[1] == (
            f"{target} exists and was left as it is; write >| {target} to replace it."
        )
        assert target.read_text() == "the user's notes\n"
        lines = await run(pilot, panel, f"lt > {tmp_path / 'fifo'}")
        assert lines[1].endswith("fifo is a FIFO (named pipe); output goes only to regular files.")
        lines = await run(pilot, panel, f"lt >| {target}")
        assert lines[1].startswith("Wrote ") and CONV in target.read_text()


async def test_palette_opens_it_and_help_lists_the_key() -> None:
    from tests.tui.support import run_palette
    from tuidebug.tui.keys.help_screen import HelpScreen

    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await run_palette(pilot, "Command line")
        await wait_until(
            pilot, lambda: isinstance(app.focused, CommandInput), what="the command line"
        )
        await pilot.press("escape")
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, HelpScreen)
        assert any(key == ":" for key, _does, _why in help_screen._keys)
        await pilot.press("colon")  # not for the main screen while the help is up
        assert isinstance(app.screen, HelpScreen)


async def test_short_terminal_gives_the_output_the_watchpoint_rows() -> None:
    app, _session = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        assert not app.query_one("#watchpoints").display
        assert panel.output.region.height >= 8
        lines = await run(pilot, panel, "pt layer0.weight -s")
        assert lines[1].startswith("Tensor layer0.weight:0 @ step 1:")
        await pilot.press("escape")
        assert app.query_one("#watchpoints").display


# ------------------------------------------------ : and Esc stay cheap (issue 28)
async def test_the_panel_is_built_once_and_esc_hides_it_in_one_press(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the fast `:` and Esc rely on (benchmarks/bench_tui.py --only command): the first
    `:` mounts the panel and later ones show the same widgets (no mount, no compose); one
    Esc hides it, its prompt's focus going back to the pane it came from; and on a tall
    terminal the panes below keep their classes (a class restyles and redraws a pane)."""
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        tree = app.query_one("#scope-tree")
        panel = await open_command_line(pilot)
        children = list(panel.walk_children())
        composed: list[CommandLine] = []
        compose = CommandLine.compose

        def counted(self: CommandLine) -> Any:
            composed.append(self)
            return compose(self)

        monkeypatch.setattr(CommandLine, "compose", counted)  # a panel built again counts
        rows = [app.query_one("#watchpoints"), app.query_one("#controls")]
        assert not any(pane.has_class("-command-open") for pane in rows)
        await pilot.press("escape")
        assert not panel.is_open and not panel.display  # one press, no frame between
        assert app.focused is tree and not panel.has_class("-focus")
        await pilot.press("4")  # node details, then `:` from there
        details = app.query_one("#details")
        await wait_until(pilot, lambda: details.has_class("-focus"), what="node details")
        back = app.focused
        for _ in range(2):
            await pilot.press("colon")
            assert panel.is_open and app.focused is panel.input and panel.has_class("-focus")
            assert len(app.query(CommandLine)) == 1 and app._kept.command_line is panel
            assert list(panel.walk_children()) == children and composed == []
            await pilot.press("escape")
            assert not panel.is_open and app.focused is back and details.has_class("-focus")


async def test_the_panel_is_built_hidden_after_the_load_for_the_first_colon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first `:` took 0.15–0.3 s building the panel: it is built once the graphs have
    loaded (kept_views.PREBUILD_AFTER_S later), hidden, taking neither rows nor the focus,
    and the first `:` only shows it."""
    monkeypatch.setattr(kept_views, "PREBUILD_AFTER_S", 0.05)
    app, _session = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        tree = app.query_one("#scope-tree")
        await wait_until(
            pilot,
            lambda: app._kept.command_line is not None and app._kept.command_line.is_mounted,
            what="the command line built",
        )
        await settled(pilot)
        panel = app.query_one(CommandLine)
        assert not panel.display and app.focused is tree and panel.region.height == 0
        assert app.query_one("#watchpoints").display
        composed: list[CommandLine] = []
        compose = CommandLine.compose

        def counted(self: CommandLine) -> Any:
            composed.append(self)
            return compose(self)

        monkeypatch.setattr(CommandLine, "compose", counted)
        assert await open_command_line(pilot) is panel and composed == []
        assert panel.output.region.height >= 8 and not app.query_one("#watchpoints").display


async def test_a_resize_across_the_short_layout_gives_and_takes_back_the_rows() -> None:
    """The watchpoint list and control bar give the open panel their rows on a short
    terminal only, also when the terminal shrinks or grows while it is open."""
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        watchpoints = app.query_one("#watchpoints")
        await open_command_line(pilot)
        assert watchpoints.display
        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: not watchpoints.display, what="the rows taken")
        await pilot.resize_terminal(*SIZE)
        await wait_until(pilot, lambda: watchpoints.display, what="the rows given back")
        assert not watchpoints.has_class("-command-open")
        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: not watchpoints.display, what="the rows taken again")
        await pilot.press("escape")
        assert watchpoints.display


# ------------------------------------------- a safe place to type (issue 28)
async def test_one_escape_closes_it_from_the_output_even_maximized() -> None:
    """Issue 28: Esc in the output went back to the prompt, and a maximized output first
    only restored the layout: three Esc to close. Now one, from anywhere in the panel."""
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        tree = app.query_one("#scope-tree")
        panel = await open_command_line(pilot)
        await run(pilot, panel, "lt -t Conv")
        await pilot.press("shift+tab")
        assert app.focused is panel.output
        await pilot.press("escape")
        assert not panel.is_open and app.focused is tree
        await open_command_line(pilot)
        await pilot.press("shift+tab", "z")
        assert app.screen.maximized is panel
        await pilot.press("escape")
        assert not panel.is_open and app.screen.maximized is None
        assert app.focused is tree
        await open_command_line(pilot)  # from the prompt, maximized: one Esc too
        await pilot.press("shift+tab", "z", "colon")
        assert app.focused is panel.input and app.screen.maximized is panel
        await pilot.press("escape")
        assert not panel.is_open and app.screen.maximized is None


async def test_letters_in_the_output_go_to_the_prompt_and_no_run_key_fires() -> None:
    """Issue 28: `c` in the output continued the run, `w` opened the watchpoint editor.
    Letters go to the prompt now (`:` just moves there); a run key a keys.toml put on a
    key the prompt does not type (F5) fires neither from the output nor the prompt."""
    from tuidebug.tui.watchpoints.editor import WatchpointEditor

    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        await run(pilot, panel, "lt -t Conv")
        calls = list(session.calls)
        await pilot.press("shift+tab")
        footer_keys = set(app.screen.active_bindings)
        assert not {"c", "w", "q", "1", "slash"} & footer_keys  # the footer offers none
        await pilot.press("c", "w", "s", "1", "space")
        assert app.focused is panel.input and panel.input.value == "cws1 "
        await pilot.press("shift+tab", "colon")  # `:` moves to the prompt, types nothing
        assert app.focused is panel.input and panel.input.value == "cws1 "
        app.set_keymap({"tuidebug.continue": "f5"})
        await pilot.press("f5", "shift+tab", "f5")
        await settled(pilot)
        assert session.calls == calls  # nothing continued, stepped or watched
        assert not isinstance(app.screen, WatchpointEditor) and panel.is_open
        await pilot.press("escape", "f5")  # outside the panel the key is the run key again
        await wait_until(pilot, lambda: "continue" in session.calls, what="F5 to continue")


async def test_slash_searches_the_output() -> None:
    """tfdbg's `/regex`: every match highlighted, the first from the top of the view
    shown; Enter again or n / N in the output move; Esc ends the search, the next closes."""
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        await run(pilot, panel, "lt")
        output = panel.output
        await pilot.press("shift+tab", "slash", "c", "o", "n", "v", "2", "d", "enter")
        # lower case: smartcase finds Conv2D (its op type and its name: two a line)
        expected = sum(line.count("Conv2D") for line in output.plain_lines())
        assert expected > 3
        assert len(output.matches) == expected and output.match_index == 0
        assert panel.input.value == "/conv2d" and app.focused is panel.input
        assert f"match 1 of {expected}" in str(panel.hint.render())
        number, start, end = output.matches[0]
        assert output.plain_lines()[number][start:end] == "Conv2D"
        await pilot.press("enter")  # the same search again: the next match
        assert output.match_index == 1 and f"match 2 of {expected}" in str(panel.hint.render())
        await pilot.press("shift+tab", "n", "n", "N")
        assert output.match_index == 2 and f"match 3 of {expected}" in str(panel.hint.render())
        row = output._row_of(output.matches[2][0], output.matches[2][1])
        assert output.scroll_offset.y <= row < output.scroll_offset.y + output.size.height
        await pilot.press("escape")  # ends the search, the panel stays
        assert output.pattern is None and not output.matches and panel.is_open
        assert panel.input.value == "" and not panel.hint.has_class("-shown")
        await pilot.press("n")  # no search: n is the next link again
        assert output.selected is not None
        await pilot.press("slash", "(", "enter")
        assert "/( is not a regular expression" in str(panel.hint.render())
        assert output.pattern is None and app.focused is panel.input
        panel.input.value = "/Conv2d"  # a capital: case-sensitive, so nothing matches
        await pilot.press("enter")
        assert "Nothing in the output matches /Conv2d." in str(panel.hint.render())
        await pilot.press("escape")
        assert not panel.is_open


# ----------------------------------------------------------------- a real dump
async def test_lenet_lt_link_and_pt(dump_2_0: Path) -> None:
    session = OfflineSession(dump_2_0)
    app = DebuggerApp(session, start_session=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            panel = await open_command_line(pilot)
            lines = await run(pilot, panel, "lt -t Conv2D$")
            assert lines[1] == "2 of 60 tensors of step 1 (iteration 0)"
            await pilot.press("shift+tab", "tab", "tab", "enter")
            view = app.query_one(TensorView)
            conv2 = "Default/network-WithLossCell/_backbone-LeNet5/conv2-Conv2d/Conv2D-op80"
            await wait_until(
                pilot,
                lambda: app._open_tensor is not None and view.state == "tensor",
                what="Conv2D-op80's tensor",
            )
            assert app._open_tensor[1] == conv2
            lines = await run(pilot, panel, "pt fc3.weight[0:2, :] -s")
            assert lines[1] == (
                "Tensor fc3.weight:0 @ step 1 (iteration 0): dtype float32, shape [10,84];"
                " slice [0:2, :] → shape [2,84]"
            )
            assert any(line.startswith("  count 840") for line in lines)
    finally:
        session.close()


# ------------------------------------------------------------- hostile names
async def test_tab_never_turns_a_hostile_node_name_into_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state_home: Path
) -> None:
    """Issue 27: Tab after ``eval ` `` offered a node named `` `w`+<Python>+`w `` as raw
    text; closing the backquote and Enter ran the Python, and ↑ ran it again. Tab must
    insert the name as an escaped reference, which evaluates to the node's tensor."""
    from tests.commands.test_hostile_names import (
        HOSTILE_REFERENCE,
        PAYLOAD_FILE,
        write_hostile_dump,
    )

    monkeypatch.chdir(tmp_path)  # the payload writes into the working folder
    session = OfflineSession(write_hostile_dump(tmp_path / "dump"))
    app = DebuggerApp(session, start_session=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            panel = await open_command_line(pilot)
            for typed in ("eval `", "eval ```"):  # several candidates: type the name's `
                panel.input.value = typed
                panel.input.cursor_position = len(typed)
                await pilot.press("tab")
                if panel.input.value != typed:
                    break
            line = panel.input.value.rstrip()
            if line.count("`") % 2:  # the user closes a reference left open
                line += "`"
            lines = await run(pilot, panel, line)
            assert not (tmp_path / PAYLOAD_FILE).exists(), "a node name ran as Python"
            assert line == f"eval {HOSTILE_REFERENCE}"
            assert "[7., 7., 7., 7.]" in lines  # the hostile node's own tensor
            saved = command_history_file().read_text(encoding="utf-8").splitlines()
            assert saved[-1] == line
            before = panel.output.line_count
            await pilot.press("up")
            assert panel.input.value == line
            await pilot.press("enter")
            await wait_until(
                pilot,
                lambda: panel.running is None and panel.output.line_count > before + 1,
                what="the line from the history to run",
            )
            assert not (tmp_path / PAYLOAD_FILE).exists()
            panel.input.value = "eval `ctl"
            panel.input.cursor_position = len(panel.input.value)
            await pilot.press("tab")
            assert "cannot be named in a command line" in str(panel.hint.render())
    finally:
        session.close()


async def test_a_commands_error_sentence_is_escaped_as_its_lines_are() -> None:
    """An error sentence may quote a node name or a file name (untrusted): it reaches the
    terminal escaped, one line, as every span of the command's lines does."""
    from tuidebug.commands import Output

    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        panel = await open_command_line(pilot)
        output = panel.output
        output.append_output(Output(error="no node evil\x1b]0;pwned\x07\nname"))
        await settled(pilot)
        last = output.plain_lines()[-1]
        assert "\x1b" not in last and "\x07" not in last and "\n" not in last
        assert last.startswith("no node evil")
