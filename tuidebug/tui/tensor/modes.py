"""What the tensor view compares the tensor shown with, and which of the three it shows.

A tensor opens with the previous step's value beside it when there is one (`d` cycles
current → diff → previous); `R` and `D` replace that reference by the same tensor on
another rank or by any tensor the user names (the flows that ask which are
tensor_compare.py's). `CompareState` holds the reference, its name, the mode, the
tolerance and the comparison once a worker has computed it, and answers what the view
shows and how its lines name it, and says why a reference cannot be compared. No Textual
and no numpy here (the view builds its state before its first frame, which must not wait
for numpy: issue 28): the view runs the workers and draws.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from tuidebug.core.tensor import dtype_label

if TYPE_CHECKING:
    import numpy as np

    from tuidebug.core.tensor import Comparison, TensorStatistics

Mode = Literal["current", "previous", "diff"]
MODES: tuple[Mode, ...] = ("current", "diff", "previous")

PREVIOUS_STEP = "the previous step"


def compare_problem(
    array: np.ndarray, previous: np.ndarray | None, label: str = PREVIOUS_STEP
) -> str:
    """Why `array` cannot be compared with `previous`, which is `label` ("" when it can)."""
    if previous is None:
        if label == PREVIOUS_STEP:
            return "There is no previous step to compare with."
        return f"{_capital(label)} has no value to compare with."
    if previous.shape != array.shape:
        return (
            f"{_capital(label)} has shape {tuple(previous.shape)}, not "
            f"{tuple(array.shape)}, so it cannot be compared."
        )
    if previous.dtype != array.dtype:
        return (
            f"{_capital(label)} is {dtype_label(previous.dtype)}, not "
            f"{dtype_label(array.dtype)}, so it cannot be compared."
        )
    return ""


def _capital(label: str) -> str:
    """A label opening a sentence: `the previous step`, `rank 1` capitalized; a tensor's
    name (`fc3.bias:0 @ step 3`) kept as the graph writes it."""
    if label.split(" ", 1)[0] in ("the", "rank"):
        return label[:1].upper() + label[1:]
    return label


def reference_name(label: str) -> str:
    """What the status line and statistics call the tensor compared with."""
    return "previous" if label == PREVIOUS_STEP else label


def mode_label(mode: str, label: str) -> str:
    """The slice bar's mode: `current`, `diff`, `previous`; `diff vs rank 1`, `rank 1`."""
    if label == PREVIOUS_STEP or mode == "current":
        return mode
    return f"diff vs {label}" if mode == "diff" else label


def parse_tolerance(text: str) -> float:
    """The compare tolerance t ∈ [0, 1] (spec §6.5) typed in its box ("" is 0); a
    ValueError says what is wrong in one sentence."""
    try:
        value = float(text.strip() or "0")
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"The tolerance must be a number between 0 and 1, not {text.strip()!r}.")
    return value


class CompareState:
    """The reference of one tensor view and the mode it is shown in (see the module)."""

    def __init__(self) -> None:
        self.previous: np.ndarray | None = None  # the reference's value
        # what `previous` is: the previous step, or what `compare_with` read (rank 1, a
        # tensor named by the user)
        self.reference = PREVIOUS_STEP
        self.mode: Mode = "current"
        # kept while the same tensor is shown at other steps (its scale is the same), reset
        # for another tensor (`keep_tolerance_for`): a tolerance set for one tensor's scale
        # would silently hide the differences of the next
        self.tolerance = 0.0
        self._tolerance_of: object = None
        self.comparison: Comparison | None = None  # None until the worker has computed it
        self.problem = ""  # why compare is unavailable ("" = available)

    # ------------------------------------------------------------- the reference
    def clear(self) -> None:
        """A new tensor is coming: no reference, no comparison, the current value."""
        self.release()
        self.mode = "current"

    def release(self) -> None:
        """Let go of the reference's value and the comparison (the mode stays)."""
        self.previous = None
        self.comparison = None

    def open(self, array: np.ndarray, previous: np.ndarray | None) -> None:
        """`array` is shown with the previous step's value `previous` (None: none)."""
        self.previous = previous
        self.reference = PREVIOUS_STEP
        self.problem = compare_problem(array, previous)
        self.comparison = None

    def adopt(self, label: str, array: np.ndarray | None) -> None:
        """`array`, named `label`, is the reference now (checked: see `compare_problem`)."""
        self.previous = array
        self.reference = label
        self.comparison = None
        self.problem = ""

    def failed(self, problem: str) -> None:
        """The comparison could not be computed: back to the current value, and why."""
        self.problem = problem
        self.mode = "current"

    def keep_tolerance_for(self, tensor: object) -> bool:
        """`tensor` (any identity: name and slot) is shown next: the tolerance is kept if it
        is the tensor it was set for, else reset to 0. True when it was reset from a value
        the user had set."""
        if tensor == self._tolerance_of:
            return False
        self._tolerance_of = tensor
        was = self.tolerance
        self.tolerance = 0.0
        return was != 0.0

    # ------------------------------------------------------------------ the modes
    def next_mode(self) -> Mode:
        return MODES[(MODES.index(self.mode) + 1) % len(MODES)]

    @property
    def needs_comparison(self) -> bool:
        """The mode shows the comparison, which is not computed yet."""
        return self.mode != "current" and self.comparison is None

    def displayed(self, array: np.ndarray | None) -> np.ndarray | None:
        """The tensor the mode shows of `array` (None while the diff is being computed)."""
        if self.mode == "previous":
            return self.previous
        if self.mode == "diff":
            return self.comparison.diff if self.comparison is not None else None
        return array

    def displayed_stats(self, whole: TensorStatistics | None) -> TensorStatistics | None:
        """The statistics of what the mode shows (`whole`: the current tensor's)."""
        if self.comparison is not None:
            return {
                "current": self.comparison.current_stats,
                "previous": self.comparison.previous_stats,
                "diff": self.comparison.diff_stats,
            }[self.mode]
        return whole if self.mode == "current" else None

    # ------------------------------------------------------------------- wording
    @property
    def label(self) -> str:
        """`current`, `diff`, `previous`; `diff vs rank 1`, `rank 1` (the saved name too)."""
        return mode_label(self.mode, self.reference)

    @property
    def bracketed(self) -> str:
        """The slice bar's `[diff]` ("" when there is nothing to compare with)."""
        return "" if self.problem else f"[{self.label}]"

    @property
    def versus(self) -> str:
        """What the title says of a compare mode: `diff vs the previous step`, `showing rank
        1`; "" in the current mode (the title then names the tensor alone)."""
        if self.problem or self.mode == "current":
            return ""
        return f"diff vs {self.reference}" if self.mode == "diff" else f"showing {self.reference}"

    @property
    def reference_name(self) -> str:
        """What the status line and the statistics call the reference."""
        return reference_name(self.reference)

    @property
    def shown_name(self) -> str:
        """What the statistics call the tensor the mode shows."""
        return self.reference_name if self.mode == "previous" else self.mode


__all__ = [
    "MODES",
    "PREVIOUS_STEP",
    "CompareState",
    "Mode",
    "compare_problem",
    "mode_label",
    "parse_tolerance",
    "reference_name",
]
