"""The debugger app: one screen of panes around a `DebugSession`.

The app is the only place that talks to the session. Panes post messages (messages.py);
the app turns them into session calls run in thread workers of named exclusive groups
(`load`, `control`, `watchpoints`, `tensor`, `summaries`), and turns the session's events,
which arrive on any thread, into `SessionEventMessage`s handled on the UI thread.
Whether a key works is decided in one place, `action_state`, which feeds the footer
(`check_action`), the control bar, the palette and the "why not" notification.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, Input, TabbedContent, TabPane
from textual.worker import get_current_worker

from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.core.origins import OriginTrace, TraceCancelled, trace_in_session
from tuidebug.core.session import (
    ClientDisconnected,
    DebugSession,
    GraphsLoaded,
    HitsArrived,
    Metadata,
    MetadataChanged,
    Notice,
    Progress,
    SessionError,
    SessionEvent,
    SessionState,
    WatchpointsChanged,
)
from tuidebug.core.tensor import TensorRef, tensor_statistics
from tuidebug.core.watchpoints import (
    Watchpoint,
    WatchpointError,
    WatchpointHit,
    hit_record,
    parse_watch_spec,
    resolve_targets,
)
from tuidebug.tui.commands import (
    DebuggerCommands,
    PaletteCommand,
    check_command,
    watch_file_text,
)
from tuidebug.tui.control_bar import ControlBar
from tuidebug.tui.dialogs import (
    ConfirmScreen,
    HistoryScreen,
    PromptScreen,
    int_check,
    path_check,
)
from tuidebug.tui.header import SessionHeader
from tuidebug.tui.help_screen import HelpScreen, KeyRow, context_help
from tuidebug.tui.hit_list import HitList
from tuidebug.tui.keymap import Keymap, active_keys, load_keymap
from tuidebug.tui.labels import shown_lines
from tuidebug.tui.messages import (
    ControlRequested,
    GraphSwitched,
    HitChosen,
    NodeChosen,
    NodeHighlighted,
    SessionEventMessage,
    TensorRequested,
    WatchpointAction,
)
from tuidebug.tui.node_details import NodeDetails, OutputSummary
from tuidebug.tui.origin_screen import Counts, OriginScreen
from tuidebug.tui.scope_tree import ScopeTree
from tuidebug.tui.stack_list import StackList
from tuidebug.tui.tensor_view import TensorView
from tuidebug.tui.watchpoint_editor import WatchpointDraft, WatchpointEditor
from tuidebug.tui.watchpoint_list import WatchpointList, watch_badges

# Actions the session's capabilities or state can refuse; keys for them are greyed out in
# the footer and explained when pressed.
GUARDED_ACTIONS = frozenset(
    {
        "step",
        "step_many",
        "continue",
        "step_node",
        "run_to_node",
        "pause",
        "terminate",
        "reset_step",
        "recheck",
        "history",
        "new_watchpoint",
        "trace_origin",
    }
)

TRACE_PROGRESS_AFTER = 0.5  # seconds before a running trace shows "Tracing… N tensors read"
MAX_COUNTED_ORIGINS = 20  # origins whose NaN/Inf are counted for the origin screen

# Pane number → (tab to show or None, widget id to focus)
PANES: dict[int, tuple[str | None, str, str]] = {
    1: ("tree-tab", "#scope-tree", "scope tree"),
    2: ("hits-tab", "#hit-tree", "hit list"),
    3: ("stack-tab", "#stack-lines", "stack list"),
    4: (None, "#io-list", "node details"),
    5: (None, "#tensor-view", "tensor view"),
    6: (None, "#watchpoints", "watchpoint list"),
}

# Help rows the binding list does not word well: (the key as fixed text, or the ids of the
# bindings whose current keys are shown — so a remapped key shows as remapped; what it does)
EXTRA_KEYS: tuple[tuple[str | tuple[str, ...], str], ...] = (
    ("enter", "open: a node's tensor, a hit's node, a stack line's nodes, edit a watchpoint"),
    (("tuidebug.back",), "back: clear a filter, or return to the previous pane"),
    (
        tuple(f"tuidebug.pane{n}" for n in PANES),
        "focus tree, hits, stack, details, tensor, watchpoints",
    ),
    ("← →", "tree: collapse / expand a scope"),
    (
        ("watchpoints.edit", "watchpoints.delete", "watchpoints.toggle"),
        "watchpoint list: edit / delete / enable-disable",
    ),
    ("ctrl+p", "command palette: state-aware commands and go to node"),
)


def _tolerate_teardown(method: Callable[..., Any]) -> Callable[..., Any]:
    """Messages can still arrive while the app shuts down and its panes are already gone
    (quitting right after a load): such a late message is dropped, not a traceback."""

    @functools.wraps(method)
    def handler(self: DebuggerApp, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except NoMatches:
            return None

    return handler


@dataclass(frozen=True)
class ActionState:
    enabled: bool
    reason: str = ""


class DebuggerApp(App[int]):
    """The graph debugger. `run_app(session)` is the usual way in."""

    CSS_PATH = "app.tcss"
    TITLE = "tuidebug"
    # One provider, so the debugger's commands come first and Textual's own (theme,
    # screenshot, maximize) follow them instead of landing in the middle at random.
    COMMANDS: ClassVar[set[Any]] = {DebuggerCommands}
    ENABLE_COMMAND_PALETTE = True

    # The run keys (and w) are not in the footer: the control bar under the watchpoints lists them
    # (key first) and greys them exactly like the keys, so the footer keeps room for the
    # focused pane's keys.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "step", "Step", show=False, id="tuidebug.step"),
        Binding("N", "step_many", "Step N", show=False, id="tuidebug.step_many"),
        Binding("c", "continue", "Continue", show=False, id="tuidebug.continue"),
        Binding("x", "step_node", "Next node", show=False, id="tuidebug.step_node"),
        Binding("X", "run_to_node", "Run to node", show=False, id="tuidebug.run_to_node"),
        Binding("p", "pause", "Pause", show=False, id="tuidebug.pause"),
        Binding("T", "terminate", "Terminate", show=False, id="tuidebug.terminate"),
        Binding("g", "reset_step", "Go to step", show=False, id="tuidebug.reset_step"),
        Binding("r", "recheck", "Recheck", show=False, id="tuidebug.recheck"),
        Binding("h", "history", "History", show=False, id="tuidebug.history"),
        Binding("w", "new_watchpoint", "Watch", show=False, id="tuidebug.new_watchpoint"),
        Binding("o", "trace_origin", "Trace NaN", show=False, id="tuidebug.trace_origin"),
        Binding("slash", "filter", "Filter", id="tuidebug.filter"),
        Binding("escape", "back", "Back", show=False, id="tuidebug.back"),
        Binding("question_mark,f1", "help", "Help", id="tuidebug.help"),
        Binding("q", "quit", "Quit", id="tuidebug.quit"),
        *(
            Binding(str(n), f"focus_pane({n})", PANES[n][2], show=False, id=f"tuidebug.pane{n}")
            for n in PANES
        ),
    ]

    def __init__(
        self,
        session: DebugSession,
        *,
        start_session: bool = False,
        source_label: str | None = None,
        user_keys: bool = False,
        watch_specs: Sequence[str] = (),
        recommended: bool = False,
    ) -> None:
        """`start_session=True`: call `session.start()` in a worker once mounted.
        `source_label` replaces the dump path in the header (stable screenshots).
        `user_keys=True` applies the user's keys.toml (`run_app` does; tests and
        screenshots leave it off so a developer's own file cannot change them).
        `watch_specs` (`--watch`, `--watch-file`) and `recommended` (`--recommended`) are
        created once the graphs are loaded, instead of offering the recommended set."""
        super().__init__()
        self._startup_specs = tuple(watch_specs)
        self._startup_recommended = recommended
        # watchpoint id → the spec the user wrote for it (`1e3` stays `1e3` in exports)
        self._given_specs: dict[int, str] = {}
        self._user_keys = user_keys
        self.keymap: Keymap = {}  # binding id → keys, as applied (see keymap.py)
        self.session = session
        self._start_session_on_mount = start_session
        self._source_label = source_label
        self._unsubscribe: Callable[[], None] | None = None
        self.graphs: dict[str, Graph] = {}
        self.current_graph: str | None = None
        self.current_node: Node | None = None
        self._metadata: Metadata = session.metadata
        self._control_busy = False
        self._recommendation_offered = False
        self._focus_history: list[Widget] = []
        self._open_tensor: tuple[str, str, int, int | None] | None = None  # graph, node, slot, it
        self._last_step = self._metadata.step
        self.loaded = False  # GraphsLoaded seen (tests and benchmarks wait on it)
        self.messages: list[Notice] = []  # every Notice of the session, for the dialog
        self._pending_notices: list[Notice] = []
        self._tracing = False  # a NaN/Inf trace runs (Esc cancels it)

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield SessionHeader(id="header")
        with Horizontal(id="main"):
            with Vertical(id="left"), TabbedContent(id="left-tabs", initial="tree-tab"):
                with TabPane("1 Tree", id="tree-tab"):
                    yield ScopeTree(id="scope")
                with TabPane("2 Hits", id="hits-tab"):
                    yield HitList(id="hits")
                with TabPane("3 Stack", id="stack-tab"):
                    yield StackList(id="stack")
            with Vertical(id="right"):
                details = NodeDetails(id="details")
                details.border_title = "4 Node"
                yield details
                tensor = TensorView(id="tensor-view")
                tensor.border_title = "5 Tensor"
                yield tensor
        watchpoints = WatchpointList(id="watchpoints")
        watchpoints.border_title = "6 Watchpoints"
        yield watchpoints
        yield ControlBar(id="controls")
        yield Footer()

    def on_mount(self) -> None:
        if self._user_keys:
            self._apply_user_keys()
        self.query_one(ControlBar).set_keys(lambda action: self.key_hint(f"tuidebug.{action}"))
        header = self.query_one(SessionHeader)
        if self._source_label is not None:
            header.shown_source = self._source_label
        self._apply_metadata(self.session.metadata)
        self.query_one(WatchpointList).set_watchpoints(self.session.watchpoints)
        self._unsubscribe = self.session.subscribe(self._on_session_event_thread)
        if self.session.graphs:
            # The session was started before the app (online): its first GraphsLoaded has
            # gone by, so offer the recommended watchpoints now if none exist yet.
            fresh = not self.session.watchpoints
            self._graphs_loaded(self.session.graphs, first_time=fresh)
            self._hits_changed(self.session.hits)
        if self._start_session_on_mount:
            self._start_session()
        self.query_one("#scope-tree").focus()

    def _apply_user_keys(self) -> None:
        """Remap keys from the user's keys.toml; its mistakes are one warning, never a
        traceback (the valid entries still apply)."""
        self.keymap, problems = load_keymap()
        if self.keymap:
            self.set_keymap(self.keymap)
        if problems:
            shown = problems[:3]
            if len(problems) > 3:
                shown.append(f"(+{len(problems) - 3} more: `tuidebug keys` lists them)")
            self.notify(
                "\n".join(shown),
                title="Your keys file",
                severity="warning",
                timeout=20,
                markup=False,  # the sentences quote [keys]
            )

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast (the panes' too: Widget.notify lands here) shows text that may name
        a node, a file or a training's error: escaped line by line, never read as markup
        (no toast of ours uses markup)."""
        super().notify(
            shown_lines(message),
            title=shown_lines(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def key_hint(self, binding_id: str) -> str:
        """The first key that runs `binding_id` now, as the help and the palette show it."""
        keys = active_keys(binding_id, self.keymap)
        return _key_display(keys[0]) if keys else binding_id

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # --------------------------------------------------------- session events
    def _on_session_event_thread(self, event: SessionEvent) -> None:
        """Called by the session on any thread: hop onto the UI thread."""
        self.post_message(SessionEventMessage(event))

    @on(SessionEventMessage)
    @_tolerate_teardown
    def _session_event(self, message: SessionEventMessage) -> None:
        event = message.event
        if isinstance(event, GraphsLoaded):
            self._graphs_loaded(event.graphs, first_time=event.first_time)
        elif isinstance(event, MetadataChanged):
            self._apply_metadata(event.metadata)
        elif isinstance(event, WatchpointsChanged):
            self.query_one(WatchpointList).set_watchpoints(event.watchpoints)
            self._refresh_badges()
            # the watchpoint count is in the control bar, and recheck needs a watchpoint
            self._update_controls()
            self.refresh_bindings()
        elif isinstance(event, HitsArrived):
            self._hits_changed(event.hits, announce=True)
        elif isinstance(event, Progress):
            self.query_one(SessionHeader).set_progress(event.label, event.done, event.total)
        elif isinstance(event, ClientDisconnected):
            self.notify(event.reason or "The training disconnected.", severity="warning")
        elif isinstance(event, Notice):
            self._queue_notice(event)

    def _queue_notice(self, notice: Notice) -> None:
        """Notices often come in bursts (one per odd file of a dump): keep them all for the
        messages dialog, but toast a burst once, after the events queued with it."""
        self.messages.append(notice)
        self._pending_notices.append(notice)
        if len(self._pending_notices) == 1:
            self.call_later(self._flush_notices)

    def _flush_notices(self) -> None:
        pending, self._pending_notices = self._pending_notices, []
        if not pending:
            return
        order = {"information": 0, "warning": 1, "error": 2}
        worst = max(pending, key=lambda n: order.get(n.severity, 0))
        severity = worst.severity if worst.severity in order else "information"
        text = pending[0].message
        if len(pending) > 1:
            text += f"\n(+{len(pending) - 1} more: Ctrl+P → Session messages)"
        self.notify(text, severity=severity)  # type: ignore[arg-type]

    def action_messages(self) -> None:
        if not self.messages:
            self.notify("The session has sent no messages.")
            return
        body = "\n".join(f"• {n.message}" for n in self.messages[-200:])
        self.push_screen(ConfirmScreen("Session messages", body, yes="Close", no="Close"))

    def _graphs_loaded(self, graphs: Mapping[str, Graph], *, first_time: bool) -> None:
        self.graphs = dict(graphs)
        self.loaded = True
        self.query_one(StackList).forget_graphs()
        scope = self.query_one(ScopeTree)
        scope.set_graphs(self.graphs, self.current_graph)
        self.current_graph = scope.graph.name if scope.graph else None
        if self.current_node is not None and (
            self.current_graph is None
            or self.current_node.name not in self.graphs.get(self.current_graph, {})
        ):
            self.current_node = None
            self.query_one(NodeDetails).clear()
        elif self.current_node is not None and self.current_graph is not None:
            # a new training's graph may hold a node of the same name: show that one, not
            # the old graph's node (its inputs, outputs and counts are the old ones)
            graph = self.graphs[self.current_graph]
            fresh = graph.get(self.current_node.name)
            if fresh is not None and fresh is not self.current_node:
                self._show_node(graph, fresh)
        self._graph_switched()
        self.query_one(HitList).set_context(self.graphs, self._metadata.ranks)
        self._refresh_badges()
        self.refresh_bindings()
        self._update_controls()
        if first_time and self.graphs and not self._recommendation_offered:
            self._recommendation_offered = True
            if self._startup_specs or self._startup_recommended:
                graphs = dict(self.graphs)
                self._run_session_call(
                    "Creating the watchpoints of the command line",
                    lambda: self._create_startup_watchpoints(graphs),
                    control=False,
                )
            else:
                # after the first frame: the user sees the graph, then the question
                self.call_after_refresh(self._offer_recommended)

    def _apply_metadata(self, metadata: Metadata) -> None:
        step_changed = metadata.step != self._last_step
        self._metadata = metadata
        self._last_step = metadata.step
        hits_here = (
            any(self._hit_step(hit) == metadata.step for hit in self.session.hits)
            if metadata.state is SessionState.WAITING
            else False
        )
        self.query_one(SessionHeader).set_metadata(metadata, hits_at_step=hits_here)
        if not self.graphs:
            self.query_one(ScopeTree).set_empty_message(_no_graph_text(metadata))
        self.refresh_bindings()
        self._update_controls()
        if step_changed and self.current_node is not None and self.current_graph:
            # Values differ per step: refresh what is on screen.
            self._fetch_summaries(self.current_graph, self.current_node)
            if self._open_tensor is not None:
                graph, node, slot, _iteration = self._open_tensor
                self._request_tensor(graph, node, slot, None)

    def _hit_step(self, hit: Any) -> int:
        return hit.step if hit.step is not None else self._metadata.step

    def _hits_changed(self, hits: Sequence[Any], *, announce: bool = False) -> None:
        hit_list = self.query_one(HitList)
        before = hit_list.hit_count
        hit_list.set_hits(hits)
        self.query_one(WatchpointList).set_hit_counts(hit_list.hit_counts())
        tabs = self.query_one("#left-tabs", TabbedContent)
        tabs.get_tab("hits-tab").label = f"2 Hits ({len(hits)})" if hits else "2 Hits"
        self._refresh_badges()
        self._apply_metadata(self._metadata)
        if announce and hits and len(hits) != before:
            self.notify(
                f"{len(hits)} watchpoint hit{'s' if len(hits) != 1 else ''} — press 2 to see them.",
                severity="warning",
            )

    def _refresh_badges(self) -> None:
        graph = self.graphs.get(self.current_graph or "")
        tree = self.query_one(ScopeTree).tree
        if graph is None:
            tree.set_badges((), (), {}, {})
            return
        watched_nodes, watched_scopes, node_hits, scope_hits = watch_badges(
            graph, self.session.watchpoints, self.session.hits
        )
        tree.set_badges(watched_nodes, watched_scopes, node_hits, scope_hits)

    # --------------------------------------------------------------- workers
    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _start_session(self) -> None:
        try:
            self.session.start()
        except SessionError as exc:
            # queued behind the session's own events (its progress line), not beside them
            self.call_later(self._start_failed, str(exc))
        except Exception as exc:  # a bug, but the user still gets a sentence, not a traceback
            self.call_later(self._start_failed, f"Loading failed: {exc}")

    @_tolerate_teardown
    def _start_failed(self, sentence: str) -> None:
        """The session could not start (the dump went away after the CLI checked it): the
        "Reading the dump folder…" line must not stay as if it were still reading, so the
        header and the tree say the error instead."""
        self.query_one(SessionHeader).set_progress("", 1, 1)  # done: no progress line
        if not self.graphs:
            self.query_one(ScopeTree).set_empty_message(sentence)
        self.notify(sentence, severity="error", timeout=30)

    def _run_session_call(
        self, label: str, call: Callable[[], object], *, control: bool = True
    ) -> None:
        """Run a (possibly slow) session call off the UI thread; one control at a time."""
        if control and self._control_busy:
            self.notify("Still busy with the previous command.", severity="warning")
            return
        if control:
            self._control_busy = True
            self._update_controls()
        self._session_call_worker(label, call, control)

    @work(thread=True, group="control", exit_on_error=False)
    def _session_call_worker(self, label: str, call: Callable[[], object], control: bool) -> None:
        try:
            call()
        except Exception as exc:  # SessionError / WatchpointError carry one sentence
            message = str(exc) if _is_user_error(exc) else f"{label} failed: {exc}"
            self._from_worker(self.notify, message, severity="error")
        finally:
            if control:
                self._from_worker(self._control_done)

    def _from_worker(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """`call_from_thread` for worker results, dropped once the app is gone."""

        def deliver() -> None:
            with contextlib.suppress(NoMatches):
                callback(*args, **kwargs)

        with contextlib.suppress(RuntimeError):  # the app stopped while the worker ran
            self.call_from_thread(deliver)

    def _control_done(self) -> None:
        self._control_busy = False
        self._update_controls()
        self.refresh_bindings()

    @work(thread=True, exclusive=True, group="summaries", exit_on_error=False)
    def _summaries_worker(self, graph: str, node: Node, rank: int) -> None:
        worker = get_current_worker()
        details = self.query_one(NodeDetails)
        for spec in node.outputs:
            if worker.is_cancelled:
                return
            ref = TensorRef(node.name, spec.slot, None, rank, graph)
            summary = _summarize(self.session, ref)
            if worker.is_cancelled:
                return
            self._from_worker(details.set_summary, node.name, spec.slot, summary)

    def _fetch_summaries(self, graph: str, node: Node) -> None:
        if node.outputs:
            self._summaries_worker(graph, node, self._metadata.rank)

    @work(thread=True, exclusive=True, group="tensor", exit_on_error=False)
    def _tensor_worker(self, node: Node, ref: TensorRef, title: str, want_previous: bool) -> None:
        worker = get_current_worker()
        view = self.query_one(TensorView)
        try:
            array = self.session.tensor(ref)
        except Exception as exc:
            if not worker.is_cancelled:
                message = str(exc) if _is_user_error(exc) else f"Reading the tensor failed: {exc}"
                self._from_worker(view.show_error, message)
            return
        if worker.is_cancelled:
            return
        if array is None:
            message = (
                f"{node.short_name}:{ref.slot} has no value at step {self.session.step_of(ref)}."
            )
            if (
                not self.session.capabilities.step_zero_has_values
                and ref.iteration is None
                and not self._metadata.step
            ):
                message += " Step 0 holds nothing yet: press n to load step 1."
            self._from_worker(view.show_error, message)
            return
        previous: np.ndarray | None = None
        note = ""
        if want_previous:
            try:
                previous = self.session.tensor(ref, previous=True)
            except Exception:
                previous = None
            if previous is None:
                note = "no previous step value to compare with"
        if worker.is_cancelled:
            return
        self._from_worker(
            view.show,
            title,
            array,
            previous,
            note=note,
            node_type=node.op_type,
            short_name=node.short_name,
            slot=ref.slot,
        )

    def _request_tensor(
        self, graph_name: str, node_name: str, slot: int, iteration: int | None
    ) -> None:
        graph = self.graphs.get(graph_name)
        node = graph.get(node_name) if graph else None
        if node is None:
            self.notify(f"There is no node {node_name} in {graph_name}.", severity="warning")
            return
        if node.outputs and slot not in {spec.slot for spec in node.outputs}:
            self.notify(f"{node.short_name} has no output slot {slot}.", severity="warning")
            return
        self._open_tensor = (graph_name, node.name, slot, iteration)
        ref = TensorRef(node.name, slot, iteration, self._metadata.rank, graph_name)
        title = f"{node.short_name}:{slot}  ({node.op_type}, step {self.session.step_of(ref)})"
        self.query_one(TensorView).show_loading(title)
        want_previous = node.is_parameter and self.session.capabilities.can_compare_previous
        self._tensor_worker(node, ref, title, want_previous)

    # ------------------------------------------------------- pane messages
    @on(NodeHighlighted)
    @_tolerate_teardown
    def _node_highlighted(self, message: NodeHighlighted) -> None:
        graph = self.graphs.get(message.graph)
        if graph is None:
            return
        details = self.query_one(NodeDetails)
        if message.node is None:
            self.current_node = None
            details.show_scope(graph, message.scope)
            self.query_one(StackList).set_node(None)
            return
        node = graph.get(message.node)
        if node is None:
            return
        self._show_node(graph, node)

    def _show_node(self, graph: Graph, node: Node) -> None:
        changed = self.current_node is not node
        self.current_node = node
        self.query_one(NodeDetails).show_node(graph, node)
        self.query_one(StackList).set_node(node)
        if changed:
            self._fetch_summaries(graph.name, node)

    @on(NodeChosen)
    @_tolerate_teardown
    def _node_chosen(self, message: NodeChosen) -> None:
        self.go_to_node(message.graph, message.node)
        if message.open_tensor:
            node = self.current_node
            if node is not None and node.outputs:
                self._request_tensor(message.graph, node.name, message.slot, None)
            elif node is not None:
                self.notify(f"{node.short_name} has no tensor outputs.")

    def go_to_node(self, graph_name: str, node_name: str, *, focus_tree: bool = True) -> bool:
        """Show a node everywhere: tree (its graph, scopes expanded), details, stack."""
        graph = self.graphs.get(graph_name)
        if graph is None or graph.get(node_name) is None:
            self.notify(f"There is no node {node_name} in the loaded graphs.", severity="warning")
            return False
        scope = self.query_one(ScopeTree)
        if scope.graph is None or scope.graph.name != graph_name:
            scope.show_graph(graph_name)
            self.current_graph = graph_name
            self._graph_switched()
        scope.reveal(node_name)
        node = graph.get(node_name)
        assert node is not None
        self._show_node(graph, node)
        if focus_tree:
            self._remember_focus()
            self.query_one("#left-tabs", TabbedContent).active = "tree-tab"
            scope.tree.focus()
        return True

    @on(TensorRequested)
    @_tolerate_teardown
    def _tensor_requested(self, message: TensorRequested) -> None:
        self._request_tensor(message.graph, message.node, message.slot, message.iteration)

    @on(HitChosen)
    @_tolerate_teardown
    def _hit_chosen(self, message: HitChosen) -> None:
        ref: TensorRef = message.hit.tensor
        if ref.rank != self._metadata.rank and len(self._metadata.ranks) > 1:
            self.notify(
                f"This hit is on rank {ref.rank}; switch rank from the palette (Ctrl+P) first.",
                severity="warning",
            )
            return
        graph_name = ref.graph or self.current_graph or ""
        if graph_name not in self.graphs:
            graph_name = next(
                (name for name, graph in self.graphs.items() if graph.get(ref.node)), graph_name
            )
        if self.go_to_node(graph_name, ref.node):
            self._request_tensor(graph_name, ref.node, ref.slot, ref.iteration)

    @on(GraphSwitched)
    @_tolerate_teardown
    def _graph_switched_message(self, message: GraphSwitched) -> None:
        self.current_graph = message.graph
        self._graph_switched()

    def _graph_switched(self) -> None:
        graph = self.graphs.get(self.current_graph or "")
        self.query_one(SessionHeader).set_graph(self.current_graph or "")
        self.query_one(StackList).set_graph(graph)
        self._refresh_badges()

    @on(WatchpointAction)
    @_tolerate_teardown
    def _watchpoint_action(self, message: WatchpointAction) -> None:
        wp_id = message.watchpoint_id
        if message.action == "new":
            self.action_new_watchpoint()
            return
        watchpoint = next((w for w in self.session.watchpoints if w.id == wp_id), None)
        if watchpoint is None:
            self.notify("Select a watchpoint first (6), or create one with w.")
            return
        if message.action == "edit":
            self._edit_watchpoint(watchpoint)
        elif message.action == "toggle":
            enabled = not watchpoint.enabled
            self._run_session_call(
                "Updating the watchpoint",
                lambda: self.session.update_watchpoint(watchpoint.id, enabled=enabled),
                control=False,
            )
        elif message.action == "delete":

            def answered(yes: bool | None) -> None:
                if yes:
                    self._run_session_call(
                        "Deleting the watchpoint",
                        lambda: self.session.delete_watchpoint(watchpoint.id),
                        control=False,
                    )

            self.push_screen(
                ConfirmScreen(
                    "Delete watchpoint?",
                    f"#{watchpoint.id} {watchpoint.describe()}",
                    yes="Delete",
                    no="Keep",
                    destructive=True,
                ),
                answered,
            )

    @on(ControlRequested)
    async def _control_requested(self, message: ControlRequested) -> None:
        await self.run_action(message.action)

    # ------------------------------------------------------- action states
    def action_state(self, action: str) -> ActionState:
        """Whether a guarded action can run now, and if not, why (one sentence)."""
        caps = self.session.capabilities
        md = self._metadata
        state = md.state
        live = caps.live
        busy = self._control_busy
        runs = {"step", "step_many", "continue", "step_node", "run_to_node", "reset_step"}
        if action in runs and (busy or state in {SessionState.RUNNING, SessionState.SENDING}):
            return ActionState(False, "Wait: the previous command is still running.")
        if action in {"step", "step_many"}:
            if not caps.can_step:
                return ActionState(False, "This session cannot step.")
            return self._needs_waiting(md, live)
        if action == "continue":
            if not caps.can_continue:
                return ActionState(False, "This session cannot continue.")
            return self._needs_waiting(md, live)
        if action in {"step_node", "run_to_node"}:
            if not caps.can_step_node:
                return ActionState(
                    False, "Node stepping needs a live GPU training (not this session)."
                )
            node = self.current_node
            if action == "run_to_node" and (node is None or node.kind is not NodeKind.OPERATOR):
                return ActionState(False, "Select a kernel (an operator node) in the tree first.")
            return self._needs_waiting(md, live)
        if action == "pause":
            if not caps.can_pause:
                return ActionState(False, "Pause needs a live training; offline there is none.")
            if state not in {SessionState.RUNNING, SessionState.SENDING}:
                return ActionState(False, "The training is not running.")
            return ActionState(True)
        if action == "terminate":
            if not caps.can_terminate:
                return ActionState(False, "Terminate needs a live training; offline there is none.")
            if state in {SessionState.PENDING, SessionState.DONE, SessionState.DISCONNECTED}:
                return ActionState(False, "No training is connected.")
            return ActionState(True)
        if action == "reset_step":
            if not caps.can_reset_step:
                return ActionState(False, "Only offline sessions can jump to another step.")
            if state in {SessionState.PENDING, SessionState.LOADING}:
                return ActionState(False, "Nothing is loaded yet.")
            if md.max_step == 0:
                return ActionState(False, "This dump has no dumped iteration to go to.")
            return ActionState(True)
        if action == "recheck":
            if not self.graphs:
                return ActionState(False, "No graph is loaded yet.")
            if busy:
                return ActionState(False, "Wait: the previous command is still running.")
            if state is not SessionState.WAITING:
                return ActionState(False, f"Recheck needs a paused session (now: {state.value}).")
            if not self.session.watchpoints:
                return ActionState(False, "There are no watchpoints to check: press w to add one.")
            if not caps.step_zero_has_values and md.step < 1:
                return ActionState(False, "Watchpoints are not checked at step 0: step first (n).")
            return ActionState(True)
        if action == "history":
            if not self.graphs:
                return ActionState(False, "No graph is loaded yet.")
            return ActionState(True)
        if action == "trace_origin":
            return self._trace_state()
        if action == "new_watchpoint":
            if not self.graphs:
                return ActionState(False, "No graph is loaded yet.")
            if state in {SessionState.MISMATCH, SessionState.DISCONNECTED, SessionState.DONE}:
                return ActionState(False, f"Watchpoints cannot be set now ({state.value}).")
            if live and state in {SessionState.RUNNING, SessionState.SENDING}:
                return ActionState(False, "Pause the training (p) before changing watchpoints.")
            return ActionState(True)
        return ActionState(True)

    def _needs_waiting(self, md: Metadata, live: bool) -> ActionState:
        state = md.state
        if state is SessionState.WAITING:
            if not live and md.max_step == 0:
                return ActionState(False, "This dump has no dumped iteration to step to.")
            if not live and md.max_step is not None and md.step >= md.max_step:
                return ActionState(False, f"Already at the last step ({md.max_step}).")
            return ActionState(True)
        if state is SessionState.PENDING:
            return ActionState(
                False, "No training is connected yet." if live else "Nothing is loaded yet."
            )
        if state is SessionState.LOADING:
            return ActionState(False, "Still loading.")
        if state is SessionState.MISMATCH:
            return ActionState(False, "Version mismatch: only terminate (T) is possible.")
        if state is SessionState.DISCONNECTED:
            return ActionState(False, "The training disconnected.")
        if state is SessionState.DONE:
            return ActionState(False, "The training has finished.")
        return ActionState(False, f"Not possible while {state.value}.")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in GUARDED_ACTIONS:
            # None = shown greyed out: the key exists, it just cannot run right now.
            return True if self.action_state(action).enabled else None
        return True

    def _update_controls(self) -> None:
        bar = self.query_one(ControlBar)
        # online capabilities follow the client (node stepping needs a GPU backend)
        bar.set_capabilities(self.session.capabilities)
        bar.update_enabled(lambda action: self.action_state(action).enabled)
        watchpoints = len(self.session.watchpoints)
        # the count goes in the pane's title: the bar's right end is short at 100 columns
        self.query_one(WatchpointList).border_title = (
            f"6 Watchpoints ({watchpoints})" if watchpoints else "6 Watchpoints"
        )
        hits = self.query_one(HitList).hit_count
        status = f"{hits} hit{'s' if hits != 1 else ''}"
        if self._control_busy:
            status = "working… · " + status
        bar.set_status(status)

    def _guard(self, action: str) -> bool:
        """For actions reached without a key (palette, buttons): explain a refusal."""
        state = self.action_state(action)
        if not state.enabled:
            self.notify(state.reason, severity="warning")
        return state.enabled

    def on_key(self, event: Any) -> None:
        """A greyed-out key was pressed: its binding did not run, so say why."""
        if isinstance(self.screen, ModalScreen):
            return
        for binding in self._bindings_for_key(event.key):
            action = binding.action
            if action in GUARDED_ACTIONS:
                state = self.action_state(action)
                if not state.enabled:
                    self.notify(state.reason, severity="warning")
                    event.stop()
                return

    def _bindings_for_key(self, key: str) -> list[Binding]:
        bindings = self._bindings.copy()
        if self.keymap:  # a remapped key is the binding's now, its old key is not
            bindings.apply_keymap(self.keymap)
        return list(bindings.key_to_bindings.get(key, ()))

    # ----------------------------------------------------------------- actions
    def action_step(self) -> None:
        if self._guard("step"):
            self._run_session_call("Step", lambda: self.session.step(1))

    def action_step_many(self) -> None:
        if not self._guard("step_many"):
            return
        md = self._metadata
        high = None
        if not self.session.capabilities.live and md.max_step is not None:
            high = max(1, md.max_step - md.step)

        def answered(value: str | None) -> None:
            if value:
                count = int(value)
                self._run_session_call(f"Step {count}", lambda: self.session.step(count))

        self.push_screen(
            PromptScreen(
                "Run how many steps?",
                value="1",
                hint=f"1–{high}, Enter to run, Esc to cancel"
                if high
                else "Enter to run, Esc to cancel",
                check=int_check(1, high, "number of steps"),
            ),
            answered,
        )

    def action_continue(self) -> None:
        if self._guard("continue"):
            self._run_session_call("Continue", self.session.continue_)

    def action_step_node(self) -> None:
        if self._guard("step_node"):
            self._run_session_call("Next node", lambda: self.session.step_node(None))

    def action_run_to_node(self) -> None:
        if not self._guard("run_to_node") or self.current_node is None:
            return
        name = self.current_node.name
        self._run_session_call("Run to node", lambda: self.session.step_node(name))

    def action_pause(self) -> None:
        if self._guard("pause"):
            # Pause must get through while a continue is running: not a queued control.
            self._run_session_call("Pause", self.session.pause, control=False)

    def action_terminate(self) -> None:
        if not self._guard("terminate"):
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._run_session_call("Terminate", self.session.terminate, control=False)

        self.push_screen(
            ConfirmScreen(
                "Terminate the training?",
                "The training process will stop at the next step boundary. This cannot be undone.",
                yes="Terminate",
                no="Cancel",
                destructive=True,
            ),
            answered,
        )

    def action_reset_step(self) -> None:
        if not self._guard("reset_step"):
            return
        md = self._metadata
        high = md.max_step

        def answered(value: str | None) -> None:
            if value:
                self._reset_step(int(value))

        self.push_screen(
            PromptScreen(
                f"Go to step (1–{high})" if high else "Go to step",
                value=str(md.step or 1),
                hint="Watchpoints become outdated: recheck (r) afterwards. Esc cancels.",
                check=int_check(1, high, "step"),
            ),
            answered,
        )

    def _reset_step(self, step: int) -> None:
        self._run_session_call("Go to step", lambda: self.session.reset_step(step))

    def action_recheck(self) -> None:
        if self._guard("recheck"):
            self._run_session_call("Recheck", self.session.recheck)

    def action_history(self) -> None:
        if not self._guard("history"):
            return
        runs = self.session.graph_runs()
        if not runs:
            self.notify("This session has no graph execution history.")
            return
        can_jump = self.session.capabilities.can_reset_step

        def answered(step: int | None) -> None:
            if step is not None and self._guard("reset_step"):
                self._reset_step(step)

        self.push_screen(HistoryScreen(runs, self._metadata.step, can_jump), answered)

    def action_new_watchpoint(self) -> None:
        if not self._guard("new_watchpoint"):
            return
        graph = self.graphs.get(self.current_graph or "")
        if graph is None:
            self.notify("No graph is shown.", severity="warning")
            return
        entry = self.query_one(ScopeTree).selected_entry
        node_name = entry.node if entry and entry.node else None
        scope_path = entry.path if entry and entry.node is None else None
        if node_name is not None and self.current_node is not None:
            node_name = self.current_node.name
        editor = WatchpointEditor(
            graph,
            node=node_name,
            scope=scope_path,
            backend=self._metadata.backend,
            step=self._metadata.step,
            init_only_at_step_zero=self.session.capabilities.weight_init_only_at_step_zero,
        )
        self.push_screen(editor, self._watchpoint_drafted)

    def _watchpoint_drafted(self, draft: WatchpointDraft | None) -> None:
        if draft is None:
            return
        if draft.watchpoint_id is None:
            self._run_session_call(
                "Creating the watchpoint",
                lambda: self.session.create_watchpoint(
                    draft.condition, draft.params, draft.targets, graph_name=draft.graph_name
                ),
                control=False,
            )
        else:
            wp_id = draft.watchpoint_id
            self._run_session_call(
                "Updating the watchpoint",
                lambda: self.session.update_watchpoint(
                    wp_id,
                    params=draft.params,
                    targets=None if draft.keep_targets else draft.targets,
                ),
                control=False,
            )

    def _edit_watchpoint(self, watchpoint: Watchpoint) -> None:
        if not self._guard("new_watchpoint"):
            return
        graph = self.graphs.get(watchpoint.graph_name or self.current_graph or "")
        if graph is None and self.graphs:
            graph = next(iter(self.graphs.values()))
        if graph is None:
            return
        editor = WatchpointEditor(
            graph,
            backend=self._metadata.backend,
            step=self._metadata.step,
            init_only_at_step_zero=self.session.capabilities.weight_init_only_at_step_zero,
            editing=watchpoint,
        )
        self.push_screen(editor, self._watchpoint_drafted)

    def _offer_recommended(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self._run_session_call(
                    "Creating the recommended watchpoints",
                    self._apply_recommended,
                    control=False,
                )

        self.push_screen(
            ConfirmScreen(
                "Use the recommended watchpoints?",
                "tuidebug can watch weights, gradients, activations and every tensor with the "
                "recommended conditions (overflow, all-zero, vanishing gradient, weight change, "
                "activation range). You can edit or delete them later (6).",
                yes="Use them",
                no="Not now",
            ),
            answered,
        )

    def _apply_recommended(self) -> None:
        created = self.session.apply_recommended()
        self._from_worker(self.notify, f"{len(created)} recommended watchpoints created.")

    # ------------------------------------------- watchpoints in and out as specs
    def _create_startup_watchpoints(self, graphs: Mapping[str, Graph]) -> None:
        """(worker) Create the command line's watchpoints on the loaded graphs. A spec
        that watches nothing here, or that the session refuses, is a notice naming it."""
        created = 0
        for spec in self._startup_specs:
            try:
                condition, params = parse_watch_spec(spec)
            except WatchpointError as err:  # the CLI validated it; a direct caller may not
                self._warn_from_worker(f"--watch {spec}: {err}")
                continue
            if not any(resolve_targets(condition, (), graph) for graph in graphs.values()):
                target = condition.target.value
                what = "node" if target == "tensor" else f"{target} node"
                self._warn_from_worker(
                    f"--watch {spec} watches no {what} in the loaded graphs, so it was not created."
                )
                continue
            try:
                watchpoint = self.session.create_watchpoint(condition.id, params)
            except (WatchpointError, SessionError) as err:
                self._warn_from_worker(f"--watch {spec}: {err}")
                continue
            self._from_worker(self._given_specs.__setitem__, watchpoint.id, spec)
            created += 1
        if self._startup_recommended:
            created += len(self.session.apply_recommended())
        self._from_worker(
            self.notify,
            f"{created} watchpoint{'s' if created != 1 else ''} created from the command line.",
        )

    def _warn_from_worker(self, text: str) -> None:
        self._from_worker(self.notify, text, severity="warning", timeout=15, markup=False)

    def spec_of(self, watchpoint: Watchpoint) -> str:
        """The watchpoint as a --watch spec: as the user wrote it on the command line while
        it is unchanged, else `Watchpoint.spec`."""
        given = self._given_specs.get(watchpoint.id)
        if given is not None:
            with contextlib.suppress(WatchpointError):
                if parse_watch_spec(given) == (watchpoint.condition, watchpoint.params):
                    return given
        return watchpoint.spec

    def _exported_specs(self) -> tuple[list[str], list[str], str]:
        """(specs of the enabled watchpoints, of the disabled ones, a note when some watch
        chosen nodes, which the spec form cannot say), each spec once, in list order."""
        watchpoints = list(self.session.watchpoints)
        enabled = [wp for wp in watchpoints if wp.enabled]
        specs = list(dict.fromkeys(self.spec_of(wp) for wp in enabled))
        disabled = list(dict.fromkeys(self.spec_of(wp) for wp in watchpoints if not wp.enabled))
        narrowed = sum(1 for wp in enabled if self._narrowed(wp))
        note = ""
        if narrowed:
            note = (
                f"{narrowed} of them watch{'es' if narrowed == 1 else ''} chosen nodes here; "
                "a --watch spec watches every node of its kind."
            )
        return specs, disabled, note

    def _narrowed(self, watchpoint: Watchpoint) -> bool:
        """True when the watchpoint's targets watch fewer nodes than its spec would."""
        if not watchpoint.targets:
            return False
        names = [watchpoint.graph_name] if watchpoint.graph_name else list(self.graphs)
        for name in names:
            graph = self.graphs.get(name)
            if graph is None:
                continue
            try:
                chosen = resolve_targets(watchpoint.condition, watchpoint.targets, graph)
            except WatchpointError:
                return True
            if len(chosen) != len(resolve_targets(watchpoint.condition, (), graph)):
                return True
        return False

    def action_copy_check_command(self) -> None:
        """Copy `tuidebug check DUMP --watch …` (online: the --watch options) and show it."""
        specs, disabled, note = self._exported_specs()
        if not specs:
            self.notify("There is no enabled watchpoint to copy: press w to add one.")
            return
        if disabled:
            left_out = f"{len(disabled)} disabled watchpoint"
            left_out += "s are left out." if len(disabled) != 1 else " is left out."
            note = f"{left_out} {note}".strip()
        md = self._metadata
        dump = os.path.abspath(md.source) if md.mode == "offline" and md.source else None
        command = check_command(specs, dump)
        self.copy_to_clipboard(command)
        self.notify(
            f"Copied to the clipboard:\n{command}" + (f"\n{note}" if note else ""),
            timeout=20,
            markup=False,
        )

    def action_save_watchpoints(self) -> None:
        """Ask for a file, then write the watchpoints in the --watch-file format."""
        specs, disabled, note = self._exported_specs()
        if not specs and not disabled:
            self.notify("There are no watchpoints to save: press w to add one.")
            return
        text = watch_file_text(specs, disabled)
        count = f"{len(specs)} watchpoint{'s' if len(specs) != 1 else ''}"
        if disabled:
            count += f" and {len(disabled)} disabled one{'s' if len(disabled) != 1 else ''} as "
            count += "comments"

        def answered(value: str | None) -> None:
            if value:
                path = os.path.abspath(os.path.expanduser(value))
                done = f"Saved {count} to {path}; read them back with --watch-file." + (
                    f" {note}" if note else ""
                )
                self._write_file_worker(path, lambda: text, done)

        self.push_screen(
            PromptScreen(
                "Save the watchpoints to",
                value="tuidebug-watchpoints.txt",
                hint="One --watch spec a line. Enter saves, Esc cancels.",
                check=path_check(),
            ),
            answered,
        )

    @on(HitList.SaveRequested)
    def _save_hits_requested(self, message: HitList.SaveRequested) -> None:
        message.stop()
        self.action_save_hits()

    def action_save_hits(self) -> None:
        """Ask for a file, then write every hit as `tuidebug check --json` prints them."""
        hits = tuple(self.session.hits)
        if not hits:
            self.notify("There are no hits to save yet: step (n), continue (c) or recheck (r).")
            return
        specs = {wp.id: (self.spec_of(wp), dict(wp.params)) for wp in self.session.watchpoints}
        shown = self.query_one(HitList).shown_count
        which = f"all {len(hits)} hits" if len(hits) != 1 else "the hit"
        if shown != len(hits):
            which += f" (not only the {shown} the filters show)"

        def answered(value: str | None) -> None:
            if value:
                path = os.path.abspath(os.path.expanduser(value))
                self._write_file_worker(
                    path, lambda: hits_json(hits, specs), f"Saved {which} to {path}."
                )

        self.push_screen(
            PromptScreen(
                "Save the hits as JSON to",
                value=f"tuidebug-hits-step{self._metadata.step}.json",
                hint="Every hit, as tuidebug check --json prints them. Enter saves, Esc cancels.",
                check=path_check(),
            ),
            answered,
        )

    @work(thread=True, group="save", exit_on_error=False)
    def _write_file_worker(self, path: str, text: Callable[[], str], done: str) -> None:
        try:
            content = text()
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(content)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            self._from_worker(
                self.notify, f"Could not write {path}: {reason}.", severity="error", markup=False
            )
            return
        self._from_worker(self.notify, done, timeout=10, markup=False)

    def action_filter(self) -> None:
        tabs = self.query_one("#left-tabs", TabbedContent)
        self._remember_focus()
        if tabs.active == "stack-tab":
            self.query_one(StackList).focus_search()
        elif tabs.active == "hits-tab":
            self.query_one(HitList).focus_filters()
        else:
            tabs.active = "tree-tab"
            self.query_one(ScopeTree).focus_filter()

    def action_back(self) -> None:
        if self._tracing:
            self.workers.cancel_group(self, "origins")
            self._trace_finished()
            self.notify("Trace cancelled.")
            return
        focused = self.focused
        if isinstance(focused, Input):
            if focused.id == "name-filter":
                self.query_one(ScopeTree).clear_filter()
                self.query_one(ScopeTree).tree.focus()
                return
            if focused.id == "stack-search":
                self.query_one(StackList).clear_search()
                self.query_one("#stack-lines").focus()
                return
        if self.screen.maximized is not None:
            self.screen.action_minimize()  # a maximized pane (palette) goes back in place
            return
        if focused is self.query_one(ScopeTree).tree and self.query_one(ScopeTree).clear_filter():
            return
        while self._focus_history:
            previous = self._focus_history.pop()
            if previous.is_attached and previous is not focused:
                self._activate_tab_of(previous)
                previous.focus()
                return

    def _activate_tab_of(self, widget: Widget) -> None:
        node: Any = widget
        while node is not None:
            if isinstance(node, TabPane) and node.id:
                self.query_one("#left-tabs", TabbedContent).active = node.id
                return
            node = node.parent

    def _remember_focus(self) -> None:
        focused = self.focused
        if focused is not None and (
            not self._focus_history or self._focus_history[-1] is not focused
        ):
            self._focus_history.append(focused)
            del self._focus_history[:-20]

    def action_focus_pane(self, number: int) -> None:
        tab, selector, _name = PANES[number]
        self._remember_focus()
        if tab is not None:
            self.query_one("#left-tabs", TabbedContent).active = tab
        if number == 4:
            self.query_one(NodeDetails).focus_outputs()
            return
        if number == 5:
            view = self.query_one(TensorView)
            if view.state != "tensor":
                # Nothing in the pane can take focus without a tensor: say how to get one.
                self.notify("No tensor is open: Enter on a node output (4) or a hit (2).")
                return
            view.canvas.focus()
            return
        self.query_one(selector).focus()

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        close = self.key_hint("help.close")
        context = context_help(self.focused, self.key_hint)
        self.push_screen(HelpScreen(self.help_keys(), context, close_key=close))

    def help_keys(self) -> list[KeyRow]:
        rows: list[KeyRow] = []
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            if binding.action.startswith("focus_pane") or binding.action == "back":
                continue  # listed below with their fuller wording
            bound = active_keys(binding.id, self.keymap) if binding.id else []
            keys = ", ".join(_key_display(k) for k in bound or binding.key.split(","))
            unavailable = ""
            if binding.action in GUARDED_ACTIONS:
                state = self.action_state(binding.action)
                unavailable = "" if state.enabled else state.reason
            rows.append((keys, _ACTION_HELP.get(binding.action, binding.description), unavailable))
        for key, does in EXTRA_KEYS:
            if not isinstance(key, str):
                # Textual's key names here ("escape", "space"), as these rows always had
                hints = [(active_keys(i, self.keymap) or [i])[0] for i in key]
                key = "1 … 6" if hints == ["1", "2", "3", "4", "5", "6"] else " / ".join(hints)
            rows.append((key, does, ""))
        return rows

    # ------------------------------------------------------ NaN/Inf origins
    def _trace_target(self) -> tuple[str, str, int | None] | None:
        """(graph, node, iteration) to trace: the hit under the cursor while the hit list
        has focus, else the selected node at the current step."""
        hits = self.query_one(HitList)
        if self.focused is hits.tree:
            cursor = hits.tree.cursor_node
            hit = cursor.data if cursor is not None else None
            if isinstance(hit, WatchpointHit):
                ref = hit.tensor
                graph_name = ref.graph if ref.graph in self.graphs else ""
                if not graph_name:
                    graph_name = next((n for n, g in self.graphs.items() if g.get(ref.node)), "")
                if graph_name and ref.rank in (self._metadata.rank, None):
                    return graph_name, ref.node, ref.iteration
        if self.current_node is not None and self.current_graph in self.graphs:
            return self.current_graph, self.current_node.name, None
        return None

    def _trace_state(self) -> ActionState:
        if not self.graphs:
            return ActionState(False, "No graph is loaded yet.")
        md = self._metadata
        if not self.session.capabilities.step_zero_has_values and md.step < 1:
            return ActionState(False, "Step 0 holds no values: step first (n).")
        if self._trace_target() is None:
            return ActionState(False, "Select a node in the tree (1) or a hit (2) first.")
        return ActionState(True)

    def action_trace_origin(self) -> None:
        if not self._guard("trace_origin"):
            return
        target = self._trace_target()
        if target is None:
            return
        graph_name, node, iteration = target
        rank = self._metadata.rank
        step = self.session.step_of(TensorRef(node, 0, iteration, rank, graph_name))
        self._tracing = True
        self._trace_worker(self.graphs[graph_name], node, iteration, self._metadata.rank, step)

    @work(thread=True, exclusive=True, group="origins", exit_on_error=False)
    def _trace_worker(
        self, graph: Graph, start: str, iteration: int | None, rank: int, step: int
    ) -> None:
        worker = get_current_worker()
        began = time.monotonic()
        shown = [0.0]  # when progress was last posted: a few updates a second at most

        def progress(read: int) -> None:
            now = time.monotonic()
            if now - began >= TRACE_PROGRESS_AFTER and now - shown[0] >= 0.1:
                shown[0] = now
                self._from_worker(self._trace_progress, read)

        try:
            trace = trace_in_session(
                self.session,
                graph,
                start,
                iteration=iteration,
                rank=rank,
                cancelled=lambda: worker.is_cancelled,
                progress=progress,
            )
            counts = self._origin_counts(trace, graph, iteration, rank, worker)
        except TraceCancelled:
            return  # Esc said so, and said it already
        except Exception as exc:
            if not worker.is_cancelled:
                message = str(exc) if _is_user_error(exc) else f"The trace failed: {exc}"
                self._from_worker(self._trace_finished)
                self._from_worker(self.notify, message, severity="error", markup=False)
            return
        if worker.is_cancelled:
            return
        self._from_worker(self._trace_done, trace, graph, iteration, step, counts)

    def _origin_counts(
        self, trace: OriginTrace, graph: Graph, iteration: int | None, rank: int, worker: Any
    ) -> dict[str, Counts]:
        """NaN/±Inf counts of each origin's first non-finite slot (worker; a few origins,
        each read in chunks). Parameters are counted as the trace judged them: their value
        when the step began, where the session has one."""
        counts: dict[str, Counts] = {}
        for origin in trace.origins[:MAX_COUNTED_ORIGINS]:
            if worker.is_cancelled:
                raise TraceCancelled
            if not origin.slots:
                continue
            node = graph.get(origin.node)
            ref = TensorRef(origin.node, origin.slots[0], iteration, rank, graph.name)
            try:
                array = None
                if node is not None and node.is_parameter and origin.node != trace.start:
                    array = self.session.tensor(ref, previous=True)
                if array is None:
                    array = self.session.tensor(ref)
                stats = tensor_statistics(array) if array is not None else None
            except Exception:
                continue  # the counts are a nicety: the row stays without them
            if stats is not None:
                counts[origin.node] = (stats.nan_count, stats.pos_inf_count, stats.neg_inf_count)
        return counts

    def _trace_progress(self, read: int) -> None:
        if self._tracing:
            self.query_one(SessionHeader).set_progress(
                f"Tracing… {read} tensors read (Esc cancels)", read, 0
            )

    def _trace_finished(self) -> None:
        self._tracing = False
        self.query_one(SessionHeader).set_progress("", 1, 1)

    def _trace_done(
        self,
        trace: OriginTrace,
        graph: Graph,
        iteration: int | None,
        step: int,
        counts: dict[str, Counts],
    ) -> None:
        self._trace_finished()
        node = graph.get(trace.start)
        short = node.short_name if node is not None else trace.start
        if not trace.found:
            if trace.start_has_value:
                self.notify(f"{short} has no NaN or Inf at step {step}.", markup=False)
            else:
                self.notify(f"{short} has no value at step {step}.", markup=False)
            return

        def chosen(answer: tuple[str, int] | None) -> None:
            if answer is None:
                return
            origin, slot = answer
            if self.go_to_node(graph.name, origin):
                self._request_tensor(graph.name, origin, slot, iteration)

        self.push_screen(OriginScreen(trace, graph, f"step {step}", counts), chosen)

    # ----------------------------------------------------------------- palette
    def palette_commands(self) -> list[PaletteCommand]:
        commands: list[PaletteCommand] = []
        offered = [
            ("step", "Step", "Run one step and check the watchpoints"),
            ("step_many", "Step N times…", "Run several steps"),
            ("continue", "Continue", "Run until a watchpoint hits"),
            ("step_node", "Next node", "Run to the next kernel (GPU)"),
            ("run_to_node", "Run to the selected node", "Run until that kernel (GPU)"),
            ("pause", "Pause", "Pause the running training"),
            ("terminate", "Terminate training…", "Stop the training process"),
            ("reset_step", "Go to step…", "Jump to another step of the dump"),
            ("recheck", "Recheck watchpoints", "Check every enabled watchpoint again"),
            ("history", "Graph execution history", "Which graph ran at which step"),
            ("new_watchpoint", "New watchpoint…", "Watch the selected node or scope"),
            (
                "trace_origin",
                "Trace NaN/Inf to its origin",
                "Walk upstream from the selected hit or node to where the NaN/Inf appeared",
            ),
        ]
        for action, title, help_text in offered:
            if self.action_state(action).enabled:
                key = self.key_hint(f"tuidebug.{action}")  # the user's key, if remapped
                commands.append(
                    PaletteCommand(title, f"{help_text}  ({key})", _runner(self, action))
                )
        if self.graphs and self.action_state("new_watchpoint").enabled:
            commands.append(
                PaletteCommand(
                    "Apply the recommended watchpoints",
                    "Overflow, all-zero, weight change, vanishing gradient… on the loaded graphs",
                    lambda: self._run_session_call(
                        "Creating the recommended watchpoints",
                        self._apply_recommended,
                        control=False,
                    ),
                )
            )
        if self.session.watchpoints:
            commands.append(
                PaletteCommand(
                    "Copy watchpoints as a check command",
                    "tuidebug check DUMP --watch SPEC …, to the clipboard",
                    self.action_copy_check_command,
                )
            )
            commands.append(
                PaletteCommand(
                    "Save watchpoints to file…",
                    "One --watch spec a line, for --watch-file",
                    self.action_save_watchpoints,
                )
            )
        if self.session.hits:
            commands.append(
                PaletteCommand(
                    "Save hits…",
                    f"Every hit as JSON, like tuidebug check --json  ({self.key_hint('hits.save')}"
                    " in the hit list)",
                    self.action_save_hits,
                )
            )
        md = self._metadata
        if md.cur_node:
            where = next((g for g in self.graphs.values() if g.get(md.cur_node)), None)
            if where is not None:
                commands.append(
                    PaletteCommand(
                        "Go to the current kernel",
                        f"Where the training is suspended: {md.cur_node.rsplit('/', 1)[-1]}",
                        lambda graph=where.name, node=md.cur_node: self.go_to_node(graph, node),
                    )
                )
        for name in self.graphs:
            if name != self.current_graph:
                commands.append(
                    PaletteCommand(
                        f"Show graph {name}",
                        "Switch the tree to this graph",
                        lambda name=name: self._switch_graph(name),
                    )
                )
        md = self._metadata
        for rank in md.ranks:
            if rank != md.rank and len(md.ranks) > 1:
                commands.append(
                    PaletteCommand(
                        f"Switch to rank {rank}",
                        "Load this rank's graphs and hits",
                        lambda rank=rank: self._run_session_call(
                            f"Switching to rank {rank}",
                            lambda: self.session.select_rank(rank),
                        ),
                    )
                )
        for number, (_tab, _sel, name) in PANES.items():
            commands.append(
                PaletteCommand(
                    f"Focus {name}", f"Key {number}", lambda n=number: self.action_focus_pane(n)
                )
            )
        commands.append(PaletteCommand("Help: keys", "Key ? or F1", self.action_help))
        if self.messages:
            commands.append(
                PaletteCommand(
                    "Session messages",
                    f"{len(self.messages)} notices from the session (files skipped, …)",
                    self.action_messages,
                )
            )
        screen = self.screen
        if screen.maximized is not None:
            commands.append(
                PaletteCommand("Restore the pane", "Undo maximize", screen.action_minimize)
            )
        elif screen.focused is not None and screen.focused.allow_maximize:
            commands.append(
                PaletteCommand(
                    "Maximize the focused pane", "Esc restores it", screen.action_maximize
                )
            )
        commands.append(PaletteCommand("Theme…", "Change the colours", self.action_change_theme))
        commands.append(
            PaletteCommand(
                "Screenshot",
                "Save an SVG of the screen in the current directory",
                lambda: self.set_timer(0.1, self.deliver_screenshot),
            )
        )
        return commands

    def palette_graph(self) -> Graph | None:
        return self.graphs.get(self.current_graph or "")

    def palette_go_to_node(self, graph: str, node: str) -> None:
        self.go_to_node(graph, node)

    def _switch_graph(self, name: str) -> None:
        self.query_one(ScopeTree).show_graph(name)
        self.current_graph = name
        self._graph_switched()


_ACTION_HELP = {
    "step": "step: run one step (offline: load and check the next iteration)",
    "step_many": "step N times (asks how many)",
    "continue": "continue until a watchpoint hits (offline: or the last step)",
    "step_node": "next node: run to the next kernel (GPU only)",
    "run_to_node": "run to the kernel selected in the tree (GPU only)",
    "pause": "pause the running training",
    "terminate": "terminate the training (asks to confirm)",
    "reset_step": "go to step N (offline; asks which)",
    "recheck": "recheck every enabled watchpoint at this step",
    "history": "graph execution history (Enter on a row goes to that step)",
    "new_watchpoint": "new watchpoint on the selected node or scope",
    "trace_origin": "trace NaN/Inf of the selected hit or node to its origin (Esc cancels)",
    "filter": "filter: tree name filter, stack search, hit filters",
    "back": "back",
    "help": "this help",
    "quit": "quit",
}


def _no_graph_text(md: Metadata) -> str:
    """What the tree pane says before there is a graph to show."""
    state = md.state
    if md.mode == "online":
        if state is SessionState.PENDING:
            host, _, port = md.source.rpartition(":")
            return (
                f"Waiting for a training to connect to {md.source}…\n\n"
                "Start the MindSpore training (GPU or Ascend) with\n"
                f"ENABLE_MS_DEBUGGER=1 MS_DEBUGGER_HOST={host or '<this host>'} "
                f"MS_DEBUGGER_PORT={port or 50051}\n\n"
                f"or replay a dump: tuidebug simulate DUMP --connect {md.source}"
            )
        if state is SessionState.MISMATCH:
            return "The training's MindSpore version does not match: terminate it (T)."
        if state is SessionState.NODE_TOO_LARGE:
            return "The training's graph is too large to show: terminate it (T)."
        if state in {SessionState.DISCONNECTED, SessionState.DONE}:
            return "The training is gone and sent no graph."
        return "Receiving the graph…"
    if state is SessionState.LOADING:
        return "Loading the dump…"
    if state is SessionState.PENDING:
        return md.message or "Nothing is loaded."
    return "This dump has no readable graph."


_KEY_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "escape": "Esc",
    "plus": "+",
    "minus": "-",
    "equals_sign": "=",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
}


def _key_display(key: str) -> str:
    return _KEY_NAMES.get(key, key)


def _runner(app: DebuggerApp, action: str) -> Callable[[], object]:
    def run() -> None:
        app.call_later(app.run_action, action)

    return run


def _is_user_error(exc: BaseException) -> bool:
    """Errors whose message is meant for the user as is (one sentence)."""
    if isinstance(exc, SessionError):
        return True
    try:
        from tuidebug.core.watchpoints import WatchpointError
    except ImportError:  # pragma: no cover - core always ships it
        return False
    return isinstance(exc, WatchpointError | ValueError)


def _summarize(session: DebugSession, ref: TensorRef) -> OutputSummary:
    try:
        array = session.tensor(ref)
    except Exception as exc:
        message = str(exc) if _is_user_error(exc) else f"unreadable: {exc}"
        return OutputSummary(message, missing=True)
    if array is None:
        md = session.metadata
        if not session.capabilities.step_zero_has_values and md.step == 0:
            # step 0 = nothing loaded yet (MindInsight's offline steps start at 1)
            return OutputSummary("no values at step 0: step (n) to load step 1", missing=True)
        return OutputSummary("no value at this step", missing=True)
    try:
        stats = tensor_statistics(array)
    except Exception as exc:
        return OutputSummary(f"no statistics: {exc}", missing=True)
    return OutputSummary(
        stats.summary_line(),
        nan_count=stats.nan_count,
        inf_count=stats.pos_inf_count + stats.neg_inf_count,
    )


def hits_json(
    hits: Sequence[WatchpointHit], specs: Mapping[int, tuple[str, Mapping[str, float]]]
) -> str:
    """The hits as `tuidebug check --json` prints them; `specs`: watchpoint id → (spec,
    user-set parameters). A hit whose watchpoint is gone gets its condition's abbreviation."""
    records = []
    for hit in hits:
        spec, params = specs.get(hit.watchpoint_id, (hit.condition.abbr, {}))
        records.append(hit_record(hit, spec, params))
    return json.dumps(records, indent=2) + "\n"


def run_app(
    session: DebugSession,
    *,
    start_session: bool = False,
    watch_specs: Sequence[str] = (),
    recommended: bool = False,
) -> int:
    """Run the TUI on a session until the user quits; returns an exit status for the CLI.

    The caller owns the session: it closes it afterwards. `start_session=True` lets the app
    call `session.start()` in a worker, so a slow load shows progress in the header
    (offline); leave it False when the session was started already (online).
    `watch_specs` and `recommended`: watchpoints to create once the graphs are loaded.
    """
    app = DebuggerApp(
        session,
        start_session=start_session,
        user_keys=True,
        watch_specs=watch_specs,
        recommended=recommended,
    )
    result = app.run()
    if app.return_code not in (None, 0):
        return int(app.return_code)
    return int(result or 0)


__all__ = ["DebuggerApp", "run_app"]
