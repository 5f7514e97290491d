"""A graph built from the operator names of a dump that has no graph file (Ascend
asynchronous layouts, issue 16 item 2).

How a file name encodes the scope (MindSpore dump.md, Ascend O2 section: "If '.', '/', '\\'
and spaces appear in op_type and op_name, they will be converted to underscores"; its
example `Conv2D.Default_network-WithLossCell__backbone-AlexNet_conv3-Conv2d_Conv2D-op12…`
is the kernel `Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op12`):
the scope path is the name split on `_`, which is lossy, so it is decoded by MindSpore's
naming habits:

* an empty piece (`__`) means the next component begins with `_` (`_backbone-AlexNet`);
* every component below the top is `{attribute}-{Class}` or the kernel `{Type}-op{N}`, so a
  piece without `-` is part of a component whose attribute name holds `_` and is joined to
  the next piece (`fc_1-Dense`);
* names with `/` (some converters keep them) are split on `/` as they are.

Decoding only turns some `_` into `/`, so encoding the node name back (`/` → `_`) gives the
file's `op_name` exactly: the tensor index finds every file under its node whatever the
heuristic chose. Nodes have no edges (the files say nothing of them); op types come from the
file names; `Parameter` files become parameters. Output slots are those seen in files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.core.tensor import UnsupportedDataTypeError, data_type_of
from tuidebug.offline.files.bin_tensors import converted_fit
from tuidebug.offline.files.names import TensorFile

__all__ = ["decode_scope_name", "graph_from_files"]

_TOP_SCOPES = ("Default", "Gradients", "recompute_Default")
# `gradConv2D`: the backward scope of a primitive, a component with no `-`
_GRAD_SCOPE = re.compile(r"grad[A-Z]\w*")


def decode_scope_name(op_name: str) -> str:
    """`Default_network-WithLossCell__backbone-AlexNet_conv3-Conv2d_Conv2D-op12` →
    `Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op12`; a name
    that is not scoped (`Conv2D-op12`, `fc1.weight`) is returned as it is."""
    if "/" in op_name:
        return op_name
    if "_" not in op_name or not op_name.startswith(tuple(t + "_" for t in _TOP_SCOPES)):
        return op_name
    top = next(t for t in _TOP_SCOPES if op_name.startswith(t + "_"))
    pieces = op_name[len(top) + 1 :].split("_")
    parts = [top]
    pending = ""
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        if piece == "" and not last:
            pending += "_"  # `__x`: the next component starts with `_`
            continue
        pending += piece
        if "-" in piece or last or piece in _TOP_SCOPES or _GRAD_SCOPE.fullmatch(piece):
            parts.append(pending)
            pending = ""
        else:
            pending += "_"  # `fc_1-Dense`: part of a component holding `_`
    if pending:
        parts.append(pending.rstrip("_") or pending)
    decoded = "/".join(parts)
    # the decoding must give the file's own name back when encoded (see the docstring)
    return decoded if decoded.replace("/", "_") == op_name else op_name


def graph_from_files(name: str, files: Iterable[TensorFile]) -> Graph:
    """A graph of one node per operator (or parameter) named by `files`, no edges. The
    outputs of `.bin` files converted to the host layout declare the dtype and shape their
    headers give, each only when every file of that output agrees (shapes may vary by
    iteration, and a declared shape would then hide the other files)."""
    found: dict[str, tuple[str, set[int]]] = {}
    # (op name, slot) → the dtypes and host shapes the headers give (None: not known)
    known: dict[tuple[str, int], tuple[set[int | None], set[tuple[int, ...] | None]]] = {}
    for f in files:
        op_type, slots = found.setdefault(f.op_name, (f.op_type, set()))
        if f.is_output:
            slots.add(f.slot)
            dtypes, shapes = known.setdefault((f.op_name, f.slot), (set(), set()))
            fit = converted_fit(f)
            dtypes.add(_data_type(fit[0]) if fit else None)
            shapes.add(fit[1] if fit else None)
    nodes: list[Node] = []
    for op_name, (op_type, slots) in sorted(found.items()):
        outputs = [_spec(s, *known[(op_name, s)]) for s in sorted(slots)]
        if op_type == "Parameter":
            nodes.append(
                Node(op_name, NodeKind.PARAMETER, "Parameter", outputs=outputs, dump_name=op_name)
            )
            continue
        full = decode_scope_name(op_name)
        scope = full.rsplit("/", 1)[0] if "/" in full else ""
        nodes.append(
            Node(full, NodeKind.OPERATOR, op_type, scope=scope, outputs=outputs, dump_name=op_name)
        )
    return Graph(name, nodes)


def _data_type(dtype: np.dtype) -> int | None:
    try:
        return data_type_of(dtype)
    except UnsupportedDataTypeError:
        return None


def _spec(slot: int, dtypes: set[int | None], shapes: set[tuple[int, ...] | None]) -> TensorSpec:
    dtype = next(iter(dtypes)) if len(dtypes) == 1 else None
    shape = next(iter(shapes)) if len(shapes) == 1 else None
    return TensorSpec(slot, dtype, shape)
