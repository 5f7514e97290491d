"""Command line: parses arguments and wires a session to the TUI or to the headless checker.

Every user mistake ends in one sentence on stderr and exit status 2; tracebacks are for bugs.
"""

from __future__ import annotations

import argparse
import contextlib
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


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _check_port(port: int, what: str = "--port") -> None:
    if not 0 <= port <= 65535:
        raise UsageError(f"{what} must be between 0 and 65535, not {port}.")


def _run_online(args: argparse.Namespace) -> int:
    """Serve the debugger protocol; the TUI if it is built, else events on stdout."""
    from tuidebug.online.server import ServerStartError
    from tuidebug.online.session import OnlineSession

    _check_port(args.port)
    if args.host not in _LOOPBACK:
        print(
            f"tuidebug online: warning: the debugger protocol has no authentication; anyone "
            f"who can reach {args.host}:{args.port} can control the training (prefer the "
            f"default 127.0.0.1 and an SSH tunnel: ssh -L {args.port}:127.0.0.1:{args.port}).",
            file=sys.stderr,
        )
    session = OnlineSession(args.host, args.port)
    try:
        session.start()
    except ServerStartError as exc:
        raise UsageError(str(exc)) from None
    try:
        run_app = _tui_runner()
        if run_app is not None:
            return int(run_app(session) or 0)
        return _headless_online(session)
    finally:
        session.close()


def _tui_runner() -> Callable[..., object] | None:
    try:
        import importlib

        module = importlib.import_module("tuidebug.tui.app")
    except ImportError:
        return None
    run_app = getattr(module, "run_app", None)
    return run_app if callable(run_app) else None


def _headless_online(session: object) -> int:
    """No TUI: print every session event on stdout until Ctrl+C."""
    from tuidebug.core.session import DebugSession, SessionEvent

    assert isinstance(session, DebugSession)

    def show(event: SessionEvent) -> None:
        print(f"{type(event).__name__}: {_describe(event)}", flush=True)

    session.subscribe(show)
    print(
        f"tuidebug online: listening on {getattr(session, 'address', '')} without the TUI "
        "(it is not available); printing events until Ctrl+C.",
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
    from tuidebug.core.session import GraphsLoaded, HitsArrived, MetadataChanged

    if isinstance(event, GraphsLoaded):
        return ", ".join(f"{name} ({len(g)} nodes)" for name, g in event.graphs.items())
    if isinstance(event, MetadataChanged):
        m = event.metadata
        text = f"{m.state.value} step {m.step}"
        if m.cur_node:
            text += f" at {m.cur_node}"
        return text + (f" — {m.message}" if m.message else "")
    if isinstance(event, HitsArrived):
        return f"{len(event.hits)} hit(s) at step {event.step}" + "".join(
            f"\n  {h.tensor.name}: {h.summary()}" for h in event.hits[:20]
        )
    fields = getattr(event, "__dict__", {})
    return ", ".join(f"{k}={v}" for k, v in fields.items())


def _run_simulate(args: argparse.Namespace) -> int:
    """Replay a dump as a live training against a running debugger."""
    from tuidebug.client.protocol import ClientError
    from tuidebug.client.simulator import DumpSimulator, SimulatorError

    host, sep, port_text = args.connect.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise UsageError(f"--connect must be HOST:PORT, not {args.connect!r}.")
    _check_port(int(port_text), "the port of --connect")
    if args.heartbeat < 1:
        raise UsageError("--heartbeat must be a positive number of seconds.")
    try:
        sim = DumpSimulator(
            args.dump,
            args.connect,
            backend=args.backend,
            ms_version=args.ms_version,
            heartbeat_period=args.heartbeat,
            rank=args.rank,
        )
    except SimulatorError as exc:
        raise UsageError(str(exc)) from None
    print(
        f"tuidebug simulate: replaying {len(sim.replay.iterations)} iterations of "
        f"{args.dump} to {args.connect}.",
        flush=True,
    )
    try:
        sim.run()
    except ClientError as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        sim.stop()
    print(f"tuidebug simulate: training ended after {sim.cur_step} steps.", flush=True)
    return EXIT_OK


def _run_offline(args: argparse.Namespace) -> int:
    """Open a dump in the TUI (tuidebug.tui.launch; imported here so other commands never
    load Textual)."""
    from tuidebug.tui.launch import run_offline

    return run_offline(args)


def _run_demo(args: argparse.Namespace) -> int:
    """Write the demo dump and open it (`--online`: the hook in tuidebug.tui.launch)."""
    from tuidebug.tui.launch import run_demo

    return run_demo(args)


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
    p.set_defaults(run=_run_offline)

    p = sub.add_parser("online", help="wait for a training process to connect")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=50051, help="port to listen on (default 50051)")
    p.set_defaults(run=_run_online)

    p = sub.add_parser("check", help="headless watchpoint check of a dump")
    from tuidebug import check_cli  # argparse only; the checker itself loads on run

    check_cli.add_arguments(p)
    p.set_defaults(run=check_cli.run)

    p = sub.add_parser("demo", help="write a small synthetic dump and open it")
    p.add_argument("--out", default=None, help="where to write the demo dump")
    p.add_argument("--online", action="store_true", help="replay it as a live training")
    p.set_defaults(run=_run_demo)

    p = sub.add_parser("simulate", help="replay a dump as a live training client")
    p.add_argument("dump", help="dump root (the folder holding rank_N/)")
    p.add_argument("--connect", default="127.0.0.1:50051", help="debugger HOST:PORT")
    p.add_argument("--backend", choices=("GPU", "Ascend"), default="Ascend")
    p.add_argument("--ms-version", default="2.3.0", help="MindSpore version to announce")
    p.add_argument("--heartbeat", type=int, default=30, help="heartbeat period in seconds")
    p.add_argument("--rank", type=int, default=None, help="rank to replay (default: first)")
    p.set_defaults(run=_run_simulate)
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
