"""MindSpore graph protos (`ModelProto` files, `GraphProto` messages) → `core.Graph`.

Spec §5.6 (building the graph, code stacks), §1.3 (the messages), §2.14 (names).
`graph_from_proto` works on a message alone: the online session (graphs received over gRPC),
the simulator, the PyTorch adapter and the dump reader (offline/files/graphs.py, which adds what
only a dump has: a file to size-check and decode, and the `.ir` text beside it as a fallback
source of code stacks) all use it. It needs protobuf and the generated messages only.

Graph messages are untrusted: every decode failure becomes one `GraphFileError` sentence
naming the source, and nothing in a message can make the reader recurse deeply or
build unbounded strings (attribute values over 1024 bytes are hidden) or lists: what one
node may declare (shape dimensions, inputs, outputs, attributes) and the graph's inputs in
all are capped, and a graph past a cap is refused with a sentence naming the node
(`GraphLimitError`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from operator import attrgetter
from typing import Any

from google.protobuf import unknown_fields

from tuidebug._proto import debug_graph_pb2 as pb
from tuidebug.core.graph import Graph, Node, NodeKind, StackFrame, TensorSpec, paused_gc

__all__ = [
    "MAX_ATTRIBUTE_BYTES",
    "MAX_GRAPH_INPUTS",
    "MAX_GRAPH_NODES",
    "MAX_NODE_ATTRIBUTES",
    "MAX_NODE_INPUTS",
    "MAX_NODE_OUTPUTS",
    "MAX_SHAPE_DIMS",
    "GraphFileError",
    "GraphLimitError",
    "GraphTooLargeError",
    "check_graph_proto",
    "dtype_label",
    "graph_from_checked_proto",
    "graph_from_proto",
    "parse_ir_stacks",
    "parse_model_proto",
    "parse_source_address",
    "put_raw_enum",
    "raw_enum",
    "render_value",
]

# MindInsight's MAX_GRAPH_NODE_SIZE (spec §2.13 `node_too_large`).
MAX_GRAPH_NODES = 100_000
# MindInsight hides node attribute values larger than this (spec §6.5).
MAX_ATTRIBUTE_BYTES = 1024
# What one node may declare. A shape has at most numpy's 64 dimensions (MindSpore's own
# tensors stay far below); an input names a node, so no node needs more inputs than a graph
# may have nodes; a tuple output (Split, a fused AllReduce…) or an attribute list of a real
# graph is orders of magnitude below these. Past them a file is hostile, not a graph: a
# node declaring a 5,000,000-dimension shape took 700 MB and froze the viewer for 30 s.
MAX_SHAPE_DIMS = 64
MAX_NODE_INPUTS = MAX_GRAPH_NODES
MAX_NODE_OUTPUTS = MAX_GRAPH_NODES
MAX_NODE_ATTRIBUTES = 10_000
# inputs of all nodes together: ten per node at the node limit (real graphs have ~2–3)
MAX_GRAPH_INPUTS = 10 * MAX_GRAPH_NODES
# node names quoted in a limit's sentence are cut to this many characters
_NAME_SHOWN = 200


class GraphFileError(Exception):
    """A graph file that cannot be read or decoded; the message is one sentence naming it."""


class GraphLimitError(GraphFileError):
    """A graph that declares more than tuidebug accepts for one node (shape dimensions,
    inputs, outputs, attributes) or in all (inputs); the message names the node."""


class GraphTooLargeError(Exception):
    """A graph with more nodes than the viewer accepts (spec §2.13 `node_too_large`)."""

    def __init__(self, message: str, node_count: int, limit: int) -> None:
        super().__init__(message)
        self.node_count = node_count
        self.limit = limit


def parse_model_proto(data: bytes, source: str) -> pb.ModelProto:
    """Decode a serialized `ModelProto`; `source` names the file in the error sentence."""
    model = pb.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # DecodeError, RecursionError, … all mean "not a graph"
        raise GraphFileError(
            f"{source} is not a readable MindSpore graph file (it is damaged or truncated)."
        ) from exc
    # An empty or foreign file can decode "successfully" into an empty message: garbage
    # bytes land in unknown fields. A graph file without a named graph is no graph file.
    if not model.HasField("graph") or not (model.graph.name or len(model.graph.node)):
        raise GraphFileError(f"{source} holds no MindSpore graph.")
    return model


# ====================================================================== graph


# DataType numbers used below (spec §1.3).
_DT_UNDEFINED = 0
_DT_BOOL = 1
_DT_FLOAT64 = 12
_DT_TENSOR = 14
_DT_TUPLE = 31
_DT_LIST = 32
_DT_NONE = 34


def graph_from_proto(
    graph_proto: pb.GraphProto,
    stacks_fallback: Mapping[str, list[StackFrame]] | None = None,
    *,
    limit: int | None = MAX_GRAPH_NODES,
    source: str | None = None,
) -> Graph:
    """Build a `Graph` from a `GraphProto` (spec §5.6).

    Parameters and constants come first, then operators in the proto's (topological)
    order. `stacks_fallback` maps kernel full names to stacks for nodes whose
    `source_address` is empty (see `stacks_from_ir`). More than `limit` nodes (parameters +
    constants + operators) raises `GraphTooLargeError`; `limit=None` accepts any size.
    A node that declares more than the `MAX_SHAPE_DIMS`… caps raises `GraphLimitError`,
    and a graph whose nodes all lack a name (so none can be shown) `GraphFileError`,
    whatever `limit`. `source` starts their sentences ("Graph file …"; default: the
    graph's name).
    """
    what = source or f"Graph {_text(graph_proto.name) or '(unnamed)'}"
    check_graph_proto(graph_proto, limit, what)
    return graph_from_checked_proto(graph_proto, stacks_fallback or {}, what)


def check_graph_proto(graph_proto: pb.GraphProto, limit: int | None, what: str) -> None:
    """Refuse a graph past `limit` nodes (`GraphTooLargeError`) or past one of the caps
    (`GraphLimitError`); `what` starts the sentence. `graph_from_proto` in two halves, for a
    reader that has more to do in between (read the `.ir` only for an acceptable graph)."""
    too_large = _too_large(graph_proto, limit, what)
    if too_large is not None:
        raise too_large
    _check_limits(graph_proto, what)


def graph_from_checked_proto(
    graph_proto: pb.GraphProto, fallback: Mapping[str, list[StackFrame]], what: str
) -> Graph:
    """The graph of a proto whose limits were checked (`check_graph_proto`)."""
    with paused_gc():
        graph = _build_graph(graph_proto, fallback)
    if not len(graph) and len(graph_proto.node):
        # MindSpore names every node (its index): a file whose nodes are all nameless is not
        # MindSpore's, and "no node matches" would blame the user's watchpoints for it
        count = len(graph_proto.node)
        whose = "none of them has a name" if count != 1 else "it has no name"
        raise GraphFileError(
            f"{what} declares {count:,} node{'s' if count != 1 else ''} but {whose}, so the "
            "graph has no node to show or check."
        )
    return graph


def _shown_name(name: str | bytes) -> str:
    text = _text(name)
    return text if len(text) <= _NAME_SHOWN else text[:_NAME_SHOWN] + "…"


def _check_limits(graph_proto: pb.GraphProto, what: str) -> None:
    """Raise `GraphLimitError` for the first declaration past a cap (see MAX_SHAPE_DIMS),
    before anything is built from it. Only list lengths are read (O(1) each); names are
    rendered only for the sentence."""

    def refuse(subject: str, claim: str, cap: int) -> GraphLimitError:
        return GraphLimitError(
            f"{what}: {subject} {claim}, more than the {cap:,} tuidebug accepts, so the "
            "graph was not read."
        )

    def too_many_dims(type_proto: pb.TypeProto) -> int:
        """The dimension count of a shape past MAX_SHAPE_DIMS (tensor or tuple element), or
        0; raises for too many tuple elements."""
        if type_proto.HasField("tensor_type") and type_proto.tensor_type.HasField("shape"):
            dims = len(type_proto.tensor_type.shape.dim)
            if dims > MAX_SHAPE_DIMS:
                return dims
        if type_proto.HasField("sequence_type"):
            for elem in type_proto.sequence_type.elem_types:  # MindSpore's tuples hold tensors
                if elem.HasField("tensor_type") and elem.tensor_type.HasField("shape"):
                    dims = len(elem.tensor_type.shape.dim)
                    if dims > MAX_SHAPE_DIMS:
                        return dims
        return 0

    total_inputs = 0
    for proto in graph_proto.node:
        n_inputs = len(proto.input)
        n_attrs = len(proto.attribute)
        n_outputs = 0
        dims = 0
        if proto.HasField("output_type"):
            out = proto.output_type
            if out.HasField("sequence_type"):
                n_outputs = len(out.sequence_type.elem_types)
            if n_outputs <= MAX_NODE_OUTPUTS:
                dims = too_many_dims(out)
        total_inputs += n_inputs
        if (
            n_inputs > MAX_NODE_INPUTS
            or n_attrs > MAX_NODE_ATTRIBUTES
            or n_outputs > MAX_NODE_OUTPUTS
            or dims
        ):
            node = f"node {_shown_name(proto.full_name or proto.name) or '(without a name)'}"
            if n_inputs > MAX_NODE_INPUTS:
                raise refuse(node, f"has {n_inputs:,} inputs", MAX_NODE_INPUTS)
            if n_attrs > MAX_NODE_ATTRIBUTES:
                raise refuse(node, f"has {n_attrs:,} attributes", MAX_NODE_ATTRIBUTES)
            if n_outputs > MAX_NODE_OUTPUTS:
                raise refuse(node, f"declares {n_outputs:,} outputs", MAX_NODE_OUTPUTS)
            raise refuse(node, f"declares a shape of {dims:,} dimensions", MAX_SHAPE_DIMS)
    if total_inputs > MAX_GRAPH_INPUTS:
        raise refuse("its nodes", f"have {total_inputs:,} inputs in all", MAX_GRAPH_INPUTS)
    for param in graph_proto.parameters:
        if param.HasField("type") and (dims := too_many_dims(param.type)):
            subject = f"parameter {_shown_name(param.name)}"
            raise refuse(subject, f"declares a shape of {dims:,} dimensions", MAX_SHAPE_DIMS)
    for cst in graph_proto.const_vals:
        if cst.HasField("value") and cst.value.HasField("tensor_val"):
            dims = len(cst.value.tensor_val.dims)
            if dims > MAX_SHAPE_DIMS:
                subject = f"constant {_shown_name(cst.key)}"
                raise refuse(subject, f"declares a shape of {dims:,} dimensions", MAX_SHAPE_DIMS)


def _too_large(
    graph_proto: pb.GraphProto, limit: int | None, what: str
) -> GraphTooLargeError | None:
    """The error for a graph over `limit` nodes (parameters + constants + operators)."""
    if limit is None:
        return None
    total = (
        sum(1 for n in graph_proto.node if n.name)
        + len(graph_proto.parameters)
        + len(graph_proto.const_vals)
    )
    if total <= limit:
        return None
    return GraphTooLargeError(
        f"{what} has {total:,} nodes, more than the {limit:,} tuidebug can show.", total, limit
    )


def _build_graph(graph_proto: pb.GraphProto, fallback: Mapping[str, list[StackFrame]]) -> Graph:
    name = _text(graph_proto.name)
    protos = [n for n in graph_proto.node if n.name]

    nodes: list[Node] = []
    used: set[str] = set()
    # input name → producing Node.name. Spec §5.6 looks names up in constants, then
    # parameters, then the other nodes' `name` index; one dict filled in the reverse order
    # (later entries win) gives the same answer with a single lookup per input.
    resolve: dict[str, str] = {}
    const_nodes: list[Node] = []
    param_nodes: list[Node] = []

    for cst in graph_proto.const_vals:
        key = _text(cst.key)
        if not key or key in used:
            continue
        used.add(key)
        const_nodes.append(_constant_node(cst, key))

    for param in graph_proto.parameters:
        pname = _text(param.name)
        if not pname or pname in used:
            continue
        used.add(pname)
        spec = _tensor_spec(param.type, 0) if param.HasField("type") else TensorSpec(0)
        param_nodes.append(
            Node(name=pname, kind=NodeKind.PARAMETER, op_type="Parameter", outputs=[spec])
        )

    # Names first (inputs may in principle point forward), then the nodes themselves.
    heads: list[tuple[str, str, str, str]] = []  # (node name, index, op type, scope)
    for proto in protos:
        index = proto.name
        op_type = proto.op_type
        scope = proto.scope
        full_name = proto.full_name
        # Exact type checks: cheaper than calling _text on every field of every node, and
        # only damaged files (invalid UTF-8 → bytes, see _text) take the slow path.
        if type(index) is not str or type(op_type) is not str or type(scope) is not str:
            index, op_type, scope = _text(index), _text(op_type), _text(scope)
        if type(full_name) is not str:
            full_name = _text(full_name)
        if full_name:
            node_name = full_name
            if not scope and "/" in full_name:
                scope = full_name.rsplit("/", 1)[0]
        else:
            # spec §2.14: MindInsight's name for a node without full name
            short = f"{op_type or 'Node'}-op{index}"
            node_name = f"{scope}/{short}" if scope else short
        if node_name in used:
            node_name = _unique(node_name, index, used)
        used.add(node_name)
        heads.append((node_name, index, op_type, scope))
        if index not in resolve:
            resolve[index] = node_name
    for node in param_nodes:
        resolve[node.name] = node.name
    for node in const_nodes:
        resolve[node.name] = node.name
    nodes.extend(param_nodes)
    nodes.extend(const_nodes)

    stacks = _StackParser()
    # Attribute lists and output types repeat across nodes (`format: NCHW`, the same
    # shapes layer after layer): render each distinct serialized form once.
    attr_cache: dict[tuple[bytes, ...], dict[str, str]] = {}
    output_cache: dict[bytes, tuple[list[TensorSpec], tuple[tuple[int, int], ...] | None]] = {}
    operator = NodeKind.OPERATOR
    for proto, (node_name, index, op_type, scope) in zip(protos, heads, strict=True):
        attrs = proto.attribute
        if attrs:
            akey = tuple(map(_serialize_attribute, attrs))
            rendered = attr_cache.get(akey)
            if rendered is None:
                rendered = attr_cache[akey] = {_text(a.name): render_value(a.value) for a in attrs}
            attributes = dict(rendered)  # each node owns its dict
        else:
            attributes = {}
        if proto.HasField("output_type"):
            okey = proto.output_type.SerializeToString()
            cached = output_cache.get(okey)
            if cached is None:
                cached = output_cache[okey] = (_output_specs(proto), _tuple_elements(proto))
            specs, elements = cached
            outputs = list(specs)  # TensorSpecs are frozen, so sharing them is safe
        else:
            outputs, elements = [TensorSpec(0)], None
        source = proto.source_address
        if type(source) is not str:
            source = _text(source)
        edges = proto.input
        # control edges are rare: one C-level pass looks for any before a Python one
        controls = (
            tuple(resolve.get(r.name) or _text(r.name) for r in edges if r.type == _CONTROL)
            if any(map(_type_of, edges))
            else ()
        )
        nodes.append(
            Node(
                name=node_name,
                kind=operator,
                op_type=op_type,
                scope=scope,
                index=index,
                inputs=[resolve.get(r) or _text(r) for r in map(_name_of, edges)],
                outputs=outputs,
                attributes=attributes,
                stack=stacks.parse(source) if source else list(fallback.get(node_name, ())),
                tuple_elements=elements,
                control_inputs=controls,
            )
        )
    return Graph(name, nodes, root_name=_text(graph_proto.root_name))


def _text(value: str | bytes) -> str:
    """A proto2 string field as text. upb hands out `bytes` for fields holding invalid
    UTF-8; a damaged dump must still load, so those are decoded with replacement marks."""
    if isinstance(value, str):
        return value
    return value.decode("utf-8", "replace")


# C-level callables for the per-node hot loop (no Python frame per attribute or input).
_serialize_attribute = pb.AttributeProto.SerializeToString
_name_of = attrgetter("name")
_type_of = attrgetter("type")
_CONTROL = pb.InputProto.CONTROL_EDGE


def _unique(candidate: str, index: str, used: set[str]) -> str:
    """A name not used yet: damaged or hand-made graphs may repeat full names, and a silent
    overwrite would drop a node and rewire its edges."""
    if candidate not in used:
        return candidate
    alt = f"{candidate}#{index}"
    n = 1
    while alt in used:
        n += 1
        alt = f"{candidate}#{index}.{n}"
    return alt


def _constant_node(cst: pb.NamedValueProto, key: str) -> Node:
    value = cst.value
    scalar = _scalar(value) if cst.HasField("value") else None
    spec = TensorSpec(0)
    if cst.HasField("value"):
        dtype = raw_enum(value, "dtype", 1)
        if value.HasField("tensor_val"):
            tensor = value.tensor_val
            spec = TensorSpec(0, raw_enum(tensor, "data_type", 5), tuple(tensor.dims))
        elif dtype is not None and _DT_BOOL <= dtype <= _DT_FLOAT64:
            spec = TensorSpec(0, dtype, ())
    return Node(
        name=key,
        kind=NodeKind.CONSTANT,
        op_type="Const",
        outputs=[spec],
        dump_name=_text(cst.full_name),
        value=scalar,
    )


def _scalar(value: pb.ValueProto) -> Any:
    """The Python scalar a ValueProto holds, or None (tensors, tuples, graphs…)."""
    if value.HasField("bool_val"):
        return value.bool_val
    if value.HasField("int_val"):
        return value.int_val
    if value.HasField("uint_val"):
        return value.uint_val
    if value.HasField("float_val"):
        return value.float_val
    if value.HasField("double_val"):
        return value.double_val
    if value.HasField("str_val"):
        return _text(value.str_val)
    return None


def raw_enum(message: Any, field: str, number: int) -> int | None:
    """A DataType field as a raw integer, None when absent.

    proto2 enums are closed: a number this schema does not know (DT_BFLOAT16, DT_INT4 of
    newer exporters, spec §9) is parked in the unknown fields and the getter says 0, so the
    raw number is recovered from there."""
    if message.HasField(field):
        return int(getattr(message, field))
    # indexed, not iterated: the set has only __getitem__/__len__ (iteration works at run time
    # through the old sequence protocol, which type checkers do not follow)
    fields = unknown_fields.UnknownFieldSet(message)
    for i in range(len(fields)):
        unknown = fields[i]
        if unknown.field_number == number and unknown.wire_type == 0:
            return int(unknown.data)
    return None


def put_raw_enum(message: Any, field: str, number: int, value: int) -> None:
    """Set a proto2 enum field to `value`, also to a number the closed enum does not know
    (tuidebug's own DT_BFLOAT16_TUIDEBUG): python protobuf refuses such a number as an
    attribute, so it is written as the raw varint field, which a reader recovers with
    `raw_enum` (and an older reader sees as unset)."""
    enum = message.DESCRIPTOR.fields_by_name[field].enum_type
    if value in enum.values_by_number:
        setattr(message, field, value)
        return
    message.MergeFromString(_varint(number << 3) + _varint(value))  # wire type 0: varint


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _shape(tensor_type: pb.TypeProto.Tensor) -> tuple[int, ...] | None:
    if not tensor_type.HasField("shape"):
        return None
    return tuple(d.size for d in tensor_type.shape.dim)


def _tensor_spec(type_proto: pb.TypeProto, slot: int) -> TensorSpec:
    """Dtype/shape of a TypeProto that describes a tensor (or a bare scalar type)."""
    if type_proto.HasField("tensor_type"):
        tensor_type = type_proto.tensor_type
        dtype = raw_enum(tensor_type, "elem_type", 1)
        if dtype == _DT_UNDEFINED:
            dtype = None
        return TensorSpec(slot, dtype, _shape(tensor_type))
    return TensorSpec(slot)


def _output_specs(proto: pb.NodeProto) -> list[TensorSpec]:
    """spec §5.6: DT_TENSOR → one slot; DT_TUPLE → one slot per element of known dtype
    (slots keep the element position); anything else → one slot without tensor info."""
    out_type = proto.output_type
    kind = raw_enum(out_type, "data_type", 1)
    if kind == _DT_TENSOR or (kind is None and out_type.HasField("tensor_type")):
        return [_tensor_spec(out_type, 0)]
    if kind == _DT_TUPLE and out_type.HasField("sequence_type"):
        specs = []
        for i, elem in enumerate(out_type.sequence_type.elem_types):
            elem_kind = raw_enum(elem, "data_type", 1)
            if elem_kind == _DT_TENSOR:
                spec = _tensor_spec(elem, i)
                if spec.dtype is not None:
                    specs.append(spec)
            elif elem_kind is not None and _DT_BOOL <= elem_kind <= _DT_FLOAT64:
                specs.append(TensorSpec(i, elem_kind, ()))
        return specs or [TensorSpec(0)]
    return [TensorSpec(0)]


def _tuple_elements(proto: pb.NodeProto) -> tuple[tuple[int, int], ...] | None:
    """`(data_type, tensor elem_type)` of each element of a tuple output, raw numbers (0 when
    absent); None when the output is not a tuple."""
    out_type = proto.output_type
    if raw_enum(out_type, "data_type", 1) != _DT_TUPLE:
        return None
    return tuple(
        (raw_enum(e, "data_type", 1) or 0, raw_enum(e.tensor_type, "elem_type", 1) or 0)
        for e in out_type.sequence_type.elem_types
    )


# ====================================================================== attributes

_DTYPE_NAMES = {v.number: v.name for v in pb.DataType.DESCRIPTOR.values}


def dtype_label(number: int | None) -> str:
    """`Float32`-style label of a DataType number (`DT_45` for numbers we do not know)."""
    if number is None:
        return "?"
    name = _DTYPE_NAMES.get(number)
    if name is None:
        return f"DT_{number}"
    return name[3:].capitalize()


def render_value(value: pb.ValueProto) -> str:
    """A short, one-line rendering of an attribute value, as the `.ir` prints them
    (`5`, `valid`, `(1, 1, 2, 2)`, `[x, w]`). Values over 1024 bytes are hidden (spec §6.5)."""
    size = value.ByteSize()
    if size > MAX_ATTRIBUTE_BYTES:
        return f"<{size} bytes, hidden>"
    return _render(value)


def _render(value: pb.ValueProto) -> str:
    if value.HasField("bool_val"):
        return "true" if value.bool_val else "false"
    if value.HasField("int_val"):
        return str(value.int_val)
    if value.HasField("uint_val"):
        return str(value.uint_val)
    if value.HasField("float_val"):
        return f"{value.float_val:.7g}"
    if value.HasField("double_val"):
        return repr(value.double_val)
    if value.HasField("str_val"):
        return _text(value.str_val)
    if value.HasField("tensor_val"):
        t = value.tensor_val
        return f"Tensor[{dtype_label(raw_enum(t, 'data_type', 5))}]{tuple(t.dims)}"
    if value.HasField("graph"):
        return f"<graph {_text(value.graph.name)}>"
    if value.HasField("type_val"):
        return _render_type(value.type_val)
    items: list[str] = []
    items.extend("true" if b else "false" for b in value.bool_vals)
    items.extend(str(i) for i in value.int_vals)
    items.extend(str(i) for i in value.uint_vals)
    items.extend(f"{f:.7g}" for f in value.float_vals)
    items.extend(repr(d) for d in value.double_vals)
    items.extend(map(_text, value.str_vals))
    items.extend(
        f"Tensor[{dtype_label(raw_enum(t, 'data_type', 5))}]{tuple(t.dims)}"
        for t in value.tensor_vals
    )
    items.extend(f"<graph {_text(g.name)}>" for g in value.graphs)
    items.extend(_render(v) for v in value.values)
    if value.dict_val:
        return (
            "{" + ", ".join(f"{_text(kv.key)}: {_render(kv.value)}" for kv in value.dict_val) + "}"
        )
    if value.dtype == _DT_LIST:
        return "[" + ", ".join(items) + "]"
    if items or value.dtype == _DT_TUPLE:
        return "(" + ", ".join(items) + ")"
    if value.dtype == _DT_NONE:
        return "None"
    return ""


def _render_type(type_proto: pb.TypeProto) -> str:
    kind = raw_enum(type_proto, "data_type", 1)
    if type_proto.HasField("tensor_type"):
        elem = raw_enum(type_proto.tensor_type, "elem_type", 1)
        return f"Tensor[{dtype_label(elem)}]"
    if type_proto.HasField("sequence_type"):
        inner = ", ".join(_render_type(t) for t in type_proto.sequence_type.elem_types)
        return f"Tuple[{inner}]"
    return dtype_label(kind)


# ====================================================================== stacks

# A location in any of the three forms of spec §5.6, then optionally `/<code>/`:
#   In file p:12/code/        In file p:12~14, 4~20/code/        In file p(12)
# The path is matched lazily up to the first `:N` (or `(N)`) that is followed by `/`, a
# range or the end of the line: paths contain `/`, Windows paths contain `:`. The colon
# forms are tried first so a `(1)` inside a directory name does not end the path.
_LOC_COLON = re.compile(
    r"In file (?P<path>.+?):(?P<line>\d+)(?:~\d+)?(?:,\s*\d+~\d+)?(?:/(?P<code>.*?)/?)?$"
)
_LOC_PAREN = re.compile(r"In file (?P<path>.+?)\((?P<line>\d+)\)(?:/(?P<code>.*?)/?)?$")
# "Corresponding forward node candidate:", "Corresponding code candidate:", …
_HEADER = re.compile(r"^Corresponding .*candidates?:?\s*$", re.IGNORECASE)


def _split_marker(line: str) -> tuple[str, str]:
    """(marker, rest) of one source_address line: marker "-" starts a sub-stack, " " (the
    indented continuation) stays in it, "" is a plain frame."""
    text = line.strip()
    if text.startswith("#"):
        text = text[1:]
        if text.startswith(" "):
            text = text[1:]
    if text.startswith(" - ") or text.startswith("- "):
        return "-", text.split("-", 1)[1].strip()
    if text.startswith("  "):
        return " ", text.strip()
    return "", text.strip()


def parse_location(text: str, group: int = 0) -> StackFrame:
    """One `In file …` location (any of the three forms) → a frame; anything else → a
    frame with only `code_line` (MindInsight keeps unparseable lines that way)."""
    m = _LOC_COLON.match(text) or _LOC_PAREN.match(text)
    if m is None:
        return StackFrame("", None, text, group)
    return StackFrame(
        m.group("path"), _line_number(m.group("line")), (m.group("code") or "").strip(), group
    )


# No source file has a line past 18 digits; a stack from a dump may claim one, and int() of
# more than 4,300 digits raises ValueError (CPython's limit), which would make the whole
# graph unreadable for one absurd frame: such a frame keeps its path without a line.
_MAX_LINE_DIGITS = 18


def _line_number(digits: str) -> int | None:
    return int(digits) if len(digits) <= _MAX_LINE_DIGITS else None


def parse_source_address(text: str) -> list[StackFrame]:
    """`NodeProto.source_address` → frames, innermost call first (as MindSpore writes it).

    Header lines such as "Corresponding forward node candidate:" are kept as code-only
    frames and open a new `group`; each ` - ` marked line starts another sub-stack, and its
    frame has `has_substack` (MindInsight's flag). A header followed by no frame names no
    code: it is dropped, so a header-only `source_address` is an empty stack."""
    return _StackParser().parse(text)


class _StackParser:
    """Parses many `source_address` strings, remembering what it has seen: the same lines
    (and often whole stacks) repeat across thousands of nodes of a big graph, and frames
    are immutable, so each distinct line is split and matched once."""

    def __init__(self) -> None:
        self._stacks: dict[str, list[StackFrame]] = {}
        self._lines: dict[str, tuple[str, bool, str]] = {}
        self._frames: dict[tuple[str, int, bool], StackFrame] = {}

    def parse(self, text: str) -> list[StackFrame]:
        known = self._stacks.get(text)
        if known is None:
            known = self._stacks[text] = self._parse(text)
        return list(known)  # each node owns its list

    def _parse(self, text: str) -> list[StackFrame]:
        frames: list[StackFrame] = []
        group = 0
        group_has_frames = False
        dangling = False  # the last frame is a header that no frame has followed yet
        lines = self._lines
        cache = self._frames
        for raw in text.splitlines():
            split = lines.get(raw)
            if split is None:
                marker, rest = _split_marker(raw)
                split = lines[raw] = (marker, bool(_HEADER.match(rest)), rest)
            marker, is_header, rest = split
            if not rest:
                continue
            if is_header:
                if dangling:
                    frames.pop()  # the previous header named no frame: this one takes its group
                else:
                    group += 1
                dangling = True
                group_has_frames = False
                frames.append(StackFrame("", None, rest, group))
                continue
            opens = marker == "-"
            if opens and (group == 0 or group_has_frames):
                group += 1
            group_has_frames = True
            dangling = False
            frame = cache.get((rest, group, opens))
            if frame is None:
                frame = parse_location(rest, group)
                if opens and frame.file_path:
                    frame = replace(frame, has_substack=True)
                cache[(rest, group, opens)] = frame
            frames.append(frame)
        if dangling:
            frames.pop()
        return frames


# `# Fullname with scope: (X)` in 2.x `.ir` files; older ones spell it `full_name_with_scope`.
_IR_FULLNAME = re.compile(
    r"^\s*#?\s*:?\s*(?:Fullname with scope|full_name_with_scope)\s*:\s*\((?P<name>.*)\)\s*$",
    re.IGNORECASE,
)


def parse_ir_stacks(lines: Iterable[str]) -> dict[str, list[StackFrame]]:
    """Parse `.ir` text: after each `Fullname with scope: (X)` line, the `# In file` /
    `# inlined:In file` comment lines are X's stack. The `.ir` lists the outermost call
    first; frames are reversed per group to match `source_address` (innermost first)."""
    stacks: dict[str, list[StackFrame]] = {}
    current: str | None = None
    groups: list[list[StackFrame]] = []

    def finish() -> None:
        if current is None:
            return
        frames: list[StackFrame] = list(reversed(groups[0]))
        number = 0
        for g in groups[1:]:
            # Groups after the first open with their header line, which stays first; a
            # header with no frame after it names no code and is dropped. The innermost
            # frame, first after reversing, opens the sub-stack as ` - ` does in a `.pb`.
            if len(g) < 2:
                continue
            number += 1
            body = [replace(f, group=number) for f in reversed(g[1:])]
            if body[0].file_path:
                body[0] = replace(body[0], has_substack=True)
            frames.append(replace(g[0], group=number))
            frames.extend(body)
        if frames:
            stacks.setdefault(current, frames)

    for line in lines:
        m = _IR_FULLNAME.match(line)
        if m:
            finish()
            current = m.group("name")
            groups = [[]]
            continue
        if current is None:
            continue
        text = line.strip()
        if not text.startswith("#"):
            finish()
            current = None
            continue
        text = text[1:].strip()
        if text.startswith("inlined:"):
            text = text[len("inlined:") :].strip()
        if not text:
            continue
        if _HEADER.match(text):
            groups.append([StackFrame("", None, text, len(groups))])
            continue
        groups[-1].append(parse_location(text, len(groups) - 1))
    finish()
    return stacks
