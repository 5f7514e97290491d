"""`tuidebug check` on a foreign dump: msprobe (issue 29) and TensorFlow Debugger V2 (issue 32).

cli/check.py finds the kind of dump by its files, judges the shared options (watches, --node,
the syntax of --iteration and --rank) and imports this module only when the dump is foreign,
so a check of a MindSpore dump never loads it. Nothing here imports cli/check.py (the
import-linter contract "no import circles" counts lazy imports too): what both need comes in
as arguments.

Output and exit status follow check's: hits on stdout (a table, or JSON with `--json`),
warnings on stderr one sentence each; 0 no hit, 1 hits, 2 usage or data error (including data
refused or left unread, when nothing hit).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tuidebug.cli.common import EXIT_HITS, EXIT_OK, EXIT_USAGE, UsageError, say
from tuidebug.cli.watch_options import WatchOption

if TYPE_CHECKING:
    from tuidebug.offline.files.msprobe import MsprobeRoot

# `--iteration 2-5,7` as check.parse_iteration_ranges gives it: [(2, 5), (7, 7)]
Ranges = list[tuple[int, int]]


def _within(ranges: Ranges | None) -> Callable[[int], bool] | None:
    """The test "is this step (or rank) in `ranges`", or None (everything) without ranges."""
    return (lambda i: any(a <= i <= b for a, b in ranges)) if ranges else None


def _refuse(
    args: argparse.Namespace, flags: Sequence[str], article: str, kind: str, *, yet: bool
) -> None:
    """UsageError for the first of `flags` given, then for --recommended: options this kind
    of dump does not take (ignored, the check would not be the one asked for). `yet`: the
    flags may apply one day."""
    for flag in flags:
        if getattr(args, flag[2:]):
            raise UsageError(
                f"{flag} does not apply to {article} {kind} dump{' yet' if yet else ''}; "
                f"give it without {flag}."
            )
    if args.recommended:
        raise UsageError(f"--recommended is not available for {kind} dumps yet; give --watch.")


def _warn(problem: str) -> None:
    say(f"warning: {problem}")


def run_msprobe(
    args: argparse.Namespace,
    root: MsprobeRoot,
    watches: list[WatchOption],
    node_filter: re.Pattern[str] | None,
    iterations: Ranges | None,
    rank_ranges: Ranges,
) -> int:
    """`check` on an msprobe dump: decided from its statistics (`offline.check.msprobe`);
    a tensor dump's watchpoints the statistics cannot decide, on the values."""
    from tuidebug.core.text import printable
    from tuidebug.core.watchpoints import result_detail, result_record
    from tuidebug.offline.check.msprobe import (
        check_msprobe,
        check_msprobe_values,
        has_tensor_files,
    )

    _refuse(args, ("--graph", "--cluster"), "an", "msprobe", yet=False)
    steps = _within(iterations)
    ranks = _within(rank_ranges)
    report = check_msprobe(
        root,
        [(o.watchpoint.request(), o.condition.target) for o in watches],
        steps=steps,
        ranks=ranks,
        node_filter=node_filter,
    )
    if report.refusals and has_tensor_files(root, steps):
        # task tensor: what the statistics cannot decide is checked on the values (the
        # foreign-dump seam and the checker, as the TUI and the API check it), every watch
        report = check_msprobe_values(
            root,
            [(o.condition, o.watchpoint.request()) for o in watches],
            steps=steps,
            ranks=ranks,
            node_filter=node_filter,
            mem_limit=args.mem_limit << 20 if args.mem_limit is not None else None,
            workers=args.workers,
        )
    for problem in [*root.problems, *report.problems, *report.refusals.values()]:
        _warn(problem)
    if report.ignored:
        # msprobe's rule never blames these (uninitialised memory, chosen fills): unwatched,
        # and said, so their NaN/Inf does not pass unseen
        say(
            f"note: {len(report.ignored)} call(s) named Torch.empty*/Torch.fill* hold NaN/Inf "
            "that msprobe's overflow_check rule ignores (uninitialised memory, fills such as "
            f"-inf masks); no watchpoint watches them (the first: {report.ignored[0][:200]})."
        )
    if not report.checked and not (root.problems or report.problems or report.refusals):
        # "0 hits" would read as "all clear" although nothing was looked at
        raise UsageError(
            "no msprobe tensor record is in the steps, ranks and nodes selected, so nothing "
            "was checked."
        )
    if args.json:
        records = []
        for hit in report.hits:
            option = watches[hit.watchpoint_id]
            record = result_record(
                option.spec,
                option.params,
                option.condition,
                hit.place,
                hit.result.error_code,
                hit.result.params,
            )
            record["tensor"] = hit.place.tensor  # msprobe's own name of the tensor
            # its call is the anomaly msprobe overflow_check names on its step and rank
            # (its cross-rank pass included: a collective's NaN/Inf on the rank it began)
            record["anomaly"] = hit.anomaly
            records.append(record)
        print(json.dumps(records, indent=1))
    else:
        first: set[tuple[int | None, int]] = set()
        for hit in report.hits:
            option = watches[hit.watchpoint_id]
            detail = result_detail(option.condition, hit.result.error_code, hit.result.params)
            p = hit.place
            mark = ""
            if hit.anomaly and (p.iteration, p.rank) not in first:
                first.add((p.iteration, p.rank))
                mark = "  <- first anomaly (msprobe's rule)"
            # the tensor's name is the dump's own text: escaped before the terminal sees it
            print(
                printable(
                    f"step{p.iteration}  rank {p.rank}  {p.tensor}  {option.spec}  {detail}{mark}"
                )
            )
        say(f"{len(report.hits)} hit(s) in {report.checked} msprobe tensor record(s).")
    if report.hits:
        return EXIT_HITS
    # folders left unread while finding the dump (root.problems) count as data skipped
    incomplete = root.problems or report.problems or report.refusals
    return EXIT_USAGE if incomplete else EXIT_OK


def _tfdbg_where(eager: bool, index: int, step: int | None, graph: str) -> str:
    """Where a tfdbg op output ran: `eager #N`, or `step S  GRAPH` (`step ?` when the step
    could not be derived)."""
    if eager:
        return f"eager #{index}"
    return f"{'step ?' if step is None else f'step {step}'}  {graph}"


def run_tfdbg(
    args: argparse.Namespace,
    watches: list[WatchOption],
    node_filter: re.Pattern[str] | None,
    ranges: Ranges | None,
) -> int:
    """`check` on a TensorFlow Debugger V2 dump (`offline.check.tfdbg`): what the recorded
    mode decides, hits in execution order with a derived step, written as found (a large
    dump's first hit shows at once; memory does not grow with the hits), then the origin.
    `ranges` are --iteration's: the derived steps (eager ops and pipeline ops have none:
    left out)."""
    from tuidebug.core.error_codes import error_messages
    from tuidebug.core.text import printable
    from tuidebug.core.watchpoints import result_detail
    from tuidebug.offline.check.tfdbg import TfdbgHit, check_tfdbg
    from tuidebug.offline.files.tfdbg import TfdbgDump, TfdbgError

    _refuse(args, ("--graph", "--cluster", "--rank"), "a", "tfdbg", yet=True)
    try:
        dump = TfdbgDump(args.dump)
    except TfdbgError as err:
        raise UsageError(str(err)) from None
    first = [True]

    def write(hit: TfdbgHit) -> None:
        option = watches[hit.watchpoint_id]
        if args.json:
            record: dict[str, object] = {
                "watch": option.spec,
                "condition": option.condition.name,
                "op": hit.op_name,
                "op_type": hit.op_type,
                "output_slot": hit.output_slot,
                "graph": hit.graph,
                "step": hit.step,
                "eager": hit.eager,
                ("execution_index" if hit.eager else "trace_index"): hit.index,
                "error_code": hit.result.error_code,
                "error_messages": error_messages(hit.result.error_code),
                "params": [
                    {"name": p.name, "value": p.value, "actual": p.actual, "hit": p.hit}
                    for p in hit.result.params
                    if not p.disabled and p.name in option.params
                ],
            }
            if hit.counts is not None:
                record["nan"], record["neg_inf"], record["pos_inf"] = hit.counts
            # one object a line, the array streamed: valid JSON however many hits there are
            print(("[\n" if first[0] else ",\n") + json.dumps(record), end="")
        else:
            detail = result_detail(option.condition, hit.result.error_code, hit.result.params)
            if hit.counts is not None and any(hit.counts):
                detail += f"  NaN {hit.counts[0]}, -Inf {hit.counts[1]}, +Inf {hit.counts[2]}"
            where = _tfdbg_where(hit.eager, hit.index, hit.step, hit.graph)
            print(
                printable(
                    f"{where}  {hit.op_name}:{hit.output_slot} ({hit.op_type})  {option.spec}"
                    f"  {detail}".rstrip()
                ),
                flush=first[0],
            )
        first[0] = False

    report = check_tfdbg(
        dump,
        [(o.watchpoint.request(), o.condition.target) for o in watches],
        node_filter,
        on_hit=write,
        steps=_within(ranges),
    )
    if args.json:
        print("[]" if first[0] else "\n]")
    if ranges and not any(a < report.step_count + 1 for a, _b in ranges):
        # "0 hits" would read as "all clear" although no step asked for exists
        raise UsageError(
            f"--iteration {args.iteration} names no step of this tfdbg dump (steps 0 to "
            f"{report.step_count}, derived from its function calls)."
        )
    for problem in [*dump.notes, *dump.problems, *report.problems, *report.refusals.values()]:
        _warn(problem)
    if not args.json:
        say(
            f"{report.hit_count} hit(s) in {report.checked} tfdbg op output(s) "
            f"({report.eager_checked} of them eager); steps are the calls of the function "
            "that ran each op, counted from 0 (records carry no step number)."
        )
        origin = report.origin
        if origin is not None:
            where = _tfdbg_where(origin.eager, origin.index, origin.step, origin.graph)
            say(
                printable(
                    f"origin: {where}  {origin.op_name}:{origin.output_slot} ({origin.op_type}),"
                    " the first op output that went NaN/Inf while its recorded inputs were finite."
                )
            )
    if report.hit_count:
        return EXIT_HITS
    return EXIT_USAGE if dump.problems or report.problems or report.refusals else EXIT_OK
