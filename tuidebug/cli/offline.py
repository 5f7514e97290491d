"""`tuidebug offline DUMP`: open a MindSpore dump directory in the TUI."""

from __future__ import annotations

import argparse

from tuidebug.cli.watch_arguments import add_graph_argument, add_watch_arguments, watch_given

NAME = "offline"
HELP = "open a MindSpore dump directory in the TUI"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dump", help="dump root (the folder holding rank_N/)")
    p.add_argument("--rank", type=int, default=None, help="rank to show first")
    p.add_argument(
        "--against",
        default=None,
        metavar="GOLDEN",
        help="compare with the golden dump GOLDEN (the same network): the divergence tab (7) "
        "lists every tensor from the first divergence, Enter shows a pair side by side "
        "(two msprobe dumps open in the compare screen alone)",
    )
    add_graph_argument(p)
    add_watch_arguments(p)
    p.add_argument(
        "--all-ranks",
        action="store_true",
        default=None,
        help="check every rank at each step, not only the one shown (the default with "
        "--cluster); Enter on another rank's hit shows that rank",
    )
    p.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS|local[:N]",
        help="run the checks of step, continue and recheck on a Dask cluster: a scheduler "
        "(tcp://host:8786) or local[:N] worker processes; the dump must be at the same path "
        "on every worker (needs pip install 'tuidebug[cluster]')",
    )

    p.add_argument(
        "--source-root",
        action="append",
        default=[],
        metavar="DIR|PREFIX=DIR",
        help="the source view and :ps also show the files under DIR that a stack names "
        "(repeatable; by default only those under the dump's folder and the working "
        "folder); PREFIX=DIR reads a dump from another machine: its paths under PREFIX "
        "(/home/dev/ws=~/ws) are read under DIR",
    )


def run(args: argparse.Namespace) -> int:
    """Open a dump in the TUI (tuidebug.cli.launch; imported here so other commands never
    load Textual)."""
    specs: list[str] = []
    if watch_given(args):  # the validation loads only for a spec to validate (issue 28)
        from tuidebug.cli.watch_options import watch_specs

        specs = watch_specs(args)  # mistakes end here, before Textual loads
    if args.source_root:
        import os

        from tuidebug.commands.source import ROOTS_VARIABLE

        # The TUI's source view and its :ps read the roots from this variable (as they do
        # the user's own): the options join it for this process and nothing else.
        known = os.environ.get(ROOTS_VARIABLE, "")
        os.environ[ROOTS_VARIABLE] = os.pathsep.join(
            [*args.source_root, *([known] if known else [])]
        )
    from tuidebug.cli.launch import run_offline

    return run_offline(args, watch_specs=specs, recommended=args.recommended)
