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

import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tuidebug.compare.metrics import StatRecord
from tuidebug.core.graph import NodeKind

if TYPE_CHECKING:
    from tuidebug.offline.dump import OfflineDump
    from tuidebug.offline.files.msprobe import (
        MsprobeDump,
        MsprobeRoot,
        MsprobeTensor,
        MsprobeValue,
    )
    from tuidebug.offline.files.statistic_csv import StatisticRow

__all__ = [
    "CompareError",
    "Pair",
    "Side",
    "data_flow",
    "pair_mindspore",
    "pair_msprobe",
    "scalar_text",
    "stable_keys",
]

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
    # msprobe's file name of the value (its CSV's Data_name column), or "" without one
    data_name: str = ""
    # a non-tensor argument (msprobe): its text as msprobe compare writes it (`24`,
    # `1e-05`, `None`); None for a tensor
    scalar: str | None = None
    # whether the tensor holds NaN or ±Inf, when a statistics record says so (statistic.csv
    # counts); None when unknown or when `load` will tell
    nonfinite: bool | None = None


@dataclass(frozen=True)
class Pair:
    """A tensor as both dumps name it; `target` or `golden` is None when only one has it."""

    name: str
    rank: int
    step: int
    target: Side | None
    golden: Side | None
    # the golden's own name where it differs (MindSpore dumps of two versions); "" if equal
    golden_name: str = ""
    # what the divergence chain follows: the node (MindSpore: `graph/node`) or call
    # (msprobe) this tensor belongs to, and the nodes whose outputs flow into it (graph
    # edges; empty where the dump has no graph, and the chain follows execution order)
    node: str = ""
    inputs: tuple[str, ...] = ()


def _pick(
    what: str,
    target: Sequence[int],
    golden: Sequence[int],
    asked: Sequence[int] | None,
    problems: list[str] | None = None,
) -> list[int]:
    """The steps or ranks to compare: those asked for (each must be on both sides), else
    every common one; `problems` gets a sentence for those only one side has (they were not
    compared, so the compare is not an all-clear)."""
    both = sorted(set(target) & set(golden))
    if asked is None:
        if not both:
            raise CompareError(
                f"the dumps have no {what} in common (target: {_list(target)}; "
                f"golden: {_list(golden)})."
            )
        if problems is not None:
            for side, mine in (("target", target), ("golden", golden)):
                alone = sorted(set(mine) - set(both))
                if alone:
                    plural = f"{what}s" if len(alone) > 1 else what
                    problems.append(
                        f"{plural} {_list(alone)} only in the {side} dump, so not compared "
                        f"(--{'rank' if what == 'rank' else 'step'} picks common ones)."
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

# A node of a graph: (graph name, node name).
_NodeRef = tuple[str, str]


def stable_keys(dump: OfflineDump, rank: int) -> dict[_NodeRef, str]:
    """What stays the same across MindSpore versions for each node of a rank (2.0-era
    `kernel_graph_0`, `Conv2D-op77` against 2.4+ `kernel_graph0`, `Conv2D-op0`): the
    graph's place in the rank's graph order, then for an operator its scope, its type and
    its rank among the operators of that scope and type in execution order; for a
    parameter or constant its own name. Two dumps of one network under two versions share
    most of these keys even though every kernel name differs."""
    keys: dict[_NodeRef, str] = {}
    graphs = sorted(dump.graphs(rank), key=lambda g: dump.graph_order(rank, g))
    for gi, graph in enumerate(graphs):
        nodes = list(dump.graphs(rank)[graph])
        seen: dict[tuple[str, str], int] = {}
        ops = []
        for n in nodes:
            if n.kind is NodeKind.OPERATOR:
                ops.append(n)
            else:
                keys[(graph, n.name)] = f"{gi}|{n.kind.name}|{n.name}"
        ops.sort(key=lambda n: dump.execution_position(rank, graph, n.name))
        for n in ops:
            scope = _stable_scope(n.name.rsplit("/", 1)[0] if "/" in n.name else "")
            count = seen.get((scope, n.op_type), 0)
            seen[(scope, n.op_type)] = count + 1
            keys[(graph, n.name)] = f"{gi}|{scope}|{n.op_type}|{count}"
    return keys


# A gradient scope as 2.0 writes it (`gradConv2D-expand`, `gradBiasAdd-meta`,
# `gradSparseSoftmaxCrossEntropyWithLogits`) and as 2.4+ does (`Grad_Conv2D`).
_GRAD_SCOPE = re.compile(r"(?:grad|Grad_)([A-Za-z0-9_]+?)(?:-expand|-meta)?")


def _stable_scope(scope: str) -> str:
    """A scope with its gradient parts written one way for every version."""
    parts = []
    for part in scope.split("/"):
        m = _GRAD_SCOPE.fullmatch(part)
        parts.append(f"grad:{m.group(1)}" if m else part)
    return "/".join(parts)


@dataclass
class _RankMatch:
    """How one rank's golden nodes are found from the target's: by name (one version) or
    by stable key (two versions)."""

    by_name: bool
    to_golden: dict[_NodeRef, _NodeRef]
    # golden nodes no target node matches, by their golden graph
    golden_only: dict[str, list[str]]


def _match_rank(target: OfflineDump, golden: OfflineDump, rank: int) -> _RankMatch:
    t_graphs, g_graphs = target.graphs(rank), golden.graphs(rank)
    t_nodes = {(g, n.name) for g, graph in t_graphs.items() for n in graph}
    g_nodes = {(g, n.name) for g, graph in g_graphs.items() for n in graph}
    biggest = max(len(t_nodes), len(g_nodes), 1)
    if len(t_nodes & g_nodes) / biggest >= MIN_SHARED_NODES:
        to_golden = {ref: ref for ref in t_nodes & g_nodes}
        only: dict[str, list[str]] = {}
        for g, name in sorted(g_nodes - t_nodes):
            only.setdefault(g, []).append(name)
        return _RankMatch(True, to_golden, only)
    # not the same names: two versions of MindSpore name kernels differently
    t_keys, g_keys = stable_keys(target, rank), stable_keys(golden, rank)
    g_by_key = {key: ref for ref, key in g_keys.items()}
    to_golden = {ref: g_by_key[key] for ref, key in t_keys.items() if key in g_by_key}
    if len(to_golden) / biggest < MIN_SHARED_NODES:
        by_names = len(t_nodes & g_nodes)
        raise CompareError(
            f"the two dumps are of different networks: {max(by_names, len(to_golden))} of "
            f"{biggest} nodes are in both, by name or by scope, type and order."
        )
    matched = set(to_golden.values())
    only = {}
    for ref in sorted(g_nodes - matched):
        only.setdefault(ref[0], []).append(ref[1])
    return _RankMatch(False, to_golden, only)


def pair_mindspore(
    target: OfflineDump,
    golden: OfflineDump,
    *,
    ranks: Sequence[int] | None = None,
    iterations: Sequence[int] | None = None,
    node: re.Pattern[str] | None = None,
    problems: list[str] | None = None,
) -> list[Pair]:
    """Every dumped tensor of both dumps' common ranks and iterations, in execution order.
    Nodes are matched by name, or, where fewer than half the names are shared (two
    MindSpore versions), by `stable_keys`. `problems` gets a sentence for each rank or
    iteration only one side has. Tensor files and statistic.csv rows (statistic-only dumps)
    are both paired; a side with statistics only is compared on statistics."""
    chosen_ranks = _pick("rank", target.ranks, golden.ranks, ranks, problems)
    pairs: list[Pair] = []
    for rank in chosen_ranks:
        match = _match_rank(target, golden, rank)
        steps = _pick(
            "iteration", target.iterations(rank), golden.iterations(rank), iterations, problems
        )
        graphs = sorted(target.graphs(rank), key=lambda g: target.graph_order(rank, g))
        for step in steps:
            for graph in graphs:
                pairs.extend(_graph_pairs(target, golden, rank, graph, step, node, match))
            for graph, names in match.golden_only.items():
                pairs.extend(_golden_only(golden, rank, graph, names, step, node))
    return pairs


_Key = tuple[str, str, int]  # (node name, "input"/"output", slot)


def _sides(dump: OfflineDump, rank: int, graph: str, step: int) -> dict[_Key, Side]:
    """Every tensor of one graph at one iteration: its file, or its statistic.csv row."""
    if graph not in dump.graphs(rank) or step not in dump.iterations(rank, graph):
        return {}
    index = dump.index(rank, graph)
    out: dict[_Key, Side] = {}
    for key, row in index.statistic_rows(step).items():
        out[key] = _stat_side(row)
    for key, tensor_file in index.unchecked_files(step).items():
        # the file name's type (2.4+: `BFloat16`), which MindSpore and tuidebug.torch keep
        # where the file itself holds float32 (bf16 is saved widened)
        dtype = getattr(tensor_file, "dtype", None) or ""
        out[key] = _ms_side(dump, rank, graph, key, step, dtype)
    return out


def _stat_side(row: StatisticRow) -> Side:
    stats = row.stats

    def number(name: str) -> float | None:
        value = stats.get(name)
        return float(value) if isinstance(value, int | float) else None

    counts = [stats.get(k) for k in ("nan_count", "neg_inf_count", "pos_inf_count")]
    known = [c for c in counts if isinstance(c, int | float)]
    flag = stats.get("non_finite_count")  # NaN and Inf together (tfdbg's CURT_HEALTH)
    if not known and isinstance(flag, int | float):
        known = [flag]
    return Side(
        dtype=row.data_type,
        shape=row.shape,
        stats=StatRecord(number("max"), number("min"), number("avg"), number("l2norm")),
        nonfinite=bool(sum(known)) if known else None,
    )


def _io_name(graph: str, key: _Key) -> str:
    name, io, slot = key
    return f"{graph}/{name}:{io}.{slot}"


def _graph_pairs(
    target: OfflineDump,
    golden: OfflineDump,
    rank: int,
    graph: str,
    step: int,
    node: re.Pattern[str] | None,
    match: _RankMatch,
) -> list[Pair]:
    t_sides = _sides(target, rank, graph, step)
    g_cache: dict[str, dict[_Key, Side]] = {}

    def golden_of(key: _Key) -> tuple[str, _Key] | None:
        ref = match.to_golden.get((graph, key[0]))
        if ref is None:
            return None
        g_graph, g_node = ref
        if g_graph not in g_cache:
            g_cache[g_graph] = _sides(golden, rank, g_graph, step)
        g_key = (g_node, key[1], key[2])
        return (g_graph, g_key) if g_key in g_cache[g_graph] else None

    # golden tensors of matched nodes the target did not dump at this iteration
    keys: set[_Key] = set(t_sides)
    for (t_graph, t_node), (g_graph, g_node) in match.to_golden.items():
        if t_graph != graph:
            continue
        if g_graph not in g_cache:
            g_cache[g_graph] = _sides(golden, rank, g_graph, step)
        keys.update((t_node, io, slot) for (n, io, slot) in g_cache[g_graph] if n == g_node)
    keys = {k for k in keys if node is None or node.search(k[0])}
    if not keys:
        return []
    graph_obj = target.graphs(rank).get(graph)

    def order(key: _Key) -> tuple[int, int, int, str]:
        name, io, slot = key
        return (target.execution_position(rank, graph, name), io != "input", slot, name)

    out: list[Pair] = []
    for key in sorted(keys, key=order):
        found = golden_of(key)
        g_side = g_cache[found[0]][found[1]] if found is not None else None
        g_name = _io_name(found[0], found[1]) if found is not None else ""
        name = _io_name(graph, key)
        inputs: tuple[str, ...] = ()
        found_node = graph_obj.get(key[0]) if graph_obj is not None else None
        if found_node is not None:
            inputs = tuple(f"{graph}/{i}" for i in found_node.inputs)
        out.append(
            Pair(
                name,
                rank,
                step,
                t_sides.get(key),
                g_side,
                golden_name=g_name if g_name != name else "",
                node=f"{graph}/{key[0]}",
                inputs=inputs,
            )
        )
    return out


def _golden_only(
    golden: OfflineDump,
    rank: int,
    graph: str,
    names: list[str],
    step: int,
    node: re.Pattern[str] | None,
) -> list[Pair]:
    """Rows for the golden's tensors of nodes the target does not have (unmatched)."""
    sides = _sides(golden, rank, graph, step)
    wanted = set(names)
    keys = [k for k in sides if k[0] in wanted and (node is None or node.search(k[0]))]
    keys.sort(key=lambda k: (golden.execution_position(rank, graph, k[0]), k[1] != "input", k[2]))
    return [
        Pair(_io_name(graph, k), rank, step, None, sides[k], node=f"{graph}/{k[0]}") for k in keys
    ]


def _ms_side(
    dump: OfflineDump, rank: int, graph: str, key: _Key, step: int, dtype: str = ""
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

    return Side(load=load, dtype=dtype)


# ---------------------------------------------------------------------------- msprobe


def pair_msprobe(
    target: MsprobeRoot,
    golden: MsprobeRoot,
    *,
    ranks: Sequence[int] | None = None,
    steps: Sequence[int] | None = None,
    node: re.Pattern[str] | None = None,
    problems: list[str] | None = None,
    notes: list[str] | None = None,
) -> list[Pair]:
    """Every record of both dumps' common steps and ranks, by msprobe's name, in the
    target's dump order: tensors (their values read from `dump_tensor_data/` when both
    dumps are tensor dumps, else their statistics) and non-tensor arguments (ints, floats,
    None), as msprobe compare lists them. Raises CompareError, or MsprobeError for an
    unreadable dump.json. `problems` gets what either side left unread (folders, records,
    steps or ranks only one side has): a compare that skipped data is incomplete, as a
    check is. `notes` gets a sentence when one side has statistics only."""
    from tuidebug.offline.files.msprobe import read_dump_json

    chosen_steps = _pick("step", list(target.steps), list(golden.steps), steps, problems)
    if problems is not None:
        problems.extend(f"target: {p}" for p in target.problems)
        problems.extend(f"golden: {p}" for p in golden.problems)
    pairs: list[Pair] = []
    said_stats = False
    for step in chosen_steps:
        t_step, g_step = target.steps[step], golden.steps[step]
        for rank in _pick("rank", list(t_step.ranks), list(g_step.ranks), ranks, problems):
            t_dir, g_dir = t_step.ranks[rank], g_step.ranks[rank]
            t_dump = read_dump_json(t_dir / "dump.json")
            g_dump = read_dump_json(g_dir / "dump.json")
            if problems is not None:
                problems.extend(f"target: {p}" for p in t_dump.problems)
                problems.extend(f"golden: {p}" for p in g_dump.problems)
            _check_same_network(
                {c.name for c in t_dump.calls}, {c.name for c in g_dump.calls}, "call"
            )
            t_tensor, g_tensor = t_dump.task == "tensor", g_dump.task == "tensor"
            values = t_tensor and g_tensor
            if t_tensor != g_tensor and not said_stats and notes is not None:
                said_stats = True
                stats_side = "target" if g_tensor else "golden"
                notes.append(
                    f"the {stats_side} is a statistics dump and the other a tensor dump, so "
                    "the tensors are compared on their statistics (Max, Min, Mean, L2norm)."
                )
            t_recs = _records(t_dump, t_dir if values else None)
            g_recs = _records(g_dump, g_dir if values else None)
            flow = data_flow(t_dump)
            names = list(t_recs) + [n for n in g_recs if n not in t_recs]
            for name in names:
                if node is not None and not node.search(name):
                    continue
                t, g = t_recs.get(name), g_recs.get(name)
                call = (t or g or (name, Side()))[0]
                pairs.append(
                    Pair(
                        name,
                        rank,
                        step,
                        t[1] if t is not None else None,
                        g[1] if g is not None else None,
                        node=call,
                        inputs=flow.get(name, ()),
                    )
                )
    return pairs


def _signature(tensor: MsprobeTensor) -> tuple[object, ...] | None:
    stats = (tensor.max, tensor.min, tensor.mean, tensor.norm)
    if tensor.shape is None or any(v is None for v in stats) or not any(stats):
        return None  # no statistics, or all zeros: too common to tell tensors apart
    return (tensor.dtype, tensor.shape, *stats)


def data_flow(dump: MsprobeDump) -> dict[str, tuple[str, ...]]:
    """The data flow msprobe does not record, where it can be told: an input record whose
    dtype, shape and four statistics equal an earlier call's output record is that output
    (the same tensor passed on). Returns, by tensor name, the calls whose outputs feed it:
    an input its producer, an output every producer of its call's inputs. Tensors of no
    known producer are absent (the chain does not follow them)."""
    produced: dict[tuple[object, ...], str] = {}
    out: dict[str, tuple[str, ...]] = {}
    for call in dump.calls:
        feeding: list[str] = []
        for tensor in call.tensors:
            sig = _signature(tensor)
            if tensor.role == "input" and sig is not None and sig in produced:
                out[tensor.name] = (produced[sig],)
                feeding.append(produced[sig])
        for tensor in call.tensors:
            if tensor.role == "output":
                if feeding:
                    out[tensor.name] = tuple(dict.fromkeys(feeding))
                sig = _signature(tensor)
                if sig is not None:
                    produced.setdefault(sig, call.name)
    return out


def _records(dump: MsprobeDump, folder: Path | None) -> dict[str, tuple[str, Side]]:
    """A dump.json's records by name → (call name, side); values read from `folder`'s
    `dump_tensor_data/` when given."""
    from tuidebug.offline.files.msprobe import MsprobeValue

    out: dict[str, tuple[str, Side]] = {}
    inside: dict[Path, bool] = {}
    for call in dump.calls:
        for rec in call.records():
            if isinstance(rec, MsprobeValue):
                out[rec.name] = (call.name, _value_side(rec))
            else:
                out[rec.name] = (call.name, _msprobe_side(rec, folder, inside))
    return out


def scalar_text(value: object) -> str:
    """A non-tensor value as msprobe compare writes it (pandas' str of the Python value)."""
    return "None" if value is None else str(value)


def _value_side(value: MsprobeValue) -> Side:
    return Side(
        dtype=f"<class '{value.kind}'>" if value.kind is not None else "",
        shape=() if value.kind is not None else None,
        scalar=scalar_text(value.value),
    )


def _msprobe_side(
    tensor: MsprobeTensor, folder: Path | None = None, inside: dict[Path, bool] | None = None
) -> Side:
    load = None
    if folder is not None:
        load = _tensor_loader(folder, tensor.data_name, tensor.name, inside)
    return Side(
        dtype=tensor.dtype,
        shape=tensor.shape,
        stats=StatRecord(tensor.max, tensor.min, tensor.mean, tensor.norm),
        requires_grad=tensor.requires_grad,
        load=load,
        data_name=tensor.data_name or "",
    )


def _inside(folder: Path, cache: dict[Path, bool]) -> bool:
    """Whether `folder/dump_tensor_data` resolves inside `folder` (asked once per folder)."""
    found = cache.get(folder)
    if found is None:
        try:
            data_dir = (folder / "dump_tensor_data").resolve(strict=True)
            found = data_dir.is_relative_to(folder.resolve(strict=True))
        except (OSError, RuntimeError):
            found = False
        cache[folder] = found
    return found


def _tensor_loader(
    folder: Path, data_name: str | None, name: str, cache: dict[Path, bool] | None = None
) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        from tuidebug.offline.files.npy import TensorFileError, load_npy
        from tuidebug.offline.files.pt import load_pt

        if not data_name:
            raise ValueError(f"{name} has no data_name in dump.json, so its value is unknown")
        if "/" in data_name or "\\" in data_name or data_name in (".", ".."):
            raise ValueError(f"{name}'s data_name {data_name[:200]!r} is not a file name")
        path = folder / "dump_tensor_data" / data_name
        # the readers confine a path to the dump by resolving it and the root (a dozen
        # system calls a file, most of a small tensor's read): a plain file in a folder
        # already known to be inside the dump needs none of it; a link still does
        root: Path | None = folder
        if _inside(folder, cache if cache is not None else {}):
            try:
                if not stat.S_ISLNK(os.lstat(path).st_mode):
                    root = None
            except OSError:
                pass  # the reader says why, in its sentence
        try:
            if data_name.endswith(".npy"):
                return load_npy(path, root=root, mmap=True)
            return load_pt(path, root=root, mmap=True)
        except TensorFileError as err:
            raise ValueError(str(err)) from None

    return load
