"""The scope tree: graph selector, node-type filter, name filter and a lazily expanded tree.

Scopes are only read from `Graph.children(path)` when the user opens them, so a graph of
50,000 nodes costs one row per top-level scope at first. Badges (watched, hit) are drawn at
render time from sets the app hands in, so a new hit list never rebuilds the tree.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Input, Select, Static, Tree
from textual.widgets.tree import TreeNode

from tuidebug.core.graph import Category, Graph, Node
from tuidebug.tui.kit.labels import plain, shown, shown_lines
from tuidebug.tui.kit.name_filter import name_filter
from tuidebug.tui.messages import GraphSwitched, NodeChosen, NodeHighlighted

# A filter that matches half of a huge graph would otherwise build a huge tree; the user
# narrows the filter instead (the tree says how many were left out).
MAX_FILTER_MATCHES = 2000
ALL_TYPES = "*"
CATEGORY_PREFIX = "category:"


class TreeEntry:
    """What a tree row stands for: a scope (`node` None) or a graph node. (A dataclass's
    fields, written out: a dataclass execs its methods at import, in the first frame:
    issue 28; the slots keep a 50,000-node tree's rows small.)"""

    __slots__ = ("loaded", "node", "path")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(self, path: str, node: str | None, loaded: bool = False) -> None:
        self.path = path
        self.node = node
        self.loaded = loaded

    def __repr__(self) -> str:
        return f"TreeEntry(path={self.path!r}, node={self.node!r}, loaded={self.loaded!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TreeEntry):
            return NotImplemented
        return (self.path, self.node, self.loaded) == (other.path, other.node, other.loaded)


def walk(node: TreeNode[TreeEntry]) -> Iterator[TreeNode[TreeEntry]]:
    """Every loaded row under `node`, depth first, in display order."""
    for child in node.children:
        yield child
        yield from walk(child)


def move_cursor(tree: Tree[TreeEntry], node: TreeNode[TreeEntry]) -> None:
    """Put the cursor on `node` right away. A node's line number is only known after the
    tree rebuilt its lines, which it otherwise does lazily on the next idle."""
    _ = tree._tree_lines  # forces the rebuild
    tree.move_cursor(node)
    tree.scroll_to_node(node, animate=False)


class GraphTree(Tree[TreeEntry]):
    """A `Tree` whose rows carry watched/hit badges looked up when a row is drawn."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "expand_cursor", "Expand", show=False, id="tree.expand"),
        Binding("left", "collapse_cursor", "Collapse", show=False, id="tree.collapse"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("graph", id=id)
        self.show_root = False
        self.guide_depth = 2
        self.watched_nodes: frozenset[str] = frozenset()
        self.watched_scopes: frozenset[str] = frozenset()
        self.node_hits: Mapping[str, int] = {}
        self.scope_hits: Mapping[str, int] = {}
        self.loader: Callable[[TreeNode[TreeEntry]], None] | None = None

    def set_badges(
        self,
        watched_nodes: Iterable[str],
        watched_scopes: Iterable[str],
        node_hits: Mapping[str, int],
        scope_hits: Mapping[str, int],
    ) -> None:
        self.watched_nodes = frozenset(watched_nodes)
        self.watched_scopes = frozenset(watched_scopes)
        self.node_hits = dict(node_hits)
        self.scope_hits = dict(scope_hits)
        # Labels are drawn from the sets above: dropping the line cache is enough.
        self._invalidate()

    def _badge(self, entry: TreeEntry | None) -> Text | None:
        if entry is None:
            return None
        if entry.node is not None:
            watched = entry.node in self.watched_nodes
            hits = self.node_hits.get(entry.node, 0)
        else:
            watched = entry.path in self.watched_scopes
            hits = self.scope_hits.get(entry.path, 0)
        if not watched and not hits:
            return None
        badge = Text()
        if watched:
            badge.append(" ◉", style="cyan")
        if hits:
            badge.append(f" ▲{hits}", style="bold red")
        return badge

    def process_label(self, label: str | Text) -> Text:
        # Our labels are one-line Text already; skip Tree's markup parse and line split,
        # which dominate the cost of opening a scope of thousands of nodes.
        if isinstance(label, Text) and "\n" not in label.plain:
            return label
        return super().process_label(label)

    def add_many(
        self, parent: TreeNode[TreeEntry], rows: list[tuple[Text, TreeEntry, bool]]
    ) -> None:
        """Append (label, entry, expandable) rows under `parent` with one invalidation.

        `TreeNode.add` invalidates and refreshes the whole tree per row, which makes a
        5,000-child scope take most of a second; this builds the same nodes directly."""
        children = parent._children
        for label, entry, expandable in rows:
            node = TreeNode(
                self, parent, self._new_id(), label, entry, expanded=False, allow_expand=expandable
            )
            self._tree_nodes[node._id] = node
            children.append(node)
        parent._updates += 1
        self._invalidate()

    def render_label(self, node: TreeNode[TreeEntry], base_style: Style, style: Style) -> Text:
        text = super().render_label(node, base_style, style)
        badge = self._badge(node.data)
        if badge is not None:
            text.append_text(badge)
        return text

    def get_label_width(self, node: TreeNode[TreeEntry]) -> int:
        # Called for every visible line on each rebuild: avoid rendering a Text for it.
        width = node._label.cell_len + (2 if node._allow_expand else 0)
        entry = node.data
        if entry is not None:
            hits = (
                self.node_hits.get(entry.node, 0)
                if entry.node is not None
                else self.scope_hits.get(entry.path, 0)
            )
            width += 3 + (2 + len(str(hits)) if hits else 0)
        return width

    def _toggle_node(self, node: TreeNode[TreeEntry]) -> None:
        # Load a scope's children *before* it expands, so the rows and the open state are
        # laid out and painted in one pass instead of two (it halves opening a big scope).
        if not node.is_expanded and self.loader is not None:
            self.loader(node)
        super()._toggle_node(node)

    def action_expand_cursor(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            if self.loader is not None:
                self.loader(node)
            node.expand()
        elif node.children:
            self.action_cursor_down()

    def action_collapse_cursor(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and not node.parent.is_root:
            self.move_cursor(node.parent)


class ScopeTree(Vertical):
    """Left pane, tab 1: pick a graph, filter, browse scopes, pick a node."""

    CONTEXT_TITLE = "scope tree"
    CONTEXT_HELP = (
        "The graph's scopes, opened on demand: → or space opens a scope, ← closes it.\n"
        "Moving onto a node shows its details (4); Enter also opens its first output in the\n"
        "tensor view (5). ◉ = watched by a watchpoint, ▲n = n hits below.\n"
        "/ filters by name as you type: plain text is found anywhere in the name, and a\n"
        "regular expression works too (^Default/.*MatMul, op(1|2)$). Esc clears the filter\n"
        "and the scopes open before it open again (on the node picked among the matches).\n"
        "{tree.type_filter} opens the node type filter (a type, or weights, gradients,\n"
        "activations); the selector beside it picks the graph.\n"
        "{tuidebug.new_watchpoint} watches the selected node or scope; "
        "{tuidebug.watch_scope} a scope whole, whatever the\n"
        "condition (on a node: the scope that holds it)."
    )

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "type_filter", "Node type", show=False, id="tree.type_filter"),
    ]

    DEFAULT_CSS = """
    ScopeTree { height: 1fr; }
    ScopeTree #tree-filters { height: 1; }
    ScopeTree #graph-select { width: 1fr; }
    ScopeTree #type-filter { width: 1fr; }
    ScopeTree #name-filter { height: 1; }
    ScopeTree #filter-status { height: auto; color: $text-muted; display: none; }
    ScopeTree #filter-status.-shown { display: block; }
    ScopeTree GraphTree { height: 1fr; }
    ScopeTree #tree-empty {
        height: 1fr; content-align: center middle; text-align: center; color: $text-muted;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.graphs: dict[str, Graph] = {}
        self.graph: Graph | None = None
        self._name_match = name_filter("")
        self._filter_type = ALL_TYPES
        self._empty_message = "No graph loaded yet."
        # The unfiltered tree's expanded scopes and cursor, kept while a filter shows (graph
        # name, scope paths, cursor entry): clearing the filter (Esc) puts them back instead
        # of a tree collapsed to its top level.
        self._unfiltered: tuple[str, list[str], TreeEntry | None] | None = None
        self._showing_filter = False
        # The graph and type selectors and the name box, hidden until a graph arrives, are
        # a third of the widgets of the first frame: they mount just after it
        # (`_mount_filters`: issue 28), built from what the pane holds by then.
        self._filters_mounted = False
        self._selects: dict[str, Select[str]] = {}  # by id: queried before the row composes

    def compose(self) -> ComposeResult:
        yield Static("", id="filter-status")
        tree = GraphTree(id="scope-tree")
        tree.loader = self._load
        yield tree
        yield Static("", id="tree-empty", markup=False)

    def on_mount(self) -> None:
        with contextlib.suppress(NoMatches):  # a child not mounted yet: the app calls again
            self._show_empty_state()
        self.call_after_refresh(self._mount_filters)

    def _mount_filters(self) -> None:
        """Mount the selectors and the name box above the tree, holding the graphs, the
        shown graph and the type filter set so far (the `Changed` each posts on mount
        names what is already shown: the handlers ignore it)."""
        if self._filters_mounted or not self.is_attached:
            return
        self._filters_mounted = True
        graph_select = Select[str](
            self._graph_options(),
            prompt="graph",
            allow_blank=True,
            value=self.graph.name if self.graph is not None else Select.NULL,
            compact=True,
            id="graph-select",
        )
        type_select = Select[str](
            self._type_options(self.graph),
            value=self._filter_type,
            allow_blank=False,
            compact=True,
            id="type-filter",
        )
        self._selects = {"#graph-select": graph_select, "#type-filter": type_select}
        row = Horizontal(graph_select, type_select, id="tree-filters")
        name_box = Input(placeholder="filter by name  (/)", compact=True, id="name-filter")
        row.display = name_box.display = bool(self.graphs)
        self.mount(row, name_box, before="#filter-status")

    def set_empty_message(self, text: str) -> None:
        """What the pane says while there is no graph (waiting for a training, loading)."""
        self._empty_message = text
        self._show_empty_state()

    def _show_empty_state(self) -> None:
        empty = not self.graphs
        message = self.query_one("#tree-empty", Static)
        message.update(shown_lines(self._empty_message))
        message.display = empty
        # the tree keeps its place (and focus) but shows nothing until a graph arrives
        if self._filters_mounted:
            self.query_one("#tree-filters").display = not empty
            self.query_one("#name-filter").display = not empty
        self.tree_view.styles.height = "1fr" if not empty else 1

    # ---------------------------------------------------------------- public
    @property
    def tree_view(self) -> GraphTree:
        return self.query_one(GraphTree)

    def set_graphs(self, graphs: Mapping[str, Graph], current: str | None = None) -> None:
        """Offer these graphs; keep showing the current one when it is still there."""
        self.graphs = dict(sorted(graphs.items(), key=lambda kv: (kv[1].graph_id, kv[0])))
        if self._filters_mounted:
            options = self._graph_options()
            self._change_select("#graph-select", lambda select: select.set_options(options))
        elif self.graphs:
            self._mount_filters()  # the graphs came before the first frame was drawn
        self._show_empty_state()
        if not self.graphs:
            self.graph = None
            self.tree_view.clear()
            return
        keep = current or (self.graph.name if self.graph else None)
        name = keep if keep in self.graphs else next(iter(self.graphs))
        self.show_graph(name)

    def _graph_options(self) -> list[tuple[str | Text, str]]:
        return [
            (plain(f"{name} ({len(graph)} nodes)"), name) for name, graph in self.graphs.items()
        ]

    def show_graph(self, name: str) -> None:
        graph = self.graphs.get(name)
        if graph is None:
            return
        self.graph = graph
        if self._filters_mounted:

            def pick(select: Select[str]) -> None:
                if select.value != name:
                    select.value = name

            self._change_select("#graph-select", pick)
        self._fill_type_filter(graph)
        self._rebuild()

    def focus_filter(self) -> None:
        if self._filters_mounted:  # else no graph yet: nothing to filter
            self.query_one("#name-filter", Input).focus()

    def action_type_filter(self) -> None:
        """t: the node type filter, opened (its list takes ↑ ↓, Enter picks, Esc closes)."""
        if not self._filters_mounted:
            return
        select = self.query_one("#type-filter", Select)
        if not select.display or not self.graphs:
            return
        select.focus()
        select.action_show_overlay()

    def clear_filter(self) -> bool:
        """Drop the name and type filters; True when there was something to clear."""
        if not self._filters_mounted:
            return False  # nothing typed or picked yet
        name_input = self.query_one("#name-filter", Input)
        type_select = self.query_one("#type-filter", Select)
        had = bool(name_input.value) or type_select.value != ALL_TYPES
        if had:
            with name_input.prevent(Input.Changed):
                name_input.value = ""
            with type_select.prevent(Select.Changed):
                type_select.value = ALL_TYPES
            self._name_match = name_filter("")
            self._filter_type = ALL_TYPES
            self._rebuild()
        return had

    def reveal(self, node_name: str) -> bool:
        """Expand the scopes down to `node_name`, put the cursor on it; False if not found."""
        graph = self.graph
        if graph is None:
            return False
        node = graph.get(node_name)
        if node is None:
            return False
        if self._filtering and not self._matches(node):
            self.clear_filter()
        tree = self.tree_view
        parts = node.ui_name.split("/")
        current = tree.root
        path = ""
        for part in parts[:-1]:
            path = f"{path}/{part}" if path else part
            child = self._find_child(current, path)
            if child is None:
                return False
            self._load(child)
            child.expand()
            current = child
        leaf = self._find_child(current, node.ui_name)
        if leaf is None:
            return False
        move_cursor(tree, leaf)
        return True

    @property
    def selected_entry(self) -> TreeEntry | None:
        node = self.tree_view.cursor_node
        return node.data if node is not None else None

    # -------------------------------------------------------------- building
    @property
    def _filtering(self) -> bool:
        return bool(self._name_match) or self._filter_type != ALL_TYPES

    def _fill_type_filter(self, graph: Graph) -> None:
        options = self._type_options(graph)
        keep = self._filter_type if any(v == self._filter_type for _, v in options) else ALL_TYPES
        if self._filters_mounted:

            def refill(select: Select[str]) -> None:
                select.set_options(options)
                select.value = keep

            self._change_select("#type-filter", refill)
        self._filter_type = keep

    def _change_select(self, selector: str, change: Callable[[Select[str]], None]) -> None:
        """Apply `change` to a selector, without its `Changed`: now, or once it has composed
        its option list (one mounted moments ago is registered but not composed yet, and
        its options cannot be set before; it was built from the pane's state, and its
        own queue runs the change right after its mount)."""
        select = self._selects[selector]

        def apply() -> None:
            with select.prevent(Select.Changed):
                change(select)

        if select.is_mounted:
            apply()
        else:
            select.call_later(apply)

    @staticmethod
    def _type_options(graph: Graph | None) -> list[tuple[str | Text, str]]:
        options: list[tuple[str | Text, str]] = [("all node types", ALL_TYPES)]
        if graph is None:
            return options
        counts: dict[str, int] = {}
        for node in graph:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
        for cat in (Category.WEIGHT, Category.GRADIENT, Category.ACTIVATION, Category.PARAMETER):
            n = len(graph.nodes_in(cat))
            if n:
                options.append((f"{cat.value}s ({n})", CATEGORY_PREFIX + cat.value))
        options += [(plain(f"{t} ({n})"), t) for t, n in sorted(counts.items())]
        return options

    def _rebuild(self) -> None:
        tree = self.tree_view
        graph = self.graph
        if self._filtering and not self._showing_filter and graph is not None:
            self._unfiltered = (graph.name, self._expanded_scopes(), self.selected_entry)
        # a node picked among the matches (the tree has the focus) stays picked; leaving
        # the filter from its box puts the cursor back where it was
        picked = self._showing_filter and self.tree_view.has_focus
        chosen = self.selected_entry if picked else None
        tree.clear()
        status = self.query_one("#filter-status", Static)
        self._showing_filter = self._filtering and graph is not None
        if graph is None:
            status.remove_class("-shown")
            return
        if not self._filtering:
            status.remove_class("-shown")
            self._add_scope_children(tree.root, "")
            tree.root.expand()
            if tree.root.children:
                move_cursor(tree, tree.root.children[0])
            self._restore_unfiltered(graph, chosen)
            return
        matches: list[Node] = []
        total = 0
        for node in graph:
            if self._matches(node):
                total += 1
                if len(matches) < MAX_FILTER_MATCHES:
                    matches.append(node)
        self._add_filtered(matches)
        if total == 0:
            said = "no node matches the filter (Esc clears it)"
        elif total > len(matches):
            said = f"{total} matches, first {len(matches)} shown: narrow the filter"
        else:
            said = f"{total} matching node{'s' if total != 1 else ''}"
        problem = self._name_match.problem  # a bad expression: one sentence, plain text used
        status.update(shown_lines(f"{problem}\n{said}" if problem else said))
        status.add_class("-shown")
        first = next((n for n in walk(tree.root) if n.data and n.data.node is not None), None)
        if first is not None:
            move_cursor(tree, first)

    def _expanded_scopes(self) -> list[str]:
        return [
            row.data.path
            for row in walk(self.tree_view.root)
            if row.is_expanded and row.data is not None and row.data.node is None
        ]

    def _restore_unfiltered(self, graph: Graph, chosen: TreeEntry | None) -> None:
        """The filter is gone: expand again what was expanded before it, and put the
        cursor on the node picked among the matches (else where it was before)."""
        kept, self._unfiltered = self._unfiltered, None
        if kept is None or kept[0] != graph.name:
            return
        _graph, scopes, cursor = kept
        tree = self.tree_view
        rows: dict[str, TreeNode[TreeEntry]] = {}
        for path in scopes:  # parents come before their children (walk's order)
            parent = rows.get(path.rpartition("/")[0], tree.root)
            row = self._find_child(parent, path)
            if row is None:
                continue
            self._load(row)
            row.expand()
            rows[path] = row
        target = chosen if chosen is not None and chosen.node is not None else cursor
        if target is None:
            return
        if target.node is not None:
            self.reveal(target.node)
            return
        parent = rows.get(target.path.rpartition("/")[0], tree.root)
        row = self._find_child(parent, target.path)
        if row is not None:
            move_cursor(tree, row)

    def _matches(self, node: Node) -> bool:
        if self._filter_type != ALL_TYPES:
            if self._filter_type.startswith(CATEGORY_PREFIX):
                cat = Category(self._filter_type[len(CATEGORY_PREFIX) :])
                assert self.graph is not None
                if cat not in self.graph.categories(node):
                    return False
            elif node.op_type != self._filter_type:
                return False
        return self._name_match.matches(node.ui_name)

    def _add_filtered(self, matches: list[Node]) -> None:
        """Matching nodes under their (expanded) scopes; scopes are marked loaded=False so
        clearing the filter rebuilds them fully."""
        tree = self.tree_view
        scopes: dict[str, TreeNode[TreeEntry]] = {"": tree.root}
        for node in matches:
            parts = node.ui_name.split("/")
            parent = tree.root
            path = ""
            for part in parts[:-1]:
                path = f"{path}/{part}" if path else part
                found = scopes.get(path)
                if found is None:
                    found = parent.add(plain(part), TreeEntry(path, None, loaded=True), expand=True)
                    scopes[path] = found
                parent = found
            parent.add_leaf(plain(parts[-1]), TreeEntry(node.ui_name, node.name, loaded=True))
        tree.root.expand()

    def _add_scope_children(self, parent: TreeNode[TreeEntry], path: str) -> None:
        # Thousands of new long-lived objects would trigger full garbage collections of the
        # whole app midway (100 ms pauses); none of them is garbage, so pause the collector.
        if not gc.isenabled():
            self._fill_children(parent, path)
            return
        gc.disable()
        try:
            self._fill_children(parent, path)
        finally:
            gc.enable()

    def _fill_children(self, parent: TreeNode[TreeEntry], path: str) -> None:
        graph = self.graph
        assert graph is not None
        rows: list[tuple[Text, TreeEntry, bool]] = []
        for entry in graph.children(path):
            if entry.is_scope:
                label = Text.assemble(
                    shown(entry.label), (f" {graph.leaf_count(entry.path)}", "dim")
                )
                rows.append((label, TreeEntry(entry.path, None), True))
            else:
                rows.append(
                    (plain(entry.label), TreeEntry(entry.path, entry.node, loaded=True), False)
                )
        self.tree_view.add_many(parent, rows)
        if parent.data is not None:
            parent.data.loaded = True

    def _load(self, tree_node: TreeNode[TreeEntry]) -> None:
        entry = tree_node.data
        if entry is None or entry.loaded or entry.node is not None:
            return
        self._add_scope_children(tree_node, entry.path)

    @staticmethod
    def _find_child(parent: TreeNode[TreeEntry], path: str) -> TreeNode[TreeEntry] | None:
        for child in parent.children:
            if child.data is not None and child.data.path == path:
                return child
        return None

    # ---------------------------------------------------------------- events
    @on(Tree.NodeExpanded, "#scope-tree")
    def _expanded(self, event: Tree.NodeExpanded[TreeEntry]) -> None:
        event.stop()
        self._load(event.node)

    @on(Tree.NodeHighlighted, "#scope-tree")
    def _highlighted(self, event: Tree.NodeHighlighted[TreeEntry]) -> None:
        event.stop()
        entry = event.node.data
        if entry is None or self.graph is None:
            return
        scope = entry.path if entry.node is None else entry.path.rpartition("/")[0]
        self.post_message(NodeHighlighted(self.graph.name, entry.node, scope))

    @on(Tree.NodeSelected, "#scope-tree")
    def _selected(self, event: Tree.NodeSelected[TreeEntry]) -> None:
        event.stop()
        entry = event.node.data
        if entry is None or entry.node is None or self.graph is None:
            return
        self.post_message(NodeChosen(self.graph.name, entry.node, open_tensor=True))

    @on(Input.Changed, "#name-filter")
    def _name_filter(self, event: Input.Changed) -> None:
        event.stop()
        self._name_match = name_filter(event.value)
        self._rebuild()

    @on(Input.Submitted, "#name-filter")
    def _name_filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.tree_view.focus()

    def on_key(self, event: events.Key) -> None:
        # Down from the filter box goes on to the matches, as in a search-as-you-type list
        focused = self.app.focused
        if event.key == "down" and isinstance(focused, Input) and focused.id == "name-filter":
            event.stop()
            event.prevent_default()
            self.tree_view.focus()

    @on(Select.Changed, "#type-filter")
    def _type_filter(self, event: Select.Changed) -> None:
        event.stop()
        value = event.value
        chosen = value if isinstance(value, str) else ALL_TYPES
        if chosen == self._filter_type:
            return  # the selector mounted showing the filter (`_mount_filters`)
        self._filter_type = chosen
        self._rebuild()

    @on(Select.Changed, "#graph-select")
    def _graph_changed(self, event: Select.Changed) -> None:
        event.stop()
        value = event.value
        if not isinstance(value, str) or value not in self.graphs:
            return
        if self.graph is None or self.graph.name != value:
            self.show_graph(value)
            self.post_message(GraphSwitched(value))
