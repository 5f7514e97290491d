"""Short text forms shared by several panes (dtype, shape, numbers, states), and the one
path untrusted text takes onto the screen.

Node names, scopes, op types and attributes come from a `.pb` or a gRPC peer, file names
from a dump folder, messages from a training: any of them may hold ESC sequences (set the
terminal's title, clear the screen), bidi overrides, or square brackets that Textual would
read as markup (`[link=…]`, `[bold red]`). Every pane shows such text through `plain` (a
rich `Text`, never parsed as markup), `shown` / `shown_lines` (a string for a widget built
with `markup=False`) or `markup_safe` (a string where Textual insists on markup), which all
escape with `tuidebug.core.text.printable`.
"""

from __future__ import annotations

import math

from rich.text import Text

from tuidebug.core.session import Ending, Metadata, SessionState
from tuidebug.core.tensor import dtype_label as core_dtype_label
from tuidebug.core.text import printable


def shown(text: object) -> str:
    """Untrusted text as one line to show: control characters (line breaks included) made
    visible. Only for places that do not read markup (a `Text`, `markup=False`)."""
    return printable(text)


def shown_lines(text: object) -> str:
    """Like `shown`, but a text whose line breaks are ours (notices joined into one toast,
    a dialog body) keeps them: each line is escaped on its own."""
    return "\n".join(printable(line) for line in str(text).split("\n"))


def markup_safe(text: object) -> str:
    """Untrusted text for a place that reads Textual content markup (a palette entry, its
    help): escaped, and every `[` backslashed. Textual's own `escape` (and Rich's) leave
    `[$accent]`, `[B]` and `[ bold ]` to be read as tags; this leaves none."""
    return printable(text).replace("[", "\\[")


def plain(text: object, style: str = "") -> Text:
    """Untrusted text as a one-line label: escaped, and a `Text`, so brackets stay
    brackets wherever the widget would otherwise parse markup."""
    return Text(printable(text), style=style)


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
    """`train.py:42`: a stack frame's file name (without its folder) and line, escaped
    (the name comes from the graph)."""
    where = printable(file_path.rsplit("/", 1)[-1]) if file_path else missing
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
    ending = metadata.ending
    if state is SessionState.DISCONNECTED:
        # a closed connection or lost heartbeats: named, as each asks another look
        return (ending.value or "disconnected", "bold red")
    if state is SessionState.DONE:
        if not online:
            return ("done", "cyan")
        if ending is Ending.FINISHED:
            return ("training finished its steps", "cyan")
        return (ending.value or "training ended", "cyan")
    return (state.value, "")
