"""Command line: parses arguments and wires a session to the TUI or to the headless checker.

Every user mistake ends in one sentence on stderr and exit status 2; tracebacks are for bugs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from tuidebug.core.condition_catalogue import ConditionSpec

EXIT_OK = 0
EXIT_HITS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a program stopped by Ctrl+C

# A watch file holds a few specs: anything larger is the wrong file.
MAX_WATCH_FILE_BYTES = 1 << 20


class UsageError(Exception):
    """A mistake the user can fix; its message is one sentence shown on stderr."""


# ------------------------------------------------------------------ watchpoint options
# `tuidebug check` and the TUI commands (offline, online, demo) take the same options.
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


@dataclass(frozen=True)
class WatchOption:
    """One validated watch spec of the command line."""

    spec: str  # as the user wrote it
    condition: ConditionSpec
    params: dict[str, Any]


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
        Watchpoint(0, cond, dict(typed))  # the same validation a session does
    except WatchpointError as err:
        where = f"{origin} ({spec!r})" if origin else f"--watch {spec!r}"
        raise UsageError(f"{where}: {err}") from None
    return WatchOption(spec.strip(), cond, typed)


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


def _watch_specs(args: argparse.Namespace) -> list[str]:
    """The specs of --watch and --watch-file, validated now: a mistake ends the command
    before anything starts."""
    return [option.spec for option in parse_watch_arguments(args)]


def _not_built(name: str) -> Callable[[argparse.Namespace], int]:
    def run(_args: argparse.Namespace) -> int:
        print(f"tuidebug {name}: not built yet.", file=sys.stderr)
        return EXIT_USAGE

    return run


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _check_port(port: int, what: str = "--port") -> None:
    if not 0 <= port <= 65535:
        raise UsageError(f"{what} must be between 0 and 65535, not {port}.")


# Hosts gRPC binds as "every address": one socket on [::], dual-stack where the machine has
# IPv6 (gRPC clears IPV6_V6ONLY), so 0.0.0.0 listens on every IPv6 address too.
_WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})


def _has_ipv6() -> bool:
    """Whether this machine can bind an IPv6 socket (what gRPC tries first for a wildcard)."""
    import socket

    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::", 0))
    except OSError:
        return False
    return True


def _listening_where(host: str, port: int) -> str:
    """Who can reach the server, for the no-authentication warning: a wildcard host is
    every address of this machine, IPv6 included where gRPC binds it dual-stack."""
    if host not in _WILDCARD_HOSTS:
        return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"
    if _has_ipv6():
        also = " (0.0.0.0 listens on IPv6 too: gRPC binds it as [::])" if host == "0.0.0.0" else ""
        return f"port {port} on every IPv4 and IPv6 address of this machine{also}"
    return f"port {port} on every IPv4 address of this machine"


def _run_online(args: argparse.Namespace) -> int:
    """Serve the debugger protocol; the TUI when it is built and stdin/stdout are a
    terminal, else the session's events as lines on stdout."""
    from tuidebug.online.session import parse_strict_version

    strict = None
    if args.strict_version is not None:
        try:
            strict = parse_strict_version(args.strict_version)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    _check_port(args.port)
    specs = _watch_specs(args)
    if args.host not in _LOOPBACK:
        _say(
            f"tuidebug online: warning: the debugger protocol has no authentication; anyone "
            f"who can reach {_listening_where(args.host, args.port)} can control the training "
            f"(prefer the default 127.0.0.1 and an SSH tunnel: "
            f"ssh -L {args.port}:127.0.0.1:{args.port})."
        )
    # the server's warnings quote what peers sent (addresses, graph errors): one escaped
    # line each, not logging's raw last-resort output
    handler = _StderrHandler()
    handler.setFormatter(_LogLine("tuidebug online"))
    handler.setLevel(logging.WARNING)
    online_log = logging.getLogger("tuidebug.online")
    online_log.addHandler(handler)
    try:
        return _serve_online(args, strict, specs)
    finally:
        online_log.removeHandler(handler)


def _serve_online(args: argparse.Namespace, strict: str | None, specs: list[str]) -> int:
    from tuidebug.online.server import ServerStartError
    from tuidebug.online.session import OnlineSession

    session = OnlineSession(args.host, args.port, strict_version=strict)
    try:
        session.start()
    except ServerStartError as exc:
        raise UsageError(str(exc)) from None
    try:
        run_app = _tui_runner() if _on_terminal() else None
        if run_app is not None:
            return int(run_app(session, watch_specs=specs, recommended=args.recommended) or 0)
        if specs or args.recommended:
            _say(
                "tuidebug online: warning: --watch, --watch-file and --recommended are "
                "created by the TUI, which is not running, so no watchpoint is set."
            )
        return _headless_online(session)
    finally:
        session.close()


def _on_terminal() -> bool:
    """True when a full-screen UI can run: stdin and stdout are both a terminal."""
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()
    except (OSError, ValueError):
        return False


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


def _parse_connect(text: str) -> str:
    """`HOST:PORT`, `[v6addr]:PORT` or `v6addr:PORT` → the gRPC target; UsageError else."""
    host, sep, port_text = text.strip().rpartition(":")
    bad = UsageError(f"--connect must be HOST:PORT (e.g. 127.0.0.1:50051), not {text!r}.")
    if not sep or not host or not port_text.isascii() or not port_text.isdigit():
        raise bad
    if "/" in host or "@" in host or any(c.isspace() for c in host):
        raise bad  # a URL (http://…) or a path, not a host
    if host.startswith("[") != host.endswith("]"):
        raise bad
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise UsageError(f"the port of --connect must be between 1 and 65535, not {port}.")
    return f"{host}:{port}"


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a record comes: while the TUI runs, Textual
    captures stderr, so a server thread's warning never lands in the middle of the screen."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


class _LogLine(logging.Formatter):
    """A log record as one stderr sentence: `tuidebug simulate: warning: … .`"""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        from tuidebug.core.text import printable

        # the replay's warnings quote file and node names of the dump
        text = printable(" ".join(record.getMessage().split()))
        if not text.endswith((".", "!", "?")):
            text += "."
        return f"{self.prefix}: {record.levelname.lower()}: {text}"


def _run_simulate(args: argparse.Namespace) -> int:
    """Replay a dump as a live training against a running debugger."""
    from tuidebug.client.protocol import ClientError
    from tuidebug.client.simulator import DumpSimulator, SimulatorError
    from tuidebug.core.text import printable

    target = _parse_connect(args.connect)
    if args.heartbeat < 1:
        raise UsageError("--heartbeat must be a positive number of seconds.")
    if args.rank is not None and args.rank < 0:
        raise UsageError(f"--rank must be 0 or more, not {args.rank}.")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?([.\-+]?\w+)*", args.ms_version.strip(), re.ASCII):
        raise UsageError(f"--ms-version must look like 2.3.0, not {args.ms_version!r}.")
    # the replay's own warnings (an unreadable tensor file…) as one line each
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogLine("tuidebug simulate"))
    handler.setLevel(logging.WARNING)
    client_log = logging.getLogger("tuidebug.client")
    client_log.addHandler(handler)
    try:
        try:
            sim = DumpSimulator(
                args.dump,
                target,
                backend=args.backend,
                ms_version=args.ms_version,
                heartbeat_period=args.heartbeat,
                rank=args.rank,
            )
        except SimulatorError as exc:
            raise UsageError(str(exc)) from None
        try:
            # inside the try: a Ctrl+C right after this line is still "interrupted after
            # 0 steps", not a generic interruption
            print(
                f"tuidebug simulate: replaying {len(sim.replay.iterations)} iterations of "
                f"{printable(args.dump)} to {printable(target)}.",
                flush=True,
            )
            sim.run()
        except ClientError as exc:
            raise UsageError(str(exc)) from None
        except KeyboardInterrupt:
            # Ctrl+C is not the end of the replay: say so, and exit as interrupted programs
            # do (128 + SIGINT), so a script does not take it for a finished training
            sim.stop()
            _say(f"tuidebug simulate: interrupted after {sim.cur_step} steps.")
            return EXIT_INTERRUPTED
        print(f"tuidebug simulate: training ended after {sim.cur_step} steps.", flush=True)
        return EXIT_OK
    finally:
        client_log.removeHandler(handler)


def _run_offline(args: argparse.Namespace) -> int:
    """Open a dump in the TUI (tuidebug.tui.launch; imported here so other commands never
    load Textual)."""
    specs = _watch_specs(args)  # mistakes end here, before Textual loads
    from tuidebug.tui.launch import run_offline

    return run_offline(args, watch_specs=specs, recommended=args.recommended)


def _run_demo(args: argparse.Namespace) -> int:
    """Write the demo dump and open it (`--online`: the hook in tuidebug.tui.launch)."""
    specs = _watch_specs(args)  # before the demo dump is written
    from tuidebug.tui.launch import run_demo

    return run_demo(args, watch_specs=specs, recommended=args.recommended)


def _run_keys(_args: argparse.Namespace) -> int:
    """List every key binding the TUI defines and where the user's keys file is read from;
    a bad keys file: its problems on stderr (one sentence each) and exit status 2.
    Loads the TUI's classes (and so Textual), as only this subcommand needs them."""
    from tuidebug.core.text import printable
    from tuidebug.tui.keymap import EXAMPLE, keys_file_origin, known_bindings, load_keymap

    path, origin = keys_file_origin()
    keymap, problems = load_keymap(path)
    rows = [("binding id", "default keys", "does", "your keys" if keymap else "")]
    rows += [
        (info.id, ",".join(info.keys), info.description or info.action, keymap.get(info.id, ""))
        for info in known_bindings().values()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        print(printable(f"{line}  {row[3]}".rstrip()))  # the keys file is text from disk
    if path.is_file():
        state = f"found, {len(keymap)} binding{'s' if len(keymap) != 1 else ''} remapped"
    elif path.exists():
        state = "it exists but is not a file"
    else:
        state = "not found: create it to remap keys"
    print(f"\nKeys file: {printable(str(path))} ({origin}; {state}).")
    if origin != "$TUIDEBUG_KEYS":
        print("Set $TUIDEBUG_KEYS to read another file.")
    print("Its format, for example:\n")
    print("".join(f"  {line}\n" for line in EXAMPLE.splitlines()), end="")
    for problem in problems:
        _say(f"tuidebug keys: {problem}")
    return EXIT_USAGE if problems else EXIT_OK


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
    add_watch_arguments(p)
    p.set_defaults(run=_run_offline)

    p = sub.add_parser("online", help="wait for a training process to connect")
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
    p.set_defaults(run=_run_online)

    p = sub.add_parser("check", help="headless watchpoint check of a dump")
    from tuidebug import check_cli  # argparse only; the checker itself loads on run

    check_cli.add_arguments(p)
    p.set_defaults(run=check_cli.run)

    p = sub.add_parser("demo", help="write a small synthetic dump and open it")
    p.add_argument("--out", default=None, help="where to write the demo dump")
    p.add_argument("--online", action="store_true", help="replay it as a live training")
    add_watch_arguments(p)
    p.set_defaults(run=_run_demo)

    p = sub.add_parser("keys", help="list the TUI's key bindings and where to remap them")
    p.set_defaults(run=_run_keys)

    p = sub.add_parser("simulate", help="replay a dump as a live training client")
    p.add_argument("dump", help="dump root (the folder holding rank_N/)")
    p.add_argument("--connect", default="127.0.0.1:50051", help="debugger HOST:PORT")
    p.add_argument("--backend", choices=("GPU", "Ascend"), default="Ascend")
    p.add_argument("--ms-version", default="2.3.0", help="MindSpore version to announce")
    p.add_argument("--heartbeat", type=int, default=30, help="heartbeat period in seconds")
    p.add_argument("--rank", type=int, default=None, help="rank to replay (default: first)")
    p.set_defaults(run=_run_simulate)
    return parser


def _open_missing_streams() -> None:
    """A closed stdout or stderr (`>&-`, `2>&-`) is None in Python: every print would then
    fail, or worse, `print(file=None)` would land on the other stream. Point them at
    /dev/null so the exit status still tells the result."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115


def _say(line: str) -> None:
    """One line on stderr; a full or broken stderr must not become a traceback. The line
    often quotes a path or a name from a dump or a peer, so it is escaped whole
    (core.text.printable): nothing written here can move the cursor or retitle the
    terminal, and a line break inside it cannot fake a second line."""
    from tuidebug.core.text import printable

    with contextlib.suppress(OSError, ValueError):
        print(printable(line), file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    _open_missing_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except UsageError as exc:
        _say(f"tuidebug {args.command}: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("tuidebug: interrupted.")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader left (`tuidebug keys | head`): nothing more to say to it, and the
        # interpreter's final flush must not fail again on the closed pipe
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        return EXIT_OK
