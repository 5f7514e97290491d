"""`StyledScrollView`: a ScrollView that draws its own lines with its component styles.

Widgets that implement `render_line` (the tensor grid, the command output, the tensor list,
the source and graph views) look up the Rich style of a component class for every line
they draw. Resolving CSS into a Rich style costs more than drawing the line, so the styles
are resolved once per style change (Textual calls `notify_style_update`) and kept.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from textual.scroll_view import ScrollView

__all__ = ["StyledScrollView"]


class StyledScrollView(ScrollView):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._styles: dict[str, Style] = {}

    def notify_style_update(self) -> None:
        self._styles.clear()
        super().notify_style_update()

    def style_of(self, component: str) -> Style:
        """The Rich style of a component class ("" = the widget itself), cached."""
        style = self._styles.get(component)
        if style is None:
            style = self.get_component_rich_style(component) if component else self.rich_style
            self._styles[component] = style
        return style
