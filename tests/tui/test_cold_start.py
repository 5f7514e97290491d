"""Cold start of the TUI (issue 13): the first frame loads only what it draws.

The screens and machinery a key opens later (the watchpoint editor, the origin screen and
its trace walk, the command palette's entries, the TOML parser of a keys file) load when
first used. The first frame's trap was the control bar asking the app's keys on mount:
`known_bindings()` imports every module of tuidebug.tui, so the app's own keys are read
from the app's class (`active_keys(..., owner=)`), which must give the same answer.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Input, OptionList, Select, Static, Tab
from textual.widgets.tabbed_content import ContentTabs

from tests.cli.test_cold_imports import offenders
from tests.conftest import REPO
from tests.tui.support import CONV, first_frame_of, synthetic_graph, tensor_shown, wait_until
from tuidebug.cli import main
from tuidebug.core.condition_catalogue import ParamResult, get_condition
from tuidebug.core.session import Capabilities
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.keymap import _own_bindings, _tui_classes, active_keys, known_bindings
from tuidebug.tui.kit import start_gc
from tuidebug.tui.navigation.left_tabs import LeftContentTabs
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.panes.scope_tree import ALL_TYPES, ScopeTree
from tuidebug.tui.panes.stack_list import StackList
from tuidebug.tui.run.actions import BAR_ACTIONS
from tuidebug.tui.run.control_bar import BarButton, ControlBar
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.watchpoints.list_pane import WatchpointList
from tuidebug.tui.watchpoints.shell import (
    COLUMNS,
    EMPTY_SENTENCE,
    WatchpointListShell,
    column_widths,
)

TIMEOUT = 180  # seconds: a fresh interpreter loading the dump and drawing, on a busy machine

FIRST_FRAME = """
import asyncio, json, sys
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp

async def first_frame() -> None:
    session = OfflineSession(sys.argv[1])
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(6000):
            if app.loaded:
                break
            await asyncio.sleep(0.01)
        assert app.loaded, "the dump did not load"
        await pilot.pause()
        await app.workers.wait_for_complete()
    session.close()

asyncio.run(first_frame())
print(json.dumps(sorted(sys.modules)))
"""

# packages no part of `tuidebug offline`'s start needs, each costing from a tenth of a second
# (networkx) to seconds (torch, tensorflow) to import: the first frame must stay within 1.5×
# a minimal Textual app's (issue 28, benchmarks/bench_cold_start.py)
HEAVY = (
    "numba",
    "llvmlite",
    "grpc",
    "networkx",
    "scipy",
    "dask",
    "distributed",
    "torch",
    "tensorflow",
    "pandas",
    "matplotlib",
)

# what `tuidebug offline DUMP` imports before its first frame (cli/offline.py → launch)
STARTUP_IMPORTS = """
import json, sys
import tuidebug.cli, tuidebug.cli.offline, tuidebug.cli.launch
import tuidebug.offline.layout.root, tuidebug.offline.session, tuidebug.tui.app
print(json.dumps(sorted(sys.modules)))
"""

# loaded by a key, never by the first frame (nor anything online or compiled)
NOT_AT_FIRST_FRAME = (
    *HEAVY,
    "tuidebug.online",
    "tuidebug._proto.debug_grpc_pb2",
    "tuidebug.tui.watchpoints.editor",
    "tuidebug.tui.origins.screen",
    "tuidebug.tui.palette.entries",
    "tuidebug.tui.panes.command_line",
    "tuidebug.core.origins",
    "tomllib",
    # the command layer: the command line's and the compare prompt's, a tenth of the start
    "tuidebug.commands",
)


@pytest.fixture(scope="module")
def startup_modules(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The modules a fresh interpreter holds after `tuidebug offline`'s start imports
    (STARTUP_IMPORTS reads no dump: the argument is only the runner's)."""
    folder = tmp_path_factory.mktemp("start")
    loaded = modules_loaded_by(STARTUP_IMPORTS, folder, folder)
    assert "tuidebug.tui.app" in loaded
    return loaded


def test_the_startup_imports_load_no_heavy_package(startup_modules: set[str]) -> None:
    """The modules `tuidebug offline` imports before drawing pull in none of HEAVY: a
    top-level import of one (numba for the scan kernel, grpc for the online side) would
    slow every start, and the first-frame figure would not say why."""
    assert offenders(startup_modules, HEAVY) == []


# the dump's readers: the load after the first frame needs them, the start does not (the
# layout lists the folders, the session module is built): protobuf and the graph parser,
# the .npy and .bin readers, the dump model
DUMP_READERS = (
    "google.protobuf",
    "tuidebug._proto",
    "tuidebug.core.graph_pb",
    "tuidebug.offline.dump",
    "tuidebug.offline.files.bin",
    "tuidebug.offline.files.bin_tensors",
    "tuidebug.offline.files.npy",
    "tuidebug.offline.layout.tensor_index",
    # is it an msprobe dump? `msprobe_root` answers from the folders; the readers of its
    # files (seven dataclasses, a JSON scanner) load only to open one (issue 28)
    "tuidebug.offline.files.msprobe",
    "tuidebug.offline.files.msprobe_json",
    # an iteration folder's lister, and the csv module its mapping.csv needs: the layout
    # lists the rank folders, an iteration is listed when its tensors are asked for
    "tuidebug.offline.layout.iteration_folder",
    "csv",
)

# what the command line loads only for an option it is given (here none: issue 28)
FOR_AN_OPTION = ("tuidebug.cli.watch_options",)

# `tuidebug offline DUMP` from the command line to the app (run_app replaced: no terminal)
START_PATH = """
import json, sys
import tuidebug.cli.launch, tuidebug.tui.app
from tuidebug.cli import main
tuidebug.tui.app.run_app = lambda session, **options: 0
tuidebug.cli.launch.on_terminal = lambda: True
assert main(["offline", sys.argv[1]]) == 0
print(json.dumps(sorted(sys.modules)))
"""


def modules_loaded_by(script: str, dump: Path, config: Path) -> set[str]:
    """The modules `script` (run on `dump` in a fresh process, no keys file) reports loaded."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(config)}
    env.pop("TUIDEBUG_KEYS", None)  # no keys file: the parser need not load
    result = subprocess.run(
        [sys.executable, "-c", script, str(dump)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def test_the_start_path_loads_no_dump_reader(dump_2_10: Path, tmp_path: Path) -> None:
    """`tuidebug offline` checks the dump folder and builds its session before the first
    frame: neither may load the readers the load uses after it (issue 28), nor may the
    app's modules, nor the validation of watch options it was not given."""
    loaded = modules_loaded_by(START_PATH, dump_2_10, tmp_path)
    assert "tuidebug.offline.layout.root" in loaded  # the folder was listed
    assert offenders(loaded, (*DUMP_READERS, *FOR_AN_OPTION)) == []


def test_first_frame_loads_no_screen_opened_later(dump_2_10: Path, tmp_path: Path) -> None:
    loaded = modules_loaded_by(FIRST_FRAME, dump_2_10, tmp_path)
    assert "tuidebug.tui.tensor.view" in loaded  # the frame was built
    assert offenders(loaded, NOT_AT_FIRST_FRAME) == []


# the modules loaded when the app has drawn its first frame (`_mount_hidden_tabs` runs just
# after it), before the dump is read: the load starts after it and brings numpy along
AT_FIRST_PAINT = """
import asyncio, json, sys
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp

seen: list[str] = []
after_first_frame = DebuggerApp._mount_hidden_tabs

def probe(app: DebuggerApp) -> None:
    if not seen:
        seen.extend(sys.modules)
    after_first_frame(app)

DebuggerApp._mount_hidden_tabs = probe  # (a subclass in -c: Textual finds no file for it)

async def first_paint() -> None:
    session = OfflineSession(sys.argv[1])
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(6000):
            if seen and app.loaded:
                break
            await asyncio.sleep(0.01)
        assert seen, "no first frame"
        await pilot.pause()
        await app.workers.wait_for_complete()
    session.close()

asyncio.run(first_paint())
print(json.dumps(sorted(seen)))
"""

# numpy (with ml_dtypes, ~75 ms) and the modules of the tensor view that draw and compute:
# no tensor can be shown before the dump is read, so none is needed before the first
# frame (issue 28); the tensor view's shell (`view`, `layout`) is
NOT_BEFORE_FIRST_PAINT = (
    "numpy",
    "ml_dtypes",
    "tuidebug.tui.tensor.canvas",
    "tuidebug.tui.tensor.find",
    "tuidebug.tui.tensor.find_box",
    "tuidebug.tui.tensor.format",
    "tuidebug.tui.tensor.grid",
    "tuidebug.tui.tensor.jobs",
    "tuidebug.tui.tensor.text",
    "tuidebug.tui.tensor.hit_note",
    "tuidebug.tui.tensor.statistics_panel",
    "tuidebug.core.tensor_search",
    # the watchpoint list, a DataTable: its shell stands in the first frame (issue 28)
    "textual.widgets._data_table",
    "tuidebug.tui.watchpoints.list_pane",
    # the palette's provider (Ctrl+P), the back/forward history (the first jump), the
    # trace's start (the first guard with a graph loaded)
    "tuidebug.tui.palette.provider",
    "tuidebug.tui.navigation.visit_history",
    "tuidebug.tui.origins.trace",
    # the app's helpers for a trace, the node screens, a compare and the watchpoint
    # dialogs, and the ASCII glyphs of a terminal without UTF-8: with their first use
    "tuidebug.tui.origins.runner",
    "tuidebug.tui.neighbours.opener",
    "tuidebug.tui.tensor.compare",
    "tuidebug.tui.kit.ascii_glyphs",
    "tuidebug.tui.watchpoints.flows",
    "tuidebug.tui.tensor.requests",  # the tensor reads: with the first node shown
    "tuidebug.tui.kit.screenshot",
    # the heatmap's colours: the start records the terminal's depth (terminal_caps.py)
    "tuidebug.tui.kit.colormap",
    # the Stack tab's list, mounted just after the first frame (`_mount_hidden_tabs`)
    "tuidebug.tui.panes.stack_list",
    # the hit rules (the hit list's alerts) and the watch targets (the tree's badges):
    # with the first hits and watchpoints, as in the session
    "tuidebug.core.hit_rules",
    "tuidebug.core.watch_targets",
    "tuidebug.tui.watchpoints.badges",
    # the watchpoint exports (and shlex): with the first --watch spec or export
    "tuidebug.tui.watchpoints.export",
    "shlex",
    # the help and the dialogs: they load with the first `?` or question (issue 28)
    "tuidebug.tui.keys.help_screen",
    "tuidebug.tui.kit.dialogs",
    "tuidebug.tui.kit.prompts",
)


def test_first_frame_is_drawn_without_numpy(dump_2_10: Path, tmp_path: Path) -> None:
    """The first frame of `tuidebug offline` (the layout, the panes' frames and empty
    states) is drawn before numpy or any of the tensor view's drawing modules load."""
    loaded = modules_loaded_by(AT_FIRST_PAINT, dump_2_10, tmp_path)
    assert "tuidebug.tui.tensor.view" in loaded  # the frame was built
    assert offenders(loaded, NOT_BEFORE_FIRST_PAINT) == []


def test_the_startup_imports_load_no_numpy(startup_modules: set[str]) -> None:
    """Nor do the modules `tuidebug offline` imports before drawing (the CLI's, the
    layout's, the session's, the app's) import numpy or the tensor view's heavy part."""
    assert offenders(startup_modules, NOT_BEFORE_FIRST_PAINT) == []


def test_every_binding_id_has_one_owner_class() -> None:
    """What makes the owner's keys equal to `known_bindings()`'s for its ids."""
    owners: dict[str, set[str]] = {}
    for cls in _tui_classes():
        for binding in _own_bindings(cls):
            if binding.id:
                owners.setdefault(binding.id, set()).add(cls.__qualname__)
    shared = {bid: names for bid, names in owners.items() if len(names) > 1}
    assert shared == {}


@pytest.mark.parametrize("binding_id", sorted(known_bindings()))
def test_app_keys_from_its_class_match_known_bindings(binding_id: str) -> None:
    assert active_keys(binding_id, {}, owner=DebuggerApp) == active_keys(binding_id, {})
    remapped = {binding_id: "ctrl+x"}
    assert active_keys(binding_id, remapped, owner=DebuggerApp) == ["ctrl+x"]


class _Later(App[None]):
    """An app that mounts a list after its first frame, as DebuggerApp mounts its hidden
    Hits and Stack tabs (issue 28)."""

    def compose(self) -> ComposeResult:
        yield Static("first frame")


def _hit(error: int = 0) -> WatchpointHit:
    params = () if error else (ParamResult("max_gt", 1.0, False, True, 3.0),)
    return WatchpointHit(1, get_condition("TL"), TensorRef(CONV, 0, 0, 0, "g"), error, params)


async def test_lists_keep_what_is_set_before_they_mount() -> None:
    """Hits, graphs and a node given to the Hits and Stack lists before they are mounted
    are kept and shown once they are; the keys reaching them meanwhile do nothing."""
    graph = synthetic_graph()
    app = _Later()
    async with app.run_test(size=(80, 24)) as pilot:
        hits, stack = HitList(id="hits"), StackList(id="stack")
        hits.set_context({graph.name: graph}, (0,))
        hits.set_hits([_hit(), _hit(4)])
        stack.set_graph(graph)  # indexes the source lines in a worker meanwhile
        stack.set_node(graph.nodes[CONV])
        assert not hits.built
        assert (hits.hit_count, hits.shown_count) == (2, 2)
        assert hits.alert_text == ""  # a TL hit, no NaN/Inf
        hits.focus_filters()
        stack.focus_search()
        assert hits.clear_name_filter() is False and stack.clear_search() is False
        await app.mount(hits, stack)
        await pilot.pause()
        assert hits.built
        assert len(hits.tree_view.root.children) > 0
        assert "2 hits" in str(hits.query_one("#hit-status", Static).content)
        lines = stack.query_one("#stack-lines", OptionList)
        await wait_until(pilot, lambda: stack.ready, what="the source lines indexed")
        assert lines.option_count > 0
        first = lines.get_option_at_index(0).prompt
        assert "stack of" in str(first)


class _ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TensorView()


async def test_tensor_view_builds_what_a_tensor_needs_when_one_is_shown() -> None:
    """The first frame's tensor view holds its message alone; the first tensor mounts the
    rest (hit note, title, slice bar, boxes, table, heatmap, …) in their order."""
    app = _ViewApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(TensorView)
        await pilot.pause()
        assert [child.id for child in view.children] == ["tv-message"]
        assert view.error_text == ""
        view.show("fc1.weight:0", np.arange(12, dtype=np.float32).reshape(3, 4))
        await tensor_shown(pilot, view)
        assert [child.id for child in view.children] == [
            "tv-hit",
            "tv-title",
            "tv-bar",
            "tv-error",
            "tv-goto",
            "tv-find",
            "tv-message",
            "tv-table",
            "tv-heatmap",
            "tv-legend",
            "tv-status",
            "tv-stats",
        ]
        assert view.table.display and view.query_one("#tv-bar").display
        assert view.query_one("#tv-slice", Input).value == "[:, :]"


class _TreeApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ScopeTree(id="scope")


def _filters_of(scope: ScopeTree) -> list[str]:
    return [child.id or "" for child in scope.children]


async def test_scope_filters_mount_after_the_first_frame_holding_what_was_set() -> None:
    """The graph and type selectors and the name box, hidden while there is no graph,
    are not in the first frame (issue 28); mounted later they show the graphs, the graph
    and the type filter set before, and keep working."""
    graph, other = synthetic_graph(), synthetic_graph("kernel_graph_1", scopes=2)
    app = _TreeApp()
    async with app.run_test(size=(80, 24)) as pilot:
        scope = app.query_one(ScopeTree)
        await pilot.pause()
        # no graph: mounted after the first frame, hidden, nothing to clear
        assert _filters_of(scope)[:3] == ["tree-filters", "name-filter", "filter-status"]
        assert not scope.query_one("#tree-filters").display
        assert scope.clear_filter() is False
        scope.set_graphs({graph.name: graph, other.name: other}, current=other.name)
        await pilot.pause()
        graph_select = scope.query_one("#graph-select", Select)
        assert graph_select.value == other.name
        assert scope.query_one("#tree-filters").display
        assert scope.graph is other and len(scope.tree_view.root.children) > 0


async def test_scope_filters_built_with_graphs_set_before_they_mount(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Graphs given before the filters mount (an online session's, in the app's on_mount)
    mount them at once, built holding the graphs; the type filter lists the graph's node
    types, and what is changed before the selectors compose is not lost."""
    graph = synthetic_graph()
    app = _Later()
    async with app.run_test(size=(80, 24)) as pilot:
        scope = ScopeTree(id="scope")
        # the first frame's refresh has not come yet: the filters wait for it
        monkeypatch.setattr(scope, "call_after_refresh", lambda *args, **kwargs: True)
        await app.mount(scope)
        assert not scope._filters_mounted
        scope.set_graphs({graph.name: graph})
        assert scope._filters_mounted  # at once: the graphs ask for them
        scope.query_one("#name-filter", Input).value = "conv"
        await pilot.pause()
        types = scope.query_one("#type-filter", Select)
        assert scope.query_one("#graph-select", Select).value == graph.name
        assert types.value == ALL_TYPES
        assert any(value == "Conv2D" for _, value in types._options)
        assert scope.clear_filter() is True


async def test_control_bar_builds_a_button_only_once_the_session_offers_it() -> None:
    """The first frame builds the buttons the session can use (issue 28); one it offers
    later (an online client with a GPU: next node) is mounted in its place, with the key
    and the state asked for meanwhile, and one it stops offering is hidden as before."""
    offline = Capabilities(can_reset_step=True)
    app = _Later()
    async with app.run_test(size=(160, 24)) as pilot:
        bar = ControlBar(capabilities=offline)
        await app.mount(bar)
        offered = [a.id for a in BAR_ACTIONS if a.offered(offline)]
        assert [b.id for b in bar.query(BarButton)] == [f"control-{i}" for i in offered]
        assert "step_node" not in offered
        bar.set_keys(lambda action: f"<{action}>")
        bar.update_enabled(lambda action: action != "step_node")
        bar.set_capabilities(Capabilities(can_step_node=True))
        await pilot.pause()
        ids = [b.id for b in bar.query(BarButton)]
        assert ids == [
            f"control-{a.id}" for a in BAR_ACTIONS if a.id in offered or a.id == "step_node"
        ]
        node = bar.query_one("#control-step_node", Button)
        assert node.display and node.disabled and str(node.label).startswith("<step_node>")
        assert not bar.query_one("#control-reset_step", Button).display  # no longer offered


def test_offline_pauses_the_collector_until_the_app_and_resumes_it_on_refusal(
    monkeypatch: pytest.MonkeyPatch, dump_2_0: Path, tmp_path: Path
) -> None:
    """`tuidebug offline` runs its imports and the app's start with the garbage collector
    off (issue 28): the app gets it off and resumes it; a refusal or an error leaves it on,
    and a collector the caller had turned off stays off."""
    seen: list[bool] = []

    def fake_run_app(session: object, **_options: object) -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr("tuidebug.tui.app.run_app", fake_run_app)
    monkeypatch.setattr("tuidebug.cli.launch.on_terminal", lambda: True)
    assert gc.isenabled()
    assert main(["offline", str(dump_2_0)]) == 0
    assert seen == [False] and gc.isenabled()
    assert main(["offline", str(tmp_path / "missing")]) == 2
    assert gc.isenabled()
    gc.disable()
    try:
        assert main(["offline", str(dump_2_0)]) == 0
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()


async def test_the_app_resumes_the_collector_once_its_first_frame_is_drawn(
    dump_2_10: Path,
) -> None:
    session = OfflineSession(dump_2_10)
    app = DebuggerApp(session)
    start_gc.pause()
    try:
        assert not gc.isenabled()
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, gc.isenabled, what="the collector back on")
    finally:
        start_gc.resume()
        gc.enable()
        session.close()


class _Buttons(App[None]):
    """Three buttons of one class as the control bar lays them out: one disabled."""

    CSS = "Horizontal { height: 1; } Horizontal > * { margin: 0; min-width: 6; }"

    def __init__(self, button: type[Button], theme: str) -> None:
        super().__init__()
        self._button, self._theme = button, theme

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield self._button("j Step", compact=True, id="step")
            yield self._button("c Continue", compact=True, disabled=True, id="continue")
            yield self._button("r Recheck", compact=True, id="recheck")

    def on_mount(self) -> None:
        self.theme = self._theme


async def _buttons_drawn(button: type[Button], theme: str, state: str) -> str:
    app = _Buttons(button, theme)
    async with app.run_test(size=(60, 3)) as pilot:
        await pilot.pause()
        if state == "focus":
            app.query_one("#step").focus()
        elif state == "hover":
            await pilot.hover("#recheck")
        elif state == "active":
            app.query_one("#recheck").add_class("-active")
        await pilot.pause()
        return re.sub(r"terminal-\d+", "terminal", app.export_screenshot())


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light", "ansi-dark"])
@pytest.mark.parametrize("state", ["plain", "focus", "hover", "active"])
async def test_bar_buttons_look_like_textual_buttons(theme: str, state: str) -> None:
    """The control bar's buttons take only the part of Button's stylesheet that styles a
    compact default button (issue 28): drawn in each theme and state (a disabled one
    among them), they look exactly like Button's — a Textual upgrade that restyles
    Button shows here."""
    assert await _buttons_drawn(BarButton, theme, state) == await _buttons_drawn(
        Button, theme, state
    )


def test_the_empty_sentence_is_whole_in_an_80_column_terminal() -> None:
    """The empty list's sentence sits in the condition column: at 80 columns (and wider)
    it is not cut (it once read "none yet: pres")."""
    condition = [key for key, _ in COLUMNS].index("name")
    for width in (80, 100, 160, 240):
        assert len(EMPTY_SENTENCE) <= column_widths(width)[condition]


async def test_watchpoint_pane_is_a_shell_in_the_first_frame_then_the_table(
    dump_2_10: Path,
) -> None:
    """With no watchpoint yet, the first frame's watchpoint pane is the shell (the pane's
    id, title, column titles and empty sentence, without the DataTable's styling and
    columns: issue 28); the list takes its place just after that frame."""
    session = OfflineSession(str(dump_2_10))
    app = DebuggerApp(session, start_session=True)

    def probe(app: DebuggerApp) -> list[object]:
        pane = app.query_one("#watchpoints")
        return [pane, pane.border_title, str(pane.render())]

    with first_frame_of(probe) as first:
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_until(pilot, lambda: bool(first) and app.loaded, what="the first frame")
            shell, title, text = first
            assert isinstance(shell, WatchpointListShell)
            assert title == "6 Watchpoints"
            assert "condition" in str(text) and EMPTY_SENTENCE in str(text)
            await wait_until(
                pilot,
                lambda: isinstance(app.query_one("#watchpoints"), WatchpointList),
                what="the list in the shell's place",
            )
            assert not app.query(WatchpointListShell)
            assert app.query_one(WatchpointList).row_count == 1  # EMPTY_SENTENCE
            await app.workers.wait_for_complete()
    session.close()


async def test_the_tab_bar_is_one_widget_in_the_first_frame_then_textuals(
    dump_2_10: Path,
) -> None:
    """The first frame's left tab bar is one widget drawing the labels and the underline
    (LeftContentTabs: no Tab, no Underline, no container styled or laid out for it, nor
    their stylesheets parsed: issue 28); Textual's bar takes its place just after."""
    session = OfflineSession(str(dump_2_10))
    app = DebuggerApp(session, start_session=True)

    def probe(app: DebuggerApp) -> list[object]:
        bar = app.query_one("#left-tabs").query_one(ContentTabs)
        drawn = isinstance(bar, LeftContentTabs) and bar.drawn_by_itself
        return [bar, drawn, len(bar.children), len(app.query(Tab)), len(app.query("Underline"))]

    with first_frame_of(probe) as first:
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_until(pilot, lambda: bool(first) and app.loaded, what="the first frame")
            bar, drawn, children, tabs, underlines = first
            assert isinstance(bar, LeftContentTabs) and drawn
            assert (children, tabs, underlines) == (0, 0, 0)
            # the bar turns real once its recompose is done; its three Tabs are queryable
            # a moment before (waiting on them alone raced, and failed once in CI)
            await wait_until(pilot, lambda: not bar.drawn_by_itself, what="Textual's tab bar")
            assert len(app.query(Tab)) == 3 and len(app.query("Underline")) == 1
            await app.workers.wait_for_complete()
    session.close()


# an app started for a 16-colour terminal without UTF-8, then the heatmap's module loaded
# (with the first tensor, after the first frame): it draws for that terminal
HEATMAP_AFTER_START = """
import json, sys
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.terminal_caps import TerminalCaps

DebuggerApp(OfflineSession(sys.argv[1]), terminal=TerminalCaps("16", unicode=False))
seen = ["colormap at the start"] if "tuidebug.tui.kit.colormap" in sys.modules else []
from tuidebug.tui.kit import colormap

glyph, style = colormap.half_block_cell("diverging", 0, 255)
sixteen = colormap.palettes_for("16")["diverging"].tolist()
seen.append(f"glyph {glyph!r}, 16 colours: {colormap.code_rgb('diverging', 0) == tuple(sixteen[0])}")
print(json.dumps(seen))
"""


def test_the_heatmap_loaded_after_the_start_draws_for_its_terminal(
    dump_2_10: Path, tmp_path: Path
) -> None:
    """The start records the terminal's depth without loading the heatmap's colours
    (terminal_caps.draw_for, issue 28); loaded with the first tensor, they are the
    terminal's: 16 colours, and blank cells instead of half blocks without UTF-8."""
    seen = modules_loaded_by(HEATMAP_AFTER_START, dump_2_10, tmp_path)
    assert seen == {"glyph ' ', 16 colours: True"}
