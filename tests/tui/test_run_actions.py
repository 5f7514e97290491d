"""The run-action table and its guards, as plain functions of a `GuardContext` (no app).

Each guard is checked for what allows it and for every refusal, in the order the guard
tests them, with the sentence the user reads. The table itself is checked against what
the app derives from it: bindings, control bar, palette and help rows.
"""

from __future__ import annotations

from typing import Any

import pytest

from tuidebug.core.session import Capabilities, Metadata, SessionState
from tuidebug.tui.run.actions import (
    BAR_ACTIONS,
    BY_ACTION,
    BY_ID,
    RUN_ACTIONS,
    GuardContext,
    action_id,
)

BINDING_IDS = {a.binding_id for a in RUN_ACTIONS}

S = SessionState
OFFLINE = Capabilities(can_reset_step=True, step_zero_has_values=False)
ONLINE = Capabilities(live=True, can_pause=True, can_terminate=True)
ONLINE_GPU = Capabilities(live=True, can_pause=True, can_terminate=True, can_step_node=True)


def ctx(
    caps: Capabilities = OFFLINE,
    state: SessionState = S.WAITING,
    *,
    step: int = 1,
    max_step: int | None = 4,
    **app: Any,
) -> GuardContext:
    mode = "online" if caps.live else "offline"
    metadata = Metadata(mode, "src", state=state, step=step, max_step=max_step)
    app.setdefault("has_graphs", True)
    return GuardContext(caps, metadata, **app)


def reason(action: str, context: GuardContext) -> str:
    state = context.state(action)
    assert state.enabled is (state.reason == "")
    return state.reason


# --------------------------------------------------------------------- running
@pytest.mark.parametrize("action", ["step", "step_many", "continue", "reset_step"])
def test_runs_wait_for_the_previous_command(action: str) -> None:
    wait = "Wait: the previous command is still running."
    assert reason(action, ctx(busy=True)) == wait
    assert reason(action, ctx(state=S.RUNNING)) == wait
    assert reason(action, ctx(state=S.SENDING)) == wait
    assert reason(action, ctx()) == ""


@pytest.mark.parametrize("action", ["step_node", "run_to_node"])
def test_node_stepping_waits_too_and_needs_a_gpu_training(action: str) -> None:
    assert "still running" in reason(action, ctx(ONLINE_GPU, S.RUNNING, operator_selected=True))
    assert reason(action, ctx(ONLINE, operator_selected=True)) == (
        "Node stepping needs a live GPU training (not this session)."
    )
    assert reason(action, ctx(ONLINE_GPU, max_step=None, operator_selected=True)) == ""


def test_run_to_node_needs_a_kernel_selected() -> None:
    assert reason("run_to_node", ctx(ONLINE_GPU, max_step=None)) == (
        "Select a kernel (an operator node) in the tree first."
    )
    assert reason("step_node", ctx(ONLINE_GPU, max_step=None)) == ""


def test_step_and_continue_need_the_capability() -> None:
    assert reason("step", ctx(Capabilities(can_step=False))) == "This session cannot step."
    assert reason("step_many", ctx(Capabilities(can_step=False))) == "This session cannot step."
    no_continue = Capabilities(can_continue=False)
    assert reason("continue", ctx(no_continue)) == "This session cannot continue."


# -------------------------------------------------------- a run needs a pause
@pytest.mark.parametrize(
    ("caps", "state", "sentence"),
    [
        (OFFLINE, S.PENDING, "Nothing is loaded yet."),
        (ONLINE, S.PENDING, "No training is connected yet."),
        (OFFLINE, S.LOADING, "Still loading."),
        (ONLINE, S.MISMATCH, "Version mismatch: only terminate (T) is possible."),
        (ONLINE, S.DISCONNECTED, "The training disconnected."),
        (ONLINE, S.DONE, "The training has finished."),
        (ONLINE, S.NODE_TOO_LARGE, "Not possible while node_too_large."),
    ],
)
def test_a_run_starts_only_from_a_paused_session(
    caps: Capabilities, state: SessionState, sentence: str
) -> None:
    for action in ("step", "step_many", "continue"):
        assert reason(action, ctx(caps, state)) == sentence


def test_offline_runs_stop_at_the_last_step() -> None:
    assert reason("step", ctx(step=4)) == "Already at the last step (4)."
    assert reason("continue", ctx(step=4)) == "Already at the last step (4)."
    empty = "This dump has no dumped iteration to step to."
    assert reason("step", ctx(step=0, max_step=0)) == empty
    assert reason("continue", ctx(step=3)) == ""
    # online has no last step
    assert reason("continue", ctx(ONLINE, step=4, max_step=4)) == ""


# --------------------------------------------------------------- pause, terminate
def test_pause_needs_a_running_live_training() -> None:
    assert reason("pause", ctx()) == "Pause needs a live training; offline there is none."
    assert reason("pause", ctx(ONLINE)) == "The training is not running."
    assert reason("pause", ctx(ONLINE, S.RUNNING)) == ""
    assert reason("pause", ctx(ONLINE, S.SENDING, busy=True)) == ""  # gets through a run


def test_pause_stops_an_offline_run_where_the_session_can_stop_one() -> None:
    stoppable = Capabilities(can_reset_step=True, step_zero_has_values=False, can_stop_run=True)
    assert reason("pause", ctx(stoppable)) == (
        "Nothing is running: pause stops a step or continue while it checks."
    )
    assert reason("pause", ctx(stoppable, S.RUNNING, busy=True)) == ""  # the continue's call
    # a key, not a button: the offline control bar stays as it was
    assert not BY_ID["pause"].offered(stoppable)


def test_terminate_needs_a_connected_live_training() -> None:
    assert reason("terminate", ctx()) == ("Terminate needs a live training; offline there is none.")
    for gone in (S.PENDING, S.DONE, S.DISCONNECTED):
        assert reason("terminate", ctx(ONLINE, gone)) == "No training is connected."
    for state in (S.WAITING, S.RUNNING, S.MISMATCH, S.LOADING):
        assert reason("terminate", ctx(ONLINE, state)) == ""


# ---------------------------------------------------------------- go to step
def test_reset_step_is_offline_and_needs_a_loaded_dump_with_iterations() -> None:
    assert reason("reset_step", ctx(ONLINE)) == "Only offline sessions can jump to another step."
    assert reason("reset_step", ctx(state=S.PENDING)) == "Nothing is loaded yet."
    assert reason("reset_step", ctx(state=S.LOADING)) == "Nothing is loaded yet."
    assert reason("reset_step", ctx(max_step=0)) == "This dump has no dumped iteration to go to."
    assert reason("reset_step", ctx(step=4)) == ""  # at the last step: going back is fine


# ----------------------------------------------------------------- recheck
def test_recheck_in_the_order_its_reasons_are_checked() -> None:
    ok = {"watchpoints": 2}
    assert reason("recheck", ctx(has_graphs=False, busy=True)) == "No graph is loaded yet."
    assert reason("recheck", ctx(busy=True, **ok)) == (
        "Wait: the previous command is still running."
    )
    assert reason("recheck", ctx(state=S.RUNNING, **ok)) == (
        "Recheck needs a paused session (now: running)."
    )
    assert reason("recheck", ctx()) == "There are no watchpoints to check: press w to add one."
    assert reason("recheck", ctx(step=0, **ok)) == (
        "Watchpoints are not checked at step 0: step first (n)."
    )
    assert reason("recheck", ctx(ONLINE, step=0, **ok)) == ""  # online step 0 is a step
    assert reason("recheck", ctx(**ok)) == ""


# ------------------------------------------------------- history, watch, trace
def test_history_needs_a_graph() -> None:
    assert reason("history", ctx(has_graphs=False)) == "No graph is loaded yet."
    assert reason("history", ctx(state=S.RUNNING)) == ""


def test_new_watchpoint() -> None:
    assert reason("new_watchpoint", ctx(has_graphs=False)) == "No graph is loaded yet."
    for state in (S.MISMATCH, S.DISCONNECTED, S.DONE):
        assert reason("new_watchpoint", ctx(ONLINE, state)) == (
            f"Watchpoints cannot be set now ({state.value})."
        )
    assert reason("new_watchpoint", ctx(ONLINE, S.RUNNING)) == (
        "Pause the training (p) before changing watchpoints."
    )
    assert reason("new_watchpoint", ctx(state=S.RUNNING)) == ""  # offline: between steps
    assert reason("new_watchpoint", ctx(ONLINE)) == ""


def test_trace_origin() -> None:
    assert reason("trace_origin", ctx(has_graphs=False, trace_target=True)) == (
        "No graph is loaded yet."
    )
    assert reason("trace_origin", ctx(step=0, trace_target=True)) == (
        "Step 0 holds no values: step first (n)."
    )
    assert reason("trace_origin", ctx()) == "Select a node in the tree (1) or a hit (2) first."
    assert reason("trace_origin", ctx(trace_target=True)) == ""
    assert reason("trace_origin", ctx(ONLINE, step=0, trace_target=True)) == ""


def test_actions_outside_the_table_are_always_allowed() -> None:
    context = ctx(has_graphs=False, state=S.DONE)
    assert context.state("filter").enabled and context.state("focus_pane(1)").enabled


def test_each_guard_runs_once_per_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    context = ctx()
    first = context.states
    for _ in range(100):
        assert context.states is first
    assert set(first) == {action.id for action in RUN_ACTIONS}


# -------------------------------------------------------------------- the table
def test_the_table_is_what_the_app_binds_bars_and_helps() -> None:
    from textual.binding import Binding

    from tuidebug.tui.app import DebuggerApp
    from tuidebug.tui.keys.help_screen import APP_HELP

    bound = [b for b in DebuggerApp.BINDINGS if isinstance(b, Binding) and b.id in BINDING_IDS]
    assert [(b.key, b.action, b.description, b.id, b.show) for b in bound] == [
        (a.key, f"run('{a.id}')", a.label, f"tuidebug.{a.id}", False) for a in RUN_ACTIONS
    ]
    assert [a.id for a in BAR_ACTIONS] == [
        "step",
        "step_many",
        "continue",
        "step_node",
        "pause",
        "terminate",
        "reset_step",
        "recheck",
        "history",
        "new_watchpoint",
    ]
    assert all(APP_HELP[a.id] == a.help for a in RUN_ACTIONS)


def test_each_action_names_the_run_controls_method_that_does_it() -> None:
    from tuidebug.tui.run.controls import RunControls

    assert all(callable(getattr(RunControls, a.do, None)) for a in RUN_ACTIONS)
    assert all(BY_ACTION[a.action] is a and action_id(a.action) == a.id for a in RUN_ACTIONS)
    assert action_id("focus_pane(1)") == "focus_pane(1)"  # not a run action: as it is
    assert ctx().state("run('step')") == ctx().state("step")


@pytest.mark.parametrize(
    ("caps", "hidden"),
    [
        (OFFLINE, {"step_node", "pause", "terminate"}),
        (ONLINE, {"step_node", "reset_step", "history"}),
        (ONLINE_GPU, {"reset_step", "history"}),
    ],
)
def test_buttons_a_session_can_never_use_are_hidden(caps: Capabilities, hidden: set[str]) -> None:
    assert {a.id for a in BAR_ACTIONS if not a.offered(caps)} == hidden
