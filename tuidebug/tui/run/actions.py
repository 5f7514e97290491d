"""The run actions — step, continue, pause, watch… — in one table, and when each may run.

Each `RunAction` says once what was written in seven places before: its key binding, its
control-bar button, its palette entry, its help row, whether the session can ever do it
(a hidden button), whether it can run now (its guard, greyed with a reason) and what does
it (`do`: a method of run/controls.py's `RunControls`). The app derives its BINDINGS,
`check_action`, the control bar, the palette and the help from `RUN_ACTIONS`; every key,
button and palette entry runs the one app action `run('<id>')`. A new run action is one
entry here plus the `RunControls` method it names.

A guard reads a `GuardContext`: a frozen snapshot of the session's metadata and
capabilities and of the little app state the guards need. The app builds one when what
it is made of changed and asks it for every action (`states`), so the dozen
`check_action` calls of each footer refresh cost one evaluation of each guard. No
Textual here: the guards are plain functions with plain unit tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from tuidebug.core.session import Capabilities, Metadata, SessionState

_RUNNING = frozenset({SessionState.RUNNING, SessionState.SENDING})


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class ActionState(NamedTuple):
    """Whether an action can run now, and if not, why (one sentence)."""

    enabled: bool
    reason: str = ""


ALLOWED = ActionState(True)


def _no(reason: str) -> ActionState:
    return ActionState(False, reason)


@dataclass(frozen=True)
class GuardContext:
    """What the guards read, as of one moment. Built by the app from its state."""

    capabilities: Capabilities
    metadata: Metadata
    busy: bool = False  # a run command of the app is still in flight
    has_graphs: bool = False
    watchpoints: int = 0
    operator_selected: bool = False  # the selected node is a kernel (run to node)
    trace_target: bool = False  # there is a hit or node to trace NaN/Inf from

    @cached_property
    def states(self) -> Mapping[str, ActionState]:
        """Every run action's state, each guard evaluated once for this snapshot."""
        return {action.id: action.guard(self) for action in RUN_ACTIONS}

    def state(self, action: str) -> ActionState:
        """The state of a run action (by id or as `run('<id>')`); any other action is
        always allowed."""
        return self.states.get(action_id(action), ALLOWED)


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class RunAction(NamedTuple):
    """One run action. `key`/`label`: its binding (id `tuidebug.<id>`, action
    `run('<id>')`); `do`: the `RunControls` method that performs it (a name, so this
    table needs no Textual); `bar`: its control-bar button (None: no button); `palette`: (title, help) of its
    palette command, offered while it is enabled; `help`: its row in the help screen;
    `offered`: whether a session with these capabilities can ever do it (its button is
    hidden, not greyed forever, when it cannot); `guard`: whether it can run now."""

    id: str
    key: str
    label: str
    do: str
    bar: str | None
    palette: tuple[str, str]
    help: str
    guard: Callable[[GuardContext], ActionState]
    offered: Callable[[Capabilities], bool] = lambda caps: True

    @property
    def binding_id(self) -> str:
        return f"tuidebug.{self.id}"

    @property
    def action(self) -> str:
        """The Textual action string its key, button and palette entry run."""
        return f"run({self.id!r})"


# ------------------------------------------------------------------------ guards
def _needs_waiting(ctx: GuardContext) -> ActionState:
    """A run starts only from a suspended session (offline: one with a step left)."""
    md, live = ctx.metadata, ctx.capabilities.live
    state = md.state
    if state is SessionState.WAITING:
        if not live and md.max_step == 0:
            return _no("This dump has no dumped iteration to step to.")
        if not live and md.max_step is not None and md.step >= md.max_step:
            return _no(f"Already at the last step ({md.max_step}).")
        return ALLOWED
    if state is SessionState.PENDING:
        return _no("No training is connected yet." if live else "Nothing is loaded yet.")
    if state is SessionState.LOADING:
        return _no("Still loading.")
    if state is SessionState.MISMATCH:
        return _no("Version mismatch: only terminate (T) is possible.")
    if state is SessionState.DISCONNECTED:
        return _no("The training disconnected.")
    if state is SessionState.DONE:
        return _no("The training has finished.")
    return _no(f"Not possible while {state.value}.")


def _still_running(ctx: GuardContext) -> bool:
    return ctx.busy or ctx.metadata.state in _RUNNING


_WAIT = _no("Wait: the previous command is still running.")


def guard_step(ctx: GuardContext) -> ActionState:
    if _still_running(ctx):
        return _WAIT
    if not ctx.capabilities.can_step:
        return _no("This session cannot step.")
    return _needs_waiting(ctx)


def guard_continue(ctx: GuardContext) -> ActionState:
    if _still_running(ctx):
        return _WAIT
    if not ctx.capabilities.can_continue:
        return _no("This session cannot continue.")
    return _needs_waiting(ctx)


def _node_stepping(ctx: GuardContext) -> ActionState | None:
    if _still_running(ctx):
        return _WAIT
    if not ctx.capabilities.can_step_node:
        return _no("Node stepping needs a live GPU training (not this session).")
    return None


def guard_step_node(ctx: GuardContext) -> ActionState:
    return _node_stepping(ctx) or _needs_waiting(ctx)


def guard_run_to_node(ctx: GuardContext) -> ActionState:
    refused = _node_stepping(ctx)
    if refused is not None:
        return refused
    if not ctx.operator_selected:
        return _no("Select a kernel (an operator node) in the tree first.")
    return _needs_waiting(ctx)


def guard_pause(ctx: GuardContext) -> ActionState:
    """A live training pauses (`can_pause`); elsewhere a running step, continue or recheck
    stops at the next tensor (`can_stop_run`: offline)."""
    caps = ctx.capabilities
    if not (caps.can_pause or caps.can_stop_run):
        return _no("Pause needs a live training; offline there is none.")
    if ctx.metadata.state not in _RUNNING:
        if caps.can_pause:
            return _no("The training is not running.")
        return _no("Nothing is running: pause stops a step or continue while it checks.")
    return ALLOWED


def guard_terminate(ctx: GuardContext) -> ActionState:
    if not ctx.capabilities.can_terminate:
        return _no("Terminate needs a live training; offline there is none.")
    gone = {SessionState.PENDING, SessionState.DONE, SessionState.DISCONNECTED}
    if ctx.metadata.state in gone:
        return _no("No training is connected.")
    return ALLOWED


def guard_reset_step(ctx: GuardContext) -> ActionState:
    if _still_running(ctx):
        return _WAIT
    if not ctx.capabilities.can_reset_step:
        return _no("Only offline sessions can jump to another step.")
    if ctx.metadata.state in {SessionState.PENDING, SessionState.LOADING}:
        return _no("Nothing is loaded yet.")
    if ctx.metadata.max_step == 0:
        return _no("This dump has no dumped iteration to go to.")
    return ALLOWED


_NO_GRAPH = _no("No graph is loaded yet.")


def guard_recheck(ctx: GuardContext) -> ActionState:
    md = ctx.metadata
    if not ctx.has_graphs:
        return _NO_GRAPH
    if ctx.busy:
        return _WAIT
    if md.state is not SessionState.WAITING:
        return _no(f"Recheck needs a paused session (now: {md.state.value}).")
    if not ctx.watchpoints:
        return _no("There are no watchpoints to check: press w to add one.")
    if not ctx.capabilities.step_zero_has_values and md.step < 1:
        return _no("Watchpoints are not checked at step 0: step first (n).")
    return ALLOWED


def guard_history(ctx: GuardContext) -> ActionState:
    return ALLOWED if ctx.has_graphs else _NO_GRAPH


def guard_new_watchpoint(ctx: GuardContext) -> ActionState:
    state = ctx.metadata.state
    if not ctx.has_graphs:
        return _NO_GRAPH
    if state in {SessionState.MISMATCH, SessionState.DISCONNECTED, SessionState.DONE}:
        return _no(f"Watchpoints cannot be set now ({state.value}).")
    if ctx.capabilities.live and state in _RUNNING:
        return _no("Pause the training (p) before changing watchpoints.")
    return ALLOWED


def guard_trace_origin(ctx: GuardContext) -> ActionState:
    md = ctx.metadata
    if not ctx.has_graphs:
        return _NO_GRAPH
    if not ctx.capabilities.step_zero_has_values and md.step < 1:
        return _no("Step 0 holds no values: step first (n).")
    if not ctx.trace_target:
        return _no("Select a node in the tree (1) or a hit (2) first.")
    return ALLOWED


def guard_downstream(ctx: GuardContext) -> ActionState:
    if not ctx.has_graphs:
        return _NO_GRAPH
    if not ctx.trace_target:
        return _no("Select a node in the tree (1) or a hit (2) first.")
    return ALLOWED


def guard_tensor_list(ctx: GuardContext) -> ActionState:
    return ALLOWED if ctx.has_graphs else _NO_GRAPH


# ------------------------------------------------------------------------- table
# In the order a user reaches for them: the bindings, the bar, the palette and the help
# list them in this order.
RUN_ACTIONS: tuple[RunAction, ...] = (
    RunAction(
        "step",
        "n",
        "Step",
        "step",
        "Step",
        ("Step", "Run one step and check the watchpoints"),
        "step: run one step (offline: load and check the next iteration)",
        guard_step,
    ),
    RunAction(
        "step_many",
        "N",
        "Step N",
        "step_many",
        "Step N…",
        ("Step N times…", "Run several steps"),
        "step N times (asks how many)",
        guard_step,
    ),
    RunAction(
        "continue",
        "c",
        "Continue",
        "continue_",
        "Continue",
        ("Continue", "Run until a watchpoint hits"),
        "continue until a watchpoint hits (offline: or the last step)",
        guard_continue,
    ),
    RunAction(
        "step_node",
        "x",
        "Next node",
        "step_node",
        "Next node",
        ("Next node", "Run to the next kernel (GPU)"),
        "next node: run to the next kernel (GPU only)",
        guard_step_node,
        offered=lambda caps: caps.can_step_node,
    ),
    RunAction(
        "run_to_node",
        "X",
        "Run to node",
        "run_to_node",
        None,
        ("Run to the selected node", "Run until that kernel (GPU)"),
        "run to the kernel selected in the tree (GPU only)",
        guard_run_to_node,
    ),
    RunAction(
        "pause",
        "p",
        "Pause",
        "pause",
        "Pause",
        ("Pause", "Pause the running training"),
        "pause the running training",
        guard_pause,
        offered=lambda caps: caps.can_pause,
    ),
    RunAction(
        "terminate",
        "T",
        "Terminate",
        "terminate",
        "Terminate",
        ("Terminate training…", "Stop the training process"),
        "terminate the training (asks to confirm)",
        guard_terminate,
        offered=lambda caps: caps.can_terminate,
    ),
    RunAction(
        "reset_step",
        "g",
        "Go to step",
        "reset_step",
        "Go to step",
        ("Go to step…", "Jump to another step of the dump"),
        "go to step N (offline; asks which)",
        guard_reset_step,
        offered=lambda caps: caps.can_reset_step,
    ),
    RunAction(
        "recheck",
        "r",
        "Recheck",
        "recheck",
        "Recheck",
        ("Recheck watchpoints", "Check every enabled watchpoint again"),
        "recheck every enabled watchpoint at this step",
        guard_recheck,
    ),
    RunAction(
        "history",
        "h",
        "History",
        "history",
        "History",
        ("Graph execution history", "Which graph ran at which step"),
        "graph execution history (Enter on a row goes to that step)",
        guard_history,
        offered=lambda caps: not caps.live,
    ),
    RunAction(
        "new_watchpoint",
        "w",
        "Watch",
        "new_watchpoint",
        "Watch",
        ("New watchpoint…", "Watch the selected node or scope"),
        "new watchpoint on the selected node or scope",
        guard_new_watchpoint,
    ),
    RunAction(
        "watch_scope",
        "W",
        "Watch scope",
        "watch_scope",
        None,
        (
            "Watch the selected scope",
            "A new watchpoint on every node of the tree's scope (or of the node's scope)",
        ),
        "new watchpoint on the whole scope selected in the tree (on a node: its scope)",
        guard_new_watchpoint,
    ),
    RunAction(
        "trace_origin",
        "o",
        "Trace NaN",
        "trace_origin",
        None,
        (
            "Trace NaN/Inf to its origin",
            "Walk upstream from the selected hit or node to where the NaN/Inf appeared",
        ),
        "trace NaN/Inf of the selected hit or node to its origin (Esc cancels)",
        guard_trace_origin,
    ),
    RunAction(
        "downstream",
        "O",
        "Downstream",
        "downstream",
        None,
        (
            "Downstream of the selected hit or node",
            "Every node its outputs reach, nearest first, with their hits",
        ),
        "downstream: the nodes the selected hit's or node's outputs reach (Enter goes there)",
        guard_downstream,
    ),
    RunAction(
        "graph_view",
        "G",
        "Graph",
        "graph_view",
        None,
        (
            "Graph around the selected hit or node",
            "Its inputs and consumers drawn as boxes and arrows, hits marked",
        ),
        "graph: the selected node's inputs and consumers drawn as a small DAG",
        guard_downstream,  # the same target as downstream: the hit or node selected
    ),
    RunAction(
        "tensor_list",
        "L",
        "Tensors",
        "tensor_list",
        None,
        ("List the step's tensors", "Every tensor in execution order, NaN/Inf/zero marked"),
        "list every tensor of the step in execution order, with NaN/Inf/zero marks",
        guard_tensor_list,
    ),
)

BY_ID: Mapping[str, RunAction] = {action.id: action for action in RUN_ACTIONS}
# by the action string their bindings run: `run('step')` → step
BY_ACTION: Mapping[str, RunAction] = {action.action: action for action in RUN_ACTIONS}


def action_id(action: str) -> str:
    """The action a Textual action string names: a run action's id for `run('<id>')`,
    any other string as it is (`filter`, `focus_pane(1)`), so the help and the guards
    answer for a binding's action and for an id alike."""
    run = BY_ACTION.get(action)
    return run.id if run is not None else action


# The control bar's buttons, in table order.
BAR_ACTIONS: tuple[RunAction, ...] = tuple(a for a in RUN_ACTIONS if a.bar is not None)


__all__ = [
    "BAR_ACTIONS",
    "BY_ACTION",
    "BY_ID",
    "RUN_ACTIONS",
    "ActionState",
    "GuardContext",
    "RunAction",
    "action_id",
]
