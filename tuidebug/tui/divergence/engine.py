"""The compare the divergence pane shows, run off the UI thread: which two dumps, which
steps and ranks they share, and the rows of one step and rank with progress and a way to
stop.

A thin adapter over tuidebug.compare (pairing, then compare_pairs one pair at a time, so a
worker can say how far it is and stop between two tensors); nothing of the compare's own
rules is repeated here. Every problem is one sentence (`CompareProblem`), for a notice. No
Textual here: plain unit tests.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tuidebug.compare.pairing import Pair
    from tuidebug.compare.report import CompareReport
    from tuidebug.offline.dump import OfflineDump
    from tuidebug.offline.files.msprobe import MsprobeRoot

Kind = Literal["mindspore", "msprobe"]


class CompareProblem(Exception):
    """The two dumps cannot be compared (or not at this step and rank): one sentence."""


@dataclass
class DumpPair:
    """Two dumps opened for comparing: the target (under test) and the golden (reference).

    `steps` are the MindSpore iterations or msprobe steps both dumps have (over every
    rank), `ranks` the ranks both have. `problems`: what either dump left unread, said
    once in the pane (a compare that skipped data is not an all-clear)."""

    kind: Kind
    target_path: str
    golden_path: str
    steps: list[int]
    ranks: list[int]
    problems: list[str] = field(default_factory=list)
    _target: OfflineDump | MsprobeRoot | None = None
    _golden: OfflineDump | MsprobeRoot | None = None

    def pairs(self, step: int, rank: int) -> list[Pair]:
        """Every tensor of either dump at `step` and `rank`, in execution order."""
        from tuidebug.compare.pairing import CompareError, pair_mindspore, pair_msprobe
        from tuidebug.offline.dump import DumpError, OfflineDump
        from tuidebug.offline.files.msprobe import MsprobeError, MsprobeRoot

        try:
            if self.kind == "msprobe":
                assert isinstance(self._target, MsprobeRoot)
                assert isinstance(self._golden, MsprobeRoot)
                problems: list[str] = []
                pairs = pair_msprobe(
                    self._target, self._golden, ranks=[rank], steps=[step], problems=problems
                )
            else:
                assert isinstance(self._target, OfflineDump)
                assert isinstance(self._golden, OfflineDump)
                pairs = pair_mindspore(self._target, self._golden, ranks=[rank], iterations=[step])
                problems = [f"target: {p}" for p in self._target.problems]
                problems += [f"golden: {p}" for p in self._golden.problems]
        except (CompareError, DumpError, MsprobeError) as err:
            raise CompareProblem(_sentence(str(err))) from None
        except OSError as err:
            raise CompareProblem(f"A dump could not be read: {err.strerror or err}.") from None
        for problem in problems:
            if problem not in self.problems:
                self.problems.append(problem)
        return pairs


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def open_pair(target: str | os.PathLike[str], golden: str | os.PathLike[str]) -> DumpPair:
    """Open both dumps (MindSpore synchronous dumps, or two msprobe dumps); a
    CompareProblem says in one sentence why they cannot be compared."""
    from tuidebug.offline.dump import DumpError, OfflineDump
    from tuidebug.offline.files.msprobe import MsprobeError, find_msprobe_root

    t_text, g_text = os.fspath(target), os.fspath(golden)
    for label, path in (("target", t_text), ("golden", g_text)):
        if not Path(path).expanduser().is_dir():
            raise CompareProblem(f"The {label} dump {path} is not a folder.")
    t_path, g_path = Path(t_text).expanduser(), Path(g_text).expanduser()
    try:
        t_ms, g_ms = find_msprobe_root(t_path), find_msprobe_root(g_path)
        if t_ms is not None and g_ms is not None:
            steps = sorted(set(t_ms.steps) & set(g_ms.steps))
            ranks = sorted(
                {r for s in steps for r in t_ms.steps[s].ranks}
                & {r for s in steps for r in g_ms.steps[s].ranks}
            )
            pair = DumpPair("msprobe", t_text, g_text, steps, ranks, [], t_ms, g_ms)
        elif t_ms is not None or g_ms is not None:
            which = "target" if t_ms is not None else "golden"
            raise CompareProblem(
                f"The {which} is an msprobe dump and the other is not: compare two dumps of "
                "the same kind."
            )
        else:
            t_dump, g_dump = OfflineDump(t_path), OfflineDump(g_path)
            ranks = sorted(set(t_dump.ranks) & set(g_dump.ranks))
            steps = sorted(
                {i for r in ranks for i in t_dump.iterations(r)}
                & {i for r in ranks for i in g_dump.iterations(r)}
            )
            pair = DumpPair("mindspore", t_text, g_text, steps, ranks, [], t_dump, g_dump)
    except (DumpError, MsprobeError) as err:
        raise CompareProblem(_sentence(str(err))) from None
    except OSError as err:
        raise CompareProblem(f"A dump could not be read: {err.strerror or err}.") from None
    if not pair.ranks:
        raise CompareProblem("The two dumps have no rank in common, so nothing can be compared.")
    if not pair.steps:
        word = "step" if pair.kind == "msprobe" else "iteration"
        raise CompareProblem(f"The two dumps have no {word} in common, so nothing can be compared.")
    return pair


@dataclass
class Outcome:
    """What one compare found: the report (its rows in execution order), and whether it
    was stopped part-way (its rows are then the ones compared before it stopped)."""

    step: int
    rank: int
    report: CompareReport
    pairs: list[Pair]  # one per row: where each side's value is read from
    stopped: bool = False


def run_compare(
    pair: DumpPair,
    step: int,
    rank: int,
    *,
    progress: Callable[[int, int], None] = lambda done, total: None,
    stopped: Callable[[], bool] = lambda: False,
) -> Outcome:
    """Compare every tensor of `step` and `rank`, one pair at a time: `progress(done,
    total)` after each, and `stopped()` asked between two (True: return what is done)."""
    from tuidebug.compare.report import CompareReport, compare_pairs, judge_at_run_precision

    if step not in pair.steps:
        word = "step" if pair.kind == "msprobe" else "iteration"
        shared = ", ".join(map(str, pair.steps))
        raise CompareProblem(
            f"Only one of the dumps has {word} {step}; both have {word}s {shared}."
        )
    if rank not in pair.ranks:
        shared = ", ".join(map(str, pair.ranks))
        raise CompareProblem(f"Only one of the dumps has rank {rank}; both have ranks {shared}.")
    pairs = pair.pairs(step, rank)
    report = CompareReport()
    total = len(pairs)
    for done, one in enumerate(pairs):
        if stopped():
            judge_at_run_precision(report, None, None, None)
            return Outcome(step, rank, report, pairs[:done], stopped=True)
        part = compare_pairs([one])
        report.rows.extend(part.rows)
        if not part.tensor_mode:
            report.tensor_mode = False
        progress(done + 1, total)
    # each pair alone cannot tell that the runs differ in precision (bf16 autocast against
    # fp32): judged once over the whole step, as `tuidebug compare` does
    judge_at_run_precision(report, None, None, None)
    return Outcome(step, rank, report, pairs)


__all__ = ["CompareProblem", "DumpPair", "Kind", "Outcome", "open_pair", "run_compare"]
