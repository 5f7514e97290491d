"""What the terminal can show, read from the environment: its colour depth and whether it
takes UTF-8 (box drawing, half blocks).

Rich decides "16 colours" for a plain `TERM=xterm` (no COLORTERM), and Textual then maps
every theme colour and every heatmap colour to the nearest of 16: the focus border turns
bright red and the heatmap loses its gradient. Emulators that say `xterm`, `screen`,
`tmux` or `rxvt` nearly always show 256 colours, so tuidebug picks its colours for that
deliberately (`colors="256"`); only terminals that really have 16 (the Linux console,
vt100, `*-16color`) get the ANSI theme and a 16-colour heatmap. A locale that is not
UTF-8 (`LANG=C`, `LC_ALL=POSIX`, a Latin-1 one) gets ASCII borders and heatmap cells.
`draw_for` applies that to the app at its start. No Textual here: plain unit tests.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from rich.color import ColorSystem

ColorDepth = Literal["truecolor", "256", "16"]

# TERM values of terminals with 16 colours only (their -256color variants have more)
SIXTEEN_COLOR_TERMS = frozenset({"linux", "vt100", "vt102", "vt220", "ansi", "cons25", "dumb"})
# TEXTUAL_COLOR_SYSTEM's values (an explicit choice wins over any guess)
_TEXTUAL_SYSTEMS: Mapping[str, ColorDepth] = {
    "truecolor": "truecolor",
    "256": "256",
    "standard": "16",
    "windows": "16",
}


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class TerminalCaps(NamedTuple):
    colors: ColorDepth = "truecolor"
    unicode: bool = True


def color_depth(environ: Mapping[str, str]) -> ColorDepth:
    """The colours to draw with: TEXTUAL_COLOR_SYSTEM if set, truecolor where COLORTERM
    says so (or TERM ends in -direct), 16 for the terminals known to have no more, else 256."""
    chosen = _TEXTUAL_SYSTEMS.get(environ.get("TEXTUAL_COLOR_SYSTEM", "").strip().lower())
    if chosen is not None:
        return chosen
    if environ.get("COLORTERM", "").strip().lower() in {"truecolor", "24bit"}:
        return "truecolor"
    term = environ.get("TERM", "").strip().lower()
    if term.endswith("-direct"):
        return "truecolor"
    if not term or term in SIXTEEN_COLOR_TERMS or term.endswith("16color"):
        return "16"
    return "256"


def takes_unicode(environ: Mapping[str, str]) -> bool:
    """Whether the locale is UTF-8: the first of LC_ALL, LC_CTYPE, LANG that is set says
    (as the C library reads them). None set: nothing says otherwise, so yes.

    Python itself sets LC_CTYPE=C.UTF-8 when it starts in the C locale (PEP 538), so a
    C.UTF-8 LC_CTYPE beside LANG=C/POSIX is Python's doing, not the terminal's: LANG says."""
    names = ["LC_ALL", "LC_CTYPE", "LANG"]
    coerced = environ.get("LC_CTYPE", "").strip().lower() in {"c.utf-8", "c.utf8", "utf-8"}
    if coerced and environ.get("LANG", "").strip().upper() in {"C", "POSIX"}:
        names.remove("LC_CTYPE")
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            charset = value.partition(".")[2].partition("@")[0].lower().replace("-", "")
            return charset == "utf8"
    return True


def terminal_caps(environ: Mapping[str, str]) -> TerminalCaps:
    return TerminalCaps(color_depth(environ), takes_unicode(environ))


COLOR_SYSTEMS = {
    "truecolor": ColorSystem.TRUECOLOR,
    "256": ColorSystem.EIGHT_BIT,
    "16": ColorSystem.STANDARD,
}
# The terminal the heatmap draws for (colormap.py's palettes and cells), as `draw_for` last
# set it: colormap computes with numpy and loads with the first tensor, not in the first
# frame (issue 28), and starts from this when it loads.
heatmap = TerminalCaps()


def draw_for(app: Any, terminal: TerminalCaps) -> None:
    """Colours and glyphs the terminal really has, chosen rather than left to the
    nearest-colour mapping (the module docstring says why): 256 colours for TERM=xterm,
    the ANSI theme on a 16-colour terminal (its own palette: the focus border stays a
    calm accent, not bright red), ASCII borders and heatmap cells without UTF-8.
    `app`: the DebuggerApp, before it runs."""
    global heatmap
    heatmap = terminal
    colormap = sys.modules.get("tuidebug.tui.kit.colormap")
    if colormap is not None:  # loaded already (another app in this process): tell it
        colormap.use_terminal(terminal.colors, terminal.unicode)
    if terminal.colors == "16":
        app.theme = "ansi-dark"
    if app.console.color_system is not None:  # None: NO_COLOR, left as Textual has it
        # Rich has no setter; Textual draws every strip with the console's system
        app.console._color_system = COLOR_SYSTEMS[terminal.colors]
    if not terminal.unicode:
        app.add_class("-ascii")


__all__ = [
    "COLOR_SYSTEMS",
    "SIXTEEN_COLOR_TERMS",
    "ColorDepth",
    "TerminalCaps",
    "color_depth",
    "draw_for",
    "takes_unicode",
    "terminal_caps",
]
