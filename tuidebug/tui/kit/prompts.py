"""The questions the app asks — how many steps, which step, really terminate, where to
save — each built here with its wording, so the app only says when to ask and what to do
with the answer."""

from __future__ import annotations

from collections.abc import Sequence

from tuidebug.core.session import Metadata, Notice
from tuidebug.core.watchpoints import Watchpoint
from tuidebug.tui.kit.dialogs import ConfirmScreen, PromptScreen, int_check, path_check


def step_count_prompt(metadata: Metadata, live: bool) -> PromptScreen:
    """ "Run how many steps?": offline, at most the steps left in the dump."""
    high = None
    if not live and metadata.max_step is not None:
        high = max(1, metadata.max_step - metadata.step)
    return PromptScreen(
        "Run how many steps?",
        value="1",
        hint=f"1–{high}, Enter to run, Esc to cancel" if high else "Enter to run, Esc to cancel",
        check=int_check(1, high, "number of steps"),
    )


def go_to_step_prompt(metadata: Metadata) -> PromptScreen:
    high = metadata.max_step
    return PromptScreen(
        f"Go to step (1–{high})" if high else "Go to step",
        value=str(metadata.step or 1),
        hint="Watchpoints become outdated: recheck (r) afterwards. Esc cancels.",
        check=int_check(1, high, "step"),
    )


def terminate_confirm() -> ConfirmScreen:
    return ConfirmScreen(
        "Terminate the training?",
        "The training process will stop at the next step boundary. This cannot be undone.",
        yes="Terminate",
        no="Cancel",
        destructive=True,
    )


def recommended_offer() -> ConfirmScreen:
    return ConfirmScreen(
        "Use the recommended watchpoints?",
        "tuidebug can watch weights, gradients, activations and every tensor with the "
        "recommended conditions (overflow, all-zero, vanishing gradient, weight change, "
        "activation range). You can edit or delete them later (6).",
        yes="Use them",
        no="Not now",
    )


def delete_watchpoint_confirm(watchpoint: Watchpoint) -> ConfirmScreen:
    return ConfirmScreen(
        "Delete watchpoint?",
        f"#{watchpoint.id} {watchpoint.describe()}",
        yes="Delete",
        no="Keep",
        destructive=True,
    )


def messages_dialog(notices: Sequence[Notice]) -> ConfirmScreen:
    """The session's notices (the last 200), one a line."""
    body = "\n".join(f"• {n.message}" for n in notices[-200:])
    return ConfirmScreen("Session messages", body, yes="Close", no="Close")


def save_watchpoints_prompt() -> PromptScreen:
    return PromptScreen(
        "Save the watchpoints to",
        value="tuidebug-watchpoints.txt",
        hint="One --watch spec a line. Enter saves, Esc cancels.",
        check=path_check(),
    )


def save_hits_prompt(step: int) -> PromptScreen:
    return PromptScreen(
        "Save the hits as JSON to",
        value=f"tuidebug-hits-step{step}.json",
        hint="Every hit, as tuidebug check --json prints them. Enter saves, Esc cancels.",
        check=path_check(),
    )


def save_tensor_prompt(what: str, default_name: str) -> PromptScreen:
    """Where to save `what` ("the slice [0, :, :]", "the whole tensor") as .npy."""
    return PromptScreen(
        f"Save {what} as .npy to",
        value=default_name,
        hint="A path (relative to the current folder). Enter saves, Esc cancels.",
        check=path_check(),
    )
