"""The header: which session this is, where the run stands, and what is loading."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tuidebug.core.session import Metadata
from tuidebug.tui.labels import state_label

BAR_WIDTH = 20


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
        self.shown_source = ""  # lets tests and screenshots pin a stable path

    def set_metadata(self, metadata: Metadata, *, hits_at_step: bool = False) -> None:
        self.metadata = metadata
        self.hits_at_step = hits_at_step
        self.update(self._text())

    def set_graph(self, name: str) -> None:
        self.graph_name = name
        self.update(self._text())

    def set_progress(self, label: str, done: int, total: int) -> None:
        """`total` 0 = unknown; done ≥ total (when known) clears the line."""
        self.progress = None if total and done >= total else (label, done, total)
        self.update(self._text())

    def _text(self) -> Text:
        md = self.metadata
        text = Text()
        text.append("tuidebug", style="bold")
        if md is None:
            text.append("  starting…", style="dim")
            return text
        online = md.mode == "online"
        text.append(
            f"  {md.mode.upper()} ", style="bold reverse " + ("magenta" if online else "blue")
        )
        source = self.shown_source or md.source
        if online:
            text.append("  client ", style="dim")
            text.append(source or "(none yet)")
            if md.device:
                text.append("  device ", style="dim")
                text.append(md.device)
            if md.backend:
                text.append("  backend ", style="dim")
                text.append(md.backend)
            if md.ms_version:
                text.append("  MindSpore ", style="dim")
                text.append(md.ms_version)
        else:
            text.append("  ")
            text.append(source)
        text.append("  rank ", style="dim")
        text.append(str(md.rank))
        if len(md.ranks) > 1:
            text.append(f" of {len(md.ranks)}", style="dim")
        if self.graph_name:
            text.append("  graph ", style="dim")
            text.append(self.graph_name)
        text.append("  step ", style="dim")
        step = str(md.step)
        if md.max_step is not None:
            step += f"/{md.max_step}"
        text.append(step, style="bold")
        if not online and md.step > 0:
            text.append(f" (iteration {md.step - 1})", style="dim")
        if online and md.cur_node:
            text.append("  node ", style="dim")
            text.append(md.cur_node.rsplit("/", 1)[-1])
        label, style = state_label(md, hits_at_step=self.hits_at_step)
        text.append("  ● ", style=style)
        text.append(label, style=style)
        second = self._second_line(md)
        if second is not None:
            text.append("\n")
            text.append_text(second)
        return text

    def _second_line(self, md: Metadata) -> Text | None:
        if self.progress is not None:
            label, done, total = self.progress
            line = Text(f"{label} ", style="yellow")
            if total:
                filled = int(BAR_WIDTH * done / total)
                line.append("█" * filled + "░" * (BAR_WIDTH - filled), style="yellow")
                line.append(f" {done}/{total}")
            else:
                line.append(f"{done}…" if done else "…")
            return line
        if md.message:
            return Text(
                md.message,
                style="bold red"
                if md.state.value in {"mismatch", "disconnected", "node_too_large"}
                else "yellow",
            )
        return None
