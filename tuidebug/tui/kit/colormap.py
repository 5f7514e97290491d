"""Colour maps for the tensor heatmap: value → 256-entry palette index → truecolor style.

Values are mapped in bulk with numpy to small integer *codes* (0–255 = palette entry,
negative = a special value); the renderer turns pairs of codes into one half-block cell.
Styles are cached per code pair because a screen only ever uses a few thousand pairs, and
building rich `Style` objects is the slow part of drawing a frame.

numpy is imported by the functions that compute, and the palettes are built when a tensor
is first drawn. The terminal's depth comes from terminal_caps.py (`draw_for`, at the
app's start): the first frame shows no tensor, and loads neither numpy nor this module
(issue 28).

NaN, +Inf and −Inf get fixed colours *and* fixed glyphs: the glyph keeps them readable
when the terminal maps truecolor down to 256 or 16 colours and the hues collapse.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from rich.color import Color, ColorSystem
from rich.style import Style

from tuidebug.tui.kit import terminal_caps

if TYPE_CHECKING:
    import numpy as np

# Codes below 0 are not palette entries.
CODE_NAN = -1
CODE_POS_INF = -2
CODE_NEG_INF = -3
CODE_EMPTY = -4  # outside the data (an odd last row, the area right of the image)

HALF_BLOCK = "▀"  # upper half: foreground = top data row, background = bottom data row


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class SpecialValue(NamedTuple):
    """How one non-finite value is drawn: a glyph on a fixed background."""

    code: int
    label: str
    glyph: str
    fg: tuple[int, int, int]
    bg: tuple[int, int, int]


# Hues chosen away from both palettes (blue–white–red and navy–sky) so they stand out.
NAN = SpecialValue(CODE_NAN, "NaN", "?", (255, 255, 255), (200, 0, 200))
POS_INF = SpecialValue(CODE_POS_INF, "+Inf", "+", (0, 0, 0), (255, 210, 0))
NEG_INF = SpecialValue(CODE_NEG_INF, "−Inf", "-", (0, 0, 0), (0, 210, 90))
SPECIALS: tuple[SpecialValue, ...] = (NAN, POS_INF, NEG_INF)
_SPECIAL_BY_CODE = {s.code: s for s in SPECIALS}

# Which special value a cell (or block) showing several kinds draws: the rarest first, as
# the one a reader would otherwise never see. Until the counts are known, ±Inf go before
# NaN: an overflow's few Infs turn into many NaNs one operator later.
SpecialOrder = tuple[int, ...]
DEFAULT_SPECIAL_ORDER: SpecialOrder = (CODE_POS_INF, CODE_NEG_INF, CODE_NAN)


def rarest_first(nan: int, pos_inf: int, neg_inf: int) -> SpecialOrder:
    """The special codes ordered by how often they occur, rarest first (a tie keeps
    `DEFAULT_SPECIAL_ORDER`); kinds that do not occur come first, which never matters."""
    counts = {CODE_NAN: nan, CODE_POS_INF: pos_inf, CODE_NEG_INF: neg_inf}
    return tuple(sorted(DEFAULT_SPECIAL_ORDER, key=counts.__getitem__))


def special_counts(values: np.ndarray) -> tuple[int, int, int]:
    """(NaN, +Inf, −Inf) counts of a bounded array (a sample or a small slice)."""
    if values.dtype.kind in "iub":
        return 0, 0, 0
    import numpy as np

    data = np.asarray(values).astype(np.float64, copy=False)  # bfloat16 and float16 too
    return (
        int(np.count_nonzero(np.isnan(data))),
        int(np.count_nonzero(data == np.inf)),
        int(np.count_nonzero(data == -np.inf)),
    )


def _ramp(anchors: list[tuple[int, int, int]], size: int = 256) -> np.ndarray:
    """A (size, 3) uint8 palette linearly interpolated between evenly spaced anchors."""
    import numpy as np

    anchor_array = np.asarray(anchors, dtype=np.float64)
    positions = np.linspace(0.0, 1.0, len(anchors))
    samples = np.linspace(0.0, 1.0, size)
    channels = [np.interp(samples, positions, anchor_array[:, i]) for i in range(3)]
    return np.rint(np.stack(channels, axis=1)).astype(np.uint8)


# ColorBrewer RdBu (reversed so negative = blue): symmetric around a near-white centre.
_DIVERGING_ANCHORS = [
    (5, 48, 97),
    (33, 102, 172),
    (146, 197, 222),
    (247, 247, 247),
    (244, 165, 130),
    (178, 24, 43),
    (103, 0, 31),
]
# ColorBrewer Blues (dark → light): monotone lightness for one-signed data.
_SEQUENTIAL_ANCHORS = [
    (8, 29, 88),
    (33, 113, 181),
    (107, 174, 214),
    (198, 219, 239),
    (247, 251, 255),
]


@lru_cache(maxsize=1)
def _truecolor_palettes() -> dict[str, np.ndarray]:
    """The two palettes in truecolor, built once, when first drawn."""
    return {"diverging": _ramp(_DIVERGING_ANCHORS), "sequential": _ramp(_SEQUENTIAL_ANCHORS)}


def __getattr__(name: str) -> np.ndarray:
    """`DIVERGING` and `SEQUENTIAL`: the truecolor palettes, built on first use."""
    if name in ("DIVERGING", "SEQUENTIAL"):
        return _truecolor_palettes()[name.lower()]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class ColorScale(NamedTuple):
    """Maps values in [low, high] to palette codes.

    Diverging scales are centred on 0 (so white means zero) and symmetric: ±max(|low|,
    |high|) hit the two ends. Sequential scales stretch [low, high] over the palette.
    """

    low: float
    high: float
    diverging: bool
    special_order: SpecialOrder = DEFAULT_SPECIAL_ORDER

    @property
    def palette_name(self) -> str:
        return "diverging" if self.diverging else "sequential"

    @property
    def palette(self) -> np.ndarray:
        return _palettes()[self.palette_name]

    @property
    def extent(self) -> tuple[float, float]:
        """The values at the two ends of the palette."""
        if self.diverging:
            bound = max(abs(self.low), abs(self.high))
            return -bound, bound
        return self.low, self.high

    def codes(self, values: np.ndarray) -> np.ndarray:
        """Palette codes (int16) for any real array; NaN/±Inf get the special codes."""
        import numpy as np

        data = np.asarray(values)
        if data.dtype == np.bool_:
            data = data.astype(np.float32)
        # float64 keeps int64 extremes and float16/bfloat16 inputs on one code path.
        data = data.astype(np.float64, copy=False)
        start, stop = self.extent
        span = stop - start
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if span > 0 and np.isfinite(span):
                position = (data - start) / span
            else:
                # A constant slice: everything sits mid-palette (white for diverging).
                position = np.full(data.shape, 0.5)
            index = np.clip(np.rint(position * 255.0), 0, 255)
        codes = np.where(np.isfinite(data), index, 0).astype(np.int16)
        codes[np.isnan(data)] = CODE_NAN
        codes[data == np.inf] = CODE_POS_INF
        codes[data == -np.inf] = CODE_NEG_INF
        return codes


def scale_for(
    finite_min: float | None,
    finite_max: float | None,
    special_order: SpecialOrder = DEFAULT_SPECIAL_ORDER,
) -> ColorScale:
    """Diverging around 0 when the data has both signs, sequential otherwise."""
    if finite_min is None or finite_max is None:
        return ColorScale(0.0, 1.0, diverging=False, special_order=special_order)
    diverging = finite_min < 0.0 < finite_max
    return ColorScale(float(finite_min), float(finite_max), diverging, special_order)


@lru_cache(maxsize=1024)
def _rgb(rgb: tuple[int, int, int]) -> Color:
    return Color.from_rgb(*rgb)


def code_rgb(palette_name: str, code: int) -> tuple[int, int, int] | None:
    """The colour one code stands for (None for empty cells)."""
    if code >= 0:
        r, g, b = _palettes()[palette_name][code]
        return int(r), int(g), int(b)
    special = _SPECIAL_BY_CODE.get(code)
    return special.bg if special is not None else None


@lru_cache(maxsize=16384)
def half_block_cell(
    palette_name: str, top: int, bottom: int, order: SpecialOrder = DEFAULT_SPECIAL_ORDER
) -> tuple[str, Style]:
    """The glyph and style of one terminal cell showing two data rows.

    A special value in either half takes the whole cell (glyph on its fixed colour): an
    anomaly must never be hidden by its neighbour, and a glyph needs the full cell. Two
    different special values: the one first in `order` (the rarer) wins.
    """
    for code in order:
        if code in (top, bottom):
            special = _SPECIAL_BY_CODE[code]
            return special.glyph, Style(color=_rgb(special.fg), bgcolor=_rgb(special.bg), bold=True)
    top_rgb = code_rgb(palette_name, top)
    bottom_rgb = code_rgb(palette_name, bottom)
    if top_rgb is None and bottom_rgb is None:
        return " ", Style()
    if _ascii_cells:
        # no half blocks without UTF-8 (use_terminal): a blank cell in the two rows' mean
        both = [rgb for rgb in (top_rgb, bottom_rgb) if rgb is not None]
        mean = tuple(sum(channel) // len(both) for channel in zip(*both, strict=True))
        return " ", Style(bgcolor=_rgb(mean))
    if top_rgb is None:
        # Only the lower half has data: draw it as a lower half block.
        return "▄", Style(color=_rgb(bottom_rgb))
    return HALF_BLOCK, Style(
        color=_rgb(top_rgb), bgcolor=_rgb(bottom_rgb) if bottom_rgb is not None else None
    )


# ---------------------------------------------------------------- terminal depth
# Set by `use_terminal` (issue 15, the app helper): the palettes above stay the truecolor
# ones; a terminal with fewer colours gets ramps of colours it really has.
# (from the terminal the app's start chose, `terminal_caps.draw_for`, when this loads)
_ascii_cells = not terminal_caps.heatmap.unicode
_colors: str = terminal_caps.heatmap.colors
# the palettes drawn, for `_colors`: built on first use (`_palettes`), dropped by
# `use_terminal`; replaced whole, never updated in place (workers draw too)
_drawn: dict[str, np.ndarray] | None = None


def _palettes() -> dict[str, np.ndarray]:
    """The palettes of the terminal's colour depth (`use_terminal`), built on first use."""
    global _drawn
    drawn = _drawn
    if drawn is None:
        drawn = _drawn = palettes_for(_colors)
    return drawn


# 16 colours: stepped ramps of ANSI colours that keep their number when Rich maps them
# down, away from the special values' yellow, green and magenta.
_ANSI_DIVERGING = (4, 6, 15, 3, 1)  # navy, teal, white, olive, maroon
_ANSI_SEQUENTIAL = (4, 6, 14, 7, 15)  # navy, teal, cyan, silver, white


def _snapped_256(palette: np.ndarray) -> np.ndarray:
    """Each entry as the xterm-256 colour Rich would draw for it: the ramp the terminal
    shows, so the legend and the cells agree with what is on screen."""
    import numpy as np

    out = np.empty_like(palette)
    for i, (r, g, b) in enumerate(palette):
        colour = Color.from_rgb(int(r), int(g), int(b)).downgrade(ColorSystem.EIGHT_BIT)
        out[i] = tuple(colour.get_truecolor())
    return out


def _stepped_16(numbers: tuple[int, ...], size: int = 256) -> np.ndarray:
    import numpy as np

    rgbs = [tuple(Color.from_ansi(n).get_truecolor()) for n in numbers]
    steps = np.minimum(np.arange(size) * len(rgbs) // size, len(rgbs) - 1)
    return np.asarray([rgbs[k] for k in steps], dtype=np.uint8)


def palettes_for(colors: str) -> dict[str, np.ndarray]:
    """The heatmap palettes for a colour depth ("truecolor", "256" or "16")."""
    if colors == "256":
        return {name: _snapped_256(p) for name, p in _truecolor_palettes().items()}
    if colors == "16":
        return {
            "diverging": _stepped_16(_ANSI_DIVERGING),
            "sequential": _stepped_16(_ANSI_SEQUENTIAL),
        }
    return dict(_truecolor_palettes())


def use_terminal(colors: str = "truecolor", unicode: bool = True) -> None:
    """Draw the heatmap for this terminal: its colour depth's palettes, and blank cells
    instead of half blocks where the locale is not UTF-8. Called once at start, before
    numpy is loaded: the palettes follow when first drawn (`_palettes`)."""
    global _ascii_cells, _colors, _drawn
    _colors = colors
    _drawn = None
    _ascii_cells = not unicode
    half_block_cell.cache_clear()


def special_style(special: SpecialValue) -> Style:
    """The style of a special value's legend swatch."""
    return Style(color=_rgb(special.fg), bgcolor=_rgb(special.bg), bold=True)


def gradient(palette_name: str, width: int) -> list[Style]:
    """`width` background styles sampling the palette left (low) to right (high)."""
    if width <= 0:
        return []
    import numpy as np

    palette = _palettes()[palette_name]
    picks = np.rint(np.linspace(0, len(palette) - 1, width)).astype(int)
    return [Style(bgcolor=_rgb(tuple(int(c) for c in palette[i]))) for i in picks]
