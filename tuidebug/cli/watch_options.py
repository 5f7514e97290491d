"""The watchpoint options every session command takes: `--watch SPEC`, `--watch-file FILE`
and `--recommended` (`tuidebug check`, and the TUI commands offline, online and demo).

Each spec is validated by the core parser before anything starts, so a mistake ends the
command in one sentence instead of inside the TUI or halfway through a check. The options
themselves are declared in cli/watch_arguments.py (re-exported here), which `tuidebug
offline` and `demo` load alone when no watch option is given (issue 28's cold start).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tuidebug.cli.common import UsageError
from tuidebug.cli.watch_arguments import (  # re-exported: the options' parser side
    add_graph_argument,
    add_watch_arguments,
)

if TYPE_CHECKING:
    from tuidebug.core.condition_catalogue import ConditionSpec
    from tuidebug.core.watchpoints import Watchpoint

__all__ = [
    "MAX_WATCH_FILE_BYTES",
    "WatchOption",
    "add_graph_argument",
    "add_watch_arguments",
    "parse_watch_arguments",
    "parse_watch_option",
    "read_watch_file",
    "watch_specs",
]

# A watch file holds a few specs: anything larger is the wrong file.
MAX_WATCH_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class WatchOption:
    """One validated watch spec of the command line, or one of MindInsight's recommended
    watchpoints (`tuidebug check --recommended`)."""

    spec: str  # as the user wrote it (or the recommended watchpoint's spec)
    condition: ConditionSpec
    params: dict[str, Any]
    # the watchpoint that validated it: its check request, so none is built again
    watchpoint: Watchpoint
    # (rank, graph name) → targets (recommended); None: the condition's whole category.
    # Ranks of an asynchronous dump may hold different graphs under one name
    targets: dict[tuple[int, str], tuple[str, ...]] | None = None


def parse_watch_option(spec: str, origin: str | None = None) -> WatchOption:
    """Validate one spec with the core parser (the rules a Watchpoint applies); UsageError
    with one sentence naming it (`origin`, e.g. "--watch-file w.txt, line 3") else."""
    from tuidebug.core.watchpoints import Watchpoint, WatchpointError, parse_watch_spec

    try:
        cond, params = parse_watch_spec(spec)
        # parse_watch_spec hands back floats; a true/false parameter (equal_nan) goes back
        # to a bool, as the user wrote it
        typed: dict[str, Any] = {
            k: bool(v) if cond.param(k).is_bool else v for k, v in params.items()
        }
        watchpoint = Watchpoint(0, cond, dict(typed))  # the same validation a session does
    except WatchpointError as err:
        where = f"{origin} ({spec!r})" if origin else f"--watch {spec!r}"
        raise UsageError(f"{where}: {err}") from None
    return WatchOption(spec.strip(), cond, typed, watchpoint)


def read_watch_file(path: str) -> list[WatchOption]:
    """The specs of a --watch-file, each validated; UsageError with one sentence for an
    unreadable or empty file, or the first bad spec (with its line number)."""
    from tuidebug.core.watchpoints import watch_file_specs

    try:
        with open(os.path.expanduser(path), "rb") as handle:
            data = handle.read(MAX_WATCH_FILE_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(f"cannot read --watch-file {path}: {reason}.") from None
    if len(data) > MAX_WATCH_FILE_BYTES:
        raise UsageError(
            f"--watch-file {path} is larger than 1 MiB; it should hold one watch spec a line."
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"--watch-file {path} is not UTF-8 text.") from None
    specs = watch_file_specs(text)
    if not specs:
        raise UsageError(
            f"--watch-file {path} holds no watch spec (one SPEC a line, # for comments)."
        )
    return [parse_watch_option(spec, f"--watch-file {path}, line {n}") for n, spec in specs]


def parse_watch_arguments(args: argparse.Namespace) -> list[WatchOption]:
    """Every --watch, then every --watch-file's specs, validated (UsageError on the first
    mistake). --recommended is the caller's: it needs the graphs."""
    options = [parse_watch_option(spec) for spec in args.watch]
    for path in args.watch_file:
        options.extend(read_watch_file(path))
    return options


def watch_specs(args: argparse.Namespace) -> list[str]:
    """The specs of --watch and --watch-file, validated now: a mistake ends the command
    before anything starts."""
    return [option.spec for option in parse_watch_arguments(args)]
