"""The graph history of one rank (spec §5.5): in which iterations each root graph ran,
read from `execution_order/ms_global_execution_order_graph_<id>.csv`, and MindInsight's
consistency rule that decides whether the rank's step count and graph runs may trust it.

The raw history always serves the checker's "previous iteration" (as in MindSpore's
offline engine); the history after the rule serves what the UI shows (as in MindInsight).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from pathlib import Path

from tuidebug.offline.files.execution_order import OrderFileError, read_graph_history


@dataclass(frozen=True)
class RankHistory:
    """Graph id → sorted iterations in which the root graph ran."""

    raw: dict[int, list[int]]  # every readable history file
    history: dict[int, list[int]]  # after the consistency rule: empty when discarded
    discarded: bool


def load_history(
    history_files: Mapping[int, Path],
    dumped_iterations: Mapping[int, list[int]],
    *,
    refused: Set[int],
    rank: str,
    order_dir: Path,
    show: Callable[[Path], str],
    problems: list[str],
) -> RankHistory:
    """Read every history file, then apply MindInsight's consistency rule (§5.5 step 5):
    if a graph's dumped iterations are not a subset of its history, the history of the
    whole rank is discarded, except for one extra final iteration (dataset sink mode).

    `refused`: graph ids whose history file the listing refused (said "cannot be read"
    rather than "is missing"); `rank` names the rank in sentences, `show` a path."""
    raw: dict[int, list[int]] = {}
    for gid, path in sorted(history_files.items()):
        label = show(path)
        try:
            iterations, bad = read_graph_history(path, label)
        except OrderFileError as err:
            problems.append(str(err))
            continue
        if bad:
            problems.append(
                f"{label}: skipped {bad} line{'s' if bad != 1 else ''} that "
                f"{'are' if bad != 1 else 'is'} not an iteration number."
            )
        raw[gid] = sorted(set(iterations))
    missing = [g for g, dumped in sorted(dumped_iterations.items()) if dumped and g not in raw]
    if len(missing) == 1:
        expected = order_dir / f"ms_global_execution_order_graph_{missing[0]}.csv"
        state = "cannot be read" if missing[0] in refused else "is missing"
        problems.append(
            f"{show(expected)} {state}, so iterations of graph {missing[0]} have "
            "no previous run for change conditions."
        )
    elif missing:  # a control-flow net: one sentence, not one per sub-graph
        problems.append(
            f"{show(order_dir)} has no "
            f"ms_global_execution_order_graph_<id>.csv for graphs {_ranges(missing)}, so "
            "their iterations have no previous run for change conditions."
        )
    for gid, dumped in sorted(dumped_iterations.items()):
        history = raw.get(gid)
        if not history or not dumped:
            continue
        extra = set(dumped) - set(history)
        if not extra:
            continue
        last = max(dumped)
        if extra == {last} and last - 1 in history:
            problems.append(
                f"iteration {last} of graph {gid} on {rank} is dumped but not "
                "in the graph history; this is normal in dataset sink mode."
            )
            continue
        problems.append(
            f"{show(history_files[gid])} does not list the dumped iterations "
            f"{_ranges(sorted(extra))}, so the graph runs and step count of "
            f"{rank} come from the dumped iterations instead."
        )
        return RankHistory(raw, {}, discarded=True)
    return RankHistory(raw, raw, discarded=False)


def _ranges(values: list[int]) -> str:
    """[0, 1, 2, 5] → '0–2, 5' (messages stay one short sentence)."""
    parts: list[str] = []
    start = prev = None
    for v in values:
        if start is None:
            start = prev = v
        elif v == prev + 1:  # type: ignore[operator]
            prev = v
        else:
            parts.append(f"{start}" if start == prev else f"{start}–{prev}")
            start = prev = v
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}–{prev}")
    return ", ".join(parts)
