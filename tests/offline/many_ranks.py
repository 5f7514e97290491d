"""A small many-rank dump written with `DumpWriter`: the cluster tests and the tests of a
session that checks every rank."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef


def write_ranks(
    root: Path,
    ranks: int,
    iterations: int,
    overflows: Collection[tuple[int, int]] = ((2, 1),),
    fast_rank: int = 2,
) -> None:
    """`ranks` ranks of a MatMul → ReLU → ApplyMomentum net, `iterations` each: the MatMul
    gives inf and NaN at each (rank, iteration) of `overflows`, and the weight of
    `fast_rank` changes 1000 times more per iteration than the others'."""
    f32 = np.float32
    net = "Default/network"
    mm, relu, opt = f"{net}/MatMul-op0", f"{net}/ReLU-op1", f"{net}/optimizer/ApplyMomentum-op2"
    nodes = [
        NodeDef(mm, "MatMul", ("inputs0", "fc.weight"), f32, (8, 16)),
        NodeDef(relu, "ReLU", (mm,), f32, (8, 16)),
        NodeDef(
            opt, "ApplyMomentum", ("fc.weight", "moments.fc.weight", "lr", relu), f32, (16, 16)
        ),
    ]
    params = [
        ParamDef("inputs0", f32, (8, 16)),
        ParamDef("fc.weight", f32, (16, 16)),
        ParamDef("moments.fc.weight", f32, (16, 16)),
        ParamDef("lr", f32, ()),
    ]
    for rank in range(ranks):
        rng = np.random.default_rng(rank)
        weight = rng.standard_normal((16, 16)).astype(f32)
        with DumpWriter(root, net_name="Net", rank=rank, start_timestamp=1000) as w:
            w.add_graph(0, nodes, params)
            for it in range(iterations):
                x = rng.standard_normal((8, 16)).astype(f32)
                out = x @ weight
                if (rank, it) in overflows:
                    out[0, :2] = (np.inf, np.nan)
                step = 1e-1 if rank == fast_rank else 1e-4
                weight = (weight + step * rng.standard_normal((16, 16))).astype(f32)
                w.write_iteration(
                    0,
                    it,
                    {
                        ("inputs0", "output", 0): x,
                        ("lr", "output", 0): np.asarray(0.01, f32),
                        (mm, "output", 0): out,
                        (relu, "output", 0): np.maximum(out, 0),
                        (opt, "output", 0): weight,
                        ("fc.weight", "output", 0): weight,
                        ("moments.fc.weight", "output", 0): rng.standard_normal((16, 16)).astype(
                            f32
                        ),
                    },
                )
