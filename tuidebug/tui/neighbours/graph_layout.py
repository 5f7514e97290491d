"""A node's neighbourhood drawn as a small DAG in box-drawing characters (no Textual here).

`neighbourhood.neighbourhood` picks the nodes: the centre, its inputs up to `depth` steps up and its
consumers up to `depth` steps down, breadth first and at most `cap` of them (a Concat of
500 inputs must not become 500 boxes). `layout` draws them, Sugiyama style:

- **layers**: a node's layer is its distance from the centre along the longest path inside
  the drawn set (negative above: inputs; positive below: consumers), so every edge points
  down; for a chain this is the plain distance. An edge that spans several layers passes
  through them as a vertical line in a slot of its own (a "dummy").
- **order** within a layer: a few barycentre sweeps (each item moves to the mean position
  of its neighbours in the layer it is compared with), the usual cheap way to cut crossings.
- **x**: each item sits under (or over) the mean of its neighbours toward the centre; the
  overlaps are resolved by the average of a left-to-right and a right-to-left packing.
- **edges**: between two layers each source leaves its box at one column (`┬` in the
  bottom border); a source whose targets are not straight below draws a horizontal bus on
  a row of its own, and each edge enters its target at a column of its own with an arrow,
  so no two edges ever share a line and an arrow names one source. Where a bus crosses
  another edge's vertical line the vertical line is drawn through (`│`) and the bus is
  interrupted: the bus passes under it, it does not join it.

The result is a `Picture`: plain text lines plus where each box is, which the widget
styles (selection, hits) and the tests read. `ascii=True` draws with `+ - | v` for
terminals without UTF-8.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from itertools import pairwise

from tuidebug.core.graph import Graph, Node, distinct_short_names
from tuidebug.core.tensor import dtype_label
from tuidebug.core.text import printable
from tuidebug.tui.neighbours.neighbourhood import SCOPE_END, Neighbourhood

MAX_LABEL = 22  # characters of a name or type in a box; longer ones end with "…"
BOX_HEIGHT = 4  # top border, name, type, bottom border
GAP = 2  # columns between two items of a layer
SWEEPS = 4  # barycentre sweeps (each: down, then up)

# line directions of a cell
UP, DOWN, LEFT, RIGHT = 1, 2, 4, 8

_LINES_UNICODE = {
    UP: "│",
    DOWN: "│",
    UP | DOWN: "│",
    LEFT: "─",
    RIGHT: "─",
    LEFT | RIGHT: "─",
    DOWN | RIGHT: "┌",
    DOWN | LEFT: "┐",
    UP | RIGHT: "└",
    UP | LEFT: "┘",
    UP | DOWN | RIGHT: "├",
    UP | DOWN | LEFT: "┤",
    DOWN | LEFT | RIGHT: "┬",
    UP | LEFT | RIGHT: "┴",
    UP | DOWN | LEFT | RIGHT: "┼",
}
_LINES_ASCII = {
    bits: ("|" if glyph == "│" else "-" if glyph == "─" else "+")
    for bits, glyph in _LINES_UNICODE.items()
}


@dataclass(frozen=True)
class _BoxGlyphs:
    top_left: str
    top_right: str
    bottom_left: str
    bottom_right: str
    horizontal: str
    vertical: str
    exit: str  # the bottom border where an edge leaves


_BOX_UNICODE = _BoxGlyphs("┌", "┐", "└", "┘", "─", "│", "┬")
_CENTRE_UNICODE = _BoxGlyphs("╔", "╗", "╚", "╝", "═", "║", "╤")
_BOX_ASCII = _BoxGlyphs("+", "+", "+", "+", "-", "|", "+")
_CENTRE_ASCII = _BoxGlyphs("#", "#", "#", "#", "=", "#", "#")
# a closed scope: rounded corners (ASCII has none: its "(7 nodes)" line says it)
_SCOPE_UNICODE = _BoxGlyphs("╭", "╮", "╰", "╯", "─", "│", "┬")
ARROW_UNICODE = "▼"
ARROW_ASCII = "v"
HIT_MARK = "!"


# ------------------------------------------------------------------ the picture
@dataclass(frozen=True)
class Box:
    """Where a node's box is drawn (columns and rows of the picture)."""

    name: str
    x: int
    y: int
    width: int
    height: int
    layer: int

    @property
    def centre_x(self) -> float:
        return self.x + self.width / 2

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.width and self.y <= y < self.y + self.height


@dataclass(frozen=True)
class Picture:
    """The drawing: `lines` (all `width` long), the boxes, and the layers' boxes in
    left-to-right order."""

    hood: Neighbourhood
    lines: tuple[str, ...]
    boxes: Mapping[str, Box]
    layers: Mapping[int, tuple[str, ...]]
    edges: tuple[tuple[str, str], ...]  # the edges drawn (all of the hood's in a DAG)
    width: int
    height: int

    def box_at(self, x: int, y: int) -> str | None:
        for box in self.boxes.values():
            if box.contains(x, y):
                return box.name
        return None


@dataclass
class _Item:
    """A slot of a layer: a node's box, or a dummy (`name` None) a long edge passes."""

    name: str | None
    layer: int
    width: int
    label: tuple[str, str] = ("", "")
    x: int = 0
    tensor: str = ""  # what its edges carry (`f32[32,10]`), written beside its exit
    ups: list[int] = field(default_factory=list)  # items of the layer above linked to this
    downs: list[int] = field(default_factory=list)  # items of the layer below
    exit_offset: int | None = None  # a box's exit column from its left edge (None: middle)

    @property
    def exit_x(self) -> int:
        if self.name is None:
            return self.x
        return self.x + (self.width // 2 if self.exit_offset is None else self.exit_offset)


def label_text(text: str, limit: int = MAX_LABEL, *, middle: bool = False) -> str:
    """A name or type as a box shows it: escaped, one terminal cell per character (wide and
    combining characters become `?`, so the grid stays a grid), at most `limit` long.
    `middle`: shorten in the middle, keeping the end (`SparseSoftm…Logits-op12`: the op
    number tells two long names apart)."""
    safe = "".join(
        "?" if unicodedata.east_asian_width(c) in "WF" or unicodedata.combining(c) else c
        for c in printable(text)
    )
    if len(safe) <= limit:
        return safe
    if not middle:
        return safe[: limit - 1] + "…"
    tail = (limit - 1) // 2
    return safe[: limit - 1 - tail] + "…" + safe[len(safe) - tail :]


def scope_label(path: str, limit: int = MAX_LABEL) -> str:
    """A closed scope's path as its box shows it: whole when it fits, else its last
    components after `…/` (`…/conv1-Conv2d`: the end tells two scopes apart)."""
    if len(label_text(path, limit + 1)) <= limit:
        return label_text(path)
    tail = label_text(path.rsplit("/", 1)[-1], limit - 2, middle=True)
    return "…/" + tail


def box_names(hood: Neighbourhood) -> dict[str, str]:
    """The name each node's box shows: its short name, with as much of its scope as tells
    it apart from another box of the same short name (`fc1/MatMul-op0`, `fc2/MatMul-op0`)."""
    return distinct_short_names(name for name in hood.nodes if name not in hood.scopes)


def _layers(hood: Neighbourhood) -> dict[str, int]:
    """Longest-path layers inside the drawn set: consumers count down from the centre,
    inputs up, so every edge among them points down."""
    preds: dict[str, list[str]] = {n: [] for n in hood.nodes}
    succs: dict[str, list[str]] = {n: [] for n in hood.nodes}
    for src, dst in hood.edges:
        preds[dst].append(src)
        succs[src].append(dst)
    centre = hood.centre
    layer: dict[str, int] = {centre: 0}
    down = [n for n in hood.nodes if hood.distance[n] > 0]
    up = [n for n in hood.nodes if hood.distance[n] < 0]
    for group, links, sign in ((down, preds, 1), (up, succs, -1)):
        members = {centre, *group}
        # Kahn over the group: a node's layer is one past its furthest linked member
        waiting = {n: sum(1 for p in links[n] if p in members) for n in group}
        ready = [centre]
        reach = {centre: 0}
        other = succs if sign > 0 else preds
        while ready:
            name = ready.pop()
            for nxt in other[name]:
                if nxt not in waiting:
                    continue
                reach[nxt] = max(reach.get(nxt, 0), reach[name] + 1)
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
        for name in group:
            # a cycle leaves nodes waiting: their breadth-first distance will do
            layer[name] = sign * reach[name] if waiting[name] == 0 else hood.distance[name]
    return layer


DTYPE_SHORT = (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "i"), ("complex", "c"))
MAX_TENSOR_LABEL = 18  # an edge's label longer than this is left out, never cut


def tensor_label(node: Node) -> str:
    """The tensor a producer's edges carry, short: `f32[32,10]` (dtype and shape of its
    first output, `+2` when it has more); "" when the graph says neither. ASCII only and
    never cut, so a shape is never misread: one that does not fit is not written."""
    if not node.outputs:
        return ""
    spec = node.outputs[0]
    dtype = dtype_label(spec.dtype) if spec.dtype is not None else ""
    if dtype.startswith("DT_"):
        dtype = dtype[3:].lower()
    elif " " in dtype:
        dtype = "?"  # a DataType number no table knows
    for long, short in DTYPE_SHORT:
        if dtype.startswith(long):
            dtype = short + dtype[len(long) :]
            break
    shape = "" if spec.shape is None else "[" + ",".join(str(d) for d in spec.shape) + "]"
    if not dtype and not shape:
        return ""
    more = f"+{len(node.outputs) - 1}" if len(node.outputs) > 1 else ""
    text = printable(f"{dtype or '?'}{shape}{more}")
    return text if text.isascii() and len(text) <= MAX_TENSOR_LABEL else ""


def layout(
    hood: Neighbourhood,
    graph: Graph,
    *,
    ascii: bool = False,
    hits: Collection[str] = (),
    marks: Mapping[str, str] | None = None,
    tensors: bool = True,
) -> Picture:
    """Draw `hood` (node types read from `graph`); `hits`: boxes to mark with `!`;
    `marks`: a box's own mark instead (`!NaN`), cut to its top border; `tensors`: write
    the producer's dtype and shape beside each box's exit."""
    layer_of = _layers(hood)
    items: list[_Item] = []
    index: dict[str, int] = {}
    names = box_names(hood)
    for name in hood.nodes:
        node = graph.get(name)
        members = hood.scopes.get(name)
        if members is not None:  # a closed scope: its path, and how many nodes it holds
            short = scope_label(name.removesuffix(SCOPE_END))
            kind = f"({len(members)} nodes)"
        else:
            short = label_text(names[name], middle=True)
            kind = label_text(node.op_type if node is not None else "")
        index[name] = len(items)
        items.append(_Item(name, layer_of[name], 0, (short, kind)))
    drawn: list[tuple[str, str]] = []
    for src, dst in hood.edges:
        top, bottom = layer_of[src], layer_of[dst]
        if bottom <= top:
            continue  # only a cyclic graph has one: it cannot point down
        drawn.append((src, dst))
        previous = index[src]
        for lay in range(top + 1, bottom):
            items.append(_Item(None, lay, 1))
            dummy = len(items) - 1
            items[previous].downs.append(dummy)
            items[dummy].ups.append(previous)
            previous = dummy
        items[previous].downs.append(index[dst])
        items[index[dst]].ups.append(previous)
    if tensors:
        for name in hood.nodes:
            # one label per box: what its edges carry, when one node produces them all
            made = {p for (s, _d), found in hood.producers.items() if s == name for p in found}
            producer = graph.get(next(iter(made))) if len(made) == 1 else None
            if producer is not None:
                items[index[name]].tensor = tensor_label(producer)
    for item in items:
        if item.name is not None:
            fan_in = len(item.ups)
            text = max(len(item.label[0]), len(item.label[1]))
            item.width = max(text + 4, 2 * fan_in + 3, 7)

    order = _order(items)
    _place(items, order)
    _untangle(items, order)
    shown_marks = {name: HIT_MARK for name in hits}
    shown_marks.update(marks or {})
    lines, boxes = _draw(items, order, hood.centre, shown_marks, ascii, set(hood.scopes))
    layers: dict[int, tuple[str, ...]] = {}
    for lay, row in order.items():
        layers[lay] = tuple(name for name in (items[i].name for i in row) if name is not None)
    height = len(lines)
    width = len(lines[0]) if lines else 0
    return Picture(hood, tuple(lines), boxes, layers, tuple(drawn), width, height)


def _order(items: list[_Item]) -> dict[int, list[int]]:
    """Each layer's items left to right, after barycentre sweeps."""
    order: dict[int, list[int]] = {}
    for i, item in enumerate(items):
        order.setdefault(item.layer, []).append(i)
    order = dict(sorted(order.items()))
    keys = list(order)
    position = {i: p for row in order.values() for p, i in enumerate(row)}

    def sweep(lay: int, links: str) -> None:
        row = order[lay]

        def key(i: int) -> float:
            linked: list[int] = getattr(items[i], links)
            if not linked:
                return position[i]
            return sum(position[j] for j in linked) / len(linked)

        row.sort(key=key)  # stable: ties keep their order
        for p, i in enumerate(row):
            position[i] = p

    for _ in range(SWEEPS):
        for lay in keys[1:]:
            sweep(lay, "ups")
        for lay in reversed(keys[:-1]):
            sweep(lay, "downs")
    return order


def _place(items: list[_Item], order: dict[int, list[int]]) -> None:
    """x of every item: the centre's layer packed, then each layer outward under (over)
    the mean of its neighbours toward the centre, overlaps resolved."""
    keys = list(order)
    x = 0
    for i in order[0]:
        items[i].x = x
        x += items[i].width + GAP
    for lay in [k for k in keys if k > 0] + sorted((k for k in keys if k < 0), reverse=True):
        row = order[lay]
        toward = "ups" if lay > 0 else "downs"
        wanted: list[float] = []
        for i in row:
            linked: list[int] = getattr(items[i], toward)
            if linked:
                mid = sum(items[j].x + items[j].width / 2 for j in linked) / len(linked)
                wanted.append(mid - items[i].width / 2)
            else:
                wanted.append(float("nan"))
        _pack(items, row, wanted)
    low = min(item.x for item in items)
    for item in items:
        item.x -= low - 1  # one column of margin


def _untangle(items: list[_Item], order: dict[int, list[int]]) -> None:
    """Keep a dummy's column free of other lines: a long edge enters a dummy straight from
    above, so an exit of the layer above in that same column would run into it. Dummies
    move a column aside where their row has room, boxes move their exit instead."""
    keys = list(order)
    for upper, lower in pairwise(keys):
        exits = {items[s].exit_x: s for s in order[upper]}
        row = order[lower]
        for k, d in enumerate(row):
            dummy = items[d]
            owner = exits.get(dummy.x)
            if dummy.name is not None or owner is None or owner in dummy.ups:
                continue
            if items[owner].name is not None:
                continue  # a box: its exit moves below
            # a blank column must stay on each side of it
            low = items[row[k - 1]].x + items[row[k - 1]].width + 1 if k else -(10**9)
            high = items[row[k + 1]].x - 2 if k + 1 < len(row) else 10**9
            for x in (dummy.x + 1, dummy.x - 1):
                if low <= x <= high and x not in exits:
                    dummy.x = x
                    break
        taken = {items[d].x: d for d in row if items[d].name is None}
        for s in order[upper]:
            box = items[s]
            below = taken.get(box.exit_x)
            if box.name is None or below is None or s in items[below].ups:
                continue
            middle = box.width // 2
            for offset in sorted(range(1, box.width - 1), key=lambda o: abs(o - middle)):
                if box.x + offset not in taken:
                    box.exit_offset = offset
                    break


def _pack(items: list[_Item], row: list[int], wanted: list[float]) -> None:
    """Place `row` as near `wanted` as the order and GAP allow: the mean of a packing
    from the left and one from the right (both keep order and gaps, so their mean does)."""
    known = [w for w in wanted if w == w]
    fill = sum(known) / len(known) if known else 0.0
    want = [w if w == w else fill for w in wanted]
    left: list[float] = []
    for k in range(len(row)):
        x = want[k]
        if left:
            prev = row[k - 1]
            x = max(x, left[-1] + items[prev].width + GAP)
        left.append(x)
    right: list[float] = [0.0] * len(row)
    for k in range(len(row) - 1, -1, -1):
        i = row[k]
        x = want[k]
        if k < len(row) - 1:
            x = min(x, right[k + 1] - items[i].width - GAP)
        right[k] = x
    previous_end: int | None = None
    for k, i in enumerate(row):
        x = round((left[k] + right[k]) / 2)
        if previous_end is not None:
            x = max(x, previous_end + GAP)  # rounding must not bring two items closer
        items[i].x = x
        previous_end = x + items[i].width


@dataclass
class _Channel:
    """The rows between two layers: the sources' buses and the targets' entry ports."""

    ports: dict[tuple[int, int], int]  # (source item, target item) → entry column
    tracks: dict[int, int]  # source item → its bus row (0-based below the stub row)

    @property
    def height(self) -> int:
        # a row for the stubs leaving the boxes, one per bus, a row for the arrows
        return len(self.tracks) + 2


def _channel(items: list[_Item], upper: list[int]) -> _Channel:
    exits = {items[s].exit_x: s for s in upper}
    targets: dict[int, list[int]] = {}
    for s in upper:
        for t in items[s].downs:
            targets.setdefault(t, []).append(s)
    ports: dict[tuple[int, int], int] = {}
    for t, sources in targets.items():
        target = items[t]
        if target.name is None:  # a dummy: entered at its own column
            ports[(sources[0], t)] = target.x
            continue
        ports.update(_ports(items, t, sorted(sources, key=lambda s: items[s].exit_x), exits))

    def span(s: int) -> int:
        columns = [ports[(s, t)] for t in items[s].downs]
        return max(*columns, items[s].exit_x) - min(*columns, items[s].exit_x)

    # Short buses on the upper rows: several sources feeding one box from one side then
    # nest without crossing (the nearest source turns first, the others pass below it).
    bused = sorted(
        (s for s in upper if any(ports[(s, t)] != items[s].exit_x for t in items[s].downs)),
        key=lambda s: (span(s), items[s].exit_x),
    )
    # A dummy is entered at its own column, which may be another source's exit column.
    # Their lines share that column without touching when the exit's bus runs above the
    # bus that feeds the dummy: the exit's stub turns before the dummy's line starts.
    after: dict[int, set[int]] = {s: set() for s in bused}
    for (s, _t), col in ports.items():
        other = exits.get(col)
        if other is not None and other != s and other in after and s in after:
            after[s].add(other)
    tracks: dict[int, int] = {}
    while len(tracks) < len(bused):
        ready = [s for s in bused if s not in tracks and after[s] <= tracks.keys()]
        # a cycle of such constraints (rare): take the leftmost, one line may touch
        pick = ready[0] if ready else next(s for s in bused if s not in tracks)
        tracks[pick] = len(tracks)
    return _Channel(ports, tracks)


def _ports(
    items: list[_Item], t: int, sources: list[int], exits: Mapping[int, int]
) -> dict[tuple[int, int], int]:
    """The columns where the edges from `sources` (left to right) enter box `t`: straight
    below a source whose exit is over the box, the others spread over the free columns
    between those, in the sources' order, so the lines entering one box do not cross."""
    target = items[t]
    inside = range(target.x + 1, target.x + target.width - 1)
    fixed = {s: items[s].exit_x for s in sources if items[s].exit_x in inside}
    while True:
        runs = _runs(sources, fixed, inside)
        short = next(
            (
                (members, bound)
                for members, first, last, bound in runs
                if sum(1 for c in range(first, last + 1) if c not in exits) < len(members)
            ),
            None,
        )
        if short is None:
            break
        # the sources beside a straight one have no room on its side: it bends too
        members, bound = short
        if bound is None:
            break  # no straight line to give up: the box is crowded (see below)
        del fixed[bound]
    ports: dict[tuple[int, int], int] = {(s, t): col for s, col in fixed.items()}
    taken = set(fixed.values())
    for members, first, last, _bound in runs:
        if not members:
            continue
        free = [c for c in range(first, last + 1) if c not in exits]
        if len(free) < len(members):  # crowded: anywhere in the box not taken
            free = [c for c in inside if c not in taken and c not in exits]
        if len(free) < len(members):
            free = [c for c in inside if c not in taken] or [inside.start]
        for k, s in enumerate(members):
            pick = round((k + 1) * (len(free) + 1) / (len(members) + 1)) - 1
            col = free[min(max(pick, 0), len(free) - 1)]
            ports[(s, t)] = col
            taken.add(col)
    return ports


def _runs(
    sources: list[int], fixed: Mapping[int, int], inside: range
) -> list[tuple[list[int], int, int, int | None]]:
    """The sources between straight ones: (sources, first and last column free to them,
    the straight source bounding them on the left (on the right for the first run), or
    None when there is none)."""
    runs: list[tuple[list[int], int, int, int | None]] = []
    run: list[int] = []
    low, left = inside.start, None
    for s in sources:
        if s in fixed:
            runs.append((run, low, fixed[s] - 1, s if left is None else left))
            run, low, left = [], fixed[s] + 1, s
        else:
            run.append(s)
    runs.append((run, low, inside.stop - 1, left))
    return runs


class _Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.chars = [[" "] * width for _ in range(height)]
        self.bits: dict[tuple[int, int], dict[int, int]] = {}  # cell → {net: directions}

    def add(self, y: int, x: int, net: int, bits: int) -> None:
        nets = self.bits.setdefault((y, x), {})
        nets[net] = nets.get(net, 0) | bits

    def vertical(self, x: int, y1: int, y2: int, net: int) -> None:
        if y2 <= y1:
            return
        self.add(y1, x, net, DOWN)
        for y in range(y1 + 1, y2):
            self.add(y, x, net, UP | DOWN)
        self.add(y2, x, net, UP)

    def horizontal(self, y: int, x1: int, x2: int, net: int) -> None:
        x1, x2 = min(x1, x2), max(x1, x2)
        if x2 == x1:
            return
        self.add(y, x1, net, RIGHT)
        for x in range(x1 + 1, x2):
            self.add(y, x, net, LEFT | RIGHT)
        self.add(y, x2, net, LEFT)

    def ink(self, glyphs: Mapping[int, str]) -> None:
        """Lines onto the characters. One net: its own glyph (corners, junctions). Two
        nets meeting: a crossing, drawn as the vertical line passing over the bus."""
        for (y, x), nets in self.bits.items():
            bits = 0
            for net_bits in nets.values():
                bits |= net_bits
            if len(nets) > 1 and bits & (UP | DOWN):
                bits = UP | DOWN  # a crossing: the vertical line is drawn through
            self.chars[y][x] = glyphs.get(bits, "?")


def _draw(
    items: list[_Item],
    order: dict[int, list[int]],
    centre: str,
    marks: Mapping[str, str],
    ascii: bool,
    scopes: Collection[str],
) -> tuple[list[str], dict[str, Box]]:
    keys = list(order)
    channels = {lay: _channel(items, order[lay]) for lay in keys[:-1]}
    band_y: dict[int, int] = {}
    y = 0
    for lay in keys:
        band_y[lay] = y
        y += BOX_HEIGHT
        if lay in channels:
            y += channels[lay].height
    height = y
    width = max(item.x + item.width for item in items) + 1
    for lay in keys[:-1]:  # the rightmost exit's label may reach past the boxes: room for it
        leaving = [items[i] for i in order[lay] if items[i].downs]
        last = max(leaving, key=lambda item: item.exit_x, default=None)
        if last is not None and last.tensor:
            width = max(width, last.exit_x + 2 + len(last.tensor) + 1)
    canvas = _Canvas(width, height)
    line_glyphs = _LINES_ASCII if ascii else _LINES_UNICODE
    arrow = ARROW_ASCII if ascii else ARROW_UNICODE
    arrows: list[tuple[int, int]] = []
    for lay, channel in channels.items():
        top = band_y[lay] + BOX_HEIGHT  # the stub row
        arrow_row = top + channel.height - 1
        for s in order[lay]:
            source = items[s]
            if not source.downs:
                continue
            ex = source.exit_x
            canvas.add(top, ex, s, UP)  # joins the box's bottom border (or the dummy above)
            track = channel.tracks.get(s)
            bus_row = top if track is None else top + 1 + track
            canvas.vertical(ex, top, bus_row, s)
            columns = [channel.ports[(s, t)] for t in source.downs]
            if track is not None:
                canvas.horizontal(bus_row, min(*columns, ex), max(*columns, ex), s)
            for t, col in zip(source.downs, columns, strict=True):
                canvas.vertical(col, bus_row, arrow_row, s)
                if items[t].name is None:
                    canvas.add(arrow_row, col, s, DOWN)  # goes on through the dummy's band
                else:
                    arrows.append((arrow_row, col))
    for lay in keys:
        for i in order[lay]:
            if items[i].name is None:  # a long edge passing through this band
                for row in range(band_y[lay], band_y[lay] + BOX_HEIGHT):
                    canvas.add(row, items[i].x, i, UP | DOWN)
    canvas.ink(line_glyphs)
    for row, col in arrows:
        canvas.chars[row][col] = arrow
    for lay, _channel_of in channels.items():
        _write_tensors(canvas, items, order[lay], band_y[lay] + BOX_HEIGHT, width)
    boxes: dict[str, Box] = {}
    for lay in keys:
        for i in order[lay]:
            item = items[i]
            if item.name is None:
                continue
            box = Box(item.name, item.x, band_y[lay], item.width, BOX_HEIGHT, lay)
            boxes[item.name] = box
            is_centre = item.name == centre
            if ascii:
                glyphs = _CENTRE_ASCII if is_centre else _BOX_ASCII
            elif item.name in scopes:
                glyphs = _SCOPE_UNICODE
            else:
                glyphs = _CENTRE_UNICODE if is_centre else _BOX_UNICODE
            _draw_box(canvas, box, item, glyphs, marks.get(item.name, ""))
    return ["".join(row) for row in canvas.chars], boxes


def _write_tensors(canvas: _Canvas, items: list[_Item], row: list[int], y: int, width: int) -> None:
    """Each box's tensor label on the row its edge leaves by, right of its exit: the only
    lines crossing that row are the exits' stubs, so a label that ends a blank column
    before the next exit (and inside the picture) touches no line; one that does not fit
    is left out."""
    exits = sorted(items[i].exit_x for i in row if items[i].downs)
    for i in row:
        item = items[i]
        if not item.tensor or not item.downs:
            continue
        start = item.exit_x + 2
        limit = next((x for x in exits if x > item.exit_x), width) - 2
        if start + len(item.tensor) - 1 <= min(limit, width - 1):
            canvas.chars[y][start : start + len(item.tensor)] = list(item.tensor)


def _draw_box(canvas: _Canvas, box: Box, item: _Item, g: _BoxGlyphs, mark: str) -> None:
    x, y, w = box.x, box.y, box.width
    inner = w - 2
    top = g.top_left + g.horizontal * inner + g.top_right
    if mark:
        # the whole mark, or `!` alone where the border is too short for it
        mark = mark if len(mark) <= inner - 1 else HIT_MARK
        top = top[:1] + mark + top[1 + len(mark) :]
    name, kind = item.label
    rows = [
        top,
        g.vertical + (" " + name).ljust(inner) + g.vertical,
        g.vertical + (" " + kind).ljust(inner) + g.vertical,
        g.bottom_left + g.horizontal * inner + g.bottom_right,
    ]
    if item.downs:
        ex = item.exit_x - x
        rows[3] = rows[3][:ex] + g.exit + rows[3][ex + 1 :]
    for dy, text in enumerate(rows):
        canvas.chars[y + dy][x : x + w] = list(text)


# ------------------------------------------------------------------ moving around
def step(picture: Picture, current: str, direction: str) -> str | None:
    """The box the selection moves to from `current` with an arrow key (`up`: an input,
    the nearest one in x; `down`: a consumer; `left`/`right`: the next box of the layer);
    None when there is none that way."""
    box = picture.boxes.get(current)
    if box is None:
        return None
    if direction in ("left", "right"):
        row = picture.layers[box.layer]
        k = row.index(current) + (1 if direction == "right" else -1)
        return row[k] if 0 <= k < len(row) else None
    up = direction == "up"
    linked = [s if up else d for s, d in picture.edges if (d if up else s) == current]
    candidates = [picture.boxes[n] for n in linked if n in picture.boxes]
    if not candidates:  # no edge that way: the nearest box of the next layer
        layers = [lay for lay in picture.layers if (lay < box.layer if up else lay > box.layer)]
        if not layers:
            return None
        nearest = max(layers) if up else min(layers)
        candidates = [picture.boxes[n] for n in picture.layers[nearest]]
    best = min(candidates, key=lambda b: (abs(b.layer - box.layer), abs(b.centre_x - box.centre_x)))
    return best.name


__all__ = [
    "Box",
    "Picture",
    "box_names",
    "label_text",
    "layout",
    "scope_label",
    "step",
    "tensor_label",
]
