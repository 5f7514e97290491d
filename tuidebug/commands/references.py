"""Names from a dump in a command line: always data, never syntax.

A node name comes from the dump, which is untrusted; the line it is completed into is the
user's. Two layers would read a name as syntax if it were pasted raw: the line's shell-like
split (quotes, backslashes, `#`, `> FILE`) and `eval`, whose expression is compiled as
Python. So:

- `split_expression` cuts an `eval` expression into the user's text and backquoted
  references *before* Python sees anything. Inside a reference a backquote is written
  twice (`` `a``b` `` names `` a`b ``), so a name cannot close its reference early and
  whatever it holds stays a name. `eval` binds each reference to a fresh variable and
  compiles only the user's own text around those variables.
- `quote_reference` writes a name as such a reference; `encode_word` writes text into
  the line so that its split gives back exactly that text, whatever quoting the cursor
  is in. Completion inserts nothing else.
- `unreferable` refuses, in one sentence, the names no command line can carry: those
  with a control character or a line break (the input cannot hold them, the history drops
  them, the split reads them as spaces).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from tuidebug.commands.context import CommandError
from tuidebug.core.text import printable

__all__ = [
    "OpenReference",
    "Reference",
    "WordAtEnd",
    "encode_word",
    "escape_name",
    "open_reference",
    "quote_reference",
    "split_expression",
    "unreferable",
    "word_at_end",
]

BACKQUOTE = "`"
# what the line's split (shlex, posix, whitespace_split, punctuation ">") treats specially
# outside quotes; inside double quotes only '"' and '\' are; inside single quotes only "'"
_SPECIAL_UNQUOTED = frozenset(" \t\r\n'\"\\#>")
_SPECIAL_DOUBLE = frozenset('"\\')
_BLANKS = " \t\r\n"


@dataclass(frozen=True)
class Reference:
    """A backquoted tensor reference, its backquote escapes undone."""

    text: str


def escape_name(name: str) -> str:
    """`name` as it is written inside a reference: each backquote doubled."""
    return name.replace(BACKQUOTE, BACKQUOTE * 2)


def quote_reference(name: str) -> str:
    return f"{BACKQUOTE}{escape_name(name)}{BACKQUOTE}"


def unreferable(name: str) -> str | None:
    """Why `name` cannot be written in a command line, or None when it can."""
    if name.isprintable():
        return None
    return (
        # quoted by hand: repr would double the backslash of each escape printable wrote
        f"The node '{printable(name)}' cannot be named in a command line: its name holds "
        "a control character or a line break."
    )


def split_expression(expression: str) -> list[str | Reference]:
    """The user's text and the references of an `eval` expression, in order.

    A backquote opens a reference; inside it two backquotes stand for one and a single one
    closes it. Every other character is the user's own text."""
    pieces: list[str | Reference] = []
    at = 0
    while True:
        opening = expression.find(BACKQUOTE, at)
        if opening < 0:
            if expression[at:]:
                pieces.append(expression[at:])
            return pieces
        if opening > at:
            pieces.append(expression[at:opening])
        parts: list[str] = []
        at = opening + 1
        while True:
            closing = expression.find(BACKQUOTE, at)
            if closing < 0:
                raise CommandError(
                    "A backquote is not closed: write tensors as `NAME:SLOT@ITERATION` "
                    "(a backquote inside a name is written twice)."
                )
            parts.append(expression[at:closing])
            if expression.startswith(BACKQUOTE * 2, closing):
                parts.append(BACKQUOTE)  # a doubled backquote is part of the name
                at = closing + 2
                continue
            at = closing + 1
            break
        text = "".join(parts)
        if not text:
            raise CommandError("An empty reference `` names no tensor: write `NAME:SLOT`.")
        reason = unreferable(text)
        if reason is not None:
            raise CommandError(reason)
        pieces.append(Reference(text))


# ------------------------------------------------------------------ the line
def encode_word(text: str, quote: str = "") -> str:
    """`text` written so that the line's split, in quoting `quote` ("", "'" or '"'),
    gives it back unchanged (no quote is opened or closed, no word break made)."""
    if quote == "'":
        return text.replace("'", "'\\''")  # close, an escaped quote, reopen
    special = _SPECIAL_DOUBLE if quote == '"' else _SPECIAL_UNQUOTED
    return "".join(f"\\{char}" if char in special else char for char in text)


@dataclass(frozen=True)
class _Char:
    """One character the split yields: where it was typed and the quoting it was in;
    `brk` marks a word break (the split joins words with one space)."""

    char: str
    at: int
    quote: str
    brk: bool = False


def _decode(line: str) -> list[_Char]:
    """What the line's split makes of `line`, character by character (shlex's rules)."""
    out: list[_Char] = []
    quote = ""
    i = 0
    while i < len(line):
        char = line[i]
        if quote == "'":
            if char == "'":
                quote = ""
            else:
                out.append(_Char(char, i, quote))
        elif quote == '"':
            if char == '"':
                quote = ""
            elif char == "\\" and i + 1 < len(line) and line[i + 1] in _SPECIAL_DOUBLE:
                i += 1
                out.append(_Char(line[i], i, quote))
            else:
                out.append(_Char(char, i, quote))
        elif char in "'\"":
            quote = char
        elif char == "\\":
            if i + 1 < len(line):
                i += 1
                out.append(_Char(line[i], i, quote))
        elif char in _BLANKS:
            if out and not out[-1].brk:
                out.append(_Char(" ", i, "", brk=True))
            elif out:
                out[-1] = _Char(" ", i, "", brk=True)  # the break is at the last blank
        else:
            out.append(_Char(char, i, quote))
        i += 1
    return out


@dataclass(frozen=True)
class WordAtEnd:
    """The word the line ends in: where it starts in the line, and its text once split."""

    start: int
    text: str


def word_at_end(line: str) -> WordAtEnd:
    chars = _decode(line)
    breaks = [k for k, c in enumerate(chars) if c.brk]
    if not breaks:
        return WordAtEnd(0, "".join(c.char for c in chars))
    last = breaks[-1]
    return WordAtEnd(chars[last].at + 1, "".join(c.char for c in chars[last + 1 :]))


@dataclass(frozen=True)
class OpenReference:
    """A reference the line ends inside: where its backquote is, the quoting it was typed
    in, and the name typed so far (escapes undone)."""

    start: int
    quote: str
    partial: str


def open_reference(line: str) -> OpenReference | None:
    """The reference still open at the end of `line`, if any (as `split_expression` would
    read the expression: a trailing single backquote closes)."""
    chars = _decode(line)
    opening: int | None = None
    partial: list[str] = []
    k = 0
    while k < len(chars):
        char = chars[k].char
        if opening is None:
            if char == BACKQUOTE:
                opening, partial = k, []
        elif char == BACKQUOTE:
            if k + 1 < len(chars) and chars[k + 1].char == BACKQUOTE:
                partial.append(BACKQUOTE)
                k += 1
            else:
                opening = None
        else:
            partial.append(char)
        k += 1
    if opening is None:
        return None
    return OpenReference(chars[opening].at, chars[opening].quote, "".join(partial))


def common_prefix(texts: Sequence[str]) -> str:
    # a string prefix of names, not a path
    return os.path.commonprefix(list(texts)) if texts else ""  # noqa: RUF071
