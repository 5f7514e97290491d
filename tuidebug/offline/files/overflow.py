"""Ascend operator-overflow records (issue 16 item 4; spec §5.2 "Operator overflow").

With `op_debug_mode` 3 (overflow detection) or 4, Ascend writes one record per overflowing
task: `Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}` (protobuf, `file_format:
"bin"`) or `Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}.output.0.json`
(`file_format: "npy"`; MindSpore dump.md, Ascend O2 section). MindSpore's offline engine
(spec §5.2) looks for them in `rank_{r}/debug_files/{iteration}/`, falling back to the
iteration folder (where the asynchronous layouts put them), collects their (task_id,
stream_id) pairs from the names, and ties each pair to an operator by the other dump files of
the iteration, whose names carry the same two ids. The records are never opened here: the
name says everything the engine uses, so a huge or hostile record costs nothing.

A pair of 65535 (MindSpore's "could not get it") names no operator: it is one sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["UNKNOWN_ID", "OverflowMap", "overflow_pair", "tensor_name_pair", "tie_overflows"]

UNKNOWN_ID = "65535"
_RECORD = re.compile(r"Opdebug\.Node_OpDebug\.(\d+)\.(\d+)\.(\d+)(?:\.output\.0\.json)?")
# a .bin (`{op_type}.{op_name}.{task}.{stream}.{timestamp}`) or an .npy of either grammar
_BIN = re.compile(r"([^.]+)\.(.+)\.(\d+)\.(\d+)\.(\d+)")


def overflow_pair(name: str) -> tuple[str, str] | None:
    """(task_id, stream_id) of an overflow record's file name, or None."""
    m = _RECORD.fullmatch(name)
    return (m.group(1), m.group(2)) if m else None


def tensor_name_pair(name: str) -> tuple[str, str, str] | None:
    """(op_name, task_id, stream_id) of an unconverted `.bin` dump file's name, or None."""
    if name.startswith("Opdebug."):
        return None
    m = _BIN.fullmatch(name)
    return (m.group(2), m.group(3), m.group(4)) if m else None


@dataclass
class OverflowMap:
    """The overflowing operators of one iteration: their file `op_name`s, and sentences
    about records that name no operator."""

    op_names: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    records: int = 0


def tie_overflows(
    records: Iterable[Path], ops: Iterable[tuple[str, str, str]], where: str
) -> OverflowMap:
    """Tie overflow `records` to operators: `ops` are (op_name, task_id, stream_id) of the
    iteration's other dump files; `where` names the iteration in sentences."""
    by_pair: dict[tuple[str, str], set[str]] = {}
    for op_name, task, stream in ops:
        by_pair.setdefault((task, stream), set()).add(op_name)
    out = OverflowMap()
    unknown = 0
    untied: list[str] = []
    for path in records:
        pair = overflow_pair(path.name)
        if pair is None:
            continue
        out.records += 1
        if UNKNOWN_ID in pair:
            unknown += 1
            continue
        names = by_pair.get(pair)
        if not names:
            untied.append(f"task {pair[0]}, stream {pair[1]}")
            continue
        out.op_names.update(names)
    if unknown:
        out.problems.append(
            f"{where}: {unknown} overflow record{'s' if unknown != 1 else ''} with task or "
            f"stream id {UNKNOWN_ID} (unknown to MindSpore) cannot be tied to an operator."
        )
    if untied:
        shown = "; ".join(sorted(set(untied))[:5])
        out.problems.append(
            f"{where}: no dump file of the iteration has the ids of {len(untied)} overflow "
            f"record{'s' if len(untied) != 1 else ''} ({shown}), so their operators are unknown."
        )
    return out
