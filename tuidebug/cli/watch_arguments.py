"""The watch options' parser side: `--watch SPEC`, `--watch-file FILE`, `--recommended`
and `--graph DIR`, as argparse arguments, with the standard library alone.

Their validation (`WatchOption`, `watch_specs`: the core's condition catalogue and
watchpoint parser) is cli/watch_options.py, which re-exports these; a TUI command loads
it only when the command line holds a watch option (`watch_given`), so `tuidebug offline
DUMP` builds its parser without it (issue 28's cold start).
"""

from __future__ import annotations

import argparse

__all__ = ["add_graph_argument", "add_watch_arguments", "watch_given"]


def add_graph_argument(p: argparse.ArgumentParser) -> None:
    """--graph DIR: the graphs of a dump that has none (Ascend asynchronous layouts)."""
    p.add_argument(
        "--graph",
        default=None,
        metavar="DIR",
        help="a synchronous dump of the same network whose rank_N/graphs/*.pb stand for the "
        "graphs a dump without graph files lacks (operators matched by name)",
    )


def add_watch_arguments(p: argparse.ArgumentParser) -> None:
    """--watch SPEC (repeatable), --watch-file FILE (repeatable) and --recommended."""
    p.add_argument(
        "--watch",
        action="append",
        default=[],
        metavar="SPEC",
        help="a watchpoint, e.g. TO or TL:abs_mean_gt=1e10 (repeatable)",
    )
    p.add_argument(
        "--watch-file",
        action="append",
        default=[],
        metavar="FILE",
        help="watchpoints from FILE: one SPEC a line, # starts a comment (repeatable)",
    )
    p.add_argument(
        "--recommended", action="store_true", help="add MindInsight's recommended watchpoints"
    )


def watch_given(args: argparse.Namespace) -> bool:
    """Whether the command line names any watch spec (--watch or --watch-file): without
    one, `watch_options.watch_specs(args)` is [] and need not be loaded to say so."""
    return bool(args.watch or args.watch_file)
