"""Which tensor of the target goes with which of the golden, in execution order.

- MindSpore synchronous dumps of the same version: by rank, graph name, node name, input or
  output, slot and iteration; ordered by the target's execution order (the golden's when the
  tensor is the golden's only). Matching across versions (where kernel names change) is not
  done yet.
- msprobe dumps: by msprobe's tensor name (`Functional.linear.0.forward.output.0`) in each
  step and rank, in the target's dump order; statistics only (the `.pt`/`.npy` files of
  tensor dumps are not read yet).

Every tensor of either side becomes a Pair: a side missing is an unmatched row, never a
dropped one. What makes the comparison meaningless (two different networks, a step one side
lacks, no common rank) raises CompareError, one sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tuidebug.compare.metrics import StatRecord

if TYPE_CHECKING:
    from tuidebug.offline.dump import OfflineDump
    from tuidebug.offline.files.msprobe import MsprobeRoot, MsprobeTensor

__all__ = ["CompareError", "Pair", "Side", "pair_mindspore", "pair_msprobe"]

# Two dumps share fewer than this part of their node names: not the same network.
MIN_SHARED_NODES = 0.5


class CompareError(Exception):
    """The two dumps cannot be compared; the message is one sentence."""


@dataclass(frozen=True)
class Side:
    """One side of a pair: a value to read (tensor dumps) or statistics (msprobe)."""

    dtype: str = ""
    shape: tuple[int, ...] | None = None
    load: Callable[[], np.ndarray] | None = None
    stats: StatRecord | None = None
    requires_grad: bool | None = None
    stack: str = ""


@dataclass(frozen=True)
class Pair:
    """A tensor as both dumps name it; `target` or `golden` is None when only one has it."""

    name: str
    rank: int
    step: int
    target: Side | None
    golden: Side | None


def _pick(
    what: str, target: Sequence[int], golden: Sequence[int], asked: Sequence[int] | None
) -> list[int]:
    """The steps or ranks to compare: those asked for (each must be on both sides), else
    every common one."""
    both = sorted(set(target) & set(golden))
    if asked is None:
        if not both:
            raise CompareError(
                f"the dumps have no {what} in common (target: {_list(target)}; "
                f"golden: {_list(golden)})."
            )
        return both
    for value in asked:
        if value not in target or value not in golden:
            side = "the golden dump" if value in target else "the target dump"
            if value not in target and value not in golden:
                side = "either dump"
            raise CompareError(
                f"{what} {value} is not in {side} (target: {_list(target)}; "
                f"golden: {_list(golden)})."
            )
    return sorted(set(asked))


def _list(values: Sequence[int]) -> str:
    return ", ".join(str(v) for v in sorted(values)) or "none"


def _check_same_network(target: set[str], golden: set[str], what: str) -> None:
    shared = len(target & golden)
    biggest = max(len(target), len(golden), 1)
    if shared / biggest < MIN_SHARED_NODES:
        raise CompareError(
            f"the two dumps are of different networks: {shared} of {biggest} {what} names "
            "are in both."
        )


# ---------------------------------------------------------------------------- MindSpore


def pair_mindspore(
    target: OfflineDump,
    golden: OfflineDump,
    *,
    ranks: Sequence[int] | None = None,
    iterations: Sequence[int] | None = None,
    node: re.Pattern[str] | None = None,
) -> list[Pair]:
    """Every dumped tensor of both dumps' common ranks and iterations, in execution order."""
    chosen_ranks = _pick("rank", target.ranks, golden.ranks, ranks)
    pairs: list[Pair] = []
    for rank in chosen_ranks:
        t_graphs, g_graphs = target.graphs(rank), golden.graphs(rank)
        t_nodes = {f"{g}/{n.name}" for g, graph in t_graphs.items() for n in graph}
        g_nodes = {f"{g}/{n.name}" for g, graph in g_graphs.items() for n in graph}
        _check_same_network(t_nodes, g_nodes, "node")
        steps = _pick("iteration", target.iterations(rank), golden.iterations(rank), iterations)
        graphs = sorted(t_graphs, key=lambda g: target.graph_order(rank, g))
        graphs += [g for g in g_graphs if g not in t_graphs]
        for step in steps:
            for graph in graphs:
                pairs.extend(_graph_pairs(target, golden, rank, graph, step, node))
    return pairs


def _keys(dump: OfflineDump, rank: int, graph: str, step: int) -> set[tuple[str, str, int]]:
    if graph not in dump.graphs(rank) or step not in dump.iterations(rank, graph):
        return set()
    return set(dump.index(rank, graph).unchecked_files(step))


def _graph_pairs(
    target: OfflineDump,
    golden: OfflineDump,
    rank: int,
    graph: str,
    step: int,
    node: re.Pattern[str] | None,
) -> list[Pair]:
    t_keys = _keys(target, rank, graph, step)
    g_keys = _keys(golden, rank, graph, step)
    keys = [k for k in t_keys | g_keys if node is None or node.search(k[0])]
    if not keys:
        return []
    order_dump = target if graph in target.graphs(rank) else golden

    def order(key: tuple[str, str, int]) -> tuple[int, int, int, str]:
        name, io, slot = key
        # a tensor the target lacks sorts by the golden's order, where it has one
        dump = order_dump if key in t_keys or order_dump is golden else golden
        return (dump.execution_position(rank, graph, name), io != "input", slot, name)

    out: list[Pair] = []
    for key in sorted(keys, key=order):
        name, io, slot = key
        out.append(
            Pair(
                f"{graph}/{name}:{io}.{slot}",
                rank,
                step,
                _ms_side(target, rank, graph, key, step) if key in t_keys else None,
                _ms_side(golden, rank, graph, key, step) if key in g_keys else None,
            )
        )
    return out


def _ms_side(
    dump: OfflineDump, rank: int, graph: str, key: tuple[str, str, int], step: int
) -> Side:
    name, io, slot = key

    def load() -> np.ndarray:
        from tuidebug.offline.files.npy import TensorFileError

        try:
            value = dump.value(rank, graph, name, slot, step, io == "output")
        except TensorFileError as err:
            raise ValueError(str(err)) from None
        if value is None:
            raise ValueError(f"{name} {io} {slot} has no readable file at iteration {step}")
        return value

    return Side(load=load)


# ---------------------------------------------------------------------------- msprobe


def pair_msprobe(
    target: MsprobeRoot,
    golden: MsprobeRoot,
    *,
    ranks: Sequence[int] | None = None,
    steps: Sequence[int] | None = None,
    node: re.Pattern[str] | None = None,
    problems: list[str] | None = None,
) -> list[Pair]:
    """Every tensor record of both dumps' common steps and ranks, by msprobe's name, with
    its statistics. Raises CompareError, or MsprobeError for an unreadable dump.json.
    `problems` gets what either side left unread (folders, records): a compare that
    skipped data is incomplete, as a check is."""
    from tuidebug.offline.files.msprobe import iter_tensors, read_dump_json

    chosen_steps = _pick("step", list(target.steps), list(golden.steps), steps)
    if problems is not None:
        problems.extend(f"target: {p}" for p in target.problems)
        problems.extend(f"golden: {p}" for p in golden.problems)
    pairs: list[Pair] = []
    for step in chosen_steps:
        t_step, g_step = target.steps[step], golden.steps[step]
        for rank in _pick("rank", list(t_step.ranks), list(g_step.ranks), ranks):
            t_dump = read_dump_json(t_step.ranks[rank] / "dump.json")
            g_dump = read_dump_json(g_step.ranks[rank] / "dump.json")
            if problems is not None:
                problems.extend(f"target: {p}" for p in t_dump.problems)
                problems.extend(f"golden: {p}" for p in g_dump.problems)
            _check_same_network(
                {c.name for c in t_dump.calls}, {c.name for c in g_dump.calls}, "call"
            )
            t_tensors = {t.name: t for t in iter_tensors(t_dump)}
            g_tensors = {t.name: t for t in iter_tensors(g_dump)}
            names = list(t_tensors) + [n for n in g_tensors if n not in t_tensors]
            for name in names:
                if node is not None and not node.search(name):
                    continue
                t, g = t_tensors.get(name), g_tensors.get(name)
                pairs.append(
                    Pair(
                        name,
                        rank,
                        step,
                        _msprobe_side(t) if t is not None else None,
                        _msprobe_side(g) if g is not None else None,
                    )
                )
    return pairs


def _msprobe_side(tensor: MsprobeTensor) -> Side:
    return Side(
        dtype=tensor.dtype,
        shape=tensor.shape,
        stats=StatRecord(tensor.max, tensor.min, tensor.mean, tensor.norm),
        requires_grad=tensor.requires_grad,
    )
