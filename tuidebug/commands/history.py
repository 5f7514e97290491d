"""Command history with prefix search, as a shell's ↑/↓ with a typed prefix.

↑ with `pt` typed walks back through the earlier lines that start with `pt`; ↓ walks
forward and, past the newest, gives back what was typed. A repeated line is kept once
(the newest), and the history is bounded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["History"]


@dataclass
class History:
    limit: int = 500
    lines: list[str] = field(default_factory=list)
    _pos: int | None = None  # index into lines while browsing, None when not
    _typed: str = ""

    def add(self, line: str) -> None:
        line = line.strip()
        if line:
            if line in self.lines:
                self.lines.remove(line)
            self.lines.append(line)
            del self.lines[: -self.limit]
        self.reset()

    def reset(self) -> None:
        self._pos, self._typed = None, ""

    def previous(self, typed: str) -> str | None:
        """The next older line starting with what was typed before browsing began."""
        if self._pos is None:
            self._pos, self._typed = len(self.lines), typed
        for i in range(self._pos - 1, -1, -1):
            if self.lines[i].startswith(self._typed):
                self._pos = i
                return self.lines[i]
        return None

    def next(self) -> str | None:
        """The next newer matching line; past the newest, the typed text again."""
        if self._pos is None:
            return None
        for i in range(self._pos + 1, len(self.lines)):
            if self.lines[i].startswith(self._typed):
                self._pos = i
                return self.lines[i]
        typed = self._typed
        self.reset()
        return typed
