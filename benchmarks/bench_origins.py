"""Tracing a NaN/Inf to its origin (`o` in the TUI): seconds and tensors read (figures).

* `demo`        — the demo dump (`tuidebug demo`), from the loss at iteration 3 back to
                  fc2's forward MatMul, through `OfflineSession` as the TUI does;
* `deep chain`  — a synthetic dump written with `DumpWriter`: a chain of `--nodes` kernels
                  (float32 `--elements` each, every input and output dumped), NaN injected
                  at depth `--depth` from the end, traced from the last kernel.

Target: interactive — under 1 s for the demo; the deep chain shows how the cost grows
with the number of tensors read (the TUI runs the trace in a worker, so the UI never
blocks, and shows progress after half a second).

    python benchmarks/bench_origins.py [--nodes 2000 --depth 1000 --elements 4096]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tuidebug.core.origins import OriginTrace, trace_in_session
from tuidebug.offline.session import OfflineSession
from tuidebug.offline.writer.demo import write_demo_dump
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

LOSS = (
    "Default/network-WithLossCell/_loss_fn-SoftmaxCrossEntropyWithLogits/"
    "SparseSoftmaxCrossEntropyWithLogits-op0"
)


def chain_name(i: int) -> str:
    return f"Default/net/block{i // 100}/Add-op{i}"


def write_chain(root: Path, nodes: int, depth: int, elements: int) -> tuple[Path, str]:
    """A chain x → op0 → op1 → … whose kernel `nodes - depth` turns NaN; returns the dump
    root and the expected origin."""
    nodes_def = [
        NodeDef(chain_name(i), "Add", [chain_name(i - 1) if i else "x"], np.float32, (elements,))
        for i in range(nodes)
    ]
    bad_at = nodes - depth
    value = np.ones(elements, dtype=np.float32)
    nan = value.copy()
    nan[elements // 2] = np.nan
    tensors = {("x", "output", 0): value}
    for i in range(nodes):
        out = nan if i >= bad_at else value
        inp = nan if i > bad_at else value
        tensors[(chain_name(i), "input", 0)] = inp
        tensors[(chain_name(i), "output", 0)] = out
    with DumpWriter(root, net_name="Chain", start_timestamp=1) as writer:
        writer.add_graph(0, nodes_def, [ParamDef("x", np.float32, (elements,))])
        writer.write_iteration(0, 0, tensors)
    return root, chain_name(bad_at)


def timed(run: Callable[[], OriginTrace]) -> tuple[float, OriginTrace]:
    best = float("inf")
    trace = None
    for _ in range(3):
        began = time.perf_counter()
        trace = run()
        best = min(best, time.perf_counter() - began)
    assert trace is not None
    return best, trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--elements", type=int, default=4096)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        demo = OfflineSession(write_demo_dump(folder / "demo"))
        demo.start()
        graph = next(iter(demo.graphs.values()))
        seconds, trace = timed(lambda: trace_in_session(demo, graph, LOSS, iteration=3))
        origins = ", ".join(
            o.node.rsplit("/", 2)[-2] + "/" + o.node.rsplit("/", 1)[-1] for o in trace.origins
        )
        print(f"demo        {seconds:8.4f} s  {trace.tensors_read:6d} tensors read  → {origins}")
        demo.close()

        began = time.perf_counter()
        root, expected = write_chain(folder / "chain", args.nodes, args.depth, args.elements)
        written = time.perf_counter() - began
        chain = OfflineSession(root)
        began = time.perf_counter()
        chain.start()
        loaded = time.perf_counter() - began
        graph = next(iter(chain.graphs.values()))
        last = chain_name(args.nodes - 1)
        seconds, trace = timed(lambda: trace_in_session(chain, graph, last, iteration=0))
        assert [o.node for o in trace.origins] == [expected], trace.origins
        print(
            f"deep chain  {seconds:8.4f} s  {trace.tensors_read:6d} tensors read  "
            f"({args.nodes} kernels, NaN {args.depth} deep, {args.elements} float32 each; "
            f"written in {written:.1f} s, loaded in {loaded:.1f} s)"
        )
        chain.close()


if __name__ == "__main__":
    main()
