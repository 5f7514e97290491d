"""`tuidebug check DUMP`: the headless watchpoint check, for CI and scripts.

    tuidebug check ./dump --watch TO --watch TL:abs_mean_gt=1e10 --iteration 2-5 --json

A watch SPEC is a condition abbreviation or id with optional parameters (`TO`,
`TL:abs_mean_gt=1e10`, `tensor_range:range_start_inclusive=-1e6,range_end_inclusive=1e6,
range_percentage_lt=100`). Weight, gradient and activation conditions (W*, G*, AR) watch the
nodes of that category; tensor conditions watch every output tensor of every operator and
parameter (spec §3.2). `--watch-file FILE` reads specs one a line (what the TUI's "Save
watchpoints to file…" writes). `--node REGEX` narrows the nodes; `--recommended` adds
MindInsight's recommended watchpoints (spec §4).

Output: a table (default) or ONE JSON array of hits (`--json`) on stdout; warnings about the
dump on stderr, one sentence each; a progress bar on stderr only when it is a terminal.
Exit status: 0 = no hit, 1 = hits, 2 = usage or data error (including tensors that could not
be read, when nothing hit).

This module is the MindSpore (and tuidebug.torch) dump's check and the options every check
shares; an msprobe or TensorFlow Debugger V2 dump, found by its files, is checked by
cli/check_foreign.py, imported only then.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from tuidebug.cli.common import (
    EXIT_HITS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    is_tty,
    say,
    silence_stdout,
)
from tuidebug.cli.watch_options import (
    WatchOption,
    add_graph_argument,
    add_watch_arguments,
    parse_watch_arguments,
)

if TYPE_CHECKING:
    from tuidebug.core.graph import Node
    from tuidebug.offline.check.checker import CheckOutcome, CheckReport, Watch
    from tuidebug.offline.dump import OfflineDump


# The conditions a --watch SPEC may name (spec §3.1); a test keeps this in step with the
# catalogue of core/condition_catalogue.py, which is not imported here so `--help` stays light.
EPILOG = """\
watch SPEC: ABBR[:name=value,...], e.g. TO, TL:abs_mean_gt=1e10,
  TR:range_start_inclusive=-1,range_end_inclusive=1,range_percentage_lt=100
  tensors of every node:  TO  overflow (NaN or +/-Inf)        OO  Ascend operator overflow
                          TL  abs_mean_gt max_gt min_gt mean_gt
                          TS  abs_mean_lt max_lt min_lt mean_lt
                          TZ  zero_percentage_ge
                          TR  range_start_inclusive range_end_inclusive range_percentage_lt
                              range_percentage_gt max_min_lt max_min_gt
  weights:                WI  zero_percentage_ge max_gt min_lt   WO  overflow
                          WL  like TL    WS  like TS    WNC  rtol atol
                          WCL abs_mean_update_ratio_gt    WCS abs_mean_update_ratio_lt
  gradients:              GE  overflow   GL  like TL    GV  like TS
  activations:            AR  like TR
exit status: 0 no hit, 1 hits, 2 usage or data error (or tensors that could not be read)
"""
# More checker threads than this is a typo, not a wish.
MAX_WORKERS = 256


NAME = "check"
HELP = "headless watchpoint check of a dump"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("dump", help="dump root (the folder holding rank_N/)")
    add_watch_arguments(p)
    p.add_argument(
        "--rank",
        action="append",
        default=None,
        metavar="R|A-B",
        help="rank(s) to check: 3, 0-7 or 0,2,4-6 (repeatable; default: every rank)",
    )
    p.add_argument(
        "--iteration",
        default=None,
        metavar="N|A-B",
        help="iteration(s) to check: 3, 2-5 or 0,2,4-6 (default: all dumped)",
    )
    add_graph_argument(p)
    p.add_argument("--node", default=None, metavar="REGEX", help="only nodes matching REGEX")
    p.add_argument("--json", action="store_true", help="print one JSON array of hits")
    p.add_argument(
        "--workers", type=int, default=None, metavar="N", help="checker threads (default: cores)"
    )
    p.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS|local[:N]",
        help="check on a Dask cluster: a scheduler (tcp://host:8786) or local[:N] worker "
        "processes; the dump must be at the same path on every worker "
        "(needs pip install 'tuidebug[cluster]')",
    )
    p.add_argument(
        "--mem-limit",
        type=int,
        default=None,
        metavar="MB",
        help="skip tensors larger than MB megabytes (reported with error code 8)",
    )
    p.add_argument(
        "--error-on-no-value",
        action="store_true",
        help="report watched tensors that have no dumped file (error code 32)",
    )


IterationRanges = list[tuple[int, int]]


def parse_iteration_ranges(text: str, noun: str = "iteration") -> IterationRanges:
    """`3`, `2-5`, `0,2,4-6` → [(3, 3)], [(2, 5)], [(0, 0), (2, 2), (4, 6)], never expanded
    (`0-999999999999` costs nothing). Raises UsageError on anything else, naming the
    option `--{noun}`."""
    out: IterationRanges = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)\s*(?:-\s*(\d+))?", part, flags=re.ASCII)
        if not m:
            raise UsageError(
                f"--{noun} {text!r} is not {'an' if noun[0] in 'aeiou' else 'a'} {noun}, "
                f"a range like 2-5, or a list of them."
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise UsageError(f"--{noun} range {part!r} ends before it starts.")
        out.append((lo, hi))
    return out


def select_ranks(texts: Sequence[str], ranks: Sequence[int]) -> list[int]:
    """The dump's `ranks` that `--rank` options name (`3`, `0-7`, `0,2,4-6` each). A rank
    named on its own must be in the dump; a range takes the ranks it covers, and must
    cover one. Raises UsageError (one sentence)."""
    have = set(ranks)
    chosen: set[int] = set()
    for text in texts:
        for lo, hi in parse_iteration_ranges(text, "rank"):
            covered = {r for r in have if lo <= r <= hi}
            if not covered:
                what = f"rank {lo} is not" if lo == hi else f"no rank from {lo} to {hi} is"
                raise UsageError(f"{what} in the dump (ranks: {_ranges(list(ranks))}).")
            chosen |= covered
    return sorted(chosen)


def parse_iterations(text: str) -> list[int]:
    """`3`, `2-5`, `0,2,4-6` → sorted iterations. Raises UsageError on anything else,
    including ranges too long to list."""
    ranges = parse_iteration_ranges(text)
    if sum(hi - lo + 1 for lo, hi in ranges) > 1_000_000:
        raise UsageError(f"--iteration {text!r} covers more than a million iterations.")
    return sorted({i for lo, hi in ranges for i in range(lo, hi + 1)})


def _select_iterations(text: str, dumped: Sequence[int]) -> tuple[list[int], str | None]:
    """The dumped iterations `text` asks for, and a warning about the parts of its ranges
    that were not dumped. An iteration named on its own must be in the dump."""
    ranges = parse_iteration_ranges(text)
    for lo, hi in ranges:
        if lo == hi and lo not in dumped:
            raise UsageError(
                f"iteration {lo} is not in the dump (iterations: {_ranges(list(dumped))})."
            )
    chosen = [i for i in dumped if any(lo <= i <= hi for lo, hi in ranges)]
    if not chosen:
        raise UsageError(
            f"iteration {text.strip()} is not in the dump (iterations: {_ranges(list(dumped))})."
        )
    gaps: list[str] = []
    for lo, hi in ranges:
        start = lo
        for i in dumped:
            if i < lo or i > hi:
                continue
            if i > start:
                gaps.append(str(start) if i - 1 == start else f"{start}-{i - 1}")
            start = i + 1
        if start <= hi:
            gaps.append(str(start) if hi == start else f"{start}-{hi}")
    warning = None
    if gaps:
        warning = (
            f"iterations {','.join(gaps)} of --iteration {text.strip()} are not in the dump "
            f"(iterations: {_ranges(list(dumped))}), so they were not checked."
        )
    return chosen, warning


def _condition_notes(watches: Sequence[WatchOption], backend: str) -> list[str]:
    """Sentences about conditions whose offline meaning differs from what their name says."""
    from tuidebug.core.condition_catalogue import condition_available

    notes: list[str] = []
    seen: set[str] = set()
    for option in watches:
        cond = option.condition
        if cond.id in seen or option.targets is not None:
            continue
        seen.add(cond.id)
        if backend and not condition_available(cond, backend, None):
            notes.append(
                f"{cond.abbr} ({cond.id}) reads Ascend overflow records, which a {backend} "
                "dump does not have, so it cannot hit."
            )
        if not condition_available(cond, None, 1):
            notes.append(
                f"{cond.abbr} ({cond.id}) is checked on every dumped iteration here: a dump "
                "holds weights after each step's update, not the initial ones."
            )
    return notes


@dataclass(frozen=True)
class _Options:
    """The command line's watches, node filter and the ranges --iteration and --rank give
    (foreign dumps take them as ranges), validated before the dump is read."""

    watches: list[WatchOption]
    node_filter: re.Pattern[str] | None
    iterations: IterationRanges | None
    ranks: IterationRanges


@dataclass(frozen=True)
class _Scope:
    """What the check covers: the ranks with a readable graph, the iterations, and the
    discovery sentences already warned about (the report may repeat some)."""

    ranks: list[int]
    iterations: list[int]
    early: list[str]


def run(args: argparse.Namespace) -> int:
    options = _options(args)
    from tuidebug.offline.files.msprobe import find_msprobe_root

    # an msprobe dump (issue 29) is found by its files, no flag needed
    msprobe = find_msprobe_root(args.dump) if isinstance(args.dump, str) else None
    if msprobe is not None:
        from tuidebug.cli import check_foreign

        return check_foreign.run_msprobe(
            args, msprobe, options.watches, options.node_filter, options.iterations, options.ranks
        )
    if isinstance(args.dump, str) and _is_tfdbg(args.dump):  # issue 32, no flag needed
        from tuidebug.cli import check_foreign

        return check_foreign.run_tfdbg(
            args, options.watches, options.node_filter, options.iterations
        )
    dump = _open(args)
    scope = _select(args, dump)
    watches, plan = _plan_check(args, dump, scope, options)
    report = _check(args, dump, plan, scope.iterations)
    return _report(args, dump, report, watches, scope)


def _options(args: argparse.Namespace) -> _Options:
    """Every option that can be judged without the dump, so a mistake costs no reading."""
    if args.workers is not None and not 1 <= args.workers <= MAX_WORKERS:
        raise UsageError(f"--workers must be between 1 and {MAX_WORKERS}, not {args.workers}.")
    if args.mem_limit is not None and args.mem_limit < 1:
        raise UsageError("--mem-limit must be a positive number of megabytes.")
    if not args.watch and not args.watch_file and not args.recommended:
        raise UsageError(
            "give at least one --watch SPEC (e.g. --watch TO), a --watch-file or --recommended."
        )
    watches = parse_watch_arguments(args)
    node_filter = _node_filter(args.node) if args.node is not None else None
    # syntax errors before the dump is read
    iterations = parse_iteration_ranges(args.iteration) if args.iteration is not None else None
    ranks = [r for text in args.rank or () for r in parse_iteration_ranges(text, "rank")]
    return _Options(watches, node_filter, iterations, ranks)


def _node_filter(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as err:
        raise UsageError(f"--node {text!r} is not a valid regular expression: {err}.") from None


def _open(args: argparse.Namespace) -> OfflineDump:
    from tuidebug.offline.dump import DumpError, OfflineDump

    try:
        return OfflineDump(
            args.dump,
            mem_limit=args.mem_limit << 20 if args.mem_limit is not None else None,
            graph_dir=args.graph,
        )
    except DumpError as err:
        raise UsageError(str(err)) from None


def _select(args: argparse.Namespace, dump: OfflineDump) -> _Scope:
    """The ranks and iterations to check (UsageError when none is left), with a warning
    for what was asked for and is not checked."""
    usable, early = _usable_ranks(args, dump)
    dumped = sorted({i for r in usable for i in dump.iterations(r)})
    if not dumped:
        raise UsageError(f"{args.dump} has no dumped iteration, so there is nothing to check.")
    if args.iteration is None:
        return _Scope(usable, dumped, early)
    iterations, partial = _select_iterations(args.iteration, dumped)
    if partial:
        _warn(partial)
    return _Scope(usable, iterations, early)


def _usable_ranks(args: argparse.Namespace, dump: OfflineDump) -> tuple[list[int], list[str]]:
    """The ranks `--rank` names (default: all) that have a readable graph, and the
    discovery sentences, warned about now (reading the graphs is what discovers most)."""
    ranks = select_ranks(args.rank, dump.ranks) if args.rank else dump.ranks
    usable = [rank for rank in ranks if dump.graphs(rank)]
    early = dump.new_problems()  # the report may repeat some: `_report` skips those
    for problem in early:
        _warn(problem)
    if not usable:
        raise UsageError(
            f"{_rank_text(ranks)} ha{'s' if len(ranks) == 1 else 've'} no readable graph, so nothing can be checked."
        )
    for rank in ranks:
        if rank not in usable:
            _warn(f"rank_{rank} has no readable graph and was not checked.")
    return usable, early


def _plan_check(
    args: argparse.Namespace, dump: OfflineDump, scope: _Scope, options: _Options
) -> tuple[list[WatchOption], list[Watch]]:
    """Every watch (the command line's, then the recommended ones; a watch's index is its
    watchpoint id) and what each watches. UsageError when nothing is watched; a warning
    per watch that watches nothing."""
    watches = list(options.watches)
    if args.recommended:
        watches.extend(_recommended(dump, scope.ranks))
    for note in _condition_notes(watches, dump.backend):
        _warn(note)
    plan = _plan(dump, scope.ranks, watches, options.node_filter)
    if not any(w.tensors for w in plan):
        raise UsageError("no node matches the watchpoints' targets, so nothing was checked.")
    for watch, option in zip(plan, watches, strict=True):
        if not watch.tensors:
            target = option.condition.target.value
            what = "node" if target == "tensor" else f"{target} node"
            narrowed = " matching --node" if options.node_filter is not None else ""
            _warn(f"--watch {option.spec} watches no {what}{narrowed}, so it was not checked.")
    return watches, plan


def _check(
    args: argparse.Namespace, dump: OfflineDump, plan: list[Watch], iterations: Sequence[int]
) -> CheckReport:
    """The check, here or (`--cluster`) on a Dask cluster."""
    if args.cluster is None:
        return _check_here(args, dump, plan, iterations)
    if args.workers is not None:
        _warn(
            "--workers sets this machine's checker threads; with --cluster the cluster's "
            "workers check, so it was ignored."
        )
    return _check_on_cluster(args, dump, plan, iterations)


def _check_here(
    args: argparse.Namespace, dump: OfflineDump, plan: list[Watch], iterations: Sequence[int]
) -> CheckReport:
    """The check in this process's threads, with a progress bar on a terminal. Ctrl+C
    stops the threads before it ends the command."""
    from tuidebug.offline.check.checker import Checker

    bar = _ProgressBar(sys.stderr) if is_tty(sys.stderr) and not args.json else None
    cancel = threading.Event()
    try:
        with Checker(dump, workers=args.workers) as checker:
            return checker.check(
                plan,
                iterations,
                error_on_no_value=args.error_on_no_value,
                progress=bar.update if bar else None,
                cancel=cancel,
            )
    except KeyboardInterrupt:
        cancel.set()
        raise
    finally:
        if bar:
            bar.close()


def _report(
    args: argparse.Namespace,
    dump: OfflineDump,
    report: CheckReport,
    watches: Sequence[WatchOption],
    scope: _Scope,
) -> int:
    """Warnings on stderr, the results on stdout, and the exit status."""
    for problem in [*report.notes, *report.problems]:
        if problem not in scope.early:  # said once, by `_select`
            _warn(problem)
    for problem in dump.new_problems():
        _warn(problem)
    iterations = scope.iterations
    if not report.outcomes and not report.problems and not report.tensors_checked:
        # "0 hits" would read as "all clear" although nothing was looked at
        raise UsageError(
            f"none of the watched tensors has a dumped file in iteration"
            f"{'s' if len(iterations) != 1 else ''} {_ranges(list(iterations))}, so nothing "
            "was checked."
        )
    _write_results(report, watches, iterations, scope.ranks, as_json=args.json)
    if report.outcomes:
        return EXIT_HITS
    if report.problems:
        # `problems` lists every watched tensor not read: files that failed when read and
        # data refused at discovery (a FIFO, a link out of the dump, an unreadable folder;
        # see checker.py), so "0 hits" is never an all-clear for data that was skipped.
        # counted without `notes`: they inform, nothing was lost
        count = len(report.problems)
        say(
            f"tuidebug check: watched data could not be read ({count} problem"
            f"{'s' if count != 1 else ''} above), so the check is incomplete."
        )
        return EXIT_USAGE
    return EXIT_OK


def _is_tfdbg(folder: str) -> bool:
    from tuidebug.offline.files.tfdbg import TfdbgError, find_tfdbg_prefix

    try:
        return find_tfdbg_prefix(folder) is not None
    except TfdbgError as err:
        raise UsageError(str(err)) from None


def _warn(problem: str) -> None:
    say(f"warning: {problem}")


def _check_on_cluster(
    args: argparse.Namespace, dump: OfflineDump, plan: list[Watch], iterations: Sequence[int]
) -> CheckReport:
    """The check with its tensors read and scanned on a Dask cluster (offline/check/cluster.py):
    same hits, order and exit status as here. Ctrl+C cancels the cluster's tasks (the
    runner does, on its way out)."""
    try:
        from tuidebug.offline.check import cluster, cluster_connect
    except ImportError:
        raise UsageError(
            "--cluster needs Dask's distributed package: pip install 'tuidebug[cluster]'."
        ) from None
    from tuidebug.offline.check.checker import Checker

    shown = _ClusterProgress(sys.stderr, is_tty(sys.stderr) and not args.json)
    if is_tty(sys.stderr):  # the address is the user's own text, escaped all the same
        from tuidebug.core.text import printable

        print(printable(cluster_connect.connecting_to(args.cluster)), file=sys.stderr)
    try:
        with cluster_connect.connect(args.cluster) as client:
            runner = cluster.ClusterRunner(client, on_progress=shown.update)
            with Checker(dump, runner=runner) as checker:
                return checker.check(plan, iterations, error_on_no_value=args.error_on_no_value)
    except cluster.ClusterError as err:
        raise UsageError(str(err)) from None
    finally:
        shown.close()


def _write_results(
    report: CheckReport,
    watches: Sequence[WatchOption],
    iterations: Sequence[int],
    ranks: Sequence[int],
    *,
    as_json: bool,
) -> None:
    """The table or the JSON array on stdout. A reader that left (`| head`) or a closed
    stdout is fine: the exit status still tells the result. Any other failure to write
    (a full disk) is a UsageError, so the results are never silently lost."""
    out = sys.stdout
    if out is None:
        return
    try:
        if as_json:
            json.dump([_hit_json(o, watches) for o in report.outcomes], out, indent=2)
            out.write("\n")
        else:
            _print_table(report, watches, out)
            _print_summary(report, iterations, ranks, out)
        out.flush()
    except BrokenPipeError:
        silence_stdout()
    except (OSError, ValueError) as exc:
        silence_stdout()
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise UsageError(f"cannot write the results to standard output: {reason}.") from None


# ------------------------------------------------------------------ planning
def _recommended(dump: OfflineDump, ranks: Sequence[int]) -> list[WatchOption]:
    """MindInsight's recommended watchpoints, one per name, targets per graph. Offline there
    is no initial suspension, so weight initialisation is never recommended (spec §5.7)."""
    from tuidebug.core.condition_catalogue import get_condition
    from tuidebug.core.watchpoints import Watchpoint, framework_of, recommended_watchpoints

    by_name: dict[str, WatchOption] = {}
    for rank in ranks:
        for graph in dump.graphs(rank).values():
            # a tuidebug.torch dump gets PyTorch's rules (watchpoints.framework_of)
            framework = framework_of(dump.ms_version)
            for rec in recommended_watchpoints(
                graph, backend=dump.backend, step=1, framework=framework
            ):
                option = by_name.get(rec.name)
                if option is None:
                    cond = get_condition(rec.condition)
                    wp = Watchpoint(0, cond, dict(rec.params))
                    option = WatchOption(wp.spec, cond, dict(rec.params), wp, {})
                    by_name[rec.name] = option
                assert option.targets is not None
                option.targets[(rank, graph.name)] = tuple(rec.targets)
    return list(by_name.values())


def _plan(
    dump: OfflineDump,
    ranks: Sequence[int],
    watches: Sequence[WatchOption],
    node_filter: re.Pattern[str] | None,
) -> list[Watch]:
    """The checker's watches: each option's request (its watchpoint id is its index) and
    the tensors it watches, per (rank, graph)."""
    from tuidebug.core.watch_targets import watched_tensors
    from tuidebug.offline.check.checker import Watch

    def matches(node: Node) -> bool:
        return node_filter is None or node_filter.search(node.name) is not None

    plan = []
    for wp_id, option in enumerate(watches):
        tensors: dict[tuple[int, str], list[tuple[str, int]]] = {}
        for rank in ranks:
            for graph in dump.graphs(rank).values():
                if option.targets is not None:
                    targets = option.targets.get((rank, graph.name))
                    if not targets:
                        continue
                else:
                    targets = ()
                # constants named as targets stay (unlike the sessions): as check always did
                found = watched_tensors(
                    option.condition, targets, [graph], constants=True, node_filter=matches
                )
                for name, pairs in found.items():
                    tensors[(rank, name)] = pairs
        request = option.watchpoint.request()  # the id is not part of a request
        plan.append(Watch(wp_id, request, option.condition.needs_prev, tensors))
    return plan


# ------------------------------------------------------------------ output
def _hit_json(outcome: CheckOutcome, watches: Sequence[WatchOption]) -> dict[str, Any]:
    """The outcome as one object of the JSON array (`hit_record`'s schema)."""
    from tuidebug.core.watchpoints import result_record

    option = watches[outcome.watchpoint_id]
    result = outcome.result
    return result_record(
        option.spec, option.params, option.condition, outcome.key, result.error_code, result.params
    )


def _result_text(outcome: CheckOutcome, watches: Sequence[WatchOption]) -> str:
    """The outcome's one-line detail, as a hit's (the WATCH column shows the watchpoint)."""
    from tuidebug.core.watchpoints import result_detail

    condition = watches[outcome.watchpoint_id].condition
    return result_detail(condition, outcome.result.error_code, outcome.result.params)


# Column widths stop growing here: a longer cell (a recommended range spec) overflows its
# column in its own row instead of pushing every row's node name off the screen.
_MAX_PADDED = 40


def _print_table(report: CheckReport, watches: Sequence[WatchOption], out: TextIO) -> None:
    """One row per hit: ITER RANK SLOT WATCH RESULT NODE. The node name, the longest and
    most variable cell, comes last and unpadded so rows stay short and greppable. Cells are
    escaped (core.text.printable): a node name from the `.pb` cannot retitle the terminal,
    clear it or return the cursor over another row; `--json` keeps the exact name."""
    from tuidebug.core.text import printable

    if not report.outcomes:
        return
    rows = [("ITER", "RANK", "SLOT", "WATCH", "RESULT", "NODE")]
    for o in report.outcomes:
        k = o.key
        rows.append(
            (
                str(k.iteration),
                str(k.rank),
                str(k.slot),
                printable(watches[o.watchpoint_id].spec),
                printable(_result_text(o, watches)),
                printable(k.node),
            )
        )
    widths = [min(_MAX_PADDED, max(len(r[i]) for r in rows)) for i in range(5)]
    for r in rows:
        cells = [r[i].ljust(widths[i]) for i in range(5)]
        out.write("  ".join(cells) + "  " + r[5] + "\n")


def _print_summary(
    report: CheckReport, iterations: Sequence[int], ranks: Sequence[int], out: TextIO
) -> None:
    hits = len(report.outcomes)
    errors = sum(1 for o in report.outcomes if o.error_code)
    what = f"{hits} hit{'s' if hits != 1 else ''}"
    if errors:
        what += f" ({errors} with an error code)"
    out.write(
        f"{what}; {report.tensors_checked} tensor{'s' if report.tensors_checked != 1 else ''} "
        f"checked, iteration{'s' if len(iterations) != 1 else ''} {_ranges(list(iterations))} "
        f"of {_rank_text(ranks)}, {report.seconds:.2f} s.\n"
    )


def _rank_text(ranks: Sequence[int]) -> str:
    """`rank_3`, or `ranks 0-999`: a 1000-rank dump's ranks are runs, not a thousand names."""
    return f"rank_{ranks[0]}" if len(ranks) == 1 else f"ranks {_ranges(list(ranks))}"


def _ranges(values: list[int]) -> str:
    """`0-3,5`: iterations or ranks as runs, in the CLI's plain ASCII."""
    from tuidebug.core.text import rank_ranges

    return rank_ranges(values, dash="-", sep=",")


class _ClusterProgress:
    """A cluster check's progress on stderr: batches done / total, tensors and bytes checked,
    the rank with the most work left. Redrawn in place on a terminal; elsewhere (a log
    file) one sentence every `LOG_SECONDS`, so a long run shows it is alive."""

    LOG_SECONDS = 10.0

    def __init__(self, stream: TextIO, tty: bool) -> None:
        self.stream = stream
        self.tty = tty
        self._last = time.monotonic()
        self._drawn = False

    def update(self, p: Any) -> None:  # a cluster.ClusterProgress (not imported here)
        now = time.monotonic()
        interval = 0.1 if self.tty else self.LOG_SECONDS
        if now - self._last < interval and p.done < p.total:
            return
        if not self.tty and p.done == p.total:
            return  # the result follows at once
        self._last = now
        text = (
            f"{p.done} of {p.total} tasks done on the cluster, {p.tensors} tensors and "
            f"{p.nbytes / 2**30:.2f} GiB checked"  # binary, as every size tuidebug shows
        )
        if p.slowest_rank is not None:
            text += f", slowest rank_{p.slowest_rank} ({p.slowest_left} left)"
        if self.tty:
            self.stream.write(f"\r\033[K{text}")
            self.stream.flush()
            self._drawn = True
        else:
            say(f"tuidebug check: {text}.")

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()


class _ProgressBar:
    """A one-line bar on a terminal; redrawn at most ten times a second."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._last = 0.0
        self._drawn = False

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last < 0.1 and done < total:
            return
        self._last = now
        width = 30
        filled = int(width * done / total) if total else width
        self.stream.write(f"\rchecking [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
