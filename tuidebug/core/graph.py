"""The computational graph: nodes, data edges, the scope tree and node categories.

A `Graph` is built once from a graph proto (offline `.pb`, online `SendGraph`, or our own
training clients) and never mutated afterwards, so every derived structure (networkx
DiGraph, scope tree, categories) is computed lazily and cached.
"""

from __future__ import annotations

import bisect
import gc
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

_OP_ID = re.compile(r"-op(\d+)$")
_GRAPH_ID = re.compile(r"(\d+)$")

# spec §3.2: activation op types (lower-cased)
ACTIVATION_TYPES = frozenset(
    {
        "elu",
        "fastgelu",
        "gelu",
        "hsigmoid",
        "hswish",
        "leakyrelu",
        "logsigmoid",
        "logsoftmax",
        "prelu",
        "relu",
        "relu6",
        "reluv2",
        "sigmoid",
        "softmax",
        "tanh",
    }
)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large acyclic structures.

    Creating a hundred thousand nodes, dicts and lists triggers many generational
    collections that find nothing to free; pausing them halves graph build times. The
    collector is process-wide: a thread that finds it already paused leaves it to the
    thread that paused it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class NodeKind(str, Enum):
    OPERATOR = "operator"
    PARAMETER = "parameter"
    CONSTANT = "constant"


class Category(str, Enum):
    """Watchpoint target categories of spec §3.2."""

    TENSOR = "tensor"
    PARAMETER = "parameter"
    WEIGHT = "weight"
    GRADIENT = "gradient"
    ACTIVATION = "activation"


@dataclass(frozen=True)
class StackFrame:
    """One frame of a node's Python source stack.

    `group` tells sub-stacks apart: 0 is the node's own stack; MindSpore may append
    alternatives ("Corresponding forward node candidate:" and its ` - ` marked sub-stacks),
    numbered 1, 2, … so a viewer can separate them instead of showing one long stack.
    A frame without `file_path` is a header ("Corresponding code candidate:") or a line that
    names no location; it is never a source line of its own. `has_substack` marks the
    located frame that opens a sub-stack (the ` - ` marked line; MindInsight's name)."""

    file_path: str
    line_no: int | None
    code_line: str
    group: int = 0
    has_substack: bool = False

    def __str__(self) -> str:
        if not self.file_path:
            return self.code_line
        where = f"{self.file_path}:{self.line_no}" if self.line_no is not None else self.file_path
        return f"{where} {self.code_line}".rstrip()


@dataclass(frozen=True)
class StackSection:
    """One sub-stack of a node's stack, as a viewer shows it: `title` is "" for the node's
    own stack, else its header and position (`Corresponding code candidate 2 of 3`), so
    a fused node's candidates read as separate stacks and no header reads as a frame."""

    title: str
    frames: tuple[StackFrame, ...]


def stack_sections(stack: Sequence[StackFrame]) -> list[StackSection]:
    """`stack` split by `StackFrame.group`: the node's own frames first, then one section
    per candidate, its header line (a frame without `file_path` that opened the group)
    turned into the section's title."""
    groups: dict[int, list[StackFrame]] = {}
    headers: dict[int, str] = {}
    header = ""
    for frame in stack:
        if not frame.file_path and frame.code_line.rstrip().endswith(":"):
            # names the candidates after it ("# Corresponding code candidate:" in some forms)
            header = frame.code_line.strip().lstrip("#").strip().rstrip(":")
            headers.setdefault(frame.group, header)
            continue
        groups.setdefault(frame.group, []).append(frame)
        headers.setdefault(frame.group, header)
    candidates = [g for g in groups if g != 0]
    sections = []
    for group, frames in groups.items():
        if group == 0:
            title = ""
        else:
            n = candidates.index(group) + 1
            title = f"{headers[group] or 'Candidate'} {n} of {len(candidates)}"
        sections.append(StackSection(title, tuple(frames)))
    return sections


@dataclass(frozen=True)
class TensorSpec:
    """What the graph says about one output slot: DataType number and shape, when known."""

    slot: int
    dtype: int | None = None
    shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StepInputs:
    """A node's data edges at one step, where that step's own records say they differ from
    the graph's (msprobe links a call's input to the earlier output with the same
    statistics; a fault that changes a step's values changes which output that is). The
    graph stays as built (the scope tree and node list never change between steps); the
    origin trace walks these instead (`DebugSession.step_inputs`). `inputs`, `unread` and
    `passes` mean what `Node.inputs`, `Graph.unread_inputs` and `Graph.passed_on` do."""

    inputs: tuple[str, ...]
    unread: frozenset[int] = frozenset()
    passes: tuple[str, ...] = ()


@dataclass
class Node:
    """A graph node. `name` is unique in its graph: the kernel full name for operators,
    the parameter name (`conv1.weight`) for parameters, the constant key (`cst3`) for constants."""

    name: str
    kind: NodeKind
    op_type: str
    scope: str = ""
    graph_name: str = ""
    index: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)
    stack: list[StackFrame] = field(default_factory=list)
    dump_name: str = ""
    value: Any = None
    # a tuple output's elements as declared, `(data_type, tensor elem_type)` each (0: a
    # number the schema does not know); None for other outputs. `outputs` keeps only the
    # elements of known dtype; MindInsight's API counts its slots from all of them.
    tuple_elements: tuple[tuple[int, int], ...] | None = None
    # the inputs that are control edges (InputProto.type CONTROL_EDGE): they stay in
    # `inputs` (origin traces follow every edge), and `li -c` tells them apart
    control_inputs: tuple[str, ...] = ()

    @property
    def short_name(self) -> str:
        """Last path component: `Conv2D-op1`, `conv1.weight`, `cst3`."""
        return self.name.rsplit("/", 1)[-1]

    @property
    def op_id(self) -> int | None:
        m = _OP_ID.search(self.name)
        return int(m.group(1)) if m else None

    @property
    def ui_name(self) -> str:
        """Where the node sits in the scope tree. Operators: their full name. Parameters and
        constants live under the scope of their first consumer, as MindInsight shows them."""
        if self.kind is NodeKind.OPERATOR or not self.scope:
            return self.name
        return f"{self.scope}/{self.name}"

    @property
    def is_parameter(self) -> bool:
        return self.kind is NodeKind.PARAMETER


def distinct_short_names(names: Iterable[str]) -> dict[str, str]:
    """Each name's label where several are shown together: its short name (last path
    component) when no other name shares it, else its shortest scope tail that no other
    name ends with (`fc1/MatMul-op0`, `fc2/MatMul-op0`; MindSpore numbers ops per scope, so
    one view of a graph may hold several `MatMul-op0`). A name that is a whole tail of
    another (`x` beside `a/x`) keeps itself, which the other's longer tail differs from.
    The same name given twice (a node of two graphs) has one label: no tail tells it apart.
    """
    by_short: dict[str, list[list[str]]] = {}
    for name in dict.fromkeys(names):
        parts = name.split("/")
        by_short.setdefault(parts[-1], []).append(parts)
    labels: dict[str, str] = {}
    for short, group in by_short.items():
        if len(group) == 1:
            labels["/".join(group[0])] = short
            continue
        # a tail of k components names only its own node when no other name has that tail:
        # counted per depth, so a group of g names costs g per depth, not g² comparisons
        left = group
        depth = 1
        while left:
            depth += 1
            tails: dict[tuple[str, ...], int] = {}
            for parts in group:
                if len(parts) >= depth:
                    tail = tuple(parts[-depth:])
                    tails[tail] = tails.get(tail, 0) + 1
            unresolved = []
            for parts in left:
                if len(parts) < depth:  # a whole tail of another name: itself is its label
                    labels["/".join(parts)] = "/".join(parts)
                elif tails[tuple(parts[-depth:])] == 1:
                    labels["/".join(parts)] = "/".join(parts[-depth:])
                else:
                    unresolved.append(parts)
            left = unresolved
    return labels


@dataclass(frozen=True)
class ScopeEntry:
    """One row of the scope tree: either a scope (folder) or a node (leaf)."""

    label: str
    path: str
    node: str | None  # the node name for leaves, None for scopes
    child_count: int = 0

    @property
    def is_scope(self) -> bool:
        return self.node is None


class Graph:
    """An immutable graph with lookup, data-flow queries, scopes and categories."""

    def __init__(self, name: str, nodes: Iterable[Node], root_name: str = "") -> None:
        self.name = name
        m = _GRAPH_ID.search(name)
        self.graph_id: int = int(m.group(1)) if m else 0
        self.root_graph_id: int = int(root_name) if root_name.isdigit() else self.graph_id
        self.nodes: dict[str, Node] = {}
        for node in nodes:
            node.graph_name = name
            self.nodes[node.name] = node
        self._place_parameters()

    # ----------------------------------------------------------------- lookup
    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    def __contains__(self, item: object) -> bool:
        """`name in graph` by node name; a `Node` is in the graph when it is that graph's
        node of its name (anything else, hashable or not, is simply not in it)."""
        if isinstance(item, Node):
            return self.nodes.get(item.name) is item
        return isinstance(item, str) and item in self.nodes

    def node(self, name: str) -> Node:
        """The node called `name` (its full name, parameter name or constant key),
        or its UI name (scope + parameter name)."""
        found = self.nodes.get(name) or self._by_ui_name.get(name)
        if found is None:
            raise KeyError(f"no node named {name!r} in graph {self.name}")
        return found

    def get(self, name: str) -> Node | None:
        return self.nodes.get(name) or self._by_ui_name.get(name)

    @cached_property
    def _by_ui_name(self) -> dict[str, Node]:
        return {n.ui_name: n for n in self.nodes.values() if n.kind is not NodeKind.OPERATOR}

    @cached_property
    def operators(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind is NodeKind.OPERATOR]

    @cached_property
    def parameters(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind is NodeKind.PARAMETER]

    @cached_property
    def constants(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind is NodeKind.CONSTANT]

    # -------------------------------------------------------------- data flow
    @cached_property
    def _consumers(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for node in self.nodes.values():
            for src in node.inputs:
                if src in self.nodes:
                    lst = out.setdefault(src, [])
                    if not lst or lst[-1] != node.name:
                        lst.append(node.name)
        return out

    @cached_property
    def digraph(self) -> nx.DiGraph:
        """Data edges producer → consumer (built on first use: large graphs stay cheap to load)."""
        # imported here: networkx takes ~0.15 s to import, and most users of graphs (the
        # checker, the CLI) never need it
        import networkx as nx

        nodes = self.nodes
        with paused_gc():
            g: nx.DiGraph[str] = nx.DiGraph()
            g.add_nodes_from(nodes)
            g.add_edges_from(
                [(src, node.name) for node in nodes.values() for src in node.inputs if src in nodes]
            )
        return g

    def arguments(self, name: str) -> Sequence[tuple[str, str, int]]:
        """A node's arguments as (the tool's label, producing node, output slot), in the
        order its tool recorded them: a foreign call's inputs and parameters
        (`ForeignGraph`), which the node details show each with its statistics and dtype.
        Empty here: a MindSpore node's inputs are its input nodes."""
        return ()

    def inputs(self, name: str) -> list[Node]:
        """Producers of `name`'s inputs, in input order (duplicates kept once)."""
        node = self.node(name)
        seen: dict[str, Node] = {}
        for src in node.inputs:
            if src in self.nodes and src not in seen:
                seen[src] = self.nodes[src]
        return list(seen.values())

    def consumers(self, name: str) -> list[Node]:
        """Nodes that read an output of `name`, in graph order."""
        node = self.node(name)
        return [self.nodes[c] for c in self._consumers.get(node.name, [])]

    def affected(self, name: str) -> list[Node]:
        """Every node downstream of `name` (transitively), in graph order."""
        import networkx as nx

        node = self.node(name)
        down = nx.descendants(self.digraph, node.name)
        return [n for n in self.nodes.values() if n.name in down]

    # ----------------------------------------------------------------- scopes
    def _place_parameters(self) -> None:
        """Parameters and constants carry no scope in the proto; give them their first
        consumer's scope so the tree (and the weight rule of spec §3.2) sees them as
        MindInsight does: `Default/.../conv1-Conv2d/conv1.weight`, optimizer moments under
        `Default/optimizer-…`."""
        pending = {
            n.name for n in self.nodes.values() if n.kind is not NodeKind.OPERATOR and not n.scope
        }
        if not pending:
            return
        for node in self.nodes.values():
            if node.kind is not NodeKind.OPERATOR:
                continue
            for src in node.inputs:
                if src in pending:
                    self.nodes[src].scope = node.scope
                    pending.discard(src)
            if not pending:
                break

    @cached_property
    def _tree(self) -> dict[str, dict[str, str | None]]:
        """scope path → ordered {label: node name or None for a sub-scope}."""
        tree: dict[str, dict[str, str | None]] = {"": {}}
        with paused_gc():
            for node in self.nodes.values():
                scope, _, label = node.ui_name.rpartition("/")
                children = tree.get(scope)
                if children is None:
                    # First node of this scope: create the missing ancestors (nodes of one
                    # scope are mostly adjacent, so this runs once per scope, not per node).
                    path = ""
                    for part in scope.split("/"):
                        parent = tree.setdefault(path, {})
                        child_path = f"{path}/{part}" if path else part
                        if part not in parent:
                            parent[part] = None
                        path = child_path
                    children = tree.setdefault(scope, {})
                children[label] = node.name
        return tree

    def children(self, path: str = "") -> list[ScopeEntry]:
        """Direct children of a scope path ("" = the top), scopes first then nodes, each
        in graph order."""
        children = self._tree.get(path)
        if children is None:
            raise KeyError(f"no scope {path!r} in graph {self.name}")
        scopes: list[ScopeEntry] = []
        leaves: list[ScopeEntry] = []
        for label, node in children.items():
            child_path = f"{path}/{label}" if path else label
            if node is None:
                scopes.append(ScopeEntry(label, child_path, None, len(self._tree[child_path])))
            else:
                leaves.append(ScopeEntry(label, child_path, node, 0))
        return scopes + leaves

    def is_scope(self, path: str) -> bool:
        return path in self._tree and path not in self.nodes

    @cached_property
    def _leaf_counts(self) -> dict[str, int]:
        """Scope path → nodes under it at any depth, summed bottom-up over the tree (one
        pass over scopes and children instead of one pass per path prefix of every node)."""
        tree = self._tree
        counts: dict[str, int] = {}
        for path in sorted(tree, key=lambda p: p.count("/") if p else -1, reverse=True):
            total = 0
            for label, node in tree[path].items():
                if node is None:
                    total += counts.get(f"{path}/{label}" if path else label, 0)
                else:
                    total += 1
            counts[path] = total
        return counts

    def leaf_count(self, path: str) -> int:
        """Number of nodes under a scope, at any depth."""
        return self._leaf_counts.get(path, 0)

    def leaves(self, path: str) -> list[Node]:
        """Nodes under a scope path (or the node itself when `path` names a node)."""
        if path in self.nodes:
            return [self.nodes[path]]
        if path in self._by_ui_name:
            return [self._by_ui_name[path]]
        if path == "":
            return list(self.nodes.values())
        # the names under `path/` are one run of the sorted names ("0" follows "/"), so a
        # scope costs its own size, not the graph's (the graph view asks on every redraw)
        names, order = self._sorted_ui_names
        lo = bisect.bisect_left(names, path + "/")
        hi = bisect.bisect_left(names, path + "0", lo)
        return [self.nodes[name] for name in sorted(order[lo:hi], key=self._position.__getitem__)]

    @cached_property
    def _sorted_ui_names(self) -> tuple[list[str], list[str]]:
        """(ui names sorted, the node name of each): `leaves` finds a scope's by bisection."""
        pairs = sorted((n.ui_name, n.name) for n in self.nodes.values())
        return [ui for ui, _ in pairs], [name for _, name in pairs]

    @cached_property
    def _position(self) -> dict[str, int]:
        """Node name → its place in graph order."""
        return {name: k for k, name in enumerate(self.nodes)}

    def top_scopes(self) -> list[str]:
        return [e.path for e in self.children("") if e.is_scope]

    # ------------------------------------------------------------- categories
    def categories(self, node: Node | str) -> frozenset[Category]:
        return self._categories[node.name if isinstance(node, Node) else node]

    @cached_property
    def _categories(self) -> dict[str, frozenset[Category]]:
        return {n.name: node_categories(n) for n in self.nodes.values()}

    def nodes_in(self, category: Category) -> list[Node]:
        return [n for n in self.nodes.values() if category in self._categories[n.name]]

    # ------------------------------------------------------ a dump tool's own rule
    # The origin trace (core.origins) asks these, so that on a foreign dump it names the
    # node that tool's own NaN/Inf rule names (msprobe's overflow_check); a MindSpore graph
    # keeps the defaults: every input is read and an origin is itself.
    def unread_inputs(self, name: str) -> frozenset[int]:
        """Positions in `name`'s `Node.inputs` that the dump tool's rule does not read
        as a source of NaN/Inf (msprobe: records nested in a list argument)."""
        return frozenset()

    def passed_on(self, name: str) -> tuple[str, ...]:
        """Nodes whose output `name` passes on as its own without reading it as an input
        (msprobe: a module's output made by a call inside it, written before the module);
        the trace follows a NaN/Inf there as it does an unread input."""
        return ()

    def blamed_for(self, name: str) -> str | None:
        """The node the dump tool's rule names when the trace finds the NaN/Inf appearing
        at `name` (msprobe: a parameter's module; None: its rule names none there)."""
        return name


def node_categories(node: Node) -> frozenset[Category]:
    """Spec §3.2, applied to the node's UI name (scope + name for parameters)."""
    cats = {Category.TENSOR}
    full = node.ui_name.lower()
    op_type = node.op_type.lower()
    if node.kind is NodeKind.PARAMETER:
        cats.add(Category.PARAMETER)
        if (
            full.endswith((".weight", ".bias"))
            and "optimizer-" not in full
            and not full.startswith("gradients/")
        ):
            cats.add(Category.WEIGHT)
    is_gradient = (full == "gradients" or full.startswith("gradients/")) and node.kind is (
        NodeKind.OPERATOR
    )
    if is_gradient:
        cats.add(Category.GRADIENT)
    elif op_type in ACTIVATION_TYPES:
        cats.add(Category.ACTIVATION)
    return frozenset(cats)
