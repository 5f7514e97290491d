#!/usr/bin/env python3
"""Dump discovery + tensor-file index over a synthetic MindSpore 2.10-grammar dump.

Writes ~20,000 one-element `.npy` files (2 ranks × 4 iterations by default) with real
2.10 names (`{op_type}.{full scope name with / → _}.0.0.{ts}.{io}.{slot}.DefaultFormat.{dtype}.npy`,
kernels numbered as MindSpore 2.4+ numbers them (spec §5.2a), parameters
`Parameter.{name with . → _}`), then times what opening the dump and using every iteration
costs:

    layout   DumpLayout.open (ranks, graphs folder, iterations, history)
    index    TensorIndex per rank (listing every iteration folder once, matching names) and
             files_for every iteration (reads the header of every output file once, to check
             it against the graph's declared dtype and shape)

Target (task brief): ≤ 1 s per 10,000 files.

Usage: python benchmarks/bench_index.py [--files N] [--ranks R] [--iterations I] [--repeat K]
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.core.tensor import DT_FLOAT32
from tuidebug.offline.files.names import encode_dump_name
from tuidebug.offline.files.names_24 import kernel_dump_names
from tuidebug.offline.layout.root import DumpLayout
from tuidebug.offline.layout.tensor_index import TensorIndex

_OPS = ["Conv2D", "BiasAdd", "ReLU", "MatMul", "Add", "Mul", "Cast", "Reshape"]
_FILES_PER_OP = 4  # input.0, input.1, input.2, output.0


def _npy_bytes() -> bytes:
    """A one-element float32 `.npy` file as numpy writes it."""
    buf = io.BytesIO()
    np.save(buf, np.zeros(1, np.float32))
    return buf.getvalue()


_NPY = _npy_bytes()


def build_graph(n_ops: int, n_params: int) -> Graph:
    nodes: list[Node] = [
        Node(name=f"block{i % 97}.layer{i}.weight", kind=NodeKind.PARAMETER, op_type="Parameter")
        for i in range(n_params)
    ]
    for i in range(n_ops):
        op_type = _OPS[i % len(_OPS)]
        scope = f"Default/network-WithLossCell/_backbone-Net/block{i % 97}-Block/layer{i}-Cell"
        nodes.append(
            Node(
                name=f"{scope}/{op_type}-op{i // 97 + 1}",
                kind=NodeKind.OPERATOR,
                op_type=op_type,
                scope=scope,
                outputs=[TensorSpec(0, DT_FLOAT32, (1,))],
            )
        )
    return Graph("kernel_graph_0", nodes, root_name="0")


def write_dump(root: Path, graph: Graph, ranks: int, iterations: int) -> int:
    """The synthetic dump; returns the number of tensor files written."""
    ops = graph.operators
    dump_names = kernel_dump_names([graph])
    count = 0
    ts = 1795310821150000
    for rank in range(ranks):
        rank_dir = root / f"rank_{rank}"
        (rank_dir / "graphs").mkdir(parents=True)
        (rank_dir / "graphs" / "ms_output_trace_code_graph_0.pb").touch()
        order_dir = rank_dir / "execution_order"
        order_dir.mkdir()
        (order_dir / "ms_execution_order_graph_0.csv").write_text(
            "NodeExecutionOrder-FullNameWithScope\n" + "".join(f"{op.name}\n" for op in ops)
        )
        (order_dir / "ms_global_execution_order_graph_0.csv").write_text(
            "".join(f"{i}\n" for i in range(iterations))
        )
        for iteration in range(iterations):
            folder = rank_dir / "Net" / "0" / str(iteration)
            folder.mkdir(parents=True)
            for op in ops:
                name = dump_names[graph.name][op.name]
                for io_name, slot in (("input", 0), ("input", 1), ("input", 2), ("output", 0)):
                    ts += 37
                    f = f"{op.op_type}.{name}.0.0.{ts}.{io_name}.{slot}.DefaultFormat.Float32.npy"
                    (folder / f).write_bytes(_NPY)
                    count += 1
            for param in graph.parameters:
                ts += 37
                name = encode_dump_name(param.name)
                (
                    folder / f"Parameter.{name}.0.0.{ts}.output.0.DefaultFormat.Float32.npy"
                ).write_bytes(_NPY)
                count += 1
    return count


def open_and_index(root: Path, graph: Graph) -> tuple[float, float, int]:
    """(layout seconds, index seconds, files indexed)."""
    t0 = time.perf_counter()
    dump = DumpLayout.open(root)
    t1 = time.perf_counter()
    files = 0
    for rank_id in dump.rank_ids:
        index = TensorIndex(dump.rank(rank_id), graph)
        files += sum(len(index.files_for(i)) for i in index.iterations)
        if index.unmatched or index.problems:
            raise SystemExit(f"unexpected: {index.problems[:3]}")
    t2 = time.perf_counter()
    if dump.problems:
        raise SystemExit(f"unexpected problems: {dump.problems[:3]}")
    return t1 - t0, t2 - t1, files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000, help="about this many files")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    per_folder = max(1, args.files // (args.ranks * args.iterations))
    n_params = per_folder // 5
    n_ops = max(1, (per_folder - n_params) // _FILES_PER_OP)
    graph = build_graph(n_ops, n_params)
    tmp = Path(tempfile.mkdtemp(prefix="tuidebug-bench-index-"))
    try:
        t = time.perf_counter()
        n_files = write_dump(tmp, graph, args.ranks, args.iterations)
        print(
            f"wrote {n_files:,} files ({args.ranks} ranks × {args.iterations} iterations, "
            f"{n_ops:,} kernels + {n_params:,} parameters) in {time.perf_counter() - t:.1f} s"
        )
        runs = [open_and_index(tmp, graph) for _ in range(args.repeat)]
        indexed = runs[0][2]
        totals = [a + b for a, b, _ in runs]
        best = min(totals)
        median = statistics.median(totals)
        per_10k = median * 10_000 / n_files
        print(f"indexed {indexed:,} tensors per run")
        print(f"layout  median {statistics.median(r[0] for r in runs) * 1e3:7.1f} ms")
        print(f"index   median {statistics.median(r[1] for r in runs) * 1e3:7.1f} ms")
        print(
            f"total   median {median * 1e3:7.1f} ms, best {best * 1e3:.1f} ms, "
            f"first {totals[0] * 1e3:.1f} ms"
        )
        verdict = "OK" if per_10k <= 1.0 else "TOO SLOW"
        print(f"=> {per_10k:.3f} s per 10,000 files (target ≤ 1 s): {verdict}")
        return 0 if per_10k <= 1.0 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
