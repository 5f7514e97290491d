"""Command line: `tuidebug COMMAND …` (also `python -m tuidebug`).

One module per subcommand, each with `NAME`, `HELP`, `add_arguments(parser)` and
`run(args) -> int`; this module only assembles the parser and turns what a command raises
into an exit status (cli/common.py holds the statuses and the shared helpers,
cli/watch_options.py the options every session command takes (declared in
cli/watch_arguments.py); cli/check_foreign.py is `check` on msprobe and tfdbg dumps,
loaded only for one). A subcommand module imports
only the standard library at the top: the session, the checker or Textual load when that
command runs, so `tuidebug --help` and `tuidebug check` stay light. A command line that
starts with a subcommand's name imports that one alone (`tuidebug offline` is a TUI start,
which the other seven would slow: issue 28).

Every user mistake ends in one sentence on stderr and exit status 2; tracebacks are for bugs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from tuidebug.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    say,
    silence_stdout,
)

# each subcommand's NAME → its module, in the order `tuidebug --help` lists them (a test
# keeps the names in step with the modules' NAME)
SUBCOMMANDS = {
    "offline": "offline",
    "online": "online",
    "check": "check",
    "compare": "compare",
    "exec": "exec_commands",
    "demo": "demo",
    "keys": "keys",
    "simulate": "simulate",
}


def subcommand(name: str) -> ModuleType:
    """The module of the subcommand called `name` (a key of SUBCOMMANDS)."""
    return importlib.import_module(f"{__name__}.{SUBCOMMANDS[name]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line's parser; with `only`, a subcommand's name, a parser that knows
    that subcommand alone and imports no other (what `main` builds for `tuidebug NAME …`:
    the same answers for every command line that starts with NAME)."""
    from tuidebug import __version__

    parser = argparse.ArgumentParser(
        prog="tuidebug",
        description="A terminal graph debugger for neural-network training.",
    )
    parser.add_argument("--version", action="version", version=f"tuidebug {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = [only] if only is not None and only in SUBCOMMANDS else list(SUBCOMMANDS)
    for name in names:
        command = subcommand(name)
        p = sub.add_parser(command.NAME, help=command.HELP)
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    return parser


def _open_missing_streams() -> None:
    """A closed stdout or stderr (`>&-`, `2>&-`) is None in Python: every print would then
    fail, or worse, `print(file=None)` would land on the other stream. Point them at
    /dev/null so the exit status still tells the result."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115


def main(argv: Sequence[str] | None = None) -> int:
    _open_missing_streams()
    words = sys.argv[1:] if argv is None else list(argv)
    # all the words after a subcommand's name go to its own parser, so the others need not
    # be known; a top-level option or an unknown word first gets the whole parser
    parser = build_parser(only=words[0] if words else None)
    args, extra = parser.parse_known_args(words)
    # `tuidebug exec DUMP --iteration 2 'lt'`: argparse gives the positional list its (empty)
    # share before the option and leaves the words after it over; they are more commands
    if (
        extra
        and getattr(args, "command", None) == "exec"
        and not any(word.startswith("-") and word != "-" for word in extra)
    ):
        args.commands, extra = [*args.commands, *extra], []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except UsageError as exc:
        say(f"tuidebug {args.command}: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        say("tuidebug: interrupted.")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader left (`tuidebug keys | head`): nothing more to say to it
        silence_stdout()
        return EXIT_OK


__all__ = ["build_parser", "main"]
