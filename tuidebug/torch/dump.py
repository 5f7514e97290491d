"""Dump mode: the tensors of chosen training steps written in the MindSpore 2.10 layout,
one `rank_<global rank>` folder per process under `torch.distributed`.

The dump is written by `offline.dump_writer.DumpWriter`, so `tuidebug offline`, `tuidebug
check` and the DumpAnalyzer API read it with exactly the code that reads real MindSpore
dumps. The graph file is written at the first dumped step, when the output types of every
call that ran are known; the execution order is that step's capture order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import torch

from tuidebug.offline.writer.dump_writer import DumpWriter, TensorKey
from tuidebug.torch.graph import GRAPH_ID, ModelGraph
from tuidebug.torch.stats import to_numpy

__all__ = ["DumpSink", "StepSelection", "default_rank"]

log = logging.getLogger("tuidebug.torch")

StepSelection = int | Iterable[int] | None


def default_rank() -> int:
    """The global rank under `torch.distributed` (torchrun, FSDP, DDP), else 0: each rank
    writes its own `rank_<N>` folder, as MindSpore's ranks do, so the ranks of one job
    never write into one folder (they would mix, or collide on the same file names)."""
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    return 0


class DumpSink:
    """Writes chosen iterations (0-based: step 1 is iteration 0, as MindSpore counts)."""

    def __init__(
        self,
        out_dir: str | Path,
        graph_net_name: str,
        steps: StepSelection = None,
        *,
        device_target: str = "CPU",
        rank: int | None = None,
    ) -> None:
        self.rank = default_rank() if rank is None else rank
        self.writer = DumpWriter(
            Path(out_dir),
            net_name=graph_net_name,
            rank=self.rank,
            device_target=device_target,
            ms_version=f"torch-{torch.__version__}",
        )
        self.root = Path(out_dir)
        self._first: int | None = None
        self._chosen: frozenset[int] | None = None
        if isinstance(steps, bool):
            raise TypeError("steps must be a count, iterations or None.")
        if isinstance(steps, int):
            if steps < 0:
                raise ValueError("steps must not be negative.")
            self._first = steps  # the first `steps` iterations
        elif steps is not None:
            chosen = frozenset(int(s) for s in steps)
            if any(s < 0 for s in chosen):
                raise ValueError("Iterations to dump must not be negative.")
            self._chosen = chosen
        self._graph_written = False
        self.iterations: list[int] = []

    def wants(self, iteration: int) -> bool:
        if self._first is not None:
            return iteration < self._first
        if self._chosen is not None:
            return iteration in self._chosen
        return True

    def done(self, iteration: int) -> bool:
        """No later iteration will be dumped (so capture for the dump may stop)."""
        if self._first is not None:
            return iteration >= self._first
        if self._chosen is not None:
            return not self._chosen or iteration > max(self._chosen)
        return False

    def write(
        self,
        iteration: int,
        graph: ModelGraph,
        tensors: Mapping[str, list[torch.Tensor | None]],
        order: list[str],
    ) -> Path:
        """One iteration: `tensors` maps node / parameter / input names to their output
        slots (None: not available, e.g. overwritten in place)."""
        if not self._graph_written:
            for name, slots in tensors.items():
                node = graph.by_name.get(name)
                present = [t for t in slots if t is not None]
                if node is not None and len(present) == len(slots):
                    graph.observe(node, present)
                elif name in graph.inputs and present:
                    graph.observe_input(name, present[0])
            nodes, params = graph.node_defs()
            execution = [n for n in order if n in graph.by_name]
            self.writer.add_graph(GRAPH_ID, nodes, params, execution_order=execution)
            self._graph_written = True
        arrays: dict[TensorKey, np.ndarray] = {}
        for name, slots in tensors.items():
            is_input = name in graph.inputs
            if not is_input and name not in graph.by_name:
                continue
            for slot, tensor in enumerate(slots):
                if tensor is None or (is_input and slot):
                    continue
                array = to_numpy(tensor)
                if array is None:
                    continue  # a type the dump format cannot hold
                arrays[(name, "output", slot)] = array
        folder = self.writer.write_iteration(GRAPH_ID, iteration, arrays)
        self.iterations.append(iteration)
        return folder

    def finish(self) -> Path:
        return self.writer.finish()
