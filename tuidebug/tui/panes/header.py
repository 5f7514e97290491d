"""The header: which session this is, where the run stands, and what is loading."""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual.widgets import Static

from tuidebug.core.session import Metadata
from tuidebug.tui.kit.labels import shown, shown_lines, state_label

BAR_WIDTH = 20


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class Segment(NamedTuple):
    """A piece of the header line. Lower `keep` is dropped first when the line is too
    long; the source (`elide=True`) is shortened from the left before anything goes."""

    label: str
    value: str
    style: str = ""
    keep: int = 9
    elide: bool = False
    sep: str = "  "

    def text(self, value: str | None = None) -> Text:
        out = Text(self.sep)
        if self.label:
            out.append(f"{self.label} ", style="dim")
        out.append(self.value if value is None else value, style=self.style)
        return out


def header_segments(
    md: Metadata, graph: str, shown_source: str, hits_at_step: bool
) -> list[Segment]:
    """The header's facts; everything a peer or a dump names (its path, the device, the
    MindSpore version, graph and node names) escaped before its length is measured."""
    online = md.mode == "online"
    source = shown(shown_source or md.source)
    segments = [
        Segment("", f" {md.mode.upper()} ", "bold reverse " + ("magenta" if online else "blue"))
    ]
    if online:
        # gRPC names peers "ipv4:1.2.3.4:port"; before a training connects the source is the
        # address we listen on
        peer = source.removeprefix("ipv4:").removeprefix("ipv6:")
        waiting = md.state.value == "pending"
        segments.append(Segment("listening on" if waiting else "client", peer, elide=True))
        if md.device:
            segments.append(Segment("device", shown(md.device), keep=2))
        if md.backend:
            segments.append(Segment("backend", shown(md.backend), keep=4))
        if md.ms_version:
            # which MindSpore is connected matters (its version warning is the banner
            # line): it outlasts the device, backend, rank and graph on a narrow line
            segments.append(Segment("MindSpore", shown(md.ms_version), keep=5))
    else:
        segments.append(Segment("", source, elide=True))
    rank = str(md.rank) + (f" of {len(md.ranks)}" if len(md.ranks) > 1 else "")
    segments.append(Segment("rank", rank, keep=5 if len(md.ranks) > 1 else 3))
    if graph:
        # with one graph the tree's selector already names it
        segments.append(Segment("graph", shown(graph), keep=6 if len(md.graph_names) > 1 else 3))
    step = str(md.step) + (f"/{md.max_step}" if md.max_step is not None else "")
    segments.append(Segment("step", step, "bold"))
    if md.iteration is not None:  # the dump iteration the step shows (offline)
        segments.append(Segment("", f"(iteration {md.iteration})", "dim", keep=2, sep=" "))
    if online and md.cur_node:
        segments.append(Segment("node", shown(md.cur_node.rsplit("/", 1)[-1]), keep=7))
    label, style = state_label(md, hits_at_step=hits_at_step)
    segments.append(Segment("", f"● {label}", style))
    return segments


MIN_SOURCE = 16  # cells of the source kept before less important facts are dropped


def fit_line(segments: list[Segment], width: int) -> Text:
    """The segments as one line of at most `width` cells: the source is shortened to its
    end (the dump's own folder names) down to `MIN_SOURCE` cells, then the least
    important facts are dropped."""
    kept = list(segments)

    def length(items: list[Segment], source_cap: int | None = None) -> int:
        total = 0
        for item in items:
            size = item.text().cell_len
            if item.elide and source_cap is not None:
                size = min(size, item.text("x" * source_cap).cell_len)
            total += size
        return total

    while length(kept, MIN_SOURCE) > width:
        droppable = [item for item in kept if item.keep < 9]
        if not droppable:
            break
        kept.remove(min(droppable, key=lambda item: item.keep))
    line = Text()
    overflow = length(kept) - width
    for item in kept:
        value = item.value
        if item.elide and overflow > 0 and len(value) > MIN_SOURCE:
            room = max(MIN_SOURCE - 1, len(value) - overflow - 1)
            value = "…" + value[-room:]
        line.append_text(item.text(value))
    return line


class SessionHeader(Static):
    """One line of session facts, plus a second line for progress or a banner message."""

    DEFAULT_CSS = """
    SessionHeader {
        height: auto;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.metadata: Metadata | None = None
        self.graph_name = ""
        self.hits_at_step = False
        self.progress: tuple[str, int, int] | None = None
        self.stop_hint = ""  # while a run can be stopped: which keys stop it
        self.shown_source = ""  # lets tests and screenshots pin a stable path

    def set_metadata(
        self, metadata: Metadata, *, hits_at_step: bool = False, stop_hint: str = ""
    ) -> None:
        """`stop_hint`: the keys that stop the running check, said beside its progress."""
        self.metadata = metadata
        self.hits_at_step = hits_at_step
        self.stop_hint = stop_hint
        self.update(self._text())

    def set_graph(self, name: str) -> None:
        self.graph_name = name
        self.update(self._text())

    def set_progress(self, label: str, done: int, total: int) -> None:
        """`total` 0 = unknown; done ≥ total (when known) clears the line."""
        self.progress = None if total and done >= total else (label, done, total)
        self.update(self._text())

    def on_resize(self) -> None:
        # What fits on the line depends on the width: lay it out again.
        self.update(self._text())

    def _text(self) -> Text:
        md = self.metadata
        text = Text()
        text.append("tuidebug", style="bold")
        if md is None:
            text.append("  starting…", style="dim")
            return text
        text.append_text(
            fit_line(
                header_segments(md, self.graph_name, self.shown_source, self.hits_at_step),
                self._line_width(),
            )
        )
        second = self._second_line(md)
        if second is not None:
            text.append("\n")
            text.append_text(second)
        return text

    def _line_width(self) -> int:
        """Cells left after "tuidebug" and the padding (a generous default before layout)."""
        width = self.size.width if self.is_mounted and self.size.width else 0
        return (width - 2 - len("tuidebug")) if width else 10_000

    def _second_line(self, md: Metadata) -> Text | None:
        if self.progress is not None:
            label, done, total = self.progress
            line = Text(f"{shown(label)} ", style="yellow")
            if total:
                filled = int(BAR_WIDTH * done / total)
                line.append("█" * filled + "░" * (BAR_WIDTH - filled), style="yellow")
                line.append(f" {done}/{total}")
            else:
                line.append(f"{done}…" if done else "…")
            if self.stop_hint and md.state.value == "running":
                line.append(f"  · {shown(self.stop_hint)}", style="dim")
            return line
        if md.message:
            return Text(
                shown_lines(md.message),
                style="bold red"
                if md.state.value in {"mismatch", "disconnected", "node_too_large"}
                else "yellow",
            )
        return None
