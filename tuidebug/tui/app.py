"""The debugger app: one screen of panes around a `DebugSession`.

The app is the only place that talks to the session. Panes post messages (messages.py);
the app turns them into session calls run in thread workers of named exclusive groups
(`load`, `control`, `watchpoints`, `tensor`, `summaries`, `origins`), which post what
they found back as messages too; the session's events, which arrive on any thread, come
as `SessionEventMessage`s. All are handled on the UI thread by the `@on` handlers here.

Whether a run action works is decided by its guard in run_actions.py, on a
`GuardContext` snapshot of the session and the app (`guard_context`), which feeds the
footer (`check_action`), the control bar, the palette, the help and the "why not" toast.
During a run the header follows every step, but the hit list, the summaries and the
open tensor are refreshed once, when the run stops. Where the session can stop a run
(`can_stop_run`: offline), `p` or Esc stops it at the next tensor; the hits its last
check found so far are listed, and the session's notice is the one toast.

The app routes; flows with a job of their own live in helper objects it hands over to
(the app keeps the `@on` handlers and `action_*` methods Textual looks for): the run
actions' calls, guards and control bar (run_controls.py), the watchpoint dialogs and
exports (watchpoint_flows.py), the pane keys and Esc (navigation.py), the NaN/Inf
trace (origin_tracing.py), back and forward over the visits (visit_navigation.py), the
downstream, graph and source screens (node_screens.py), the tensor list and the command
line (kept_views.py), and the tensor view's compare prompts (tensor_compare.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from rich.color import ColorSystem
from textual import events, on, work
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding, BindingType
from textual.command import CommandPalette
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, TabbedContent, TabPane
from textual.worker import get_current_worker

from tuidebug.core.graph import Graph, Node
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
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import Watchpoint, WatchpointHit
from tuidebug.tui.keys.help_screen import HelpScreen, KeyRow, context_help, key_display, key_rows
from tuidebug.tui.keys.keymap import Keymap, active_keys, load_keymap
from tuidebug.tui.kit import colormap, prompts
from tuidebug.tui.kit.labels import shown_lines
from tuidebug.tui.kit.session_text import burst_toast, no_graph_text
from tuidebug.tui.kit.terminal_caps import TerminalCaps, terminal_caps
from tuidebug.tui.messages import (
    ControlDone,
    ControlRequested,
    GraphSwitched,
    HitChosen,
    NodeChosen,
    NodeHighlighted,
    SessionEventMessage,
    StartFailed,
    StartupWatchpointsCreated,
    SummaryRead,
    TensorRead,
    TensorRequested,
    TraceEnded,
    TraceProgress,
    WatchpointAction,
    WorkerNotice,
)
from tuidebug.tui.navigation.kept_views import KeptViews
from tuidebug.tui.navigation.pane_keys import PANES, Navigation
from tuidebug.tui.navigation.visit_history import Visit
from tuidebug.tui.navigation.visits import VisitNavigation
from tuidebug.tui.neighbours.opener import NodeScreens
from tuidebug.tui.origins.runner import OriginTracing
from tuidebug.tui.palette.provider import DebuggerCommands, PaletteCommand
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList, hits_announcement
from tuidebug.tui.panes.node_details import NodeDetails
from tuidebug.tui.panes.scope_tree import ScopeTree, TreeEntry
from tuidebug.tui.panes.stack_list import StackList
from tuidebug.tui.run.actions import RUN_ACTIONS, ActionState, GuardContext
from tuidebug.tui.run.control_bar import ControlBar
from tuidebug.tui.run.controls import RunControls
from tuidebug.tui.tensor.compare import TensorCompareFlows
from tuidebug.tui.tensor.files import file_stem
from tuidebug.tui.tensor.reads import read_tensor, summarize
from tuidebug.tui.tensor.text import hit_context
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.watchpoints.export import check_command, copied_note, exported_specs
from tuidebug.tui.watchpoints.flows import WatchpointFlows
from tuidebug.tui.watchpoints.list_pane import WatchpointList, watch_badges

# A run is under way: the panes wait for its end (the header follows every step).
RUNNING = frozenset({SessionState.RUNNING, SessionState.SENDING})

# Widget ids of the panes z maximizes: the left column (tree, hits and stack tabs with
# their filters), node details, tensor view, watchpoint list, the command line (`:`).
PANE_IDS = frozenset({"left", "details", "tensor-view", "watchpoints", "command-line"})
COLOR_SYSTEMS = {
    "truecolor": ColorSystem.TRUECOLOR,
    "256": ColorSystem.EIGHT_BIT,
    "16": ColorSystem.STANDARD,
}
SHORT_TERMINAL = 32  # rows: below it the focused pane grows (see `_fit_layout`)
PANES_BY_NUMBER = {4: "details", 5: "tensor-view", 6: "watchpoints"}  # 1–3: "left"


def _tolerate_teardown(method: Callable[..., Any]) -> Callable[..., Any]:
    """Messages can still arrive while the app shuts down and its screen and panes are
    already gone (quitting right after a load, a session event racing the exit): such a
    late message is dropped, not a traceback. The app keeps its panes from compose, but
    the panes look up their own children, and the focus needs a screen."""

    @functools.wraps(method)
    def handler(self: DebuggerApp, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (NoMatches, ScreenStackError):
            return None

    return handler


class DebuggerApp(App[int]):
    """The graph debugger. `run_app(session)` is the usual way in."""

    CSS_PATH = "app.tcss"
    TITLE = "tuidebug"
    # One provider, so the debugger's commands come first and Textual's own (theme,
    # screenshot, maximize) follow them instead of landing in the middle at random.
    COMMANDS: ClassVar[set[Any]] = {DebuggerCommands}
    ENABLE_COMMAND_PALETTE = True

    # The run keys are not in the footer: the control bar under the watchpoints lists them
    # (key first) and greys them exactly like the keys, so the footer keeps room for the
    # focused pane's keys.
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(a.key, a.id, a.label, show=False, id=a.binding_id) for a in RUN_ACTIONS),
        Binding("slash", "filter", "Filter", id="tuidebug.filter"),
        Binding("colon", "command_line", "Command", id="tuidebug.command_line"),
        Binding("escape", "back", "Back", show=False, id="tuidebug.back"),
        Binding("question_mark,f1", "help", "Help", id="tuidebug.help"),
        Binding("q", "quit", "Quit", id="tuidebug.quit"),
        Binding("z", "maximize_pane", "Maximize", show=False, id="tuidebug.maximize"),
        # [ and ] are find previous/next in the tensor view: there only Alt+arrows go back
        Binding(
            "alt+left,left_square_bracket",
            "visit_back",
            "Back",
            show=False,
            id="tuidebug.visit_back",
        ),
        Binding(
            "alt+right,right_square_bracket",
            "visit_forward",
            "Forward",
            show=False,
            id="tuidebug.visit_forward",
        ),
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
        terminal: TerminalCaps | None = None,
    ) -> None:
        """`start_session=True`: call `session.start()` in a worker once mounted.
        `source_label` replaces the dump path in the header (stable screenshots).
        `user_keys=True` applies the user's keys.toml (`run_app` does; tests and
        screenshots leave it off so a developer's own file cannot change them).
        `watch_specs` (`--watch`, `--watch-file`) and `recommended` (`--recommended`) are
        created once the graphs are loaded, instead of offering the recommended set.
        `terminal`: what the terminal shows (`run_app` reads the environment; tests leave
        it None, so the colours of the test machine's TERM cannot change a snapshot)."""
        super().__init__()
        self._terminal = terminal
        if terminal is not None:
            self._draw_for(terminal)
        self._watch_flows = WatchpointFlows(self, watch_specs, recommended)
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
        self._recommendation_offered = False
        self._open_tensor: tuple[str, str, int, int | None] | None = None  # graph, node, slot, it
        self._tensor_request = 0  # the latest; an older answer is dropped
        self._step_moved = False  # the step changed since the panes showed their values
        # the hits a run published (and whether its last check was cut short), shown
        # when it stops
        self._hits_at_run_end: tuple[Sequence[WatchpointHit], bool] | None = None
        self.loaded = False  # GraphsLoaded seen (tests and benchmarks wait on it)
        self.messages: list[Notice] = []  # every Notice of the session, for the dialog
        self._pending_notices: list[Notice] = []
        self._hits_toast: str | None = None  # the hits toast up now (see _show_hits)
        # back / forward over the nodes and tensors visited
        self._visits = VisitNavigation(self, lambda: self._open_tensor, self._request_tensor)
        self._kept = KeptViews(self)  # the tensor list and the command line, once made

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        self._header = SessionHeader(id="header")
        self._scope = ScopeTree(id="scope")
        self._hits = HitList(id="hits")
        self._stack = StackList(id="stack")
        self._details = NodeDetails(id="details")
        self._details.border_title = "4 Node"
        self._tensor = TensorView(id="tensor-view")
        self._tensor.border_title = "5 Tensor"
        self._watchpoints = WatchpointList(id="watchpoints")
        self._watchpoints.border_title = "6 Watchpoints"
        self._controls = ControlBar(id="controls")
        self._tabs = TabbedContent(id="left-tabs", initial="tree-tab")
        self._nav = Navigation(
            self,
            tabs=self._tabs,
            scope=self._scope,
            hits=self._hits,
            stack=self._stack,
            details=self._details,
            tensor=self._tensor,
        )
        self._tracer = OriginTracing(self, self._header, self._request_tensor)
        self._compare = TensorCompareFlows(self, lambda: self._open_tensor)
        self._runs = RunControls(
            self, hits=self._hits, controls=self._controls, watchpoint_list=self._watchpoints
        )
        self._node_screens = NodeScreens(self, self._runs.focused_hit)
        yield self._header
        with Horizontal(id="main"):
            with Vertical(id="left"), self._tabs:
                with TabPane("1 Tree", id="tree-tab"):
                    yield self._scope
                with TabPane("2 Hits", id="hits-tab"):
                    yield self._hits
                with TabPane("3 Stack", id="stack-tab"):
                    yield self._stack
            with Vertical(id="right"):
                yield self._details
                yield self._tensor
        yield self._watchpoints
        yield self._controls
        yield Footer()

    def _draw_for(self, terminal: TerminalCaps) -> None:
        """Colours and glyphs the terminal really has, chosen rather than left to the
        nearest-colour mapping (terminal_caps.py says why): 256 colours for TERM=xterm,
        the ANSI theme on a 16-colour terminal (its own palette: the focus border stays a
        calm accent, not bright red), ASCII borders and heatmap cells without UTF-8."""
        colormap.use_terminal(terminal.colors, terminal.unicode)
        if terminal.colors == "16":
            self.theme = "ansi-dark"
        if self.console.color_system is not None:  # None: NO_COLOR, left as Textual has it
            # Rich has no setter; Textual draws every strip with the console's system
            self.console._color_system = COLOR_SYSTEMS[terminal.colors]
        if not terminal.unicode:
            self.add_class("-ascii")

    def on_resize(self, event: events.Resize) -> None:
        self._fit_layout(event.size.height)

    def _fit_layout(self, height: int) -> None:
        """A short terminal (80×24) cannot give every pane a readable height at once: there
        the focused pane of the right column and the watchpoint list take the rows the
        others give up (app.tcss, `-short`), and z shows any pane whole."""
        with contextlib.suppress(ScreenStackError):
            self.screen_stack[0].set_class(height < SHORT_TERMINAL, "-short")

    def on_mount(self) -> None:
        self._fit_layout(self.size.height)
        if self._user_keys:
            self._apply_user_keys()
        self._controls.set_keys(lambda action: self.key_hint(f"tuidebug.{action}"))
        if self._source_label is not None:
            self._header.shown_source = self._source_label
        self._runs.watchpoints = len(self.session.watchpoints)
        self._apply_metadata(self.session.metadata)
        self._watchpoints.set_watchpoints(self.session.watchpoints)
        self._unsubscribe = self.session.subscribe(self._on_session_event_thread)
        if self.session.graphs:
            # The session was started before the app (online): its first GraphsLoaded has
            # gone by, so offer the recommended watchpoints now if none exist yet.
            fresh = not self.session.watchpoints
            self._graphs_loaded(self.session.graphs, first_time=fresh)
            self._show_hits(self.session.hits)
            self.state_changed()
        if self._start_session_on_mount:
            self._start_session()
        self._scope.tree_view.focus()

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
            self.notify("\n".join(shown), title="Your keys file", severity="warning", timeout=20)

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

    @property
    def metadata(self) -> Metadata:
        """The session's metadata as the app last applied it (UI thread)."""
        return self._metadata

    def key_hint(self, binding_id: str) -> str:
        """The first key that runs `binding_id` now, as the help and the palette show it."""
        keys = active_keys(binding_id, self.keymap, owner=type(self))
        return key_display(keys[0]) if keys else binding_id

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _post(self, message: Message) -> None:
        """Post from a worker; dropped once the app has stopped (its loop is closed)."""
        with contextlib.suppress(RuntimeError):
            self.post_message(message)

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
            self._watchpoints.set_watchpoints(event.watchpoints)
            self._runs.watchpoints = len(event.watchpoints)
            self._refresh_badges()
            # the watchpoint count is in the control bar, and recheck needs a watchpoint
            self.state_changed()
        elif isinstance(event, HitsArrived):
            if self._metadata.state in RUNNING:
                self._hits_at_run_end = (event.hits, event.partial)  # shown at the stop
            else:
                # a stopped check's hits: the session's notice of the stop says them
                self._show_hits(event.hits, announce=not event.partial)
                self.state_changed()  # the bar counts the hits
        elif isinstance(event, Progress):
            self._header.set_progress(event.label, event.done, event.total)
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
        if pending:
            text, severity = burst_toast(pending)
            self.notify(text, severity=severity)

    def action_messages(self) -> None:
        if not self.messages:
            self.notify("The session has sent no messages.")
            return
        self.push_screen(prompts.messages_dialog(self.messages))

    def _graphs_loaded(self, graphs: Mapping[str, Graph], *, first_time: bool) -> None:
        self.graphs = dict(graphs)
        self.loaded = True
        self._stack.forget_graphs()
        self._scope.set_graphs(self.graphs, self.current_graph)
        self.current_graph = self._scope.graph.name if self._scope.graph else None
        if self.current_node is not None and (
            self.current_graph is None
            or self.current_node.name not in self.graphs.get(self.current_graph, {})
        ):
            self.current_node = None
            self._details.clear()
        elif self.current_node is not None and self.current_graph is not None:
            # a new training's graph may hold a node of the same name: show that one, not
            # the old graph's node (its inputs, outputs and counts are the old ones)
            graph = self.graphs[self.current_graph]
            fresh = graph.get(self.current_node.name)
            if fresh is not None and fresh is not self.current_node:
                self._show_node(graph, fresh)
        self._graph_switched()
        self._hits.set_context(self.graphs, self._metadata.ranks)
        self._kept.step_changed()  # new graphs (a rank switch): list them again
        self._refresh_badges()
        self.state_changed()
        if first_time and self.graphs and not self._recommendation_offered:
            self._recommendation_offered = True
            if self._watch_flows.has_startup:
                self._watch_flows.create_startup(self.graphs)
            else:
                # after the first frame: the user sees the graph, then the question
                self.call_after_refresh(self._watch_flows.offer_recommended)

    def _apply_metadata(self, metadata: Metadata) -> None:
        """A new step or state: the header follows at once; the hit list, summaries and
        open tensor only once the run (if any) has stopped — not at every step it passes."""
        self._step_moved |= metadata.step != self._metadata.step
        self._metadata = metadata
        running = metadata.state in RUNNING
        if not running and self._hits_at_run_end is not None:
            (hits, partial), self._hits_at_run_end = self._hits_at_run_end, None
            self._show_hits(hits, announce=not partial)  # it updates the header too
        else:
            self._update_header()
        if not self.graphs:
            self._scope.set_empty_message(no_graph_text(metadata))
        self.state_changed()
        if running or not self._step_moved:
            return
        self._step_moved = False
        self._kept.step_changed()
        if self.current_node is not None and self.current_graph:
            # Values differ per step: refresh what is on screen.
            self._fetch_summaries(self.current_graph, self.current_node)
            if self._open_tensor is not None:
                graph, node, slot, _iteration = self._open_tensor
                self._request_tensor(graph, node, slot, None)

    def _update_header(self) -> None:
        md = self._metadata
        hits_here = md.state is SessionState.WAITING and any(
            self._hit_step(hit) == md.step for hit in self.session.hits
        )
        stop_hint = ""
        if md.state in RUNNING and self.session.capabilities.can_stop_run:
            stop_hint = (
                f"{self.key_hint('tuidebug.pause')} or {self.key_hint('tuidebug.back')} stops"
            )
        self._header.set_metadata(md, hits_at_step=hits_here, stop_hint=stop_hint)

    def _hit_step(self, hit: Any) -> int:
        return hit.step if hit.step is not None else self._metadata.step

    def _show_hits(self, hits: Sequence[WatchpointHit], *, announce: bool = False) -> None:
        """The hit list, its counts and badges, the header (the caller: `state_changed`)."""
        before = self._hits.hit_count
        self._hits.set_hits(hits)
        self._watchpoints.set_hit_counts(self._hits.hit_counts())
        self._tabs.get_tab("hits-tab").label = f"2 Hits ({len(hits)})" if hits else "2 Hits"
        self._refresh_badges()
        self._update_header()
        if len(hits) != before or not hits:
            self._retract_hits_toast()  # a count the list no longer shows must not stay up
        said = hits_announcement(hits, self._hits.shown_count)
        if announce and said is not None and len(hits) != before:
            text, real = said
            self._hits_toast = shown_lines(text)
            self.notify(text, severity="warning" if real else "information")

    def _retract_hits_toast(self) -> None:
        """Take down the last "N watchpoint hits" toast if it is still up. Textual has no
        public way to withdraw one toast (only all of them), hence its private list."""
        text, self._hits_toast = self._hits_toast, None
        if text is None:
            return
        with contextlib.suppress(AttributeError, KeyError):
            for notification in list(self._notifications):
                if notification.message == text:
                    self._unnotify(notification)

    def _refresh_badges(self) -> None:
        graph = self.graphs.get(self.current_graph or "")
        tree = self._scope.tree_view
        if graph is None:
            tree.set_badges((), (), {}, {})
            return
        # the tree is the shown rank's: other ranks' hits (a check of every rank) are
        # counted in the hit list, not on these nodes
        rank = self._metadata.rank
        hits = [h for h in self.session.hits if h.tensor.rank == rank]
        watched_nodes, watched_scopes, node_hits, scope_hits = watch_badges(
            graph, self.session.watchpoints, hits
        )
        tree.set_badges(watched_nodes, watched_scopes, node_hits, scope_hits)

    # ---------------------------------------------------------- run actions
    def guard_context(self) -> GuardContext:
        """What the guards read, as of now (rebuilt only when it changed)."""
        return self._runs.context()

    def action_state(self, action: str) -> ActionState:
        """Whether an action can run now, and if not, why (one sentence)."""
        return self._runs.state(action)

    def state_changed(self) -> None:
        """Something the guards read changed: a fresh snapshot, the bar and the footer."""
        self._runs.forget()
        self._runs.update_bar()
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # None = shown greyed out: the key exists, it just cannot run right now.
        return True if self.action_state(action).enabled else None

    def guard(self, action: str) -> bool:
        """For actions reached without a key (palette, buttons): explain a refusal."""
        return self._runs.allowed(action)

    def on_key(self, event: Any) -> None:
        """A greyed-out key was pressed: its binding did not run, so say why."""
        if not isinstance(self.screen, ModalScreen):
            self._runs.explain_greyed(event, self._bindings_for_key(event.key))

    def _bindings_for_key(self, key: str) -> list[Binding]:
        bindings = self._bindings.copy()
        if self.keymap:  # a remapped key is the binding's now, its old key is not
            bindings.apply_keymap(self.keymap)
        return list(bindings.key_to_bindings.get(key, ()))

    @on(ControlRequested)
    async def _control_requested(self, message: ControlRequested) -> None:
        await self.run_action(message.action)

    def action_step(self) -> None:
        self._runs.step()

    def action_step_many(self) -> None:
        self._runs.step_many()

    def action_continue(self) -> None:
        self._runs.continue_()

    def action_step_node(self) -> None:
        self._runs.step_node()

    def action_run_to_node(self) -> None:
        self._runs.run_to_node()

    def action_pause(self) -> None:
        self._runs.pause()

    def action_terminate(self) -> None:
        self._runs.terminate()

    def action_reset_step(self) -> None:
        self._runs.reset_step()

    def action_recheck(self) -> None:
        self._runs.recheck()

    def action_history(self) -> None:
        self._runs.history()

    def action_select_rank(self, rank: int) -> None:
        self._runs.select_rank(rank)

    # ------------------------------------------------------------ session calls
    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _start_session(self) -> None:
        try:
            self.session.start()
        except SessionError as exc:
            # queued behind the session's own events (its progress line), not beside them
            self._post(StartFailed(str(exc)))
        except Exception as exc:  # a bug, but the user still gets a sentence, not a traceback
            self._post(StartFailed(f"Loading failed: {exc}"))

    @on(StartFailed)
    @_tolerate_teardown
    def _start_failed(self, message: StartFailed) -> None:
        """The session could not start (the dump went away after the CLI checked it): the
        "Reading the dump folder…" line must not stay as if it were still reading, so the
        header and the tree say the error instead."""
        self._header.set_progress("", 1, 1)  # done: no progress line
        if not self.graphs:
            self._scope.set_empty_message(message.sentence)
        self.notify(message.sentence, severity="error", timeout=30)

    def run_session_call(
        self, label: str, call: Callable[[], object], *, control: bool = True
    ) -> None:
        """Run a (possibly slow) session call off the UI thread; one control at a time."""
        self._runs.call(label, call, control=control)

    @on(WorkerNotice)
    def _worker_notice(self, message: WorkerNotice) -> None:
        self.notify(message.text, severity=message.severity, timeout=message.timeout)

    @on(ControlDone)
    @_tolerate_teardown
    def _control_done(self, _message: ControlDone) -> None:
        self._runs.busy = False
        self.state_changed()

    # ----------------------------------------------------- summaries and tensors
    @work(thread=True, exclusive=True, group="summaries", exit_on_error=False)
    def _summaries_worker(self, graph: str, node: Node, rank: int) -> None:
        worker = get_current_worker()
        for spec in node.outputs:
            if worker.is_cancelled:
                return
            ref = TensorRef(node.name, spec.slot, None, rank, graph)
            summary = summarize(self.session, ref)
            if worker.is_cancelled:
                return
            self._post(SummaryRead(node.name, spec.slot, summary))

    @on(SummaryRead)
    @_tolerate_teardown
    def _summary_read(self, message: SummaryRead) -> None:
        self._details.set_summary(message.node, message.slot, message.summary)

    def _fetch_summaries(self, graph: str, node: Node) -> None:
        if node.outputs:
            self._summaries_worker(graph, node, self._metadata.rank)

    @work(thread=True, exclusive=True, group="tensor", exit_on_error=False)
    def _tensor_worker(
        self,
        request: int,
        node: Node,
        ref: TensorRef,
        title: str,
        want_previous: bool,
        context: str = "",
    ) -> None:
        worker = get_current_worker()
        answer = read_tensor(
            self.session,
            node,
            ref,
            want_previous=want_previous,
            shown_step=self._metadata.step,
            cancelled=lambda: worker.is_cancelled,
        )
        if answer is None:
            return
        if answer.error:
            self._post(TensorRead(request, error=answer.error))
            return
        self._post(
            TensorRead(
                request,
                title=title,
                array=answer.array,
                previous=answer.previous,
                note=answer.note,
                short_name=node.short_name,
                slot=ref.slot,
                file_stem=file_stem(
                    node.name,
                    ref.slot,
                    self.session.step_of(ref),
                    ref.rank if len(self._metadata.ranks) > 1 else None,
                ),
                context=context,
            )
        )

    @on(TensorRead)
    @_tolerate_teardown
    def _tensor_read(self, message: TensorRead) -> None:
        if message.request != self._tensor_request:
            return  # a later request is open now
        if message.error:
            self._tensor.show_error(message.error)
            return
        assert message.array is not None
        self._tensor.show(
            message.title,
            message.array,
            message.previous,
            note=message.note,
            short_name=message.short_name,
            slot=message.slot,
            file_stem=message.file_stem,
            context=message.context,
        )

    def _request_tensor(
        self,
        graph_name: str,
        node_name: str,
        slot: int,
        iteration: int | None,
        hit: WatchpointHit | None = None,
    ) -> None:
        """Open a tensor in the tensor view (`hit`: the hit it is opened from, shown
        above it with its condition and what to try)."""
        graph = self.graphs.get(graph_name)
        node = graph.get(node_name) if graph else None
        if node is None:
            self.notify(f"There is no node {node_name} in {graph_name}.", severity="warning")
            return
        if node.outputs and slot not in {spec.slot for spec in node.outputs}:
            self.notify(f"{node.short_name} has no output slot {slot}.", severity="warning")
            return
        self._visits.record(Visit(graph_name, node.name, slot, iteration))
        self._open_tensor = (graph_name, node.name, slot, iteration)
        ref = TensorRef(node.name, slot, iteration, self._metadata.rank, graph_name)
        title = f"{node.short_name}:{slot}  ({node.op_type}, step {self.session.step_of(ref)})"
        self._tensor.show_loading(title)
        capabilities = self.session.capabilities
        # Offline every tensor has its previous run in the dump; a live training keeps
        # only the parameters' (asking it for any other costs a round trip for nothing).
        want_previous = capabilities.can_compare_previous and (
            node.is_parameter or not capabilities.live
        )
        context = hit_context(hit) if hit is not None else ""
        self._tensor_request += 1
        self._tensor_worker(self._tensor_request, node, ref, title, want_previous, context)

    # ------------------------------------------------------- pane messages
    @on(NodeHighlighted)
    @_tolerate_teardown
    def _node_highlighted(self, message: NodeHighlighted) -> None:
        graph = self.graphs.get(message.graph)
        if graph is None:
            return
        if message.node is None:
            self.current_node = None
            self._runs.forget()  # run to node and the trace read the selected node
            self._details.show_scope(graph, message.scope)
            self._stack.set_node(None)
            return
        node = graph.get(message.node)
        if node is None:
            return
        self._show_node(graph, node)

    def _show_node(self, graph: Graph, node: Node) -> None:
        changed = self.current_node is not node
        self.current_node = node
        self._details.show_node(graph, node)
        self._stack.set_node(node)
        if changed:
            self._runs.forget()  # run to node and the trace read the selected node
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
        node = graph.get(node_name) if graph is not None else None
        if graph is None or node is None:
            self.notify(f"There is no node {node_name} in the loaded graphs.", severity="warning")
            return False
        self._visits.record(Visit(graph_name, node.name))
        if self._scope.graph is None or self._scope.graph.name != graph_name:
            self.action_show_graph(graph_name)
        self._scope.reveal(node_name)
        self._show_node(graph, node)
        if focus_tree:
            self._nav.remember_focus()
            self._tabs.active = "tree-tab"
            self._scope.tree_view.focus()
        return True

    def action_go_to_node(self, graph_name: str, node_name: str) -> None:
        self.go_to_node(graph_name, node_name)

    @on(StackList.SourceRequested)
    def _source_requested(self, message: StackList.SourceRequested) -> None:
        """A stack line's file, each line with the nodes it created (Enter goes there)."""
        message.stop()
        self._node_screens.source(message.path, message.line_no)

    # -------------------------------------------- back and forward over the visits
    def action_visit_back(self) -> None:
        self._visits.back()

    def action_visit_forward(self) -> None:
        self._visits.forward()

    @on(TensorRequested)
    @_tolerate_teardown
    def _tensor_requested(self, message: TensorRequested) -> None:
        self._request_tensor(message.graph, message.node, message.slot, message.iteration)

    @on(TensorView.CompareRequested)
    @_tolerate_teardown
    def _tensor_compare_requested(self, message: TensorView.CompareRequested) -> None:
        self._compare.request(message.view, message.kind)

    def action_compare_tensor(self, kind: Literal["rank", "tensor"]) -> None:
        """The palette's R / D: as the keys in the tensor view, from anywhere."""
        self._tensor.action_compare_with(kind)

    @on(HitChosen)
    @_tolerate_teardown
    def _hit_chosen(self, message: HitChosen) -> None:
        ref: TensorRef = message.hit.tensor
        if ref.rank != self._metadata.rank and len(self._metadata.ranks) > 1:
            # a hit of another rank (a session that checks every rank): show that rank,
            # then open the hit (posted after the switch's events, so handled after them)
            hit = message.hit

            def switch() -> None:
                self.session.select_rank(ref.rank)
                with contextlib.suppress(RuntimeError):  # the app stopped meanwhile
                    self.post_message(HitChosen(hit))

            self._runs.call(f"Switching to rank {ref.rank}", switch)
            return
        graph_name = ref.graph or self.current_graph or ""
        if graph_name not in self.graphs:
            graph_name = next(
                (name for name, graph in self.graphs.items() if graph.get(ref.node)), graph_name
            )
        if self.go_to_node(graph_name, ref.node):
            self._request_tensor(graph_name, ref.node, ref.slot, ref.iteration, message.hit)

    @on(GraphSwitched)
    @_tolerate_teardown
    def _graph_switched_message(self, message: GraphSwitched) -> None:
        self.current_graph = message.graph
        self._graph_switched()

    def action_show_graph(self, name: str) -> None:
        self._scope.show_graph(name)
        self.current_graph = name
        self._graph_switched()

    def _graph_switched(self) -> None:
        graph = self.graphs.get(self.current_graph or "")
        self._header.set_graph(self.current_graph or "")
        self._stack.set_graph(graph)
        self._refresh_badges()
        self._runs.forget()  # the trace target is in this graph

    # ------------------------------------------------------------ watchpoints
    @on(WatchpointAction)
    @_tolerate_teardown
    def _watchpoint_action(self, message: WatchpointAction) -> None:
        self._watch_flows.act(message)

    def action_new_watchpoint(self) -> None:
        self._watch_flows.create()

    def action_apply_recommended(self) -> None:
        self._watch_flows.apply_recommended()

    @on(StartupWatchpointsCreated)
    def _startup_watchpoints_created(self, message: StartupWatchpointsCreated) -> None:
        self._watch_flows.startup_created(message)

    def spec_of(self, watchpoint: Watchpoint) -> str:
        """The watchpoint as a --watch spec, as the user wrote it while it is unchanged."""
        return self._watch_flows.spec_of(watchpoint)

    def selected_tree_entry(self) -> TreeEntry | None:
        """The tree's selected row (a node or a scope): a new watchpoint watches it."""
        return self._scope.selected_entry

    # ------------------------------------------------ watchpoints and hits out
    def action_copy_check_command(self) -> None:
        """Copy `tuidebug check DUMP --watch …` (online: the --watch options) and show it."""
        exported = exported_specs(
            self.session.watchpoints, self._watch_flows.given_specs, self.graphs
        )
        if not exported.enabled:
            self.notify("There is no enabled watchpoint to copy: press w to add one.")
            return
        md = self._metadata
        dump = os.path.abspath(md.source) if md.mode == "offline" and md.source else None
        command = check_command(exported.enabled, dump)
        self.copy_to_clipboard(command)
        note = copied_note(exported)
        self.notify(
            f"Copied to the clipboard:\n{command}" + (f"\n{note}" if note else ""), timeout=20
        )

    def action_save_watchpoints(self) -> None:
        self._watch_flows.save_watchpoints()

    @on(HitList.SaveRequested)
    def _save_hits_requested(self, message: HitList.SaveRequested) -> None:
        message.stop()
        self.action_save_hits()

    def action_save_hits(self) -> None:
        self._watch_flows.save_hits(self._hits.shown_count)

    # -------------------------------------------------------------- navigation
    def action_filter(self) -> None:
        self._nav.filter()

    async def action_command_line(self) -> None:
        """`:` opens the command line (tfdbg's commands over this session) at the bottom
        of the main screen; it and the command layer load with the first `:`."""
        await self._kept.open_command_line()

    async def action_back(self) -> None:  # async as App's: Esc's meaning here is ours
        if self._tracer.running:
            self._tracer.cancel()
        elif not self._runs.stop_run():  # Esc stops an offline run first
            self._nav.back()

    def action_focus_pane(self, number: int) -> None:
        if self._kept.tensor_list_shown:
            # a pane key on the tensor list goes to that pane, once the list is closed
            self.pop_screen()
            self.call_after_refresh(self.action_focus_pane, number)
            return
        screen = self.screen
        if screen.maximized is not None:
            # a pane key while one pane fills the screen shows that pane full-screen in
            # its place (on a small terminal, z then 1–6 flips between whole panes); first,
            # as Textual only focuses what the maximized view shows
            pane_id = "left" if number <= 3 else PANES_BY_NUMBER.get(number, "")
            with contextlib.suppress(NoMatches):
                screen.maximized = self.query_one(f"#{pane_id}", Widget)
        self._nav.focus_pane(number)

    def _pane_of(self, widget: Widget | None) -> Widget | None:
        """The pane that holds `widget` (the whole pane, not the tree or table inside it,
        so its filter row and tabs are maximized with it)."""
        node: Any = widget
        while isinstance(node, Widget):
            if node.id in PANE_IDS:
                return node
            node = node.parent
        return None

    def action_maximize_pane(self) -> None:
        """z (and the palette): the focused pane fills the screen; z again or Esc restores
        the layout. Textual's own maximize would enlarge only the focused widget (the tree
        without its filter, or nothing for a pane whose focus sits in a container)."""
        screen = self.screen
        if isinstance(screen, ModalScreen):
            return
        if screen.maximized is not None:
            screen.minimize()
            return
        pane = self._pane_of(screen.focused)
        if pane is None:
            self.notify("Focus a pane first (1–6), then press z to maximize it.")
            return
        screen.maximized = pane

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        close = self.key_hint("help.close")
        context = context_help(self.focused, self.key_hint)
        self.push_screen(HelpScreen(self.help_keys(), context, close_key=close))

    def help_keys(self) -> list[KeyRow]:
        guards = self.guard_context()
        return key_rows(self.BINDINGS, self.keymap, lambda action: guards.state(action).reason)

    # ------------------------------ the tensor list, node screens, NaN/Inf origins
    def action_tensor_list(self) -> None:
        """L: every tensor of the step (kept: its filters survive closing it)."""
        if self.guard("tensor_list"):
            self._kept.show_tensor_list()

    def action_downstream(self) -> None:
        """O: the nodes downstream of the selected hit's or node's outputs."""
        if self.guard("downstream"):
            self._node_screens.downstream()

    def action_graph_view(self) -> None:
        """G: the selected hit's or node's inputs and consumers, drawn as a small DAG."""
        if self.guard("graph_view"):
            self._node_screens.graph_view()

    def action_trace_origin(self) -> None:
        if not self.guard("trace_origin"):
            return
        target = self._node_screens.target()
        if target is None:
            return
        md = self._metadata
        iteration = target.iteration
        step = self.session.step_of(TensorRef(target.node, 0, iteration, md.rank, target.graph))
        self._tracer.start(self.graphs[target.graph], target.node, iteration, md.rank, step)

    @on(TraceProgress)
    @_tolerate_teardown
    def _trace_progress(self, message: TraceProgress) -> None:
        self._tracer.progress(message)

    @on(TraceEnded)
    @_tolerate_teardown
    def _trace_ended(self, message: TraceEnded) -> None:
        self._tracer.ended(message)

    # ----------------------------------------------------------------- palette
    def palette_commands(self) -> list[PaletteCommand]:
        from tuidebug.tui.palette.entries import PaletteState, palette_entries  # on Ctrl+P only

        guards = self.guard_context()
        # asked while the palette is open: the screen it was opened from, not the palette
        screen = next(
            (s for s in reversed(self.screen_stack) if not isinstance(s, CommandPalette)),
            self.screen,
        )
        state = PaletteState(
            enabled={a for a, s in guards.states.items() if s.enabled},
            graphs=self.graphs,
            current_graph=self.current_graph,
            metadata=self._metadata,
            panes={number: name for number, (_tab, _sel, name) in PANES.items()},
            has_watchpoints=bool(self.session.watchpoints),
            has_hits=bool(self.session.hits),
            messages=len(self.messages),
            maximized=screen.maximized is not None,
            can_maximize=self._pane_of(screen.focused) is not None,
            can_go_back=self._visits.can_back,
            can_go_forward=self._visits.can_forward,
            tensor_shown=self._tensor.state == "tensor",
        )
        return [
            PaletteCommand(
                entry.title,
                entry.help,
                functools.partial(self._run_from_palette, screen, entry.action),
            )
            for entry in palette_entries(state, self.key_hint)
        ]

    def _run_from_palette(self, screen: Any, action: str) -> None:
        """Run a palette entry's action: `screen.…` ones on the screen the palette was
        asked from (as they always were), the others on the app."""
        if action.startswith("screen."):
            self.call_later(self.run_action, action.removeprefix("screen."), screen)
        else:
            self.call_later(self.run_action, action)

    def action_screenshot_soon(self) -> None:
        """A screenshot once the palette is gone from the screen."""
        self.set_timer(0.1, self.save_screenshot_here)

    def save_screenshot_here(self) -> str | None:
        """An SVG of the screen in the current directory, as the palette says (Textual's
        `deliver_screenshot` writes to ~/Downloads, and fails where there is none); the
        toast gives the full path. Returns it, None when it could not be written."""
        here = os.environ.get("PWD") or "the current directory"  # getcwd() can fail too
        try:
            here = os.getcwd()
            path = os.path.abspath(self.save_screenshot(path=here))
        except OSError as exc:
            self.notify(
                f"The screenshot could not be saved in {here}: {exc.strerror or exc}.",
                severity="error",
            )
            return None
        self.notify(f"Screenshot saved to {path}", timeout=10)
        return path

    def palette_graph(self) -> Graph | None:
        return self.graphs.get(self.current_graph or "")

    def palette_go_to_node(self, graph: str, node: str) -> None:
        self.go_to_node(graph, node)


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
        terminal=terminal_caps(os.environ),
    )
    result = app.run()
    if app.return_code not in (None, 0):
        return int(app.return_code)
    return int(result or 0)


__all__ = ["DebuggerApp", "run_app"]
