"""The two drawing surfaces of the tensor viewer: a number table and a half-block heatmap.

Both are `ScrollView`s with `render_line` (Textual's Line API, the toolong/memray model):
only the lines on screen are drawn, and only the cells on those lines are read from the
(often memory-mapped) tensor. The table keeps formatted row pieces in a small LRU, the
heatmap keeps rendered lines; a scroll step therefore formats one new row, not a screen.
While a search is active the table also marks matching cells, testing only the cells it
formats (so highlighting costs nothing for cells off screen).

The cursor lives in slice coordinates (row, column of the 2-D selection); the owning
`TensorView` syncs it between the two surfaces through `CursorMoved`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from tuidebug.core.tensor_search import Matcher, SearchSpec
from tuidebug.tui.kit.colormap import (
    CODE_EMPTY,
    ColorScale,
    half_block_cell,
)
from tuidebug.tui.kit.styled_scroll_view import StyledScrollView
from tuidebug.tui.tensor.format import (
    CELL_NAN,
    CELL_NEG_INF,
    CELL_PLAIN,
    CELL_POS_INF,
    CellFormat,
    LRUCache,
    SliceGeometry,
    Zoom,
    fit_zoom,
    zoom_levels,
)

CHUNK_COLUMNS = 32  # the table formats and caches rows in pieces of this many columns
ROW_CACHE_PIECES = 4096  # ≈ 100 screens of 40 rows × 1 piece
LINE_CACHE_LINES = 512


@dataclass(frozen=True)
class GridData:
    """What both surfaces draw: a 2-D view of the selection and how to show its values.

    `token` changes whenever anything here changes, so caches keyed by it never serve a
    stale row after a new slice, mode or format.
    """

    view: np.ndarray
    geometry: SliceGeometry
    fmt: CellFormat
    scale: ColorScale
    token: int


class TensorCanvas(StyledScrollView, can_focus=True):
    """Shared cursor handling of the table and the heatmap."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1, 0)", "Up", show=False, id="tensor.cursor_up"),
        Binding("down,j", "cursor(1, 0)", "Down", show=False, id="tensor.cursor_down"),
        Binding("left", "cursor(0, -1)", "Left", show=False, id="tensor.cursor_left"),
        Binding("right", "cursor(0, 1)", "Right", show=False, id="tensor.cursor_right"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="tensor.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="tensor.page_down"),
        Binding("home", "edge('top')", "First row", show=False, id="tensor.first_row"),
        Binding("end", "edge('bottom')", "Last row", show=False, id="tensor.last_row"),
        Binding("shift+home", "edge('left')", "First column", show=False, id="tensor.first_col"),
        Binding("shift+end", "edge('right')", "Last column", show=False, id="tensor.last_col"),
    ]

    class CursorMoved(Message):
        """The cursor moved to (row, col) of the slice."""

        def __init__(self, canvas: TensorCanvas, row: int, col: int) -> None:
            super().__init__()
            self.canvas = canvas
            self.row = row
            self.col = col

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.data: GridData | None = None
        self.cursor_row = 0
        self.cursor_col = 0

    def notify_style_update(self) -> None:
        self._clear_caches()  # cached strips carry the old styles
        super().notify_style_update()

    # ---------------------------------------------------------------- data & cursor
    def set_data(self, data: GridData | None, cursor: tuple[int, int] = (0, 0)) -> None:
        self.data = data
        self._clear_caches()
        self._update_virtual_size()
        self.set_cursor(*cursor, notify=False)
        self.refresh()

    def _clear_caches(self) -> None:
        """Drop cached rendering (the subclasses own the caches)."""

    def _update_virtual_size(self) -> None:
        raise NotImplementedError

    def _cursor_lines(self, row: int, col: int) -> list[int]:
        """The content lines (virtual y) on which the cell is drawn."""
        raise NotImplementedError

    def _scroll_to_cursor(self) -> None:
        raise NotImplementedError

    def _step(self) -> tuple[int, int]:
        """Data rows and columns covered by one cursor step."""
        return 1, 1

    def _page_rows(self) -> int:
        raise NotImplementedError

    @property
    def view_size(self) -> Size:
        """The visible content area (without scrollbars)."""
        return self.scrollable_content_region.size

    def set_cursor(self, row: int, col: int, *, notify: bool = True) -> None:
        """Move the cursor (clamped to the slice), scroll it into view, repaint both cells."""
        data = self.data
        if data is None:
            self.cursor_row = self.cursor_col = 0
            return
        row = min(max(row, 0), max(data.geometry.rows - 1, 0))
        col = min(max(col, 0), max(data.geometry.cols - 1, 0))
        old = self._cursor_lines(self.cursor_row, self.cursor_col)
        self.cursor_row, self.cursor_col = row, col
        for line in {*old, *self._cursor_lines(row, col)}:
            self.refresh_line(line)
        self._scroll_to_cursor()
        if notify:
            self.post_message(self.CursorMoved(self, row, col))

    def action_cursor(self, rows: int, cols: int) -> None:
        step_rows, step_cols = self._step()
        self.set_cursor(self.cursor_row + rows * step_rows, self.cursor_col + cols * step_cols)

    def action_page(self, direction: int) -> None:
        self.set_cursor(self.cursor_row + direction * self._page_rows(), self.cursor_col)

    def action_edge(self, edge: str) -> None:
        if self.data is None:
            return
        rows, cols = self.data.geometry.rows, self.data.geometry.cols
        row, col = self.cursor_row, self.cursor_col
        if edge == "top":
            row = 0
        elif edge == "bottom":
            row = rows - 1
        elif edge == "left":
            col = 0
        elif edge == "right":
            col = cols - 1
        self.set_cursor(row, col)

    def _scroll_into_view(
        self, x0: int, x1: int, y0: int, y1: int, width: int, height: int
    ) -> None:
        """Scroll the least so that content columns [x0, x1) and lines [y0, y1) show in a
        width×height window (sticky headers are excluded from width/height by callers)."""
        scroll_x, scroll_y = self.scroll_offset
        new_x, new_y = scroll_x, scroll_y
        if x0 < scroll_x or x1 - x0 > width:
            new_x = x0
        elif x1 > scroll_x + width:
            new_x = x1 - width
        if y0 < scroll_y or y1 - y0 > height:
            new_y = y0
        elif y1 > scroll_y + height:
            new_y = y1 - height
        if (new_x, new_y) != (scroll_x, scroll_y):
            self.scroll_to(new_x, new_y, animate=False, force=True)

    def blank(self) -> Strip:
        return Strip.blank(self.view_size.width, self.style_of(""))


class TensorTable(TensorCanvas):
    """The numbers of a 2-D slice, with sticky row and column index headers."""

    COMPONENT_CLASSES = {  # noqa: RUF012 (Textual's declared class attribute)
        "tensor-table--header",
        "tensor-table--header-cursor",
        "tensor-table--cursor",
        "tensor-table--nan",
        "tensor-table--pos-inf",
        "tensor-table--neg-inf",
        "tensor-table--match",
    }

    DEFAULT_CSS = """
    TensorTable {
        height: 1fr;
        background: $surface;
    }
    TensorTable > .tensor-table--header {
        color: $text-muted;
        background: $panel;
    }
    TensorTable > .tensor-table--header-cursor {
        color: $text;
        background: $panel;
        text-style: bold;
    }
    TensorTable > .tensor-table--cursor {
        color: $block-cursor-foreground;
        background: $block-cursor-background;
        text-style: bold;
    }
    TensorTable > .tensor-table--nan { color: #ff40ff; text-style: bold; }
    TensorTable > .tensor-table--pos-inf { color: #ffd200; text-style: bold; }
    TensorTable > .tensor-table--neg-inf { color: #00d25a; text-style: bold; }
    /* Search matches: only the background, so NaN/Inf keep their colours on it. */
    TensorTable > .tensor-table--match { background: $warning 45%; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._pieces: LRUCache[tuple[int, int, int], list[tuple[str, int]]] = LRUCache(
            ROW_CACHE_PIECES
        )
        # Whole rendered rows (not the cursor row) for the current scroll_x and width.
        self._rows: LRUCache[tuple[int, ...], Strip] = LRUCache(LINE_CACHE_LINES)
        self.highlight: SearchSpec | None = None
        self._matcher: tuple[int, Matcher] | None = None  # (data token, compiled spec)
        # Which cells of a cached piece match the highlight (None: no search active).
        self._matches: LRUCache[tuple[int, int, int], list[bool]] = LRUCache(ROW_CACHE_PIECES)

    def set_highlight(self, spec: SearchSpec | None) -> None:
        """Mark the cells matching `spec` (None: none). Only drawn cells are tested."""
        if spec == self.highlight:
            return
        self.highlight = spec
        self._matcher = None
        self._matches.clear()
        self._rows.clear()
        self.refresh()

    # ------------------------------------------------------------------- geometry
    @property
    def row_header_width(self) -> int:
        """Width of the index column: the largest row number, a space and a bar."""
        rows = self.data.geometry.rows if self.data else 1
        return len(str(max(rows - 1, 0))) + 2

    @property
    def column_width(self) -> int:
        """One space of gap plus the wider of the value format and the column index."""
        if self.data is None:
            return 1
        return max(self.data.fmt.width, len(str(max(self.data.geometry.cols - 1, 0)))) + 1

    def _clear_caches(self) -> None:
        self._pieces.clear()
        self._rows.clear()
        self._matches.clear()

    def _update_virtual_size(self) -> None:
        if self.data is None:
            self.virtual_size = Size(0, 0)
            return
        geometry = self.data.geometry
        self.virtual_size = Size(
            self.row_header_width + geometry.cols * self.column_width, geometry.rows + 1
        )

    def _cursor_lines(self, row: int, col: int) -> list[int]:
        # The cursor row and the column header (which highlights the cursor column).
        return [row + 1, self.scroll_offset.y]

    def _page_rows(self) -> int:
        return max(self.view_size.height - 2, 1)

    def _scroll_to_cursor(self) -> None:
        width, height = self.view_size
        col_w = self.column_width
        x0 = self.cursor_col * col_w
        self._scroll_into_view(
            x0,
            x0 + col_w,
            self.cursor_row,
            self.cursor_row + 1,
            max(width - self.row_header_width, 1),
            max(height - 1, 1),
        )

    def _first_column(self, scroll_x: int) -> int:
        """The first column drawn whole at `scroll_x`. A scroll that stops inside a column
        (the cursor brought in from the right, the mouse wheel, the scrollbar) would show
        only the tail of its number, which reads as another number ("…3.25" for "-1.3.25"):
        drawing starts at the next column boundary instead, which keeps a column scrolled
        in from the right whole too (only the right edge may be cut)."""
        col_w = self.column_width
        cols = self.data.geometry.cols if self.data is not None else 0
        return min(-(-scroll_x // col_w), cols)

    def cell_at(self, x: int, y: int) -> tuple[int, int] | None:
        """The slice cell under content offset (x, y), None on the headers or past the end."""
        if self.data is None or y < 1 or x < self.row_header_width:
            return None
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y - 1
        col = self._first_column(scroll_x) + (x - self.row_header_width) // self.column_width
        geometry = self.data.geometry
        if row >= geometry.rows or col >= geometry.cols:
            return None
        return row, col

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        cell = self.cell_at(offset.x, offset.y)
        if cell is not None:
            self.set_cursor(*cell)

    # --------------------------------------------------------------------- cells
    def _piece(self, data: GridData, row: int, piece: int) -> list[tuple[str, int]]:
        key = (data.token, row, piece)
        cells = self._pieces.get(key)
        if cells is None:
            start = piece * CHUNK_COLUMNS
            stop = min(start + CHUNK_COLUMNS, data.geometry.cols)
            # Only these few elements are read from the (memory-mapped) tensor.
            cells = data.fmt.cells(np.asarray(data.view[row, start:stop]))
            self._pieces.put(key, cells)
        return cells

    def _piece_matches(self, data: GridData, row: int, piece: int) -> list[bool] | None:
        """Which cells of a piece match the highlight (None when no search is active)."""
        if self.highlight is None:
            return None
        key = (data.token, row, piece)
        matches = self._matches.get(key)
        if matches is None:
            if self._matcher is None or self._matcher[0] != data.token:
                # Per grid: diff mode and bfloat16 slices change the dtype.
                self._matcher = (data.token, self.highlight.matcher(data.view.dtype))
            start = piece * CHUNK_COLUMNS
            stop = min(start + CHUNK_COLUMNS, data.geometry.cols)
            values = np.asarray(data.view[row, start:stop])
            matches = self._matcher[1].mask(values).tolist()
            self._matches.put(key, matches)
        return matches

    def row_matches(self, row: int, first: int, last: int) -> list[bool]:
        """Whether cells `first..last-1` of one slice row match the highlight."""
        data = self.data
        if data is None or self.highlight is None:
            return [False] * max(last - first, 0)
        out: list[bool] = []
        for piece in range(first // CHUNK_COLUMNS, (last - 1) // CHUNK_COLUMNS + 1):
            matches = self._piece_matches(data, row, piece) or []
            base = piece * CHUNK_COLUMNS
            out.extend(matches[max(first - base, 0) : max(last - base, 0)])
        return out

    def row_cells(self, row: int, first: int, last: int) -> list[tuple[str, int]]:
        """Formatted cells `first..last-1` of one slice row (also used by tests)."""
        data = self.data
        if data is None:
            return []
        out: list[tuple[str, int]] = []
        for piece in range(first // CHUNK_COLUMNS, (last - 1) // CHUNK_COLUMNS + 1):
            cells = self._piece(data, row, piece)
            base = piece * CHUNK_COLUMNS
            out.extend(cells[max(first - base, 0) : max(last - base, 0)])
        return out

    # -------------------------------------------------------------------- render
    def render_line(self, y: int) -> Strip:
        data = self.data
        width = self.view_size.width
        if data is None or width <= 0:
            return self.blank()
        scroll_x, scroll_y = self.scroll_offset
        geometry = data.geometry
        header_w = self.row_header_width
        col_w = self.column_width
        data_w = max(width - header_w, 0)
        first = self._first_column(scroll_x)
        last = min(geometry.cols, first + data_w // col_w + 1)
        header_style = self.style_of("tensor-table--header")
        if y == 0:
            cursor_header = self.style_of("tensor-table--header-cursor")
            left = [Segment(" " * header_w, header_style)]
            segments = [
                Segment(
                    str(col).rjust(col_w),
                    cursor_header if col == self.cursor_col else header_style,
                )
                for col in range(first, last)
            ]
        else:
            row = scroll_y + y - 1
            if row >= geometry.rows:
                return self.blank()
            is_cursor_row = row == self.cursor_row
            key = (data.token, row, scroll_x, width)
            if not is_cursor_row:
                cached = self._rows.get(key)
                if cached is not None:
                    return cached
            label_style = (
                self.style_of("tensor-table--header-cursor") if is_cursor_row else header_style
            )
            left = [Segment(f"{row:>{header_w - 2}} │", label_style)]
            styles = self._cell_styles()
            cursor_style = self.style_of("tensor-table--cursor")
            cells = self.row_cells(row, first, last)
            matches = (
                self.row_matches(row, first, last)
                if self.highlight is not None
                else [False] * len(cells)
            )
            marked = self._match_styles(styles) if any(matches) else styles
            segments = []
            for offset, ((text, kind), match) in enumerate(zip(cells, matches, strict=True)):
                col = first + offset
                if is_cursor_row and col == self.cursor_col:
                    style = cursor_style
                else:
                    style = marked[kind] if match else styles[kind]
                segments.append(Segment(text.rjust(col_w), style))
        body = Strip(segments).crop(0, data_w)
        line = Strip.join([Strip(left, header_w), body]).adjust_cell_length(
            width, self.style_of("")
        )
        if y > 0 and not is_cursor_row:
            self._rows.put(key, line)
        return line

    def _cell_styles(self) -> dict[int, Style]:
        return {
            CELL_PLAIN: self.style_of(""),
            CELL_NAN: self.style_of("tensor-table--nan"),
            CELL_POS_INF: self.style_of("tensor-table--pos-inf"),
            CELL_NEG_INF: self.style_of("tensor-table--neg-inf"),
        }

    def _match_styles(self, styles: dict[int, Style]) -> dict[int, Style]:
        """The cell styles on the match background (each class keeps its colour)."""
        match = self.style_of("tensor-table--match")
        overlay = Style(bgcolor=match.bgcolor, bold=True)
        return {kind: style + overlay for kind, style in styles.items()}


class TensorHeatmap(TensorCanvas):
    """A truecolor half-block picture of the slice: each terminal cell shows two data rows
    (`▀`: foreground = upper row, background = lower row) of one column.

    By default the zoom fits the whole slice on screen: large slices are downsampled
    (a cell stands for an f×f block), small ones magnified. Lines read their samples
    straight from the view (stride f) unless a worker has supplied a block-extreme image
    for the current factor, which keeps lone NaNs and spikes visible.
    """

    COMPONENT_CLASSES = {"tensor-heatmap--cursor"}  # noqa: RUF012

    DEFAULT_CSS = """
    TensorHeatmap {
        height: 1fr;
        background: $surface;
    }
    TensorHeatmap > .tensor-heatmap--cursor {
        color: $block-cursor-foreground;
        background: $block-cursor-background;
        text-style: bold;
    }
    """

    CURSOR_GLYPH = "X"

    class ZoomChanged(Message):
        """The zoom changed (the view may start a block-extreme worker)."""

        def __init__(self, heatmap: TensorHeatmap, zoom: Zoom) -> None:
            super().__init__()
            self.heatmap = heatmap
            self.zoom = zoom

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.zoom = Zoom()
        self.fitted = True  # follow the window size until the user zooms
        self.image: np.ndarray | None = None
        self.image_factor = 0
        self._lines: LRUCache[tuple[object, ...], Strip] = LRUCache(LINE_CACHE_LINES)

    # ------------------------------------------------------------------ geometry
    @property
    def factor(self) -> int:
        """Data elements per cell side (1 when not downsampled)."""
        return self.zoom.factor

    @property
    def fit(self) -> Zoom:
        if self.data is None:
            return Zoom()
        # The whole content area, scrollbars included: a fitted picture has no
        # scrollbars, and zooming in (which adds them) must not change what "fit" means.
        size = self.size
        return fit_zoom(self.data.geometry.rows, self.data.geometry.cols, size.width, size.height)

    @property
    def uses_image(self) -> bool:
        return self.image is not None and self.image_factor == self.zoom.factor > 1

    @property
    def method(self) -> str:
        """How blocks are reduced right now, for the legend."""
        if self.zoom.factor == 1:
            return "exact"
        return "block extreme" if self.uses_image else "stride"

    def set_data(self, data: GridData | None, cursor: tuple[int, int] = (0, 0)) -> None:
        self.image = None
        self.image_factor = 0
        self.data = data
        if data is not None:
            fit = self.fit
            self.zoom = fit if self.fitted or self.zoom.scale < fit.scale else self.zoom
        super().set_data(data, cursor)

    def set_image(self, image: np.ndarray, factor: int, token: int) -> None:
        """Install a block-extreme image computed by a worker (ignored when stale)."""
        if self.data is None or self.data.token != token or factor != self.zoom.factor:
            return
        self.image = image
        self.image_factor = factor
        self._lines.clear()
        self.refresh()

    def set_zoom(self, zoom: Zoom, *, fitted: bool = False) -> None:
        if self.data is None:
            return
        fit = self.fit
        if zoom.scale < fit.scale:
            zoom = fit
        self.fitted = fitted or zoom == fit
        if zoom == self.zoom:
            return
        self.zoom = zoom
        self._clear_caches()
        self._update_virtual_size()
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.ZoomChanged(self, zoom))

    def zoom_in(self) -> None:
        larger = [z for z in zoom_levels(self.fit) if z.scale > self.zoom.scale]
        if larger:
            self.set_zoom(larger[0])

    def zoom_out(self) -> None:
        smaller = [z for z in zoom_levels(self.fit) if z.scale < self.zoom.scale]
        self.set_zoom(smaller[-1] if smaller else self.fit)

    def on_resize(self, event: events.Resize) -> None:
        if self.data is not None and self.fitted:
            self.set_zoom(self.fit, fitted=True)
        self._update_virtual_size()

    def _clear_caches(self) -> None:
        self._lines.clear()

    def _cell_shape(self) -> tuple[int, int]:
        """(half-rows, columns) of the whole picture."""
        assert self.data is not None
        geometry = self.data.geometry
        return self.zoom.cells(geometry.rows), self.zoom.cells(geometry.cols)

    def _update_virtual_size(self) -> None:
        if self.data is None:
            self.virtual_size = Size(0, 0)
            return
        half_rows, cols = self._cell_shape()
        self.virtual_size = Size(cols, math.ceil(half_rows / 2))

    def _cursor_cell(self, row: int, col: int) -> tuple[int, int]:
        """(x, line) of the terminal cell that shows data cell (row, col)."""
        return self.zoom.cell_of(col), self.zoom.cell_of(row) // 2

    def _cursor_lines(self, row: int, col: int) -> list[int]:
        return [self._cursor_cell(row, col)[1]]

    def _step(self) -> tuple[int, int]:
        zoom = self.zoom
        return max(1, 2 * zoom.factor // zoom.magnify), max(1, zoom.factor // zoom.magnify)

    def _page_rows(self) -> int:
        return max(1, self.zoom.element_of(max(self.view_size.height - 1, 1) * 2))

    def _scroll_to_cursor(self) -> None:
        if self.data is None:
            return
        x, line = self._cursor_cell(self.cursor_row, self.cursor_col)
        width, height = self.view_size
        self._scroll_into_view(x, x + 1, line, line + 1, max(width, 1), max(height, 1))

    def action_cursor(self, rows: int, cols: int) -> None:
        step_rows, step_cols = self._step()
        row, col = self.cursor_row, self.cursor_col
        factor = self.zoom.factor
        if factor > 1:
            # Snap to the block origin so repeated steps walk whole cells.
            row, col = row // step_rows * step_rows, col // step_cols * step_cols
        self.set_cursor(
            row + rows * step_rows if rows else self.cursor_row,
            col + cols * step_cols if cols else self.cursor_col,
        )

    def cell_at(self, x: int, y: int) -> tuple[int, int] | None:
        if self.data is None:
            return None
        scroll_x, scroll_y = self.scroll_offset
        half_rows, cols = self._cell_shape()
        if scroll_x + x >= cols or (scroll_y + y) * 2 >= half_rows:
            return None
        return self.zoom.element_of((scroll_y + y) * 2), self.zoom.element_of(scroll_x + x)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        cell = self.cell_at(offset.x, offset.y)
        if cell is not None:
            self.set_cursor(*cell)

    # -------------------------------------------------------------------- render
    def _half_row(self, half_row: int, x0: int, x1: int) -> np.ndarray:
        """The values drawn in one half-row of cells x0..x1-1 (only those are read)."""
        assert self.data is not None
        if self.uses_image:
            assert self.image is not None
            return self.image[half_row, x0:x1]
        zoom = self.zoom
        # One row of a (memory-mapped) view, then only the needed elements of it.
        return np.asarray(self.data.view[zoom.element_of(half_row), zoom.elements_of(x0, x1)])

    def line_codes(self, line: int, x0: int, x1: int) -> tuple[np.ndarray, np.ndarray]:
        """Palette codes of the upper and lower halves of one terminal line."""
        assert self.data is not None
        half_rows, _cols = self._cell_shape()
        scale = self.data.scale
        top = scale.codes(self._half_row(2 * line, x0, x1))
        if 2 * line + 1 < half_rows:
            bottom = scale.codes(self._half_row(2 * line + 1, x0, x1))
        else:
            bottom = np.full_like(top, CODE_EMPTY)
        return top, bottom

    def _line_strip(self, line: int, x0: int, x1: int, width: int) -> Strip:
        """One terminal line without the cursor (cached: a scroll step re-renders every
        visible line, but only the newly exposed one is computed)."""
        assert self.data is not None
        key = (self.data.token, self.zoom, self.uses_image, line, x0, x1, width)
        strip = self._lines.get(key)
        if strip is None:
            top, bottom = self.line_codes(line, x0, x1)
            palette = self.data.scale.palette_name
            order = self.data.scale.special_order
            segments = [
                Segment(*half_block_cell(palette, t, b, order))
                for t, b in zip(top.tolist(), bottom.tolist(), strict=True)
            ]
            strip = Strip(segments, x1 - x0).simplify()
            strip = strip.adjust_cell_length(width, self.style_of(""))
            self._lines.put(key, strip)
        return strip

    def render_line(self, y: int) -> Strip:
        data = self.data
        width = self.view_size.width
        if data is None or width <= 0:
            return self.blank()
        scroll_x, scroll_y = self.scroll_offset
        line = scroll_y + y
        half_rows, cols = self._cell_shape()
        if line * 2 >= half_rows:
            return self.blank()
        x0 = min(scroll_x, cols)
        x1 = min(cols, scroll_x + width)
        strip = self._line_strip(line, x0, x1, width)
        cursor_x, cursor_line = self._cursor_cell(self.cursor_row, self.cursor_col)
        if cursor_line == line and x0 <= cursor_x < x1:
            at = cursor_x - x0
            mark = Strip([Segment(self.CURSOR_GLYPH, self.style_of("tensor-heatmap--cursor"))], 1)
            strip = Strip.join([strip.crop(0, at), mark, strip.crop(at + 1, width)])
        return strip
