"""The ASCII form of every glyph the app draws, for a terminal without UTF-8 (`LANG=C`).

tuidebug's own glyphs (badges `●◉▲`, `±`, `×`, `—`, the gutter `│`, the graph's boxes) and
Textual's (Tree guides and `▶`/`▼`, the tab underline `━╸`, button and dialog edges `▔▁█▀▄`,
the footer's `▏`, the Select arrow) all reach the terminal through one write. Translating
that write, rather than each widget's strings, covers Textual's glyphs too and every glyph
a later change adds. Each form has the cell width of its glyph, so no layout moves: a glyph
that would need two characters (`±`, `…`) gets the closest single one. A character not in
the table (a node name in another script) becomes `?` per cell it takes, as a terminal
without UTF-8 could not show it anyway. No Textual here: plain unit tests.
"""

from __future__ import annotations

import unicodedata
from typing import Any

# One character each: the terminal cells must not move.
ASCII_FORMS: dict[str, str] = {
    # lines and corners (Textual's borders, Tree guides, our gutters and graph boxes)
    "│": "|", "┃": "|", "║": "|", "▏": "|", "▕": "|", "╎": "|", "┆": "|",
    "─": "-", "━": "-", "═": "=", "╴": "-", "╶": "-", "╸": "-", "╺": "-", "╌": "-",
    "┌": "+", "┐": "+", "└": "+", "┘": "+", "├": "+", "┤": "+", "┬": "+", "┴": "+",
    "┼": "+", "╭": "+", "╮": "+", "╯": "+", "╰": "+", "┏": "+", "┓": "+", "┗": "+",
    "┛": "+", "┣": "+", "┫": "+", "┳": "+", "┻": "+", "╋": "+", "╔": "+", "╗": "+",
    "╚": "+", "╝": "+", "╠": "+", "╣": "+", "╦": "+", "╩": "+", "╬": "+", "╤": "+",
    # blocks: dialog edges (thick), button edges (tall), scrollbars, sparklines
    "█": "#", "▀": "=", "▄": "=", "▔": "-", "▁": "_", "▂": ".", "▃": ",", "▅": ":",
    "▆": ";", "▇": "+", "▌": "|", "▐": "|", "░": ".", "▒": ":", "▓": "#",
    # arrows and markers
    "▶": ">", "▸": ">", "►": ">", "▼": "v", "▾": "v", "▲": "^", "▴": "^", "◀": "<",
    "←": "<", "→": ">", "↑": "^", "↓": "v", "↵": "<",
    "●": "*", "○": "o", "◉": "@", "◆": "*", "■": "#", "□": "o", "✓": "v", "✔": "v",
    "✗": "x", "✘": "x", "★": "*", "⚠": "!",
    # text
    "—": "-", "–": "-", "−": "-", "…": ".", "·": ".", "•": "*", "×": "x", "÷": "/",
    # "±Inf" reads as "~Inf": Inf of either sign ("+" alone would say positive)
    "±": "~", "≤": "<", "≥": ">", "≈": "~", "≠": "#", "∈": "e", "Σ": "S",
    "“": '"', "”": '"', "‘": "'", "’": "'", "«": "<", "»": ">", "\u00a0": " ",
    "⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7",
    "⁸": "8", "⁹": "9",
}  # fmt: skip


class _Table(dict[int, str]):
    """`str.translate`'s table: the forms above, then `?` per cell for any other
    character beyond ASCII (remembered, so each is worked out once)."""

    def __missing__(self, code: int) -> str:
        if code < 128:
            raise LookupError(code)  # translate leaves ASCII as it is
        char = chr(code)
        if unicodedata.combining(char) or unicodedata.category(char) in {"Mn", "Me", "Cf"}:
            form = ""  # takes no cell
        elif unicodedata.east_asian_width(char) in {"W", "F"}:
            form = "??"
        else:
            form = "?"
        self[code] = form
        return form


_TABLE = _Table({ord(glyph): form for glyph, form in ASCII_FORMS.items()})


def to_ascii(text: str) -> str:
    """`text` with every character beyond ASCII in its ASCII form, cell for cell."""
    if text.isascii():
        return text
    return text.translate(_TABLE)


def write_ascii(app: Any) -> None:
    """Every glyph an app writes to a terminal without UTF-8 in its ASCII form (Textual's
    Tree guides, tab underline and button edges as well as ours): one translation of the
    terminal write, escape sequences being ASCII. Called once the app's driver exists."""
    driver = app._driver
    if driver is None:
        return
    write = driver.write

    def ascii_write(data: str) -> None:
        write(to_ascii(data))

    driver.write = ascii_write


__all__ = ["ASCII_FORMS", "to_ascii", "write_ascii"]
