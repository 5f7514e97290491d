"""The name filters' matching: a regular expression, and plain text as a substring.

The tree's name filter (/) and the hit list's filter read what the user types the same
way: case-insensitive, searched anywhere in the name, so `conv1` is still a substring test
while `^Default/.*MatMul` or `op(1|2)$` are regular expressions. Text that is not a valid
expression (a name with a lone `(` or `[`) is matched as plain text, and `problem` says so
in one sentence instead of a traceback. No Textual here: plain unit tests.
"""

from __future__ import annotations

import re
from typing import NamedTuple


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class NameFilter(NamedTuple):
    text: str  # as typed, stripped
    pattern: re.Pattern[str] | None  # None: no filter, or plain text (see `problem`)
    problem: str = ""  # one sentence when the text is not a valid regular expression

    def __bool__(self) -> bool:
        return bool(self.text)

    def matches(self, name: str) -> bool:
        if not self.text:
            return True
        if self.pattern is not None:
            return self.pattern.search(name) is not None
        return self.text.lower() in name.lower()


def name_filter(text: str) -> NameFilter:
    """The filter for `text` (empty: everything matches)."""
    text = text.strip()
    if not text:
        return NameFilter("", None)
    try:
        return NameFilter(text, re.compile(text, re.IGNORECASE))
    except re.error as err:
        # the position tells where: "missing ), unterminated subpattern at position 4"
        return NameFilter(
            text,
            None,
            f"Not a regular expression ({err}): matched as plain text.",
        )


__all__ = ["NameFilter", "name_filter"]
