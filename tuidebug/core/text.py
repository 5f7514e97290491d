"""Text for a terminal: untrusted strings made safe (`printable`), rank lists made short
(`rank_ranges`), long things a dump says quoted short (`shortened`, `shape_text`), and the one
way every screen, command and report names a step (`step_text`).

Node names come from a `.pb` or a gRPC peer and file names from a dump folder: any of them
may hold ESC sequences that set the terminal's title, clear the screen or overwrite a line,
or bidi/zero-width characters that make one name look like another. Everything such a
string reaches on a terminal (the `check` table, stderr, TUI notices, labels) passes through
`printable` first; machine-readable output (`--json`, `.npy`, the API's return values) keeps
the exact string.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["printable", "rank_ranges", "shape_text", "shortened", "step_text"]

# What a sentence quotes from a dump (a name, a shape) is cut to about this many characters:
# a dump is free to hold a name of megabytes or a shape of a million dimensions, and one
# warning of 6 MB says no more than its first line would.
QUOTE_CHARS = 200
# a shape is quoted with at most this many dimensions (numpy's own limit is 64)
QUOTE_DIMS = 16


def _escape(char: str) -> str:
    code = ord(char)
    if char == "\t":
        return "\\t"
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: object) -> str:
    """`text` as a string with every non-printable character written as a visible escape.

    Non-printable is Python's `str.isprintable`: C0/C1 controls and DEL, format characters
    (bidi overrides, zero-width joiners), line/paragraph separators, surrogates and
    unassigned code points. Printable text, the common case, is returned unchanged.
    Backslashes are kept as they are so Windows paths stay readable.
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def rank_ranges(ranks: Iterable[int], dash: str = "–", sep: str = ", ") -> str:
    """Sorted ranks (or iterations) as runs: (0, 1, 2, 3, 5) → `0–3, 5` (64 ranks stay one
    short line); `dash="-", sep=","` for the CLI's plain-ASCII `0-3,5`."""
    runs: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if runs and rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    return sep.join(str(a) if a == b else f"{a}{dash}{b}" for a, b in runs)


def shortened(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` when it has at most `limit` characters, else its head and tail around
    `…[N more characters]…` (both ends: a file or node name differs mostly at its end)."""
    if len(text) <= limit:
        return text
    keep = max(limit // 2, 1)
    return f"{text[:keep]}…[{len(text) - 2 * keep:,} more characters]…{text[-keep:]}"


def shape_text(shape: tuple[int, ...], limit: int = QUOTE_DIMS) -> str:
    """A shape as Python writes a tuple, `(2, 3)`, `(4,)`; one of more than `limit`
    dimensions keeps its first ones and says how many there are in all (a shape may come
    from a dump that lies: a million dimensions are one short clause, not 6 MB)."""
    if len(shape) > limit:
        head = ", ".join(str(d) for d in shape[:limit])
        return f"({head}, … {len(shape):,} dimensions in all)"
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def step_text(step: int, iteration: int | None = None) -> str:
    """A step as the header, the hit list, tensor titles, `pt`/`lt` and the history all say
    it: `step 4 (iteration 3)` where the step shows a dump iteration (offline: step `s` is
    iteration `s − 1`), `step 4` where steps are not dump iterations (online, whose step 4
    is the same data as a dump's iteration 3). One wording, so the same data never reads
    as "step 3" in one place and "step 4" in another."""
    if iteration is None:
        return f"step {step}"
    return f"step {step} (iteration {iteration})"
