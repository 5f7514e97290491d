"""Command line: parses arguments and wires a session to the TUI or to the headless checker.

Every user mistake ends in one sentence on stderr and exit status 2; tracebacks are for bugs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

EXIT_OK = 0
EXIT_HITS = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """A mistake the user can fix; its message is one sentence shown on stderr."""


def _not_built(name: str) -> Callable[[argparse.Namespace], int]:
    def run(_args: argparse.Namespace) -> int:
        print(f"tuidebug {name}: not built yet.", file=sys.stderr)
        return EXIT_USAGE

    return run


def build_parser() -> argparse.ArgumentParser:
    from tuidebug import __version__

    parser = argparse.ArgumentParser(
        prog="tuidebug",
        description="A terminal graph debugger for neural-network training.",
    )
    parser.add_argument("--version", action="version", version=f"tuidebug {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("offline", help="open a MindSpore dump directory in the TUI")
    p.add_argument("dump", help="dump root (the folder holding rank_N/)")
    p.add_argument("--rank", type=int, default=None, help="rank to show first")
    p.set_defaults(run=_not_built("offline"))

    p = sub.add_parser("online", help="wait for a training process to connect")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=50051, help="port to listen on (default 50051)")
    p.set_defaults(run=_not_built("online"))

    p = sub.add_parser("check", help="headless watchpoint check of a dump")
    p.add_argument("dump", help="dump root (the folder holding rank_N/)")
    p.set_defaults(run=_not_built("check"))

    p = sub.add_parser("demo", help="write a small synthetic dump and open it")
    p.add_argument("--out", default=None, help="where to write the demo dump")
    p.add_argument("--online", action="store_true", help="replay it as a live training")
    p.set_defaults(run=_not_built("demo"))

    p = sub.add_parser("simulate", help="replay a dump as a live training client")
    p.add_argument("dump")
    p.add_argument("--connect", default="127.0.0.1:50051")
    p.set_defaults(run=_not_built("simulate"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except UsageError as exc:
        print(f"tuidebug {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tuidebug: interrupted.", file=sys.stderr)
        return 130
