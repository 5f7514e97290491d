"""`tuidebug compare TARGET GOLDEN`: where do two runs first diverge? (issue 30)

    tuidebug compare ./bf16_dump ./fp32_dump --iteration 3 --csv out.csv

TARGET and GOLDEN in the order of msprobe compare's `-tp`/`-gp`: two MindSpore-layout dumps
of the same network (synchronous dumps of one or two MindSpore versions, statistic-only
dumps, tuidebug.torch dumps) or two msprobe dumps (tensor or statistics). The table lists the
rows in execution order from the first divergence on (a divergence: past a tolerance that
knows the dtypes, see tuidebug/compare/tolerance.py), the divergence chain, then one summary
line;
`--json` prints one JSON object instead, `--csv FILE` writes msprobe compare's CSV layout
(never over an existing file; `--force` replaces it).
Exit status: 0 = no divergence, 1 = divergences, 2 = usage or data error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING

from tuidebug.cli.common import EXIT_HITS, EXIT_OK, EXIT_USAGE, UsageError, say

if TYPE_CHECKING:
    from tuidebug.compare.report import CompareReport, Row

NAME = "compare"
HELP = "compare two dumps of the same network: where do they first diverge"
EPILOG = """\
a divergence: NaN or Inf on one side only, different shapes, Cosine < --cosine, or
  MaxAbsErr > --atol + --rtol * max|golden|; defaults by the lower-precision dtype:
  float32 0.9999/1e-4/1e-6, float16 0.99/1e-2/1e-3, bfloat16 0.99/3e-2/1e-2, float64
  0.99999/1e-7/1e-9, integers exact; where the two runs differ in precision (bf16
  autocast against fp32), every float tensor is judged by the lower precision
exit status: 0 no divergence, 1 divergences, 2 usage or data error
"""
# rows printed after the first divergence before "… N more rows" (--json/--csv have all)
TABLE_ROWS = 40
# tensors of the divergence chain printed after the table
CHAIN_ROWS = 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("target", help="the dump under test (msprobe's -tp)")
    p.add_argument("golden", help="the reference dump (msprobe's -gp)")
    p.add_argument(
        "--iteration", "--step", dest="iteration", default=None, metavar="N|A-B",
        help="iteration(s)/step(s) to compare (default: every common one)",
    )  # fmt: skip
    p.add_argument(
        "--rank", action="append", default=None, metavar="R|A-B",
        help="rank(s) to compare (repeatable; default: every common one)",
    )  # fmt: skip
    p.add_argument("--node", default=None, metavar="REGEX", help="only tensors matching REGEX")
    p.add_argument("--cosine", type=float, default=None, help="the lowest cosine that passes")
    p.add_argument("--rtol", type=float, default=None, help="relative tolerance")
    p.add_argument("--atol", type=float, default=None, help="absolute tolerance")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--csv", default=None, metavar="FILE", help="write msprobe's CSV layout")
    p.add_argument("--force", action="store_true", help="let --csv replace an existing file")
    p.add_argument(
        "--all", action="store_true", help="print every row, not from the first divergence"
    )


def _numbers(text: str | None, noun: str) -> list[int] | None:
    if text is None:
        return None
    from tuidebug.cli.check import parse_iteration_ranges

    ranges = parse_iteration_ranges(text, noun)
    if sum(hi - lo + 1 for lo, hi in ranges) > 1_000_000:
        raise UsageError(f"--{noun} {text!r} covers more than a million values.")
    return sorted({i for lo, hi in ranges for i in range(lo, hi + 1)})


def _options(
    args: argparse.Namespace,
) -> tuple[re.Pattern[str] | None, list[int] | None, list[int] | None]:
    for flag in ("cosine", "rtol", "atol"):
        value = getattr(args, flag)
        if value is not None and not (value >= 0 and value == value):
            raise UsageError(f"--{flag} must be a number of 0 or more, not {value}.")
    node = None
    if args.node is not None:
        try:
            node = re.compile(args.node)
        except re.error as err:
            raise UsageError(
                f"--node {args.node!r} is not a valid regular expression: {err}."
            ) from None
    ranks = None
    if args.rank:
        ranks = sorted({r for text in args.rank for r in _numbers(text, "rank") or []})
    return node, ranks, _numbers(args.iteration, "iteration")


def run(args: argparse.Namespace) -> int:
    node, ranks, iterations = _options(args)
    problems: list[str] = []
    report = _compare(args, node, ranks, iterations, problems)
    if args.csv is not None:
        _write_csv(args, report)
    if args.json:
        _print_json(report)
    else:
        _print_table(report, args.all)
    for note in dict.fromkeys(report.notes):
        say(f"tuidebug compare: note: {note}")
    for problem in dict.fromkeys(problems):  # each once
        say(f"tuidebug compare: warning: {problem}")
    if report.first is not None:
        return EXIT_HITS
    if problems:
        # what a side left unread was not compared: no all-clear
        say("tuidebug compare: data listed above was not read, so the compare is incomplete.")
        return EXIT_USAGE
    skipped = report.count("skipped")
    if skipped:
        # a pair whose side could not be read was not compared: no all-clear
        say(
            f"tuidebug compare: {skipped} pair{'s' if skipped != 1 else ''} could not be "
            "compared (see the skipped rows), so the compare is incomplete."
        )
        return EXIT_USAGE
    return EXIT_OK


def _compare(
    args: argparse.Namespace,
    node: re.Pattern[str] | None,
    ranks: list[int] | None,
    iterations: list[int] | None,
    problems: list[str],
) -> CompareReport:
    """The report; `problems` gets what either dump left unread."""
    from tuidebug.compare.pairing import CompareError
    from tuidebug.compare.run import compare_dumps

    try:
        result = compare_dumps(
            args.target,
            args.golden,
            ranks=ranks,
            steps=iterations,
            node=node,
            cosine=args.cosine,
            rtol=args.rtol,
            atol=args.atol,
        )
    except CompareError as err:
        raise UsageError(str(err)) from None
    problems.extend(result.problems)
    return result.report


def _write_csv(args: argparse.Namespace, report: CompareReport) -> None:
    from tuidebug.compare.report import csv_text
    from tuidebug.core.user_files import WriteRefusedError, write_user_file

    data = csv_text(report).encode("utf-8")
    try:
        write_user_file(
            args.csv, lambda f: f.write(data), overwrite=args.force,
            how_to_overwrite="add --force to replace it",
        )  # fmt: skip
    except WriteRefusedError as err:
        raise UsageError(str(err)) from None


def _print_json(report: CompareReport) -> None:
    out = {
        "summary": report.summary,
        "first_divergence": report.rows[report.first].as_json()
        if report.first is not None
        else None,
        "chain": {
            "basis": report.chain_basis,
            "rows": [report.rows[i].name for i in report.chain()],
        },
        "notes": report.notes,
        "rows": [r.as_json() for r in report.rows],
    }
    sys.stdout.write(json.dumps(out, indent=1) + "\n")


def _num(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "-" if value is None else str(value)


def _line(row: Row) -> str:
    m = row.metrics
    if row.target_scalar is not None or row.golden_scalar is not None:
        figures = f"value {row.target_scalar} against {row.golden_scalar}"
        if row.status == "diverged":
            figures = "value"  # the reason says both
    elif m is not None:
        figures = f"cos {_num(m.cosine):>9}  maxabs {_num(m.max_abs_err):>9}  maxrel {_num(m.max_relative_err):>9}"
    elif row.stat_diffs is not None:
        d = row.stat_diffs
        figures = f"max diff {_num(d[0]):>9}  norm diff {_num(d[3]):>9}  norm rel {_num(d[7]):>9}"
    else:
        figures = ""
    where = f"r{row.rank} s{row.step}"
    tail = f"  ({row.reason})" if row.reason else ""
    return f"{row.status:9} {where:8} {row.name}  {figures}{tail}"


def _print_table(report: CompareReport, every: bool) -> None:
    from tuidebug.core.text import printable

    start = 0 if every or report.first is None else report.first
    rows = report.rows[start:]
    if report.first is None and not every:
        # nothing diverged: the rows that did not compare say why, the rest pass
        rows = [r for r in report.rows if r.status != "pass"]
    shown = rows if every else rows[:TABLE_ROWS]
    if report.first is not None:
        first = report.rows[report.first]
        print(printable(f"first divergence: {first.name} (rank {first.rank}, step {first.step})"))
    for row in shown:
        print(printable(_line(row)))
    if len(rows) > len(shown):
        print(f"… {len(rows) - len(shown)} more rows (--all, --json or --csv show them)")
    if report.first is not None:
        chain = report.chain()
        if chain:
            print(
                f"divergence chain ({len(chain)} diverged tensor"
                f"{'s' if len(chain) != 1 else ''} fed by the first, by {report.chain_basis}):"
            )
            for i in chain[:CHAIN_ROWS]:
                print(printable(f"  → {report.rows[i].name}"))
            if len(chain) > CHAIN_ROWS:
                print(f"  … {len(chain) - CHAIN_ROWS} more (--json lists them)")
    s = report.summary
    print(
        f"{s['matched']} matched ({s['diverged']} diverged), {s['unmatched']} unmatched, "
        f"{s['skipped']} skipped"
    )
    if report.first is None:
        say("no divergence beyond the tolerance.")
