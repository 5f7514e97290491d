"""The app's side of the run actions: what each one does when it may run, the snapshot
its guard reads, and the control bar that shows them.

run/actions.py is the table (keys, labels, guards, the method that does each; no
Textual). `RunControls` is a helper object of the `DebuggerApp` (not a mixin: see
watchpoints/flows.py) that

- keeps the guards' `GuardContext`, rebuilt only when what it is made of changed, so one
  footer refresh evaluates each guard once; the app's `check_action` reads it;
- runs each session call off the UI thread, one run command at a time (`busy`), and
  says a failure in one sentence;
- asks first where an action needs it (how many steps, which step, really terminate);
- opens what the other run actions open (a new watchpoint, the NaN/Inf trace, the node
  screens, the tensor list) through the helpers that own them.

The app has one action for them all, `run('<id>')`, which calls `run(id)` here: the
table's `do` names the method.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from textual.binding import Binding

from tuidebug.core.graph import NodeKind
from tuidebug.core.tensor import TensorRef
from tuidebug.tui.kit.session_text import is_user_error
from tuidebug.tui.messages import ControlDone, WorkerNotice
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.run.actions import BY_ACTION, BY_ID, ActionState, GuardContext
from tuidebug.tui.run.control_bar import ControlBar

if TYPE_CHECKING:
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.origins.runner import OriginTracing
    from tuidebug.tui.origins.trace import TraceTarget
    from tuidebug.tui.watchpoints.flows import WatchpointFlows
    from tuidebug.tui.watchpoints.pane import WatchpointPane


class Openers(NamedTuple):
    """What the run actions that open a view call. The features that own them sit above
    `run` in the layers (neighbours, navigation), so the app hands them in. (A NamedTuple:
    a frozen dataclass execs its methods at import, ~0.6 ms of the first frame: issue 28.)"""

    downstream: Callable[[], None]
    graph_view: Callable[[], None]
    tensor_list: Callable[[], None]


class RunControls:
    """The run actions of one app (see the module docstring)."""

    def __init__(
        self,
        app: AppHost,
        *,
        hits: HitList,
        controls: ControlBar,
        watchpoint_list: WatchpointPane,
        watch_flows: Callable[[], WatchpointFlows],  # made with the first dialog
        tracer: Callable[[], OriginTracing],  # made with the first trace
        opens: Openers,
    ) -> None:
        self._app = app
        self._hits = hits
        self._controls = controls
        self._watchpoint_list = watchpoint_list
        self._watch_flows = watch_flows
        self._tracer = tracer
        self._opens = opens
        self.busy = False  # a run command is in flight: the next one waits
        self.watchpoints = 0  # how many the session has (the guards and the pane title)
        self._guards: GuardContext | None = None
        self._guards_hit: object = None

    # ------------------------------------------------------------------ guards
    def context(self) -> GuardContext:
        """What the guards read, as of now. Rebuilt after the app's state changed
        (`forget`) or the focused hit did (the trace starts from it), so the dozen
        `check_action` calls of one footer refresh evaluate each guard once."""
        app = self._app
        hit = self.focused_hit()
        if self._guards is None or hit is not self._guards_hit:
            node = app.current_node
            self._guards_hit = hit
            self._guards = GuardContext(
                capabilities=app.session.capabilities,
                metadata=app.metadata,
                busy=self.busy,
                has_graphs=bool(app.graphs),
                watchpoints=self.watchpoints,
                operator_selected=node is not None and node.kind is NodeKind.OPERATOR,
                trace_target=self._target(hit) is not None,
            )
        return self._guards

    def _target(self, hit: object) -> TraceTarget | None:
        """What the trace starts from: `hit` (on this rank), else the selected node."""
        app = self._app
        if not app.graphs:  # nothing to trace in: the first frame's guards load no trace
            return None
        from tuidebug.tui.origins.trace import trace_target

        return trace_target(hit, app.graphs, app.metadata.rank, app.current_graph, app.current_node)

    def forget(self) -> None:
        """Something the guards read changed: the next `context()` is a fresh one."""
        self._guards = None

    def focused_hit(self) -> object:
        """The hit under the hit list's cursor while the list has focus, else None."""
        if not self._hits.built or self._app.focused is not self._hits.tree_view:
            return None
        cursor = self._hits.tree_view.cursor_node
        return cursor.data if cursor is not None else None

    def state(self, action: str) -> ActionState:
        """Whether an action can run now, and if not, why (one sentence)."""
        return self.context().state(action)

    def check(self, action: str, parameters: tuple[object, ...]) -> bool:
        """The app's `check_action`: Textual asks for `run('step')` as ("run", ("step",))."""
        if action == "run" and parameters:
            action = str(parameters[0])
        return self.state(action).enabled

    def allowed(self, action: str) -> bool:
        """For actions reached without a key (palette, buttons): explain a refusal."""
        state = self.state(action)
        if not state.enabled:
            self._app.notify(state.reason, severity="warning")
        return state.enabled

    def explain_greyed(self, event: Any, bindings: Sequence[Binding]) -> None:
        """A key was pressed: if it is a greyed-out run action's (its binding did not
        run), say why and stop the key."""
        for binding in bindings:
            if binding.action in BY_ACTION:  # a run action: the others are never greyed
                state = self.state(binding.action)
                if not state.enabled:
                    self._app.notify(state.reason, severity="warning")
                    event.stop()
                return

    def update_bar(self) -> None:
        """The control bar's buttons and status, and the watchpoint pane's count."""
        controls = self._controls
        # online capabilities follow the client (node stepping needs a GPU backend)
        controls.set_capabilities(self._app.session.capabilities)
        controls.update_enabled(lambda action: self.state(action).enabled)
        watchpoints = self.watchpoints
        # the count goes in the pane's title: the bar's right end is short at 100 columns
        self._watchpoint_list.border_title = (
            f"6 Watchpoints ({watchpoints})" if watchpoints else "6 Watchpoints"
        )
        hits = self._hits.hit_count
        status = f"{hits} hit{'s' if hits != 1 else ''}"
        if self.busy:
            status = "working… · " + status
        controls.set_status(status)

    # ----------------------------------------------------------- session calls
    def call(self, label: str, call: Callable[[], object], *, control: bool = True) -> None:
        """Run a (possibly slow) session call off the UI thread; one control at a time."""
        app = self._app
        if control and self.busy:
            app.notify("Still busy with the previous command.", severity="warning")
            return
        if control:
            self.busy = True
            app.state_changed()
        app.run_worker(
            partial(self._call, label, call, control),
            thread=True,
            group="control",
            exit_on_error=False,
        )

    def done(self) -> None:
        """A run command's worker has finished (`ControlDone`): the next one may start."""
        self.busy = False
        self._app.state_changed()

    def _post(self, message: WorkerNotice | ControlDone) -> None:
        """Post from a worker; dropped once the app has stopped (its loop is closed)."""
        with contextlib.suppress(RuntimeError):
            self._app.post_message(message)

    def _call(self, label: str, call: Callable[[], object], control: bool) -> None:
        try:
            call()
        except Exception as exc:  # SessionError / WatchpointError carry one sentence
            message = str(exc) if is_user_error(exc) else f"{label} failed: {exc}"
            self._post(WorkerNotice(message, severity="error"))
        finally:
            if control:
                self._post(ControlDone())

    # ----------------------------------------------------------------- actions
    def run(self, action_id: str) -> None:
        """The app's `run('<id>')`: the method the table names does it (and guards it)."""
        getattr(self, BY_ID[action_id].do)()

    def step(self) -> None:
        if self.allowed("step"):
            self.call("Step", lambda: self._app.session.step(1))

    def step_many(self) -> None:
        if not self.allowed("step_many"):
            return
        session = self._app.session

        def answered(value: str | None) -> None:
            if value:
                count = int(value)
                self.call(f"Step {count}", lambda: session.step(count))

        live = session.capabilities.live
        from tuidebug.tui.kit import prompts  # on first use (issue 28)

        self._app.push_screen(prompts.step_count_prompt(self._app.metadata, live), answered)

    def continue_(self) -> None:
        if self.allowed("continue"):
            self.call("Continue", self._app.session.continue_)

    def step_node(self) -> None:
        if self.allowed("step_node"):
            self.call("Next node", lambda: self._app.session.step_node(None))

    def run_to_node(self) -> None:
        node = self._app.current_node
        if not self.allowed("run_to_node") or node is None:
            return
        name = node.name
        self.call("Run to node", lambda: self._app.session.step_node(name))

    def pause(self) -> None:
        if self.allowed("pause"):
            # Pause must get through while a continue is running: not a queued control
            # (offline it stops the run at the next tensor: `can_stop_run`)
            self.call("Pause", self._app.session.pause, control=False)

    def stop_run(self) -> bool:
        """Esc: stop a run the session can stop part-way (offline), as `p` does; False
        when there is none, so Esc keeps its other meanings."""
        session = self._app.session
        if not session.capabilities.can_stop_run or not self.state("pause").enabled:
            return False
        self.call("Stop", session.pause, control=False)
        return True

    def terminate(self) -> None:
        if not self.allowed("terminate"):
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.call("Terminate", self._app.session.terminate, control=False)

        from tuidebug.tui.kit import prompts

        self._app.push_screen(prompts.terminate_confirm(), answered)

    def reset_step(self) -> None:
        if not self.allowed("reset_step"):
            return

        def answered(value: str | None) -> None:
            if value:
                self._reset_step(int(value))

        from tuidebug.tui.kit import prompts

        self._app.push_screen(prompts.go_to_step_prompt(self._app.metadata), answered)

    def _reset_step(self, step: int) -> None:
        self.call("Go to step", lambda: self._app.session.reset_step(step))

    def recheck(self) -> None:
        if self.allowed("recheck"):
            self.call("Recheck", self._app.session.recheck)

    def history(self) -> None:
        app = self._app
        if not self.allowed("history"):
            return
        runs = app.session.graph_runs()
        if not runs:
            app.notify("This session has no graph execution history.")
            return
        can_jump = app.session.capabilities.can_reset_step

        def answered(step: int | None) -> None:
            if step is not None and self.allowed("reset_step"):
                self._reset_step(step)

        record = self._hits.step_record()
        from tuidebug.tui.kit.dialogs import HistoryScreen  # on first use (issue 28)

        app.push_screen(HistoryScreen(runs, app.metadata.step, can_jump, record), answered)

    def new_watchpoint(self) -> None:
        self._watch_flows().create()  # it guards: editing a watchpoint is refused alike

    def watch_scope(self) -> None:
        self._watch_flows().create(whole_scope=True)

    def trace_origin(self) -> None:
        if not self.allowed("trace_origin"):
            return
        target = self._target(self.focused_hit())
        if target is None:
            return
        app, iteration = self._app, target.iteration
        rank = app.metadata.rank
        step = app.session.step_of(TensorRef(target.node, 0, iteration, rank, target.graph))
        self._tracer().start(app.graphs[target.graph], target.node, iteration, rank, step)

    def downstream(self) -> None:
        """O: the nodes downstream of the selected hit's or node's outputs."""
        if self.allowed("downstream"):
            self._opens.downstream()

    def graph_view(self) -> None:
        """G: the selected hit's or node's inputs and consumers, drawn as a small DAG."""
        if self.allowed("graph_view"):
            self._opens.graph_view()

    def tensor_list(self) -> None:
        """L: every tensor of the step (kept: its filters survive closing it)."""
        if self.allowed("tensor_list"):
            self._opens.tensor_list()

    def select_rank(self, rank: int) -> None:
        self.call(f"Switching to rank {rank}", lambda: self._app.session.select_rank(rank))


__all__ = ["Openers", "RunControls"]
