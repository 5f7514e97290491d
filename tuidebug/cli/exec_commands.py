"""`tuidebug exec DUMP 'CMD' …`: run the analyzer's commands (the TUI's `:` line) from a shell.

    tuidebug exec ./dump 'lt -t MatMul -s size' 'pt fc3.weight[0:2, :] -s'
    tuidebug exec ./dump --iteration 2 'eval "`fc3.bias`.sum()"'
    echo 'ni Conv2D-op77 -t' | tuidebug exec ./dump -

Each command's output goes to stdout, as the TUI would show it, without colour; a command
that fails says why in one sentence on stderr and the rest still run. Exit status: 0 when
every command ran, 2 when one failed or the dump could not be opened.

Nothing asks before a write here (no one may be there to answer), so `> FILE` and
`-w FILE.npy` refuse an existing file with a sentence; `>| FILE` and `-w FILE.npy -f` say
the user means to replace it. `ps` shows a file a stack names only under the dump's
folder, the working folder or a `--source-root DIR`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import TYPE_CHECKING

from tuidebug.cli.common import EXIT_OK, EXIT_USAGE, UsageError, say
from tuidebug.cli.watch_options import add_graph_argument

if TYPE_CHECKING:
    from tuidebug.offline.session import OfflineSession

NAME = "exec"
HELP = "run analyzer commands (lt, pt, ni, li, lo, ps, eval) on a dump"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dump", help="dump root (the folder holding rank_N/)")
    p.add_argument(
        "commands",
        nargs="*",
        metavar="COMMAND",
        help="commands to run, one per argument (none or '-': read them from stdin, one a line)",
    )
    p.add_argument("--rank", type=int, default=None, help="the rank to read (default: the first)")
    add_graph_argument(p)
    p.add_argument(
        "--iteration", type=int, default=None, help="the iteration commands read by default"
    )
    p.add_argument(
        "--source-root",
        action="append",
        default=[],
        metavar="DIR|PREFIX=DIR",
        help="ps also shows the files under DIR that a stack names (repeatable; by default "
        "only those under the dump's folder and the working folder); PREFIX=DIR reads a "
        "dump from another machine: its paths under PREFIX are read under DIR",
    )


def _lines(args: argparse.Namespace) -> list[str]:
    if args.commands and args.commands != ["-"]:
        return list(args.commands)
    if sys.stdin is None or (sys.stdin.isatty() and not args.commands):
        raise UsageError("give commands as arguments, or '-' to read them from stdin.")
    lines = [
        line.strip() for line in sys.stdin if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        raise UsageError("stdin held no command.")
    return lines


def _missing_iteration(session: OfflineSession, iteration: int | None) -> str | None:
    """The sentence for an `--iteration` the session's rank has not dumped, else None."""
    from tuidebug.core.text import rank_ranges

    if iteration is None:
        return None
    dumped = session.dump.iterations(session.metadata.rank)
    if iteration in dumped:
        return None
    if not dumped:
        return f"iteration {iteration} is not in the dump (it has no dumped iteration)."
    listed = rank_ranges(list(dumped), dash="-", sep=",")
    return f"iteration {iteration} is not in the dump (iterations: {listed})."


def run(args: argparse.Namespace) -> int:
    lines = _lines(args)
    from tuidebug.commands import Output, command_registry
    from tuidebug.core.session import Notice, SessionError, SessionEvent
    from tuidebug.core.text import printable
    from tuidebug.offline.session import OfflineSession

    session = OfflineSession(args.dump, rank=args.rank, graph_dir=args.graph)

    def notice(event: SessionEvent) -> None:
        if isinstance(event, Notice) and event.severity != "information":
            lead = "tuidebug exec: " if event.severity == "error" else "warning: "
            say(lead + printable(event.message))

    session.subscribe(notice)
    try:
        try:
            session.start()
        except SessionError:
            return EXIT_USAGE  # the notice said why
        missing = _missing_iteration(session, args.iteration)
        if missing is not None:
            # Said before any command runs, as `check` does: otherwise every command would
            # answer for an iteration that is not there ("0 tensors") and exit 0.
            say(f"tuidebug exec: {missing}")
            return EXIT_USAGE
        width = shutil.get_terminal_size((100, 24)).columns
        registry = command_registry(session, width=width)
        registry.context.iteration = args.iteration
        status = EXIT_OK
        registry.context.source_roots = list(args.source_root)
        for line in lines:
            try:
                out = registry.run(line)
            except Exception as err:  # a bug must not cost the user the commands after it
                out = Output.failure(f"{line!r} failed: {type(err).__name__}: {err}.")
            if out.lines:
                text = "\n".join("".join(s.text for s in spans) for spans in out.lines)
                print(text, flush=True)
            if out.error is not None:
                say(f"tuidebug exec: {out.error}")
                status = EXIT_USAGE
        return status
    finally:
        session.close()
