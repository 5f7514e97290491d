"""Reading a tensor or a node output's one-line summary from the session, for the App's
workers: plain functions (no widgets), so what the tensor view and the node details are
told in each case (no value, step 0, an unreadable file) is tested without Pilot."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuidebug.core.graph import Node
from tuidebug.core.session import DebugSession
from tuidebug.core.tensor import TensorRef, tensor_statistics
from tuidebug.core.tensor_health import presence_only
from tuidebug.tui.kit.session_text import is_user_error

if TYPE_CHECKING:  # the app's start imports this module, and needs no numpy
    import numpy as np


@dataclass(frozen=True)
class OutputSummary:
    """The worker's answer for one output slot (here, not with the message that carries
    it: the first frame needs the message, not this dataclass, issue 28)."""

    line: str  # `float32<6,1,5,5> ∈[-0.19, 0.2] μ=0.003 σ=0.11`, or why there is none
    nan_count: int = 0
    inf_count: int = 0
    missing: bool = False  # no value at this step


@dataclass(frozen=True)
class TensorAnswer:
    """What the tensor view shows for one request: the value (and the previous step's), or
    `error`, one sentence."""

    array: np.ndarray | None = None
    previous: np.ndarray | None = None
    note: str = ""
    error: str = ""


# said of a statistic.csv row and of an msprobe statistics record alike
NOT_DUMPED = "values were not dumped (statistic-only dump)"
# statistic.csv keys (offline.statistic_csv.STAT_COLUMNS) in the order they are shown, and
# their labels; MindSpore's "Negative/Positive Zero Count" count values < 0 and > 0
_SHOWN = (
    ("max", "max"),
    ("min", "min"),
    ("avg", "avg"),
    ("count", "count"),
    ("nan_count", "NaN"),
    ("neg_inf_count", "-Inf"),
    ("pos_inf_count", "+Inf"),
    ("zero_count", "zeros"),
    ("neg_zero_count", "<0"),
    ("pos_zero_count", ">0"),
    ("l2norm", "L2 norm"),
)
_COUNTS = frozenset({"nan_count", "neg_inf_count", "pos_inf_count"})


def statistics_text(stats: Mapping[str, float]) -> str:
    """The statistics a dump wrote for a tensor, on one line (only those it has)."""
    parts = []
    flags = presence_only(stats)  # msprobe's counts say only whether there is any
    for key, label in _SHOWN:
        value = stats.get(key)
        if value is None:
            continue
        if flags and key in _COUNTS:
            parts.append(f"{label} {'yes' if value else 'no'}")
            continue
        shown = (
            str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:.6g}"
        )
        parts.append(f"{label} {shown}")
    return "  ".join(parts) if parts else "no statistic it can show"


def _dumped_statistics(session: DebugSession, ref: TensorRef) -> Mapping[str, float] | None:
    try:
        return session.dumped_statistics(ref)
    except Exception:  # the statistics are a fallback: "no value" still says enough
        return None


def read_tensor(
    session: DebugSession,
    node: Node,
    ref: TensorRef,
    *,
    want_previous: bool,
    shown_step: int,
    cancelled: Callable[[], bool] = lambda: False,
) -> TensorAnswer | None:
    """The value of `ref` (a worker thread's call: the session may read a file or ask the
    training); None once `cancelled` says the answer is no longer wanted. `shown_step` is
    the step the App shows (step 0 offline holds nothing yet: say how to load step 1)."""
    try:
        array = session.tensor(ref)
    except Exception as exc:
        if cancelled():
            return None
        message = str(exc) if is_user_error(exc) else f"Reading the tensor failed: {exc}"
        return TensorAnswer(error=message)
    if cancelled():
        return None
    if array is None:
        stats = _dumped_statistics(session, ref)
        if stats is not None:
            return TensorAnswer(
                error=f"{node.short_name}:{ref.slot} at {session.step_label(ref)}: "
                f"{NOT_DUMPED}. Dumped statistics: {statistics_text(stats)}"
            )
        message = f"{node.short_name}:{ref.slot} has no value at {session.step_label(ref)}."
        if (
            not session.capabilities.step_zero_has_values
            and ref.iteration is None
            and not shown_step
        ):
            message += " Step 0 holds nothing yet: press n to load step 1."
        return TensorAnswer(error=message)
    previous: np.ndarray | None = None
    note = ""
    if want_previous:
        try:
            previous = session.tensor(ref, previous=True)
        except Exception:  # the current value still shows; the comparison just has none
            previous = None
        if previous is None:
            note = "no previous step value to compare with"
    if cancelled():
        return None
    return TensorAnswer(array, previous, note)


def trip_count(session: DebugSession, ref: TensorRef) -> int:
    """How many values a control-flow loop dumped for `ref` in its step (1: the usual
    one; a session that cannot tell counts as one)."""
    try:
        return max(session.tensor_trips(ref), 1)
    except Exception:  # the count only offers trips; the value is read (and fails) anyway
        return 1


def read_trip(session: DebugSession, node: Node, ref: TensorRef, trip: int) -> TensorAnswer:
    """The value of loop trip `trip` (1 the first) of `ref`'s step, or why not."""
    try:
        array = session.tensor_trip(ref, trip)
    except Exception as exc:
        message = str(exc) if is_user_error(exc) else f"Reading the tensor failed: {exc}"
        return TensorAnswer(error=message)
    if array is None:
        return TensorAnswer(
            error=f"{node.short_name}:{ref.slot} has no trip {trip} at {session.step_label(ref)}."
        )
    return TensorAnswer(array, None, "an earlier loop trip: no previous step value to compare")


def summarize(session: DebugSession, ref: TensorRef) -> OutputSummary:
    """One output's line in the node details (dtype, shape, range, NaN/Inf), or why not."""
    try:
        array = session.tensor(ref)
    except Exception as exc:
        message = str(exc) if is_user_error(exc) else f"unreadable: {exc}"
        return OutputSummary(message, missing=True)
    if array is None:
        dumped = _dumped_statistics(session, ref)
        if dumped is not None:
            return OutputSummary(
                f"statistics only: {statistics_text(dumped)}",
                nan_count=int(dumped.get("nan_count", 0)),
                inf_count=int(dumped.get("pos_inf_count", 0) + dumped.get("neg_inf_count", 0)),
            )
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
