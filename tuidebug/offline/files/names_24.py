"""The names MindSpore 2.4+ gives a kernel's dump files (spec §5.2a).

The `.pb`, the `.ir` and the execution order name a kernel `<scope>/<Type>-op<N>` with the
graph's own N. The dump files of MindSpore 2.4+ (measured on 2.10) carry another number: the
index k of the kernel among the nodes of the same scope and the same op type, in `.pb` node
order, counting on across the graphs of a rank in graph-id order. So with six `Cast` kernels
in `hidden-Dense` numbered op3…op8 in the graph, the files say op0…op5, and the file called
`…Cast-op3` belongs to the graph's `Cast-op6`.

2.0-era dumps name kernels by their short, unique graph name (`Cast-op3`) and are not affected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tuidebug.core.graph import Graph
from tuidebug.offline.files.names import encode_dump_name


def kernel_dump_names(graphs: Iterable[Graph]) -> dict[str, dict[str, str]]:
    """Graph name → node name → the encoded `op_name` of the node's 2.4+ dump files, for
    every operator of a rank's graphs. `graphs` must come in graph-id order (the counters
    run on from one graph to the next)."""
    seen: Counter[tuple[str, str]] = Counter()
    names: dict[str, dict[str, str]] = {}
    for graph in graphs:
        own = names.setdefault(graph.name, {})
        for node in graph.operators:
            scope, _, _ = node.name.rpartition("/")
            k = seen[(scope, node.op_type)]
            seen[(scope, node.op_type)] = k + 1
            short = f"{node.op_type}-op{k}"
            own[node.name] = encode_dump_name(f"{scope}/{short}" if scope else short)
    return names
