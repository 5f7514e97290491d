"""Kernel graphs without a history file, added to a copy of a real dump.

A MindSpore control-flow net (a `while` loop compiled into several kernel graphs) dumps
iteration folders `rank_0/<net>/<graph_id>/<iteration>/` for its sub-graphs but writes
`execution_order/ms_global_execution_order_graph_<id>.csv` only for the root graph. These
helpers make such a dump from the LeNet fixture without MindSpore: a second graph file (the
first one renamed) and iteration folders copied from graph 0's.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from tuidebug._proto import debug_graph_pb2 as pb


def add_graph_without_history(
    root: Path,
    graph_id: int,
    iterations: Mapping[int, int],
    *,
    with_graph_file: bool = True,
) -> str:
    """Add graph `graph_id` to the copied dump `root` (rank 0): iteration folders
    `{new iteration: graph 0's iteration copied}`, no history file, and (unless told
    otherwise) a graph file named like MindSpore's (`kernel_graph_<id>` for 2.0 dumps,
    `kernel_graph<id>` for 2.10) whose root graph is itself. Returns the graph's name."""
    rank = root / "rank_0"
    net = next(
        p for p in rank.iterdir() if p.is_dir() and (p / "0").is_dir() and p.name != "graphs"
    )
    for new, source in iterations.items():
        shutil.copytree(net / "0" / str(source), net / str(graph_id) / str(new))
    model = pb.ModelProto()
    model.ParseFromString((rank / "graphs" / "ms_output_trace_code_graph_0.pb").read_bytes())
    name = re.sub(r"\d+$", str(graph_id), model.graph.name)
    if with_graph_file:
        model.graph.name = name
        model.graph.root_name = str(graph_id)
        target = rank / "graphs" / f"ms_output_trace_code_graph_{graph_id}.pb"
        target.write_bytes(model.SerializeToString())
    history = rank / "execution_order" / f"ms_global_execution_order_graph_{graph_id}.csv"
    assert not history.exists()
    return name
