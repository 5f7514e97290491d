"""`tuidebug online`: serve the debugger protocol and wait for a training to connect.

One server serves every rank of one job (`online/job.py`). The TUI shows the session when
it is installed and stdin/stdout are a terminal (and `--headless` is not given); otherwise
the session's events are printed on stdout, one escaped line each, until Ctrl+C. With
`--until-hit` it is the headless sentinel of `online_sentinel.py` (continue until the first
hit, print it, terminate, exit 1; exit 0 when the training ends with no hit).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Callable
from typing import TextIO

from tuidebug.cli.common import EXIT_OK, LogLine, UsageError, say
from tuidebug.cli.watch_options import add_watch_arguments, watch_specs

NAME = "online"
HELP = "wait for a training process to connect"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=50051, help="port to listen on (default 50051)")
    p.add_argument(
        "--strict-version",
        default=None,
        metavar="X.Y",
        help="refuse MindSpore versions that MindInsight X.Y would refuse (default: accept "
        "every MindSpore, warning about those older than 1.5 or unreadable)",
    )
    add_watch_arguments(p)
    p.add_argument(
        "--headless",
        action="store_true",
        help="no TUI even on a terminal: print the session's events (or, with --until-hit, "
        "only the hits)",
    )
    p.add_argument(
        "--until-hit",
        action="store_true",
        help="headless sentinel: continue every connected training until the first hit, "
        "print its hits, terminate the training and exit 1 (0 when it ends with no hit)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="with --until-hit: print the hits as one JSON array (then the check errors, which "
        "are not hits, with check_error true)",
    )
    p.add_argument(
        "--connect-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --until-hit: exit 2 when no training connected within SECONDS",
    )


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _check_port(port: int, what: str = "--port") -> None:
    if not 0 <= port <= 65535:
        raise UsageError(f"{what} must be between 0 and 65535, not {port}.")


def run(args: argparse.Namespace) -> int:
    """Serve the debugger protocol; the TUI when it is built and stdin/stdout are a
    terminal, else the session's events as lines on stdout."""
    from tuidebug.online.versions import parse_strict_version

    strict = None
    if args.strict_version is not None:
        try:
            strict = parse_strict_version(args.strict_version)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    _check_port(args.port)
    specs = watch_specs(args)
    _check_sentinel_options(args, specs)
    if args.host not in _LOOPBACK:
        # here, not at the top: `tuidebug check` imports this module and must not load online
        from tuidebug.online.listen_address import reachable_at

        say(
            f"tuidebug online: warning: the debugger protocol has no authentication; anyone "
            f"who can reach {reachable_at(args.host, args.port)} can control the training "
            f"(prefer the default 127.0.0.1 and an SSH tunnel: "
            f"ssh -L {args.port}:127.0.0.1:{args.port})."
        )
    # the server's warnings quote what peers sent (addresses, graph errors): one escaped
    # line each, not logging's raw last-resort output
    handler = _StderrHandler()
    handler.setFormatter(LogLine("tuidebug online"))
    handler.setLevel(logging.WARNING)
    online_log = logging.getLogger("tuidebug.online")
    online_log.addHandler(handler)
    try:
        return _serve_online(args, strict, specs)
    finally:
        online_log.removeHandler(handler)


def _check_sentinel_options(args: argparse.Namespace, specs: list[str]) -> None:
    """The sentinel's options make sense together (one sentence, exit 2, otherwise)."""
    if args.json and not args.until_hit:
        raise UsageError("--json prints the hits of --until-hit; add --until-hit.")
    if args.connect_timeout is not None and not args.until_hit:
        raise UsageError("--connect-timeout is for --until-hit; add --until-hit.")
    if args.connect_timeout is not None and not args.connect_timeout > 0:
        raise UsageError(
            f"--connect-timeout must be a positive number of seconds, not {args.connect_timeout:g}."
        )
    if args.until_hit and not (specs or args.recommended):
        raise UsageError(
            "--until-hit needs watchpoints to wait for: add --watch, --watch-file or --recommended."
        )


def _serve_online(args: argparse.Namespace, strict: str | None, specs: list[str]) -> int:
    from tuidebug.online.job import JobSession
    from tuidebug.online.server import ServerStartError

    session = JobSession(args.host, args.port, strict_version=strict)
    try:
        session.start()
    except ServerStartError as exc:
        raise UsageError(str(exc)) from None
    try:
        from tuidebug.cli import launch  # no Textual: the runner loads it

        if args.until_hit:
            from tuidebug.cli.online_sentinel import run_sentinel
            from tuidebug.cli.watch_options import parse_watch_arguments

            say(f"tuidebug online: listening on {session.address}; waiting for a training.")
            return run_sentinel(
                session,
                parse_watch_arguments(args),
                recommended=args.recommended,
                as_json=args.json,
                connect_timeout=args.connect_timeout,
            )
        headless = args.headless or not launch.on_terminal()
        run_app = None if headless else _tui_runner()
        if run_app is not None:
            return int(run_app(session, watch_specs=specs, recommended=args.recommended) or 0)
        if specs or args.recommended:
            say(
                "tuidebug online: warning: --watch, --watch-file and --recommended are "
                "created by the TUI, which is not running, so no watchpoint is set."
            )
        return _headless_online(session)
    finally:
        session.close()


def _tui_runner() -> Callable[..., int | None]:
    """The TUI's entry point, imported here (as `offline` does) so a headless server never
    loads Textual; drawn on the terminal even when stderr is not one (`launch.run_tui`)."""
    from tuidebug.cli.launch import run_tui

    return run_tui


def _headless_online(session: object) -> int:
    """No TUI: print every session event on stdout until Ctrl+C."""
    from tuidebug.core.session import DebugSession, SessionEvent
    from tuidebug.core.text import printable

    assert isinstance(session, DebugSession)

    def show(event: SessionEvent) -> None:
        print(f"{type(event).__name__}: {_describe(event)}", flush=True)

    session.subscribe(show)
    print(
        f"tuidebug online: listening on {printable(getattr(session, 'address', ''))} without "
        "the TUI "
        "(it is not available, or this is not a terminal); printing events until Ctrl+C.",
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        _wait_forever()
    return EXIT_OK


def _wait_forever() -> None:
    """Block until Ctrl+C (a function of its own so tests can replace it)."""
    import threading

    threading.Event().wait()


def _describe(event: object) -> str:
    """One event as text for stdout. Graph and node names, the training's messages and any
    other field come from the peer: each is escaped (the line breaks are ours)."""
    from tuidebug.core.session import GraphsLoaded, HitsArrived, MetadataChanged
    from tuidebug.core.text import printable

    if isinstance(event, GraphsLoaded):
        return ", ".join(f"{printable(name)} ({len(g)} nodes)" for name, g in event.graphs.items())
    if isinstance(event, MetadataChanged):
        m = event.metadata
        text = f"{m.state.value} step {m.step}"
        if m.cur_node:
            text += f" at {printable(m.cur_node)}"
        return text + (f" — {printable(m.message)}" if m.message else "")
    if isinstance(event, HitsArrived):
        return f"{len(event.hits)} hit(s) at step {event.step}" + "".join(
            f"\n  {printable(h.tensor.name)}: {printable(h.summary())}" for h in event.hits[:20]
        )
    fields = getattr(event, "__dict__", {})
    return ", ".join(f"{k}={printable(v)}" for k, v in fields.items())


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a record comes: while the TUI runs, Textual
    captures stderr, so a server thread's warning never lands in the middle of the screen."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass
