"""What a command prints: lines of styled spans, some of them links to nodes and tensors.

Commands never format for a particular terminal. A span carries a *semantic* style
(`header`, `dim`, `nan`, `highlight`…) and, when it names a node or a tensor, a `Link`;
the TUI turns spans into Rich text with clickable links, `tuidebug exec` and `> FILE`
print `plain()`. Every untrusted string (node names, file names, source lines) passes
`core.text.printable` when a span is made, so no caller can forget it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tuidebug.core.text import printable

__all__ = ["STYLES", "Link", "Output", "Span"]

# The styles a span may carry; the TUI maps each to a Rich style.
STYLES = frozenset(
    {"", "header", "dim", "bold", "error", "warning", "nan", "inf", "zero", "highlight", "ok"}
)


@dataclass(frozen=True)
class Link:
    """Where a span points: a node, or one of its output tensors when `slot` is set."""

    graph: str
    node: str
    slot: int | None = None
    iteration: int | None = None


@dataclass(frozen=True)
class Span:
    text: str
    style: str = ""
    link: Link | None = None


@dataclass
class Output:
    """A command's answer. `error` is one sentence when the command failed (its lines may
    still say more); `lines` is what it printed."""

    lines: list[tuple[Span, ...]] = field(default_factory=list)
    error: str | None = None

    def add(self, *spans: Span | str) -> None:
        """Append a line; plain strings are unstyled spans. Text is made printable here."""
        self.lines.append(
            tuple(
                Span(printable(s))
                if isinstance(s, str)
                else Span(printable(s.text), s.style, s.link)
                for s in spans
            )
        )

    def add_text(self, text: str, style: str = "") -> None:
        """Append one span per line of `text` (numpy's multi-line array printouts)."""
        for line in text.splitlines() or [""]:
            self.add(Span(line, style))

    def extend(self, lines: Iterable[tuple[Span, ...]]) -> None:
        self.lines.extend(lines)

    def plain(self) -> str:
        body = "\n".join("".join(span.text for span in line) for line in self.lines)
        if self.error is not None:
            return f"{body}\n{self.error}" if body else self.error
        return body

    @classmethod
    def failure(cls, sentence: str) -> Output:
        return cls(error=printable(sentence))
