#!/usr/bin/env python3
"""Graph loading at the size limit: a synthetic 100,000-node `GraphProto` → `core.Graph`.

Builds a graph shaped like a big MindSpore training graph (forward blocks under
`Default/network-…`, their gradients under `Gradients/…`, optimizer kernels, weights and
moments as parameters, constants), serialises it, then times what opening it costs:

    parse            ModelProto.FromString of the serialized bytes
    graph_from_proto building the Graph (names, inputs, outputs, attributes, stacks)
    scope listing    the first scope-tree listing (top level + first expanded scope)
    digraph          the networkx DiGraph used by inputs/consumers/affected queries
    graph view       the graph view's (`G`) first picture around a mid-graph operator
                     (scopes closed, depth 2), and a redraw (median of 10): each costs
                     the boxes drawn, not the graph

Target (DESIGN.md): the total stays under 2 s on the project machine.

Usage: python benchmarks/bench_graph.py [--nodes N] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from tuidebug._proto import debug_graph_pb2 as pb
from tuidebug.core.graph_pb import graph_from_proto
from tuidebug.tui.neighbours.neighbourhood import neighbourhood

_FORWARD_OPS = ["Conv2D", "BiasAdd", "ReLU", "MatMul", "Add", "Mul", "Cast", "Reshape"]
_BACKWARD_OPS = ["Conv2DBackpropInput", "Conv2DBackpropFilter", "ReluGrad", "MatMul", "Add"]


def _tensor_type(target: Any, dims: tuple[int, ...]) -> None:
    target.data_type = pb.DT_TENSOR
    target.tensor_type.elem_type = pb.DT_FLOAT32
    for d in dims:
        target.tensor_type.shape.dim.add(size=d)


def _stack(rng: random.Random, block: int) -> str:
    frames = [
        f"/venv/site-packages/mindspore/nn/layer/conv.py:{rng.randint(300, 400)}, 17~44/"
        "        output = self.conv2d(x, self.weight)/",
        f"/work/model/net.py:{100 + block % 50}, 8~40/        x = self.block{block}(x)/",
        "/venv/site-packages/mindspore/nn/wrap/cell_wrapper.py:122, 14~28/"
        "        out = self._backbone(data)/",
        "/venv/site-packages/mindspore/nn/wrap/cell_wrapper.py:442, 15~27/"
        "        loss = self.network(*inputs)/",
    ]
    return "".join(f"      # In file {f}\n" for f in frames)


def build_graph_proto(total_nodes: int, seed: int = 0) -> pb.GraphProto:
    """A synthetic graph of `total_nodes` nodes (parameters + constants + operators)."""
    rng = random.Random(seed)
    graph = pb.GraphProto(name="kernel_graph_0", root_name="0")
    n_params = total_nodes // 50
    n_consts = total_nodes // 200
    n_ops = total_nodes - n_params - n_consts
    blocks = max(1, n_ops // 200)

    params = []
    for i in range(n_params):
        name = f"block{i % blocks}.conv{i // blocks}.weight"
        if i % 4 == 3:
            name = "moments." + name
        p = graph.parameters.add(name=name)
        _tensor_type(p.type, (64, 64, 3, 3))
        params.append(name)
    consts = []
    for i in range(n_consts):
        key = f"cst{i + 1}"
        c = graph.const_vals.add(key=key, full_name=f"Default--data-{i}")
        c.value.dtype = pb.DT_INT64
        c.value.int_val = i
        consts.append(key)

    for i in range(n_ops):
        index = str(i + 1)
        fraction = i / n_ops
        block = int(fraction * blocks * 2) % blocks
        if fraction < 0.45:
            scope = (
                f"Default/network-WithLossCell/_backbone-Net/block{block}-Block/conv{i % 3}-Conv2d"
            )
            op = _FORWARD_OPS[i % len(_FORWARD_OPS)]
        elif fraction < 0.9:
            scope = (
                f"Gradients/Default/network-WithLossCell/_backbone-Net/block{block}-Block/"
                f"conv{i % 3}-Conv2d/Grad_Conv2D"
            )
            op = _BACKWARD_OPS[i % len(_BACKWARD_OPS)]
        else:
            scope = "Default/optimizer-Momentum"
            op = "ApplyMomentum"
        node = graph.node.add(name=index, op_type=op, scope=scope)
        node.full_name = f"{scope}/{op}-op{i}"
        for k in range(rng.randint(1, 3)):
            r = rng.random()
            if i == 0 or r < 0.15:
                ref = params[rng.randrange(len(params))]
            elif r < 0.2:
                ref = consts[rng.randrange(len(consts))]
            else:
                # mostly recent producers, as in a real layer-by-layer graph
                ref = str(max(1, i - rng.randint(0, 20) - k))
            node.input.add(name=ref)
        node.attribute.add(name="format").value.str_val = "NCHW"
        node.attribute.add(name="pad_mode").value.str_val = "same"
        stride = node.attribute.add(name="stride").value
        stride.dtype = pb.DT_TUPLE
        for _ in range(4):
            stride.values.add(dtype=pb.DT_INT64, int_val=1)
        node.attribute.add(name="IsFeatureMapOutput").value.bool_val = True
        _tensor_type(node.output_type, (32, 64, 56, 56))
        node.source_address = _stack(rng, block)
    return graph


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def run_once(data: bytes) -> dict[str, float]:
    t_parse, model = _timed(lambda: pb.ModelProto.FromString(data))
    t_build, graph = _timed(lambda: graph_from_proto(model.graph))

    def listing() -> int:
        top = graph.children("")
        first = graph.children(top[0].path)
        return len(top) + len(first) + graph.leaf_count(top[0].path)

    t_tree, _ = _timed(listing)
    t_digraph, dg = _timed(lambda: graph.digraph)
    assert dg.number_of_nodes() == len(graph)
    operators = graph.operators
    centre = operators[len(operators) // 2].name
    view = partial(neighbourhood, graph, centre, 2, expanded=())
    t_view, hood = _timed(view)
    assert hood.nodes
    t_redraw = statistics.median(_timed(view)[0] for _ in range(10))
    return {
        "parse": t_parse,
        "graph_from_proto": t_build,
        "scope listing": t_tree,
        "digraph": t_digraph,
        "total": t_parse + t_build + t_tree + t_digraph,
        "graph view": t_view,
        "graph redraw": t_redraw,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    graph_proto = build_graph_proto(args.nodes)
    data = pb.ModelProto(ir_version=1, graph=graph_proto).SerializeToString()
    edges = sum(len(n.input) for n in graph_proto.node)
    print(
        f"synthetic graph: {args.nodes:,} nodes ({len(graph_proto.node):,} operators, "
        f"{len(graph_proto.parameters):,} parameters, {len(graph_proto.const_vals):,} "
        f"constants), {edges:,} inputs, {len(data) / 2**20:.1f} MiB serialized"
    )
    runs = [run_once(data) for _ in range(args.repeat)]
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"  {key:<17} median {statistics.median(values):7.3f} s   min {min(values):7.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
