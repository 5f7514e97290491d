"""Attack surface: the terminal. A dump whose node names, graph name, attributes, stack
frames and file names carry ESC sequences (set the title, clear the screen), a carriage
return, a bidi override and Rich/Textual markup, shown by `tuidebug check`, the other
commands' sentences, and the TUI.

Everything shown on a terminal must come out escaped by `tuidebug.core.text.printable`
(`\\x1b`, `\\r`, `\\u202e` written out, brackets literal); `--json` keeps the exact names.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from textual.content import Content

from tests.tui.support import screen_text, settled, wait_for_screen, wait_until
from tuidebug import cli
from tuidebug._proto import debug_graph_pb2 as pb
from tuidebug.cli import online as cli_online
from tuidebug.cli.common import EXIT_OK, LogLine
from tuidebug.core.graph import StackFrame
from tuidebug.core.session import HitsArrived, Metadata, MetadataChanged, SessionState
from tuidebug.core.text import printable
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

# What a hostile dump carries: OSC 0 (set the window title, ended by BEL), CSI 2J (clear
# the screen), a carriage return (overwrite the line), U+202E (show the rest reversed),
# and markup that Rich or Textual would act on.
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
EVIL_NODE = f"Default/net{TITLE}/ReLU{CLEAR}-op0\r[red]X[/red]\u202e"
EVIL_PARAM = "w\x1b[31m[b]eight"
EVIL_GRAPH = "graph\x1b]0;g\x07[b]"
EVIL_FILE = "junk\x1b]0;f\x07.txt"
EVIL_ATTR = ("k\x1b[5m", "[link=https://evil.example]v\x1b]0;x\x07")
EVIL_FRAME = StackFrame("/src/tr\x1b]0;t\x07[$accent].py", 3, "x = [bold]y\x1b[2J")
EVIL_DIR = "dump\x1b]0;d\x07"

# the same, as the terminal must show them
SHOWN_TITLE = "\\x1b]0;pwned\\x07"
SHOWN_SHORT = "ReLU\\x1b[2J-op0\\r[red]X[/red]\\u202e"


def write_hostile_dump(parent: Path) -> Path:
    """A one-node dump (a NaN in its output, so TO hits) under a folder whose own name is
    hostile; every name in it is too, and a stray file in the iteration folder has one."""
    root = parent / EVIL_DIR
    writer = DumpWriter(root, start_timestamp=1000)
    pb_path = writer.add_graph(
        0,
        [
            NodeDef(
                EVIL_NODE,
                "ReLU",
                [EVIL_PARAM],
                shape=(4,),
                attributes={EVIL_ATTR[0]: EVIL_ATTR[1]},
                stack=[EVIL_FRAME],
            )
        ],
        [ParamDef(EVIL_PARAM, np.float32, (4,))],
    )
    model = pb.ModelProto()
    model.ParseFromString(pb_path.read_bytes())
    model.graph.name = EVIL_GRAPH  # the writer names graphs itself
    pb_path.write_bytes(model.SerializeToString())
    folder = writer.write_iteration(
        0,
        0,
        {
            (EVIL_NODE, "output", 0): np.array([np.nan, 1, 2, 3], np.float32),
            (EVIL_PARAM, "output", 0): np.ones(4, np.float32),
        },
    )
    writer.finish()
    (folder / EVIL_FILE).write_text("not a tensor")
    return root


@pytest.fixture(scope="module")
def hostile_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_hostile_dump(tmp_path_factory.mktemp("hostile"))


def assert_clean(text: str, where: str) -> None:
    """Nothing but printable characters and line breaks."""
    raw = sorted({ch for ch in text if not ch.isprintable() and ch != "\n"})
    assert not raw, f"{where} carries raw control characters {raw!r}:\n{text}"


# ------------------------------------------------------------------ the one function
def test_printable_makes_every_attack_visible() -> None:
    shown = printable(EVIL_NODE)
    assert shown.isprintable()
    assert shown == f"Default/net{SHOWN_TITLE}/{SHOWN_SHORT}"
    assert printable("résumé/Conv2D-op1 ∈ [0, 1]") == "résumé/Conv2D-op1 ∈ [0, 1]"  # unchanged


def test_tui_markup_helper_keeps_every_bracket() -> None:
    """Textual's and Rich's own escape() leave `[$accent]`, `[B]`, `[ bold ]` to be read
    as tags; the TUI's markup_safe leaves none."""
    from tuidebug.tui.kit.labels import markup_safe, plain, shown_lines

    for text in (
        "[red]x[/red]",
        "[$accent]y",
        "[ bold ]z",
        "[B]q",
        "[@click=app.quit]c[/]",
        '[link="https://evil.example"]l[/]',
        "a\\[red]b",
        "x\\",
        EVIL_NODE,
    ):
        assert Content.from_markup(markup_safe(text)).plain == printable(text), text
    label = plain(EVIL_NODE, style="cyan")
    assert label.plain == printable(EVIL_NODE) and not label.spans[1:]
    assert shown_lines(f"a{CLEAR}\nb\r") == "a\\x1b[2J\nb\\r"  # our line breaks stay


# ------------------------------------------------------------------ tuidebug check
def run_check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_table_shows_names_escaped(
    capsys: pytest.CaptureFixture[str], hostile_dump: Path
) -> None:
    code, out, _ = run_check(capsys, str(hostile_dump), "--watch", "TO")
    assert code == 1
    assert_clean(out, "the table")
    header, row, summary = out.splitlines()  # a \r in a name cannot add or hide a row
    assert header.split() == ["ITER", "RANK", "SLOT", "WATCH", "RESULT", "NODE"]
    assert row.endswith(f"  Default/net{SHOWN_TITLE}/{SHOWN_SHORT}")
    assert summary.startswith("1 hit; 2 tensors checked")


def test_check_warnings_show_names_escaped(
    capsys: pytest.CaptureFixture[str], hostile_dump: Path
) -> None:
    _, _, err = run_check(capsys, str(hostile_dump), "--watch", "TO")
    assert_clean(err, "stderr")
    lines = err.splitlines()
    assert any("junk\\x1b]0;f\\x07.txt is not a MindSpore tensor file name" in ln for ln in lines)
    assert all(ln.startswith("warning: ") for ln in lines), lines


def test_check_json_keeps_the_exact_names(
    capsys: pytest.CaptureFixture[str], hostile_dump: Path
) -> None:
    code, out, _ = run_check(capsys, str(hostile_dump), "--watch", "TO", "--json")
    assert code == 1
    (hit,) = json.loads(out)
    assert hit["node"] == EVIL_NODE and hit["graph"] == EVIL_GRAPH


@pytest.mark.timeout(300)
def test_check_writes_no_control_byte_to_the_terminal(hostile_dump: Path) -> None:
    """The real process, bytes as the terminal would receive them."""
    proc = subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", str(hostile_dump), "--watch", "TO"],
        capture_output=True,
        timeout=240,
    )
    assert proc.returncode == 1, proc.stderr
    for name, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        raw = sorted({b for b in data if b < 0x20 and b != 0x0A} | ({0x7F} & set(data)))
        assert not raw, f"{name} carries control bytes {raw}"
        assert "\u202e".encode() not in data
    assert SHOWN_TITLE.encode() in proc.stdout


@pytest.mark.parametrize("command", ["check", "offline", "simulate"])
def test_sentences_show_a_hostile_path_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    missing = str(tmp_path / f"no{CLEAR}where{TITLE}")
    argv = [command, missing] + (["--watch", "TO"] if command == "check" else [])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert_clean(err, f"tuidebug {command}'s error")
    assert "no\\x1b[2Jwhere\\x1b]0;pwned\\x07" in err


# ------------------------------------------------------------------ other terminal lines
def test_headless_online_events_are_escaped() -> None:
    """`tuidebug online` off a terminal prints the training's events: node names and its
    messages come from the peer."""
    from tuidebug.core.condition_catalogue import get_condition
    from tuidebug.core.tensor import TensorRef
    from tuidebug.core.watchpoints import WatchpointHit

    md = Metadata(
        mode="online",
        source="ipv4:127.0.0.1:5",
        state=SessionState.WAITING,
        cur_node=EVIL_NODE,
        message=f"oops{CLEAR}",
    )
    text = cli_online._describe(MetadataChanged(md))
    assert_clean(text, "the event line")
    assert SHOWN_SHORT in text and "oops\\x1b[2J" in text
    hit = WatchpointHit(1, get_condition("TO"), TensorRef(EVIL_NODE, 0, 0, 0, EVIL_GRAPH), 0)
    lines = cli_online._describe(HitsArrived((hit,), 1))
    assert_clean(lines, "the hit lines")
    assert len(lines.splitlines()) == 2  # our line break, and no other


def test_simulate_log_lines_are_escaped() -> None:
    record = logging.LogRecord(
        "tuidebug.client", logging.WARNING, __file__, 1, "cannot read %s", (EVIL_NODE,), None
    )
    line = LogLine("tuidebug simulate").format(record)
    assert_clean(line, "the log line")
    assert line.startswith("tuidebug simulate: warning: cannot read Default/net" + SHOWN_TITLE)


def test_online_server_warnings_are_escaped_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server's warnings quote what a peer sent (a refused graph's node name): while
    `tuidebug online` runs they are one escaped line each on stderr, not logging's raw
    last-resort output; the handler goes when the command ends."""
    online_log = logging.getLogger("tuidebug.online")
    handlers = list(online_log.handlers)
    monkeypatch.setattr(cli_online, "_tui_runner", lambda: None)

    def a_peer_misbehaves() -> None:
        online_log.warning("SendGraph: the graph does not parse (node %s)", EVIL_NODE)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_online, "_wait_forever", a_peer_misbehaves)
    assert cli.main(["online", "--port", "0"]) == EXIT_OK
    err = capsys.readouterr().err
    assert_clean(err, "the server's warning")
    assert err.startswith("tuidebug online: warning: SendGraph: the graph does not parse")
    assert SHOWN_TITLE in err and len(err.splitlines()) == 1
    assert online_log.handlers == handlers


# ------------------------------------------------------------------ the TUI


@pytest.mark.timeout(180)
async def test_tui_shows_every_hostile_string_escaped(hostile_dump: Path) -> None:
    from textual.widgets import Tree

    from tuidebug.offline.session import OfflineSession
    from tuidebug.tui.app import DebuggerApp
    from tuidebug.tui.kit.dialogs import ConfirmScreen, HistoryScreen
    from tuidebug.tui.panes.hit_list import HitList
    from tuidebug.tui.panes.node_details import NodeDetails
    from tuidebug.tui.tensor.view import TensorView

    session = OfflineSession(hostile_dump)
    app = DebuggerApp(session, start_session=True)
    seen: list[str] = []

    def look(where: str) -> str:
        text = screen_text(app)
        assert_clean(text, where)
        seen.append(text)
        return text

    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)  # the recommended-watchpoint offer
        await pilot.press("n")
        await wait_until(
            pilot, lambda: app.loaded and app.screen is app.screen_stack[0], what="the graph"
        )
        await settled(pilot)
        # the toasts: the stray file, the execution order naming the node and the graph
        toasts = [n.message for n in app._notifications]
        assert toasts and all(m.replace("\n", "").isprintable() for m in toasts), toasts
        assert any("junk\\x1b]0;f\\x07.txt" in m for m in toasts), toasts
        header = look("the header and the toasts")
        assert "dump\\x1b]0;d\\x07" in header  # the dump folder, in the header

        # the tree, every scope open, and the node's details
        tree = app.query_one("#scope-tree", Tree)
        tree.root.expand_all()
        assert app.go_to_node(EVIL_GRAPH, EVIL_NODE)
        await wait_until(
            pilot,
            lambda: app.query_one(NodeDetails).node is not None,
            what="the node's details",
        )
        await settled(pilot)
        text = look("the tree and the node's details")
        assert f"net{SHOWN_TITLE}" in text  # the scope, in the tree
        assert SHOWN_SHORT in text  # the node, in the tree and the details
        assert "[red]X[/red]" in text  # markup shown as text, not applied
        assert "k\\x1b[5m = [link=https://evil.example]v\\x1b]0;x\\x07" in text  # attributes
        assert "tr\\x1b]0;t\\x07[$accent].py:3 x = [bold]y\\x1b[2J" in text  # the stack

        # a watchpoint on the node, a step: its hit, in the list and the hit pane
        session.create_watchpoint("TO", {}, [EVIL_NODE], EVIL_GRAPH)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.query_one(HitList).hit_count == 1, what="the hit")
        await pilot.press("2")
        await settled(pilot)
        text = look("the hit list and the watchpoint list")
        # the name's last part (after the "/" of "[/red]"): hit row, watchpoint, details
        assert text.count("red]\\u202e") >= 3

        # the stack pane
        await pilot.press("3")
        await settled(pilot)
        look("the stack pane")

        # the tensor of the hit: its title names the node
        await pilot.press("2")
        await settled(pilot)
        hits = app.query_one(HitList).query_one(Tree)
        hits.focus()
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view.state == "tensor", what="the hit's tensor")
        await settled(pilot)
        text = look("the tensor view")
        assert "red]\\u202e:0" in text

        # the history dialog names the graph
        await pilot.press("h")
        await wait_for_screen(pilot, HistoryScreen)
        await settled(pilot)
        assert "graph\\x1b]0;g\\x07[b]" in look("the history dialog")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HistoryScreen), what="close")

        # the session messages dialog quotes the notices
        app.action_messages()
        await wait_for_screen(pilot, ConfirmScreen)
        await settled(pilot)
        assert "junk\\x1b]0;f\\x07.txt" in look("the session messages")
    assert len(seen) == 7


def test_api_log_warnings_are_escaped_and_problems_exact(
    hostile_dump: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With no logging set up, Python prints the API's warnings on stderr."""
    from tuidebug.api import DumpAnalyzer, TensorOverflowCondition, Watchpoint

    with caplog.at_level(logging.WARNING, logger="tuidebug.api"):
        analyzer = DumpAnalyzer(str(hostile_dump))
        tensors = analyzer.select_tensors(query_string="")
        (hit,) = analyzer.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
    assert hit.tensor.node.name == EVIL_NODE  # the API's data stays exact
    logged = [r.getMessage() for r in caplog.records if r.name == "tuidebug.api"]
    assert any("graph\\x1b]0;g\\x07[b]" in line for line in logged), logged
    for line in logged:
        assert_clean(line, "an API warning")
    assert any(EVIL_GRAPH in problem for problem in analyzer.problems)  # the exact text
