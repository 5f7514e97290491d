"""Short text forms shared by several panes (dtype, shape, numbers, states)."""

from __future__ import annotations

import math

from tuidebug.core.session import Metadata, SessionState
from tuidebug.core.tensor import dtype_label as core_dtype_label


def dtype_label(dtype: int | None) -> str:
    """`float32` for a DataType number; `?` when the graph does not say."""
    if dtype is None:
        return "?"
    return core_dtype_label(dtype)


def shape_label(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "<?>"
    return "<" + ",".join(str(d) for d in shape) + ">"


def source_place(file_path: str, line_no: int | None, missing: str = "") -> str:
    """`train.py:42`: a stack frame's file name (without its folder) and line."""
    where = file_path.rsplit("/", 1)[-1] if file_path else missing
    return where if line_no is None else f"{where}:{line_no}"


def number(value: float | int | None) -> str:
    """Compact, stable rendering of a threshold or an actual value."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def state_label(metadata: Metadata, *, hits_at_step: bool = False) -> tuple[str, str]:
    """(text, style) for the header's state, worded for the mode the user is in."""
    state = metadata.state
    online = metadata.mode == "online"
    if state is SessionState.PENDING:
        return ("waiting for training" if online else "nothing loaded", "yellow")
    if state is SessionState.LOADING:
        return ("receiving graph" if online else "loading", "yellow")
    if state is SessionState.WAITING:
        if hits_at_step:
            return ("paused at hit", "bold red")
        return ("paused" if online else "ready", "green")
    if state is SessionState.SENDING:
        return ("sending command", "yellow")
    if state is SessionState.RUNNING:
        return ("running" if online else "checking", "bold yellow")
    if state is SessionState.MISMATCH:
        return ("version mismatch", "bold red")
    if state is SessionState.NODE_TOO_LARGE:
        return ("graph too large", "bold red")
    if state is SessionState.DISCONNECTED:
        return ("disconnected", "bold red")
    if state is SessionState.DONE:
        return ("training finished" if online else "done", "cyan")
    return (state.value, "")
