"""`tuidebug simulate DUMP`: replay a dump as a live training against a running debugger
(the training side of the protocol, `tuidebug.client`)."""

from __future__ import annotations

import argparse
import logging
import re
import sys

from tuidebug.cli.common import EXIT_INTERRUPTED, EXIT_OK, LogLine, UsageError, say

NAME = "simulate"
HELP = "replay a dump as a live training client"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dump", help="dump root (the folder holding rank_N/)")
    p.add_argument("--connect", default="127.0.0.1:50051", help="debugger HOST:PORT")
    p.add_argument("--backend", choices=("GPU", "Ascend"), default="Ascend")
    p.add_argument("--ms-version", default="2.3.0", help="MindSpore version to announce")
    p.add_argument("--heartbeat", type=int, default=30, help="heartbeat period in seconds")
    p.add_argument("--rank", type=int, default=None, help="rank to replay (default: first)")


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


def run(args: argparse.Namespace) -> int:
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
    handler.setFormatter(LogLine("tuidebug simulate"))
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
            say(f"tuidebug simulate: interrupted after {sim.cur_step} steps.")
            return EXIT_INTERRUPTED
        # each ending named for what it was (a terminate is not a finished training)
        if sim.ending == "terminated":
            what = f"terminated by the debugger after {sim.cur_step} steps"
        elif sim.ending == "finished":
            what = f"training finished its {sim.cur_step} steps"
        else:
            what = f"training ended after {sim.cur_step} steps"
        print(f"tuidebug simulate: {what}.", flush=True)
        return EXIT_OK
    finally:
        client_log.removeHandler(handler)
