"""One compare of two dump folders, whatever their kind: what the CLI, the API
(`DumpAnalyzer.compare`) and the TUI's compare mode call.

`compare_dumps(TARGET, GOLDEN, …)` finds what each folder is (an msprobe dump, else a
MindSpore-layout dump: MindSpore synchronous dumps of any version, tuidebug.torch dumps,
statistic-only dumps), pairs their tensors (pairing.py), compares them (report.py) and
returns a `CompareResult`: the report (rows in execution order, the first divergence, its
chain, the summary, notes) and the problems (what either dump left unread). A mistake or a
dump that cannot be compared raises `CompareError`, one sentence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from tuidebug.compare.pairing import CompareError, Pair
from tuidebug.compare.report import CompareReport, Row, compare_pairs

__all__ = ["CompareResult", "compare_dumps"]


@dataclass
class CompareResult:
    """A compare's answer. `rows` are in execution order; `first` indexes the first
    divergence (None: none), `chain()` the diverged tensors it feeds; `problems` lists what
    either dump left unread: when it is not empty, or a row was skipped, a compare without
    divergence is incomplete, not an all-clear (`complete`)."""

    report: CompareReport
    problems: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[Row]:
        return self.report.rows

    @property
    def first(self) -> int | None:
        return self.report.first

    @property
    def first_divergence(self) -> Row | None:
        first = self.report.first
        return None if first is None else self.report.rows[first]

    def chain(self, limit: int | None = None) -> list[int]:
        """Indices in `rows` of the divergence chain (CompareReport.chain)."""
        return self.report.chain(limit)

    @property
    def summary(self) -> dict[str, int]:
        """Counts: matched (pass + diverged), diverged, unmatched, skipped."""
        return self.report.summary

    @property
    def notes(self) -> list[str]:
        return self.report.notes

    @property
    def complete(self) -> bool:
        """Whether every tensor of both dumps was read and compared."""
        return not self.problems and not self.report.count("skipped")


def compare_dumps(
    target: str | os.PathLike[str],
    golden: str | os.PathLike[str],
    *,
    ranks: Sequence[int] | None = None,
    steps: Sequence[int] | None = None,
    node: re.Pattern[str] | None = None,
    cosine: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> CompareResult:
    """Compare the dump in `target` (msprobe's -tp) against the one in `golden` (-gp):
    `ranks`/`steps` (iterations) default to every common one; `node` keeps the tensors whose
    name it matches; `cosine`/`rtol`/`atol` replace the tolerance's defaults. Raises
    CompareError (one sentence) when the folders cannot be compared or nothing matches."""
    from tuidebug.compare.pairing import pair_mindspore, pair_msprobe
    from tuidebug.offline.dump import DumpError
    from tuidebug.offline.files.msprobe import MsprobeError, find_msprobe_root
    from tuidebug.offline.foreign.dump import open_dump

    for path in (target, golden):
        if not os.path.isdir(path):
            raise CompareError(f"{os.fspath(path)} is not a folder holding a dump.")
    problems: list[str] = []
    notes: list[str] = []
    t_ms, g_ms = find_msprobe_root(target), find_msprobe_root(golden)
    pairs: list[Pair]
    try:
        if t_ms is not None and g_ms is not None:
            pairs = pair_msprobe(
                t_ms, g_ms, ranks=ranks, steps=steps, node=node, problems=problems, notes=notes
            )
        elif t_ms is not None or g_ms is not None:
            which = "target" if t_ms is not None else "golden"
            raise CompareError(
                f"the {which} is an msprobe dump and the other is not; compare two dumps of "
                "the same kind."
            )
        else:
            # a foreign dump of another kind (tfdbg) through the dump model's seam: its
            # graphs, steps, statistics and values answer as a MindSpore dump's do
            t_dump, g_dump = open_dump(target), open_dump(golden)
            kinds = {getattr(d, "kind", "MindSpore") for d in (t_dump, g_dump)}
            if kinds == {"tfdbg"}:
                notes.append(
                    "tfdbg's health summaries (CURT/CONCISE/FULL_HEALTH) hold NaN/±Inf counts "
                    "only: their tensors are compared on whether they hold NaN or Inf, and a "
                    "pass says no more; FULL_TENSOR values are compared on every metric."
                )
            if len(kinds) > 1:
                raise CompareError(
                    f"the target is a {getattr(t_dump, 'kind', 'MindSpore')} dump and the "
                    f"golden a {getattr(g_dump, 'kind', 'MindSpore')} one; compare two dumps "
                    "of the same kind."
                )
            pairs = pair_mindspore(
                t_dump, g_dump, ranks=ranks, iterations=steps, node=node, problems=problems
            )
            # listed while pairing: files refused by discovery never become rows
            for side, dump in (("target", t_dump), ("golden", g_dump)):
                said = getattr(dump, "notes", [])  # a foreign dump's: no data unread
                notes.extend(f"{side}: {n}" for n in said)
                problems.extend(f"{side}: {p}" for p in dump.problems if p not in said)
        report = compare_pairs(pairs, cosine=cosine, rtol=rtol, atol=atol)
    except (DumpError, MsprobeError) as err:
        raise CompareError(str(err)) from None
    report.notes[:0] = notes
    if not report.rows:
        raise CompareError("no tensor of either dump matches, so nothing was compared.")
    return CompareResult(report, problems)
