"""A TensorFlow Debugger V2 dump in the TUI (issue 32), opened as `tuidebug offline DIR`
opens it: the graph's tree of ops by name scope, an op's details (type, inputs, the stack
with the dump's own source line) and its health summary, continue to the NaN/Inf step,
whose first hit is the op TensorFlow's DebugDataReader names (tests/data/tfdbg), and `L`
lists the step's outputs with their health."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from tests.conftest import REPO
from tests.tui.support import settled, wait_for_screen, wait_until
from tests.tui.test_tui_tensor_list import health_known, open_list
from tuidebug.core.tensor_health import Health
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.node_details import NodeDetails

SIZE = (160, 48)
DUMP = REPO / "tests" / "data" / "tfdbg" / "full_health"


async def test_tfdbg_dump_opens_shows_an_op_and_finds_tensorflows_first_nan() -> None:
    first = json.loads((DUMP / "expected.json").read_text())["first_non_finite"]
    session = OfflineSession(DUMP)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="the dump")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("n")
        await settled(pilot)
        assert "step 0/5" in str(app.query_one(SessionHeader).render())
        await pilot.press("n")
        await wait_until(pilot, lambda: session.metadata.step == 1, what="step 1")
        await settled(pilot)
        assert app.go_to_node("step", "Log")
        details = app.query_one(NodeDetails)
        await wait_until(pilot, lambda: details.summary_text(0), what="Log's health summary")
        shown = " ".join(str(w.render()) for w in details.query("Static"))
        assert "MatMul" in shown  # its input
        # continue: the first hit is TensorFlow's first non-finite op, at its call
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(session.hits), what="hits")
        await settled(pilot)
        hit = session.hits[0]
        assert (hit.tensor.node, hit.tensor.graph) == (first["op_name"], first["graph_name"])
        assert session.metadata.step == first["call"] + 1  # TUI step s shows iteration s-1
        # L: the step's outputs with their health from the FULL_HEALTH counts
        screen = await open_list(pilot)
        await health_known(pilot, screen)
        health = {e.node: h for e, h in zip(screen.entries, screen.health, strict=True)}
        assert health["MatMul"] is Health.NORMAL
        assert health["Log"] in (Health.NAN, Health.INF)


async def test_markup_and_escapes_in_op_names_are_shown_as_text(tmp_path: Path) -> None:
    """An op name with Rich markup and a terminal escape (a hostile dump) opens: the tree
    and the node details show it as text, nothing is interpreted."""
    import shutil

    from tests.offline.test_foreign_tfdbg import _framed
    from tuidebug._proto import tfdbg_event_pb2 as pb
    from tuidebug.offline.files.tfdbg import read_records

    bad = "Log[bold red]x[/]\x1b]0;pwned\x07"
    folder = tmp_path / "d"
    shutil.copytree(DUMP, folder)
    for kind in ("graphs", "graph_execution_traces"):
        path = next(folder.glob(f"*.{kind}"))
        framed = b""
        for data in read_records(path)[0]:
            event = pb.DebugEvent.FromString(data)
            if event.graph_op_creation.op_name == "Log":
                event.graph_op_creation.op_name = bad
            if event.graph_execution_trace.op_name == "Log":
                event.graph_execution_trace.op_name = bad
            framed += _framed(event.SerializeToString())
        path.write_bytes(framed)
    session = OfflineSession(folder)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="the dump")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("n")
        await settled(pilot)
        assert app.go_to_node("step", bad)
        await settled(pilot)
        shown = " ".join(str(w.render()) for w in app.query_one(NodeDetails).query("Static"))
        assert "[bold red]" in shown and "\x1b" not in shown


async def test_full_tensor_hit_opens_the_recorded_values_in_the_tensor_view() -> None:
    """FULL_TENSOR: continue to the first NaN/Inf hit (TensorFlow's first non-finite op)
    and Enter on it: the tensor view shows the value the trace recorded (-Inf), as
    DebugDataReader reads it (tests/data/tfdbg/tf_values.py)."""
    from tests.tui.support import tensor_shown
    from tuidebug.tui.messages import HitChosen
    from tuidebug.tui.tensor.view import TensorView

    dump = DUMP.parent / "full_tensor"
    first = json.loads((dump / "expected.json").read_text())["first_non_finite"]
    rows = json.loads((dump / "tf_values.json").read_text())["graph_execution_traces"]
    want = next(r for r in rows if r["index"] == first["index"])
    session = OfflineSession(dump)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="the dump")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("n")
        await settled(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(session.hits), what="hits")
        await settled(pilot)
        hit = session.hits[0]
        assert (hit.tensor.node, hit.tensor.iteration) == (first["op_name"], first["call"])
        app.post_message(HitChosen(hit))  # as Enter on the row
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view.title.startswith("Log"), what="the tensor")
        await tensor_shown(pilot, view)
        shown = view._displayed()
        assert shown is not None and shown.shape == tuple(want["shape"])
        assert str(shown.flat[0]) == str(want["value"][0][0]) == "-inf"
        # L: the step's outputs with their health read from the recorded values
        await pilot.press("escape")
        await settled(pilot)
        screen = await open_list(pilot)
        await health_known(pilot, screen)
        health = {e.node: h for e, h in zip(screen.entries, screen.health, strict=True)}
        assert health["Log"] is Health.INF and health["MatMul"] is Health.ZERO


async def test_source_view_shows_the_whole_file_from_the_dumps_own_text(tmp_path: Path) -> None:
    """`v`/Enter on a stack frame: the file is the dump's `.source_files` copy, whole, with
    no file of that path here; hostile text in it is shown escaped."""
    import shutil

    from tests.offline.test_foreign_tfdbg import _framed
    from tuidebug._proto import tfdbg_event_pb2 as pb
    from tuidebug.offline.files.tfdbg import read_records
    from tuidebug.tui.neighbours.source_screen import SourceScreen

    elsewhere = "/nowhere/on/this/machine/make_dumps.py"
    folder = tmp_path / "d"
    shutil.copytree(DUMP, folder)
    path = next(folder.glob("*.source_files"))
    framed = b""
    text: list[str] = []
    for data in read_records(path)[0]:
        event = pb.DebugEvent.FromString(data)
        if event.source_file.file_path.endswith("make_dumps.py"):
            event.source_file.file_path = elsewhere
            event.source_file.lines[0] = "#!\x1b[2J[bold red]boom[/]"
            text = list(event.source_file.lines)
        framed += _framed(event.SerializeToString())
    path.write_bytes(framed)
    assert text
    session = OfflineSession(folder)
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded, what="the dump")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("n")
        await settled(pilot)
        log = app.graphs["step"].nodes["Log"]
        frame = next(f for f in log.stack if f.code_line.startswith("z = tf.math.log(y)"))
        assert frame.file_path == elsewhere and frame.line_no
        app._node_screens.source(frame.file_path, frame.line_no)
        screen = await wait_for_screen(pilot, SourceScreen)
        await wait_until(pilot, lambda: screen.whole_file is not None, what="the file read")
        await settled(pilot)
        assert screen.whole_file is True and len(screen.code.lines) == len(text)
        assert "dump's own copy" in str(screen.query_one("#source-note").render())
        assert screen.code.lines[frame.line_no - 1].text == text[frame.line_no - 1]
        screen.code.set_cursor(0)
        await settled(pilot)
        first = screen.code.render_line(0 - round(screen.code.scroll_y)).text
        assert "\x1b" not in first and "[bold red]boom[/]" in first


def _past(session: OfflineSession, step: int) -> bool:
    return session.metadata.step > step


async def test_history_lists_the_derived_steps_with_their_function_and_hits() -> None:
    """`h` on the Keras fit dump: one row per derived step for the train function's call
    (the graph it contains as its sub-graph) and the eager graph, and after `c` stops at
    the NaN batch's step, that step's hits in its row (TensorFlow: the train function's
    first non-finite op is at call 3)."""
    from textual.widgets import DataTable

    from tuidebug.tui.kit.dialogs import HistoryScreen

    dump = DUMP.parent / "keras_fit"
    want = json.loads((dump / "expected.json").read_text())
    session = OfflineSession(dump)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="the dump")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("n")
        await settled(pilot)
        while not any(h.tensor.graph == "one_step_on_data" for h in session.hits):
            moved = partial(_past, session, session.metadata.step)
            await pilot.press("c")
            await wait_until(pilot, moved, what="a stop")
            await settled(pilot)
        nan_step = want["first_non_finite_in_train_function"]["call"] + 1  # TUI steps: 1-based
        assert session.metadata.step == nan_step
        await pilot.press("h")
        screen = await wait_for_screen(pilot, HistoryScreen)
        table = screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count > 0, what="the history rows")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        function = [r for r in rows if r[2] == "multi_step_on_iterator"]
        assert len(function) == want["function_calls"] == 6
        assert all(r[-1] == "one_step_on_data" for r in function)
        assert {r[2] for r in rows} == {"multi_step_on_iterator", "eager"}
        hits_of = {int(r[1]): r[-2] for r in function}
        assert hits_of[nan_step - 1].strip() and not hits_of[0].strip()
        assert "dumped folders" not in " ".join(" ".join(r) for r in rows)


async def test_curt_health_continue_stops_at_tensorflows_first_non_finite_op() -> None:
    """CURT_HEALTH's one flag decides TO in the TUI: `c` stops at the step and op
    DebugDataReader names first, and no refusal is said for TO."""
    from tests.tui.support import notices

    dump = DUMP.parent / "curt_health"
    first = json.loads((dump / "expected.json").read_text())["first_non_finite"]
    session = OfflineSession(dump)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="the dump")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("n")
        await settled(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(session.hits), what="hits")
        await settled(pilot)
        hit = session.hits[0]
        assert (hit.tensor.node, hit.tensor.iteration) == (first["op_name"], first["call"])
        assert not [n for n in notices(app) if "cannot be checked" in n]
