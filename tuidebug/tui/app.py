"""The debugger app: one screen of panes around a `DebugSession`.

The app is the only place that talks to the session. Panes post messages (messages.py);
the app turns them into session calls run in thread workers of named exclusive groups
(`load`, `control`, `watchpoints`, `tensor`, `summaries`, `origins`), which post what
they found back as messages too; the session's events, which arrive on any thread, come
as `SessionEventMessage`s. All are handled on the UI thread by the `@on` handlers here.

Whether a run action works is decided by its guard in run/actions.py, on a
`GuardContext` snapshot of the session and the app (`guard_context`), which feeds the
footer (`check_action`), the control bar, the palette, the help and the "why not" toast.
During a run the header follows every step, but the hit list, the summaries and the
open tensor are refreshed once, when the run stops. Where the session can stop a run
(`can_stop_run`: offline), `p` or Esc stops it at the next tensor; the hits its last
check found so far are listed, and the session's notice is the one toast.

The app routes; flows with a job of their own live in helper objects of the feature
packages, which see the app only as `host.AppHost` (the app keeps the `@on` handlers and
the actions Textual looks for): every run action (`run('<id>')`, run/controls.py), the
watchpoint dialogs and exports (watchpoints/flows.py), the hits shown
(watchpoints/hits_shown.py), the pane keys, Esc and z (navigation/), back and forward
(navigation/visits.py), the tensor list and the command line (navigation/kept_views.py),
the NaN/Inf trace (origins/runner.py), the node screens (neighbours/opener.py), and the
tensor view's reads and compare prompts (tensor/requests.py, tensor/compare.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from textual import events, on, work
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, TabPane

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
    WatchpointsChanged,
)
from tuidebug.core.watchpoints import Watchpoint, WatchpointHit
from tuidebug.tui.keys.keymap import Keymap, active_keys, apply_user_keys, key_display
from tuidebug.tui.kit import start_gc
from tuidebug.tui.kit.labels import shown_lines
from tuidebug.tui.kit.notice_burst import NoticeBurst
from tuidebug.tui.kit.session_text import no_graph_text
from tuidebug.tui.kit.teardown import tolerate_teardown
from tuidebug.tui.kit.terminal_caps import TerminalCaps, draw_for, terminal_caps
from tuidebug.tui.kit.toasts import withdraw_toast
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
from tuidebug.tui.navigation.focus_frames import MainScreen, follow_focus
from tuidebug.tui.navigation.kept_views import KeptViews
from tuidebug.tui.navigation.left_tabs import LeftTabs
from tuidebug.tui.navigation.maximize import maximize_instead, pane_of, toggle_maximized
from tuidebug.tui.navigation.pane_keys import PANES, Navigation
from tuidebug.tui.navigation.pane_sizes import SIZE_BINDINGS, PaneSizes
from tuidebug.tui.navigation.visits import VisitNavigation
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.panes.node_details import NodeDetails
from tuidebug.tui.panes.scope_tree import ScopeTree, TreeEntry
from tuidebug.tui.run.actions import RUN_ACTIONS, ActionState, GuardContext
from tuidebug.tui.run.control_bar import ControlBar
from tuidebug.tui.run.controls import Openers, RunControls
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.watchpoints.hits_shown import RUNNING, HitsShown
from tuidebug.tui.watchpoints.pane import WatchpointPane

if TYPE_CHECKING:
    from textual.command import Provider

    from tuidebug.tui.divergence.flows import DivergenceFlows
    from tuidebug.tui.keys.help_screen import KeyRow
    from tuidebug.tui.neighbours.opener import NodeScreens
    from tuidebug.tui.origins.runner import OriginTracing
    from tuidebug.tui.palette.provider import PaletteCommand
    from tuidebug.tui.panes.stack_list import StackList
    from tuidebug.tui.tensor.requests import OpenTensor, TensorRequests
    from tuidebug.tui.watchpoints.flows import WatchpointFlows

SHORT_TERMINAL = 32  # rows: below it the focused pane grows (see `_fit_layout`)


def _palette() -> type[Provider]:
    from tuidebug.tui.palette.provider import DebuggerCommands  # with the first Ctrl+P

    return DebuggerCommands


class DebuggerApp(App[int]):
    """The graph debugger. `run_app(session)` is the usual way in."""

    CSS_PATH = "app.tcss"
    TITLE = "tuidebug"
    # One provider, so the debugger's commands come first and Textual's own (theme,
    # screenshot, maximize) follow them instead of landing in the middle at random.
    COMMANDS: ClassVar[set[Any]] = {_palette}
    ENABLE_COMMAND_PALETTE = True

    # The run keys are not in the footer: the control bar under the watchpoints lists them
    # (key first) and greys them exactly like the keys, so the footer keeps room for the
    # focused pane's keys.
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(a.key, a.action, a.label, show=False, id=a.binding_id) for a in RUN_ACTIONS),
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
        *SIZE_BINDINGS,  # < > { }: the dividers (pane_sizes.py)
        # the divergence tab, once a golden dump is given (divergence/flows.py)
        Binding("7", "divergence", "divergence list", show=False, id="tuidebug.pane7"),
    ]

    # made in compose; named here as lambdas made before them read them
    _runs: RunControls

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
        against: str | None = None,
    ) -> None:
        """`start_session=True`: call `session.start()` in a worker once mounted.
        `source_label` replaces the dump path in the header (stable screenshots).
        `user_keys=True` applies the user's keys.toml (`run_app` does; tests and
        screenshots leave it off so a developer's own file cannot change them).
        `watch_specs` (`--watch`, `--watch-file`) and `recommended` (`--recommended`) are
        created once the graphs are loaded, instead of offering the recommended set.
        `terminal`: what the terminal shows (`run_app` reads the environment; tests leave
        it None, so the colours of the test machine's TERM cannot change a snapshot).
        `against`: a golden dump to compare with once loaded (`--against`, divergence/)."""
        super().__init__()
        self._against = against
        self._divergence_flows: DivergenceFlows | None = None
        self._terminal = terminal
        if terminal is not None:
            draw_for(self, terminal)
        self._watch_args = (tuple(watch_specs), recommended)  # for `_watch_flows`
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
        self._step_moved = False  # the step changed since the panes showed their values
        # the hits a run published (and whether its last check was cut short), shown
        # when it stops
        self._hits_at_run_end: tuple[Sequence[WatchpointHit], bool] | None = None
        self.loaded = False  # GraphsLoaded seen (tests and benchmarks wait on it)
        self._notices = NoticeBurst(
            lambda text, severity: self.notify(text, severity=severity), self.call_later
        )
        self.messages: list[Notice] = self._notices.messages  # for the dialog
        # back / forward over the nodes and tensors visited
        self._visits = VisitNavigation(self, lambda: self._reads.open, self._request_tensor)
        self._kept = KeptViews(self)  # the tensor list and the command line, once made
        self._sizes = PaneSizes(self)  # the dividers the user moved, kept for the session

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        self._header = SessionHeader(id="header")
        self._scope = ScopeTree(id="scope")
        self._hits = HitList(id="hits")
        self._details = NodeDetails(id="details")
        self._details.border_title = "4 Node"
        self._tensor = TensorView(id="tensor-view")
        self._tensor.border_title = "5 Tensor"
        self._watchpoints = WatchpointPane(self.session.watchpoints, "6 Watchpoints")
        self._controls = ControlBar(id="controls", capabilities=self.session.capabilities)
        self._tabs = LeftTabs(id="left-tabs", initial="tree-tab")  # its bar: one widget at first
        self._nav = Navigation(
            self,
            tabs=self._tabs,
            scope=self._scope,
            hits=self._hits,
            stack=lambda: self._stack,
            details=self._details,
            tensor=self._tensor,
        )
        self._shown = HitsShown(
            self,
            header=self._header,
            hits=self._hits,
            tabs=self._tabs,
            scope=self._scope,
            watchpoint_list=self._watchpoints,
            withdraw_toast=functools.partial(withdraw_toast, self),
            open_tensor=self._request_tensor,
        )
        self._runs = RunControls(
            self,
            hits=self._hits,
            controls=self._controls,
            watchpoint_list=self._watchpoints,
            watch_flows=lambda: self._watch_flows,
            tracer=lambda: self._tracer,
            opens=Openers(
                downstream=lambda: self._node_screens.downstream(),
                graph_view=lambda: self._node_screens.graph_view(),
                tensor_list=self._kept.show_tensor_list,
            ),
        )
        yield self._header
        with Horizontal(id="main"):
            with Vertical(id="left"), self._tabs:
                with TabPane("1 Tree", id="tree-tab"):
                    yield self._scope
                # the hidden tabs' lists mount just after the first frame (`on_mount`)
                yield TabPane("2 Hits", id="hits-tab")
                yield TabPane("3 Stack", id="stack-tab")
            with Vertical(id="right"):
                yield self._details
                yield self._tensor
        yield self._watchpoints.first_frame()  # the list's shell, or the list (issue 28)
        yield self._controls
        yield Footer()

    # made when first used, with their modules, not for the first frame (issue 28)
    @functools.cached_property
    def _tracer(self) -> OriginTracing:  # the NaN/Inf trace (origins/runner.py)
        from tuidebug.tui.origins.runner import OriginTracing

        return OriginTracing(self, self._header, self._request_tensor)

    @functools.cached_property
    def _reads(self) -> TensorRequests:  # the tensor view's and node details' reads
        from tuidebug.tui.tensor.requests import TensorRequests

        return TensorRequests(self, self._tensor, self._details, self._visits.record)

    @functools.cached_property
    def _stack(self) -> StackList:  # the Stack tab's list: mounted after the first frame
        from tuidebug.tui.panes.stack_list import StackList

        return StackList(id="stack")

    @functools.cached_property
    def _watch_flows(self) -> WatchpointFlows:  # the watchpoint dialogs and exports
        from tuidebug.tui.watchpoints.flows import WatchpointFlows

        return WatchpointFlows(self, *self._watch_args)

    @functools.cached_property
    def _node_screens(self) -> NodeScreens:  # downstream, graph view, source (neighbours/)
        from tuidebug.tui.neighbours.opener import NodeScreens

        return NodeScreens(self, lambda: self._runs.focused_hit())

    def get_default_screen(self) -> MainScreen:
        return MainScreen(id="_default")  # it focuses the tree itself (focus_frames.py)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_layout(event.size.height)
        self.call_after_refresh(self._sizes.apply)  # the screen has its new size by then

    def _mount_hidden_tabs(self) -> None:
        start_gc.resume()  # the first frame is drawn (the CLI paused it: cli/launch.py)
        self.query_one("#hits-tab", TabPane).mount(self._hits)
        self.query_one("#stack-tab", TabPane).mount(self._stack)
        self.call_later(self._watchpoints.replace_shell, self.query_one("#watchpoints"))

    def _fit_layout(self, height: int) -> None:
        """A short terminal (80×24) cannot give every pane a readable height at once: there
        the focused pane of the right column and the watchpoint list take the rows the
        others give up (app.tcss, `-short`), and z shows any pane whole."""
        with contextlib.suppress(ScreenStackError):
            self.screen_stack[0].set_class(height < SHORT_TERMINAL, "-short")

    def on_mount(self) -> None:
        # building and styling the hidden Hits and Stack tabs costs a tenth of the start
        # (issue 28): they follow the first frame; until then the lists keep what is set
        self.call_after_refresh(self._mount_hidden_tabs)
        self._fit_layout(self.size.height)
        if self.has_class("-ascii"):
            from tuidebug.tui.kit.ascii_glyphs import write_ascii  # a terminal without UTF-8

            write_ascii(self)
        if self._user_keys:
            self.keymap = apply_user_keys(self)
        self._controls.set_keys(lambda action: self.key_hint(f"tuidebug.{action}"))
        self._watchpoints.set_new_key(self.key_hint("tuidebug.new_watchpoint"))
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
            self._shown.show(self.session.hits)
            self.state_changed()
        if self._start_session_on_mount:
            # after the first frame: loading holds the GIL for most of its time, and the
            # layout drawn (the dump being read) is what the user waits for first
            self.call_after_refresh(self._start_session)
        follow_focus(self.screen_stack[0])  # the focused pane's border (focus_frames.py)
        self._scope.tree_view.focus()

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
        start_gc.thaw()
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
    @tolerate_teardown
    def _session_event(self, message: SessionEventMessage) -> None:
        event = message.event
        if isinstance(event, GraphsLoaded):
            self._graphs_loaded(event.graphs, first_time=event.first_time)
        elif isinstance(event, MetadataChanged):
            self._apply_metadata(event.metadata)
        elif isinstance(event, WatchpointsChanged):
            self._watchpoints.set_watchpoints(event.watchpoints)
            self._runs.watchpoints = len(event.watchpoints)
            self._shown.refresh_badges()
            # the watchpoint count is in the control bar, and recheck needs a watchpoint
            self.state_changed()
        elif isinstance(event, HitsArrived):
            if self._metadata.state in RUNNING:
                self._hits_at_run_end = (event.hits, event.partial)  # shown at the stop
            else:
                # a stopped check's hits: the session's notice of the stop says them
                self._shown.show(event.hits, announce=not event.partial)
                self.state_changed()  # the bar counts the hits
        elif isinstance(event, Progress):
            self._header.set_progress(event.label, event.done, event.total)
        elif isinstance(event, ClientDisconnected):
            self.notify(event.reason or "The training disconnected.", severity="warning")
        elif isinstance(event, Notice):
            self._notices.add(event)

    def action_messages(self) -> None:
        if not self.messages:
            self.notify("The session has sent no messages.")
            return
        from tuidebug.tui.kit import prompts  # the dialogs load on first use (issue 28)

        self.push_screen(prompts.messages_dialog(self.messages))

    def _graphs_loaded(self, graphs: Mapping[str, Graph], *, first_time: bool) -> None:
        self.graphs = dict(graphs)
        if not self.loaded:  # what the start and the load built lives as long as the app
            self.call_after_refresh(start_gc.freeze)
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
        # the badges: `_graph_switched` above worked them out for the new graph
        self.state_changed()
        if self._against is not None and self.graphs:
            against, self._against = self._against, None
            self._recommendation_offered = True  # the user came to compare: no dialog over it
            self._diverge().open(against)
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
            self._shown.show(hits, announce=not partial)  # it updates the header too
        else:
            self._shown.update_header()
        if not self.graphs:
            self._scope.set_empty_message(no_graph_text(metadata))
        self.state_changed()
        if not running and self._divergence_flows is not None:
            self._divergence_flows.follow(metadata)  # both dumps at the session's step
        if running or not self._step_moved:
            return
        self._step_moved = False
        self._kept.step_changed()
        if self.current_node is not None and self.current_graph:
            # Values differ per step: refresh what is on screen.
            self._reads.fetch_summaries(self.current_graph, self.current_node)
            if self._reads.open is not None:
                graph, node, slot, _iteration = self._reads.open
                self._request_tensor(graph, node, slot, None)

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
        return True if self._runs.check(action, parameters) else None

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

    def action_run(self, action_id: str) -> None:
        """Every run key, control-bar button and palette entry: `run('<id>')`."""
        self._runs.run(action_id)

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
    @tolerate_teardown
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
    @tolerate_teardown
    def _control_done(self, _message: ControlDone) -> None:
        self._runs.done()

    # ----------------------------------------------------- summaries and tensors
    @on(SummaryRead)
    @tolerate_teardown
    def _summary_read(self, message: SummaryRead) -> None:
        self._reads.summary_read(message)

    @on(TensorRead)
    @tolerate_teardown
    def _tensor_read(self, message: TensorRead) -> None:
        self._reads.tensor_read(message)

    def _request_tensor(
        self,
        graph_name: str,
        node_name: str,
        slot: int,
        iteration: int | None,
        hit: WatchpointHit | None = None,
    ) -> None:
        """Open a tensor in the tensor view (`hit`: the hit it is opened from)."""
        self._reads.request(graph_name, node_name, slot, iteration, hit)

    @property
    def _open_tensor(self) -> OpenTensor | None:
        """The tensor the view shows or loads (graph, node, slot, iteration)."""
        return self._reads.open

    # ------------------------------------------------------- pane messages
    @on(NodeHighlighted)
    @tolerate_teardown
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
            self._reads.fetch_summaries(graph.name, node)

    @on(NodeChosen)
    @tolerate_teardown
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
        self._visits.record(graph_name, node.name)
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

    def on_stack_list_source_requested(self, message: StackList.SourceRequested) -> None:
        """A stack line's file, each line with the nodes it created (Enter goes there)."""
        message.stop()
        self._node_screens.source(message.path, message.line_no)

    # -------------------------------------------- back and forward over the visits
    def action_visit_back(self) -> None:
        self._visits.back()

    def action_visit_forward(self) -> None:
        self._visits.forward()

    @on(TensorRequested)
    @tolerate_teardown
    def _tensor_requested(self, message: TensorRequested) -> None:
        self._request_tensor(message.graph, message.node, message.slot, message.iteration)

    @on(TensorView.CompareRequested)
    @tolerate_teardown
    def _tensor_compare_requested(self, message: TensorView.CompareRequested) -> None:
        from tuidebug.tui.tensor.compare import TensorCompareFlows  # with the first compare

        TensorCompareFlows(self, lambda: self._reads.open).request(message.view, message.kind)

    @on(TensorView.TripRequested)
    @tolerate_teardown
    def _tensor_trip_requested(self, message: TensorView.TripRequested) -> None:
        self._reads.move_trip(message.delta)

    def action_compare_tensor(self, kind: Literal["rank", "tensor"]) -> None:
        """The palette's R / D: as the keys in the tensor view, from anywhere."""
        self._tensor.action_compare_with(kind)

    @on(HitChosen)
    @tolerate_teardown
    def _hit_chosen(self, message: HitChosen) -> None:
        self._shown.open(message.hit)

    @on(GraphSwitched)
    @tolerate_teardown
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
        self._shown.refresh_badges()
        self._runs.forget()  # the trace target is in this graph

    # ------------------------------------------------------- compare two runs
    def _diverge(self) -> DivergenceFlows:
        from tuidebug.tui.divergence.flows import DivergenceFlows  # with the first compare

        self._divergence_flows = self._divergence_flows or DivergenceFlows(self, self._tabs)
        return self._divergence_flows

    def action_compare_golden(self) -> None:  # the palette's "Compare with a golden dump…"
        self._diverge().ask_golden()

    def action_divergence(self) -> None:  # 7: the divergence tab, once a golden dump is given
        self._nav.remember_focus()
        self._diverge().focus()

    # ------------------------------------------------------------ watchpoints
    @on(WatchpointAction)
    @tolerate_teardown
    def _watchpoint_action(self, message: WatchpointAction) -> None:
        self._watch_flows.act(message)

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
        self._watch_flows.copy_check_command()

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
        maximize_instead(self, number)
        self._nav.focus_pane(number)

    def _pane_of(self, widget: Widget | None) -> Widget | None:
        return pane_of(widget)

    def action_maximize_pane(self) -> None:
        toggle_maximized(self)

    def action_resize_pane(self, which: str, direction: int) -> None:
        self._sizes.resize(which, direction)

    def action_help_quit(self) -> None:
        """Ctrl+C quits, as `q` does. Textual's Ctrl+C only told to press Ctrl+Q, in markup
        our toasts show as text; a terminal user's reflex, and lazygit's, k9s' and htop's
        key, should not need a sentence. In a text box Ctrl+C still copies (its binding)."""
        self.exit()  # what `q` (Textual's action_quit) does

    @property
    def escape_to_minimize(self) -> bool:
        """Textual's Esc first puts a maximized widget back, before any binding sees the
        key; a maximized command line closes on one Esc instead (its own binding puts the
        layout back as it closes)."""
        maximized = self.screen.maximized
        if maximized is not None and maximized.id == "command-line":
            return False
        return super().escape_to_minimize

    def action_help(self) -> None:
        # the help loads with the first `?`, not at the start (issue 28)
        from tuidebug.tui.keys.help_screen import HelpScreen, context_help

        if isinstance(self.screen, HelpScreen):
            return
        close = self.key_hint("help.close")
        context = context_help(self.focused, self.key_hint)
        self.push_screen(HelpScreen(self.help_keys(), context, close_key=close))

    def help_keys(self) -> list[KeyRow]:
        from tuidebug.tui.keys.help_screen import key_rows

        guards = self.guard_context()
        return key_rows(self.BINDINGS, self.keymap, lambda action: guards.state(action).reason)

    # ------------------------------------------------------------ NaN/Inf origins
    @on(TraceProgress)
    @tolerate_teardown
    def _trace_progress(self, message: TraceProgress) -> None:
        self._tracer.progress(message)

    @on(TraceEnded)
    @tolerate_teardown
    def _trace_ended(self, message: TraceEnded) -> None:
        self._tracer.ended(message)

    # ----------------------------------------------------------------- palette
    def palette_commands(self) -> list[PaletteCommand]:
        from tuidebug.tui.palette.entries import PaletteState, palette_entries  # on Ctrl+P only
        from tuidebug.tui.palette.provider import PaletteCommand, calling_screen, run_from_palette

        guards = self.guard_context()
        screen = calling_screen(self)
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
            can_maximize=pane_of(screen.focused) is not None,
            can_go_back=self._visits.can_back,
            can_go_forward=self._visits.can_forward,
            tensor_shown=self._tensor.state == "tensor",
            comparing=bool(self._divergence_flows and self._divergence_flows.pane),
        )
        return [
            PaletteCommand(
                entry.title,
                entry.help,
                functools.partial(run_from_palette, self, screen, entry.action),
            )
            for entry in palette_entries(state, self.key_hint)
        ]

    def action_screenshot_soon(self) -> None:
        """A screenshot once the palette is gone from the screen."""
        self.set_timer(0.1, self.save_screenshot_here)

    def save_screenshot_here(self) -> str | None:
        from tuidebug.tui.kit.screenshot import save_screenshot_here

        return save_screenshot_here(self)

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
    against: str | None = None,
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
        against=against,
    )
    result = app.run()
    if app.return_code not in (None, 0):
        return int(app.return_code)
    return int(result or 0)


__all__ = ["DebuggerApp", "run_app"]
