"""`TensorEntry`: one tensor of a step as a listing shows it (tfdbg's `lt`, the tensor list).

A listing is built from what is known without reading a single value: the node's graph
declaration (dtype, shape) and, offline, which files the step's folder holds. Sizes come
from the declared shape and dtype; a tensor the graph does not describe is listed with an
unknown shape rather than by opening its file (a step may hold 10⁵ tensors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.core.tensor import UnsupportedDataTypeError, dtype_label, numpy_dtype

__all__ = ["TensorEntry", "entries_of_graph", "entry_for"]


# One per tensor of a step (10⁵ in a big one, built before the first frame of `L`): slots
# and not frozen, because a frozen dataclass sets each field through object.__setattr__
# (several times the cost of building it). Never mutated; unsafe_hash keeps it hashable.
@dataclass(slots=True, unsafe_hash=True)
class TensorEntry:
    """One output tensor of a step. `order` sorts entries in execution order (kernels in
    the order they ran, then parameters and constants); `nbytes` is None when the shape or
    dtype is unknown; `iteration` is the dump iteration (offline) or step (online)."""

    graph: str
    node: str
    slot: int
    op_type: str
    kind: NodeKind
    dtype: str
    shape: tuple[int, ...] | None
    nbytes: int | None
    order: int
    iteration: int | None = None

    @property
    def name(self) -> str:
        return f"{self.node}:{self.slot}"

    @property
    def size(self) -> int | None:
        """Element count, None when the shape is unknown."""
        return None if self.shape is None else math.prod(self.shape)


def _spec(node: Node, slot: int) -> TensorSpec | None:
    for spec in node.outputs:
        if spec.slot == slot:
            return spec
    return None


@lru_cache(maxsize=256)  # a handful of DataType numbers, asked once per entry of a 10⁵ step
def _dtype_info(data_type: int) -> tuple[str, int | None]:
    """The label and item size of a DataType number (no item size when numpy has none)."""
    try:
        np_dtype = numpy_dtype(data_type)
    except (UnsupportedDataTypeError, KeyError, ValueError):
        return dtype_label(data_type), None
    return dtype_label(np_dtype), np_dtype.itemsize


def entry_for(
    graph: Graph,
    node: Node,
    slot: int,
    order: int,
    iteration: int | None = None,
    dtype_name: str | None = None,
) -> TensorEntry:
    """The entry of `node:slot` from its declaration; `dtype_name` (a dump file's type
    name) stands in when the graph declares none."""
    spec = _spec(node, slot)
    dtype, itemsize = "", None
    if spec is not None and spec.dtype:
        dtype, itemsize = _dtype_info(spec.dtype)
    elif dtype_name:
        dtype = dtype_name.lower()
    shape = spec.shape if spec is not None and spec.shape is not None else None
    nbytes = None if shape is None or itemsize is None else math.prod(shape) * itemsize
    return TensorEntry(
        graph=graph.name,
        node=node.name,
        slot=slot,
        op_type=node.op_type,
        kind=node.kind,
        dtype=dtype,
        shape=shape,
        nbytes=nbytes,
        order=order,
        iteration=iteration,
    )


def entries_of_graph(graph: Graph, iteration: int | None = None) -> list[TensorEntry]:
    """Every declared output of the graph's operators and parameters, in graph order (the
    listing of a session that knows no execution order or files, e.g. online)."""
    out: list[TensorEntry] = []
    for order, node in enumerate(graph):
        if node.kind is NodeKind.CONSTANT:
            continue
        for spec in node.outputs or [TensorSpec(0)]:
            out.append(entry_for(graph, node, spec.slot, order, iteration))
    return out
