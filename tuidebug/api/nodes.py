"""Nodes and tensors of a dump as the API shows them (spec §6.2, §6.3): `Node`,
`DebuggerTensor`, and MindInsight's `NodeType` and stack frame type `Source`."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from tuidebug.api.errors import TensorValueError, int_list, validate_slots

if TYPE_CHECKING:
    import numpy as np

    from tuidebug.core.graph import Graph, StackFrame
    from tuidebug.core.graph import Node as GraphNode
    from tuidebug.offline.dump import OfflineDump


class NodeSource(Protocol):
    """What a `Node` asks of the `DumpAnalyzer` that made it (a Protocol rather than the
    class: the analyzer builds nodes, so importing it here would be a circle)."""

    _dump: OfflineDump

    def _sources(self, frames: Iterable[StackFrame]) -> tuple[Source, ...]: ...

    def _input_occurrences(self, node: Node) -> list[Node]: ...


class NodeType(Enum):
    """The kind of a `Node` (`Node.node_type`), MindInsight's enum with its values:
    `n.node_type == NodeType.PARAMETER` or `n.node_type.value == "parameter"`."""

    OPERATOR = "operator"
    PARAMETER = "parameter"
    CONSTANT = "constant"


_NODE_TYPES = {t.value: t for t in NodeType}
# DataType numbers MindInsight 2.0's `PBParser.dtype_mapping` maps to a type (DT_BOOL to
# DT_TENSOR, DT_TUPLE, DT_BASE_INT/UINT/FLOAT); its schema ends at DT_REF (42)
_MI_ELEMENT_TYPES = frozenset({*range(1, 15), 31, 36, 37, 38})
_MI_LAST_TYPE = 42


def _mindinsight_knows(data_type: int, elem_type: int) -> bool:
    """Whether MindInsight counts a tuple element as an output slot
    (`PBParser._get_tuple_item_dtype` is not None): a tensor element type it knows, or an
    element type it maps."""
    return 0 < elem_type <= _MI_LAST_TYPE or data_type in _MI_ELEMENT_TYPES


class Source(dict):
    """One frame of `Node.stack`, as MindInsight's `Source`: attributes `file_path`,
    `line_no`, `code_line` and `has_substack`, and — as MindInsight documents it — a dict
    with those keys (`frame["file_path"]`, `frame.get(...)`, `json.dumps`). Read-only.

    A header line (`# Corresponding code candidate:`) or a line naming no location is a
    frame with `file_path` "" and `line_no` 0 whose `code_line` is the line itself;
    `has_substack` is true on the located frame that opens a ` - ` marked sub-stack.
    `str()` is MindInsight's: `# - path:line  code` (`-` for `has_substack`, else a space)
    or the bare `code_line`; `select_by="code_stack"` matches that string."""

    __slots__ = ()

    def __init__(
        self, file_path: str, line_no: int, code_line: str, has_substack: bool = False
    ) -> None:
        super().__init__(
            file_path=file_path, line_no=line_no, code_line=code_line, has_substack=has_substack
        )

    @property
    def file_path(self) -> str:
        return self["file_path"]

    @property
    def line_no(self) -> int:
        return self["line_no"]

    @property
    def code_line(self) -> str:
        return self["code_line"]

    @property
    def has_substack(self) -> bool:
        return self["has_substack"]

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of the four fields (MindInsight's method)."""
        return dict(self)

    def _read_only(self, *args: object, **kwargs: object) -> Any:
        raise TypeError("A stack frame is read-only.")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((self.file_path, self.line_no, self.code_line, self.has_substack))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Source, (self.file_path, self.line_no, self.code_line, self.has_substack))

    def __repr__(self) -> str:
        return repr(self.to_dict())

    def __str__(self) -> str:
        if not self.file_path:
            return self.code_line
        marker = "-" if self.has_substack else " "
        return f"# {marker} {self.file_path}:{self.line_no}  {self.code_line}"


def source_of(frame: StackFrame) -> Source:
    """A core frame as MindInsight's parser gives it: lines naming no location keep their
    `# ` (MindInsight keeps the stripped line) and `line_no` 0."""
    if not frame.file_path:
        return Source("", 0, f"# {frame.code_line}", False)
    line = 0 if frame.line_no is None else frame.line_no
    return Source(frame.file_path, line, frame.code_line, frame.has_substack)


class Node:
    """A node of a computational graph on one rank (spec §6.2). Not built by users."""

    def __init__(self, analyzer: NodeSource, rank: int, graph: Graph, node: GraphNode) -> None:
        self._analyzer = analyzer
        self._rank = rank
        self._graph = graph
        self._node = node
        self._name = _api_node_name(node)
        self._node_type = _NODE_TYPES[node.kind.value]
        self._stack: tuple[Source, ...] | None = None

    @property
    def name(self) -> str:
        """Operators: full name with scope; parameters: parameter name; constants: key."""
        return self._name

    @property
    def node_type(self) -> NodeType:
        """`NodeType.OPERATOR`, `NodeType.PARAMETER` or `NodeType.CONSTANT`."""
        return self._node_type

    @property
    def stack(self) -> list[Source]:
        """Source stack of an operator, innermost call first, as `Source` frames (each also
        a dict with `file_path`, `line_no`, `code_line`, `has_substack`); parameters and
        constants have none. Candidate headers are frames with `line_no` 0 and
        `code_line` `# Corresponding code candidate:`; a header with no frame after it is
        no stack at all (MindInsight gives the lone header as a frame)."""
        if self._stack is None:
            if self._node_type is not NodeType.OPERATOR:
                self._stack = ()
            else:
                self._stack = self._analyzer._sources(self._node.stack)
        return list(self._stack)

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def graph_name(self) -> str:
        return self._graph.name

    @property
    def root_graph_id(self) -> int:
        return self._graph.root_graph_id

    @property
    def op_type(self) -> str:
        """The operator type (`Conv2D`), `Parameter` or `Const` (a tuidebug addition)."""
        return self._node.op_type

    @property
    def output_slot_size(self) -> int:
        """Output slots, MindInsight's count: one per element of a tuple output whose type
        MindInsight's graph schema knows (a tensor, a scalar, a string, a nested tuple; not a
        monad), so a tuple of monads has none; one for any other output."""
        elements = self._node.tuple_elements
        if elements is None:
            return 1
        return sum(1 for types in elements if _mindinsight_knows(*types))

    def get_input_tensors(
        self, iterations: int | list[int] | None = None, slots: list[int] | None = None
    ) -> list[DebuggerTensor]:
        """Output tensors of the input nodes. `slots` index the concatenated output slots
        of the inputs taken one input at a time, as MindInsight numbers them: a producer
        feeding two inputs holds slots at both places, but each tensor is returned once.
        An `Assign`'s parameter input counts (MindInsight drops it from a three-input
        `Assign`, whose later inputs then start at slot 0)."""
        slots = validate_slots(slots)
        # MindInsight narrows the iterations by this node's root graph first, then by each
        # producer's (the same graph, but an empty list stays empty)
        chosen = self._iterations(iterations)
        out: dict[DebuggerTensor, None] = {}
        offset = 0
        for producer in self._analyzer._input_occurrences(self):
            size = producer.output_slot_size
            wanted = (
                None
                if slots is None
                else [s - offset for s in slots if offset <= s < offset + size]
            )
            if wanted is None or wanted:
                out.update(dict.fromkeys(producer.get_output_tensors(chosen, wanted)))
            offset += size
        return list(out)

    def get_output_tensors(
        self, iterations: int | list[int] | None = None, slots: list[int] | None = None
    ) -> list[DebuggerTensor]:
        """One `DebuggerTensor` per output slot × iteration. Iterations default to those
        dumped for the node's root graph on its rank (`iterations` narrows them; others are
        silently left out). A root graph with no dumped iteration folder (a control-flow
        sub-graph whose kernels wrote nothing) has no default, and lists its tensors at every
        iteration asked for, with no value: MindInsight's rule, so `select_tensors` lists
        them at the selected ranks' iterations."""
        slots = validate_slots(slots)
        chosen = self._iterations(iterations)
        all_slots = range(self.output_slot_size)
        query = list(all_slots) if slots is None else [s for s in all_slots if s in slots]
        return [DebuggerTensor(self, slot, it) for slot in query for it in chosen]

    def _iterations(self, iterations: object) -> list[int]:
        """MindInsight's `_get_iterable_iterations`: None gives the iterations dumped for the
        node's root graph on its rank; given ones are kept if dumped there — all of them when
        nothing was dumped there (its `if expected_range and …` test)."""
        dumped = self._analyzer._dump.iterations(self._rank, self._graph.name)
        if iterations is None:
            return list(dumped)
        given = int_list(iterations, "iterations", None)
        if not dumped:
            return given
        known = set(dumped)
        return [i for i in given if i in known]

    @property
    def _key(self) -> tuple[int, str, str]:
        return (self._rank, self._graph.name, self._node.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return f"rank: {self.rank}\ngraph_name: {self.graph_name}\nnode_name: {self.name}"

    def __repr__(self) -> str:
        return f"Node(rank={self.rank}, graph_name={self.graph_name!r}, name={self.name!r})"


def _api_node_name(node: GraphNode) -> str:
    """MindInsight names `Load` and `*Summary` operators `{scope}/{type}-op{proto index}`
    (spec §6.2); every other node keeps its graph name."""
    if (node.op_type == "Load" or "Summary" in node.op_type) and node.index and node.scope:
        return f"{node.scope}/{node.op_type}-op{node.index}"
    return node.name


class DebuggerTensor:
    """An output tensor of a node at an iteration on a rank (spec §6.3). Not built by users."""

    def __init__(self, node: Node, slot: int, iteration: int | None) -> None:
        self._node = node
        self._slot = slot
        self._iteration = iteration

    @property
    def node(self) -> Node:
        return self._node

    @property
    def slot(self) -> int:
        return self._slot

    @property
    def iteration(self) -> int | None:
        return self._iteration

    @property
    def rank(self) -> int:
        return self._node.rank

    @property
    def root_graph_id(self) -> int:
        return self._node.root_graph_id

    def has_value(self) -> bool:
        """True when a file holds this tensor (constants: never, as in MindInsight). Only
        the tensor's own file counts: MindInsight's also matches any file of the iteration
        whose name contains the node's short name before `.output.<slot>.`, and then says
        True for a tensor whose `value()` is None."""
        if self._iteration is None:
            return False
        node = self._node
        found = node._analyzer._dump.tensor_file(
            node.rank, node.graph_name, node._node.name, self._slot, self._iteration
        )
        return found is not None

    def value(self) -> np.ndarray | None:
        """The value (a read-only array memory-mapped from the dump), or None when the tensor
        was not dumped at that iteration. Constants with a value in the graph file return it.
        An unreadable file raises `TensorValueError` naming it."""
        node = self._node
        if self._iteration is None and node._node.value is None:
            return None
        try:
            return node._analyzer._dump.value(
                node.rank, node.graph_name, node._node.name, self._slot, self._iteration
            )
        except Exception as err:
            from tuidebug.offline.files.npy import TensorFileError

            if isinstance(err, TensorFileError):
                raise TensorValueError(str(err)) from None
            raise

    @property
    def _key(self) -> tuple[tuple[int, str, str], int, int | None]:
        return (self._node._key, self._slot, self._iteration)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DebuggerTensor) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return f"{self._node}\nslot: {self._slot}\niteration: {self._iteration}"

    def __repr__(self) -> str:
        return (
            f"DebuggerTensor(node={self._node.name!r}, slot={self._slot}, "
            f"iteration={self._iteration}, rank={self.rank})"
        )
