"""The neighbourhood graph (`G`): the selected node with its inputs above and consumers
below, drawn as a small DAG (MindInsight's graph, in a terminal).

graph_layout.py picks the nodes and draws them as text (no Textual there); `GraphCanvas`
shows that text in a `ScrollView` with `render_line`, styles the boxes (the selection,
the centre, nodes with hits at this step: red where a hit says NaN/±Inf, yellow for the
others, as the hit list colours them) and moves the selection with the arrow keys.
Enter re-centres the view on the selected node and shows it in the tree behind; Enter on
the centre closes the view and puts the focus on it in the tree. `+`/`-` change how many
levels are drawn; at most `MAX_BOXES` boxes are, and the summary says when some were
left out.

Scopes are MindInsight's hierarchical graph: a scope of several nodes outside the
centre's own scopes is one box (`…/fc1 (7 nodes)`, its nodes' edges its edges); Enter or
`+` on it opens it, `-` on a node of an opened scope closes that scope again, and `e`
opens every scope (one box per node) or closes them again. Each box's exit is labelled
with the tensor its edges carry (`f32[32,10]`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.geometry import Region, Size
from textual.message import Message
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import Label, Static

from tuidebug.core.graph import Graph
from tuidebug.core.hit_rules import nan_inf_of
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.kit.labels import plain, shown
from tuidebug.tui.kit.styled_scroll_view import StyledScrollView
from tuidebug.tui.neighbours.graph_layout import (
    Picture,
    box_names,
    layout,
    step,
)
from tuidebug.tui.neighbours.neighbourhood import (
    DEFAULT_DEPTH,
    MAX_BOXES,
    MAX_DEPTH,
    SCOPE_END,
    is_scope_box,
    neighbourhood,
    scope_ancestors,
)


def hit_counts(
    hits: Iterable[WatchpointHit], graph: Graph, rank: int | None = None
) -> dict[str, int]:
    """Hits per node of `graph` (on `rank`, when given), as the tree's badges count them."""
    counts: dict[str, int] = {}
    for hit in hits:
        ref = hit.tensor
        if ref.graph and ref.graph != graph.name:
            continue
        if rank is not None and ref.rank is not None and ref.rank != rank:
            continue
        node = graph.get(ref.node)
        if node is not None:
            counts[node.name] = counts.get(node.name, 0) + 1
    return counts


def nan_inf_kinds(
    hits: Iterable[WatchpointHit], graph: Graph, rank: int | None = None
) -> dict[str, str]:
    """`NaN`, `Inf` or `NaN/Inf` per node of `graph` some hit says holds them (a tensor
    overflow hit does not say which: `NaN/Inf`), as the hit list's red lines read."""
    found: dict[str, tuple[bool, bool, bool]] = {}
    for hit in hits:
        ref = hit.tensor
        if ref.graph and ref.graph != graph.name:
            continue
        if rank is not None and ref.rank is not None and ref.rank != rank:
            continue
        said = nan_inf_of(hit)
        node = graph.get(ref.node)
        if said is None or node is None:
            continue
        nan, inf, either = found.get(node.name, (False, False, False))
        found[node.name] = (nan or said.nan, inf or said.inf, either or not (said.nan or said.inf))
    kinds: dict[str, str] = {}
    for name, (nan, inf, either) in found.items():
        # only one kind named and no hit that did not say which: that kind
        named = [kind for kind, said in (("NaN", nan), ("Inf", inf)) if said]
        kinds[name] = named[0] if len(named) == 1 and not either else "NaN/Inf"
    return kinds


class GraphCanvas(StyledScrollView, can_focus=True):
    """The drawing, scrollable both ways, with a selected box."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "graph-canvas--edge",
        "graph-canvas--box",
        "graph-canvas--centre",
        "graph-canvas--hit",
        "graph-canvas--nan",
        "graph-canvas--scope",
        "graph-canvas--selected",
    }

    DEFAULT_CSS = """
    GraphCanvas { height: 1fr; background: $surface; }
    GraphCanvas > .graph-canvas--edge { color: $text-muted; }
    GraphCanvas > .graph-canvas--box { color: $text; }
    GraphCanvas > .graph-canvas--centre { color: $accent; text-style: bold; }
    GraphCanvas > .graph-canvas--hit { color: $warning; text-style: bold; }
    GraphCanvas > .graph-canvas--nan { color: $error; text-style: bold; }
    GraphCanvas > .graph-canvas--scope { color: $secondary; }
    GraphCanvas > .graph-canvas--selected {
        color: $block-cursor-foreground; background: $block-cursor-background; text-style: bold;
    }
    GraphCanvas:blur > .graph-canvas--selected { background: $block-cursor-blurred-background; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move('up')", "Input", show=False, id="graph.up"),
        Binding("down", "move('down')", "Consumer", show=False, id="graph.down"),
        Binding("left", "move('left')", "Left", show=False, id="graph.left"),
        Binding("right", "move('right')", "Right", show=False, id="graph.right"),
        Binding("enter", "choose", "Centre / go / open", id="graph.choose"),
        Binding("plus,equals_sign", "depth(1)", "Deeper / open", id="graph.deeper"),
        Binding("minus", "depth(-1)", "Shallower / close", id="graph.shallower"),
        Binding("e", "all_scopes", "All scopes", id="graph.scopes"),
    ]

    class Changed(Message):
        """The drawing or the selection changed: the screen's lines follow."""

    class Centred(Message):
        """Enter re-centred the view on `node`."""

        def __init__(self, node: str) -> None:
            super().__init__()
            self.node = node

    class Chosen(Message):
        """Enter on the centre: go to `node` in the tree."""

        def __init__(self, node: str) -> None:
            super().__init__()
            self.node = node

    def __init__(
        self,
        graph: Graph,
        centre: str,
        hits: Mapping[str, int],
        *,
        depth: int = DEFAULT_DEPTH,
        ascii: bool = False,
        nan_inf: Mapping[str, str] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.graph = graph
        self.hits = dict(hits)
        self.nan_inf = dict(nan_inf or {})
        self.ascii = ascii
        self.depth = depth
        self.centre = centre
        self.selected = centre
        # the open scopes; None: every scope open (`e`). The centre's own always are.
        self.expanded: set[str] | None = set(scope_ancestors(graph, centre))
        self.box_hits: dict[str, int] = {}  # hits per box (a scope's: its nodes')
        self.box_nan: dict[str, str] = {}  # NaN/Inf per box
        self.picture: Picture = self._draw()

    # ------------------------------------------------------------------ state
    def _draw(self) -> Picture:
        hood = neighbourhood(self.graph, self.centre, self.depth, MAX_BOXES, expanded=self.expanded)
        self.box_hits, self.box_nan = {}, {}
        marks: dict[str, str] = {}
        for name in hood.nodes:
            members = hood.scopes.get(name, (name,))
            count = sum(self.hits.get(m, 0) for m in members)
            kinds = {self.nan_inf[m] for m in members if m in self.nan_inf}
            if kinds:
                self.box_nan[name] = kinds.pop() if len(kinds) == 1 else "NaN/Inf"
                marks[name] = "!" + self.box_nan[name]
            if count:
                self.box_hits[name] = count
                marks.setdefault(name, "!")
        return layout(hood, self.graph, ascii=self.ascii, marks=marks)

    def recentre(self, node: str, depth: int | None = None) -> None:
        """Draw the neighbourhood of `node` (at `depth`, else the current one)."""
        self.centre = node
        self.selected = node
        if depth is not None:
            self.depth = depth
        if self.expanded is not None:
            self.expanded.update(scope_ancestors(self.graph, node))
        self.picture = self._draw()
        self.virtual_size = Size(self.picture.width, self.picture.height)
        self.refresh()
        self.call_after_refresh(self.show_selected, True)
        self.post_message(self.Changed())

    def select(self, node: str) -> None:
        if node not in self.picture.boxes:
            return
        self.selected = node
        self.refresh()
        self.show_selected()
        self.post_message(self.Changed())

    def show_selected(self, centre: bool = False) -> None:
        """Scroll so the selected box is on screen (`centre`: in the middle)."""
        box = self.picture.boxes.get(self.selected)
        if box is None:
            return
        if centre:
            width, height = self.scrollable_content_region.size
            x = max(0, round(box.x + box.width / 2 - width / 2))
            y = max(0, round(box.y + box.height / 2 - height / 2))
            self.scroll_to(x, y, animate=False, immediate=True)
        else:
            region = Region(box.x, max(0, box.y - 2), box.width, box.height + 4)
            self.scroll_to_region(region, animate=False, immediate=True)

    def on_mount(self) -> None:
        self.virtual_size = Size(self.picture.width, self.picture.height)
        self.call_after_refresh(self.show_selected, True)

    def on_resize(self, _event: events.Resize) -> None:
        self.call_after_refresh(self.show_selected)

    # ---------------------------------------------------------------- actions
    def action_move(self, direction: str) -> None:
        target = step(self.picture, self.selected, direction)
        if target is not None:
            self.select(target)

    def redraw(self, select: str) -> None:
        """Draw again around the same centre (a scope opened or closed), `select` selected
        (else the centre)."""
        self.picture = self._draw()
        self.selected = select if select in self.picture.boxes else self.centre
        self.virtual_size = Size(self.picture.width, self.picture.height)
        self.refresh()
        self.call_after_refresh(self.show_selected, True)
        self.post_message(self.Changed())

    def open_scope(self, box: str) -> None:
        """Open a closed scope's box: its nodes (or its closed sub-scopes) take its place;
        the selection goes to the one nearest the centre."""
        path = box.removesuffix(SCOPE_END)
        if self.expanded is not None:
            self.expanded.add(path)
        self.picture = self._draw()
        inside = [n for n in self.picture.hood.nodes if n.startswith(path + "/")]
        self.redraw(inside[0] if inside else self.centre)

    def closable_scope(self) -> str | None:
        """The innermost opened scope holding the selected box (a node, or a closed scope
        inside it), other than the centre's own scopes (those stay open: the centre is
        drawn as itself)."""
        if self.expanded is None:
            return None
        keep = set(scope_ancestors(self.graph, self.centre))
        if is_scope_box(self.selected):
            parts = self.selected.removesuffix(SCOPE_END).split("/")[:-1]
            holders = ["/".join(parts[: k + 1]) for k in range(len(parts))]
        else:
            holders = scope_ancestors(self.graph, self.selected)
        for path in reversed(holders):
            if path in self.expanded and path not in keep and self.graph.leaf_count(path) > 1:
                return path
        return None

    def action_all_scopes(self) -> None:
        """e: every scope open (one box per node), or closed again but the centre's."""
        if self.expanded is None:
            self.expanded = set(scope_ancestors(self.graph, self.centre))
            self.notify("Scopes closed: each is one box until Enter or + opens it.")
        else:
            self.expanded = None
            self.notify("Every scope open: one box per node (e closes them).")
        self.redraw(self.selected)

    def action_choose(self) -> None:
        if is_scope_box(self.selected):
            self.open_scope(self.selected)
        elif self.selected == self.centre:
            self.post_message(self.Chosen(self.centre))
        else:
            node = self.selected
            self.recentre(node)
            self.post_message(self.Centred(node))

    def action_depth(self, change: int) -> None:
        if change > 0 and is_scope_box(self.selected):
            self.open_scope(self.selected)
            return
        closing = self.closable_scope() if change < 0 else None
        if closing is not None and self.expanded is not None:
            self.expanded.discard(closing)
            self.redraw(closing + SCOPE_END)
            return
        depth = self.depth + change
        if depth < 1:
            self.notify("Depth 1 is the smallest: the node and its direct neighbours.")
            return
        if change > 0 and depth > MAX_DEPTH:
            self.notify(f"Depth {MAX_DEPTH} is the largest this view draws.")
            return
        hood = self.picture.hood
        if change > 0 and hood.cut:
            self.notify(f"The view is full ({MAX_BOXES} nodes): a larger depth shows no more.")
            return
        if change > 0 and not hood.deeper:
            self.notify("Nothing lies further: every input and consumer is drawn.")
            return
        selected = self.selected
        self.recentre(self.centre, depth)
        if selected in self.picture.boxes:
            self.selected = selected

    def margins(self) -> tuple[int, int]:
        """(left, top) blank cells that centre a picture smaller than the view."""
        width, height = self.scrollable_content_region.size
        return max(0, (width - self.picture.width) // 2), max(
            0, (height - self.picture.height) // 2
        )

    def on_click(self, event: events.Click) -> None:
        left, top = self.margins()
        x = event.x + round(self.scroll_x) - left
        y = event.y + round(self.scroll_y) - top
        name = self.picture.box_at(x, y)
        if name is None:
            return
        if name == self.selected:
            self.action_choose()  # a click on the selected box acts as Enter
        else:
            self.select(name)

    # ----------------------------------------------------------------- render

    def box_style(self, name: str) -> Style:
        if name == self.selected:
            return self.style_of("graph-canvas--selected")
        if name in self.box_nan:
            return self.style_of("graph-canvas--nan")
        if name in self.box_hits:
            return self.style_of("graph-canvas--hit")
        if name == self.centre:
            return self.style_of("graph-canvas--centre")
        if is_scope_box(name):
            return self.style_of("graph-canvas--scope")
        return self.style_of("graph-canvas--box")

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.style_of("")
        left, top = self.margins()
        row = round(self.scroll_y) + y - top
        picture = self.picture
        if not 0 <= row < picture.height or width <= 0:
            return Strip.blank(max(width, 0), base)
        line = picture.lines[row]
        boxes = sorted(
            (b for b in picture.boxes.values() if b.y <= row < b.y + b.height), key=lambda b: b.x
        )
        edge = base + self.style_of("graph-canvas--edge")
        segments: list[Segment] = []
        at = 0
        for box in boxes:
            if box.x > at:
                segments.append(Segment(line[at : box.x], edge))
            segments.append(
                Segment(line[box.x : box.x + box.width], base + self.box_style(box.name))
            )
            at = box.x + box.width
        if at < len(line):
            segments.append(Segment(line[at:], edge))
        if left:
            segments.insert(0, Segment(" " * left, base))
        x = round(self.scroll_x)
        return Strip(segments).crop_extend(x, x + width, base)


class GraphScreen(ModalScreen[str | None]):
    """The neighbourhood view; answers the node to show in the tree, or None (Esc)."""

    # The help screen (help_screen.context_help) reads it from the focused canvas's screen.
    CONTEXT_TITLE = "Graph view"
    CONTEXT_HELP = """The selected node (centre) with its inputs above and its consumers below;
boxes with hits at this step are marked ! (red !NaN/!Inf: a hit says NaN/±Inf), each
exit labelled with the dtype and shape its edges carry; a rounded box is a closed scope.
  {graph.up} / {graph.down}  select an input / a consumer of the selected box
  {graph.left} / {graph.right}  select the box beside it
  {graph.choose}  centre on the selected box (the tree follows); on the centre: go there;
      on a scope's box: open it
  click  select a box (a click on the selected box centres it)
  {graph.deeper} / {graph.shallower}  draw one level more / fewer around the centre;
      + on a scope's box opens it, - on a node of an opened scope closes it
  {graph.scopes}  open every scope (one box per node) / close them again
  {graph.close}  close"""

    DEFAULT_CSS = """
    GraphScreen { align: center middle; }
    GraphScreen > Vertical {
        width: 100%; height: 100%; border: thick $accent; background: $surface; padding: 0 1;
    }
    GraphScreen #graph-title { text-style: bold; }
    GraphScreen #graph-summary { color: $text-muted; height: auto; }
    GraphScreen #graph-selected { height: 1; }
    GraphScreen #graph-hint { color: $text-muted; height: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="graph.close"),
        Binding("q", "close", "Close", show=False),
        # a modal screen hides the app's keys: its help key is its own (CONTEXT_HELP)
        Binding("question_mark,f1", "app.help", "Help", show=False, id="graph.help"),
    ]

    def __init__(
        self,
        graph: Graph,
        centre: str,
        hits: Mapping[str, int] | None = None,
        *,
        depth: int = DEFAULT_DEPTH,
        ascii: bool = False,
        on_centre: Callable[[str], object] | None = None,
        nan_inf: Mapping[str, str] | None = None,
    ) -> None:
        """`hits`: hits per node name (marked `!`); `nan_inf`: the nodes a hit says hold
        NaN/±Inf (`nan_inf_kinds`, red); `on_centre(node)`: called when Enter re-centres
        the view (the app shows that node in the tree behind)."""
        super().__init__()
        self._graph = graph
        self._on_centre = on_centre
        self.canvas = GraphCanvas(
            graph, centre, hits or {}, depth=depth, ascii=ascii, nan_inf=nan_inf
        )

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("", id="graph-title")
            yield Static("", id="graph-summary", markup=False)
            yield Static("", id="graph-selected")
            yield self.canvas
            yield Static(
                # 80 columns: the help (?) says each key in full
                "arrows · Enter centre/go/open · +/- depth, scope · e scopes · Esc closes",
                id="graph-hint",
                markup=False,
            )

    def on_mount(self) -> None:
        self._describe()
        self.canvas.focus()

    def _describe(self) -> None:
        canvas = self.canvas
        hood = canvas.picture.hood
        title = self.query_one("#graph-title", Label)
        # the centre named as its box is: with its scope tail when another box shares its name
        centre = box_names(hood).get(hood.centre, hood.centre.rsplit("/", 1)[-1])
        title.update(plain(f"Neighbourhood of {centre}  (graph {self._graph.name})"))
        count = len(hood.nodes) - len(hood.scopes)
        with_hits = sum(1 for name in hood.nodes if name in canvas.box_hits)
        with_nan = sum(1 for name in hood.nodes if name in canvas.box_nan)
        parts = [
            f"depth {hood.depth}: inputs {hood.depth} up, consumers {hood.depth} down",
            f"{count} node{'s' if count != 1 else ''}",
        ]
        if hood.scopes:
            closed = len(hood.scopes)
            parts.append(f"{closed} closed scope{'s' if closed != 1 else ''} (Enter opens)")
        if with_nan:
            parts.append(f"{with_nan} with NaN/Inf")
        if with_hits:
            parts.append(f"{with_hits} with hits (!)")
        if hood.cut:
            parts.append(f"cut at {MAX_BOXES} boxes: at least {hood.left_out} more not drawn")
        elif not hood.deeper:
            parts.append("all of its reach")
        self.query_one("#graph-summary", Static).update(" · ".join(parts))
        self._describe_selected()

    def _describe_selected(self) -> None:
        canvas = self.canvas
        selected = canvas.selected
        node = self._graph.get(selected)
        text = Text()
        members = canvas.picture.hood.scopes.get(selected)
        if members is not None:
            text.append(shown(selected.removesuffix(SCOPE_END)), style="bold")
            text.append(f"  ({len(members)} nodes) · Enter or + opens it", style="dim")
        elif node is None:
            text.append(shown(selected))
        else:
            text.append(shown(node.name), style="bold")
            text.append(f"  {shown(node.op_type)}", style="dim")
            closable = canvas.closable_scope()
            if closable is not None:
                text.append(f"  · - closes {shown(closable.rsplit('/', 1)[-1])}", style="dim")
        hits = canvas.box_hits.get(selected, 0)
        if hits:
            style = "bold red" if selected in canvas.box_nan else "bold yellow"
            text.append(f"  {hits} hit{'s' if hits != 1 else ''}", style=style)
        if selected in canvas.box_nan:
            text.append(f" ({canvas.box_nan[selected]})", style="bold red")
        self.query_one("#graph-selected", Static).update(text)

    @on(GraphCanvas.Changed)
    def _changed(self, event: GraphCanvas.Changed) -> None:
        event.stop()
        with contextlib.suppress(NoMatches):  # closed meanwhile
            self._describe()

    @on(GraphCanvas.Centred)
    def _centred(self, event: GraphCanvas.Centred) -> None:
        event.stop()
        if self._on_centre is not None:
            self._on_centre(event.node)

    @on(GraphCanvas.Chosen)
    def _chosen(self, event: GraphCanvas.Chosen) -> None:
        event.stop()
        self.dismiss(event.node)

    def action_close(self) -> None:
        self.dismiss(None)


__all__ = ["GraphCanvas", "GraphScreen", "hit_counts", "nan_inf_kinds"]
