"""`tuidebug demo`: write a small synthetic dump and open it (offline, or `--online` as a
live training)."""

from __future__ import annotations

import argparse

from tuidebug.cli.watch_arguments import add_watch_arguments, watch_given

NAME = "demo"
HELP = "write a small synthetic dump and open it"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=None, help="where to write the demo dump")
    p.add_argument("--online", action="store_true", help="replay it as a live training")
    add_watch_arguments(p)


def run(args: argparse.Namespace) -> int:
    """Write the demo dump and open it (`--online`: the hook in tuidebug.cli.launch)."""
    specs: list[str] = []
    if watch_given(args):  # as `offline`: the validation loads only for a spec
        from tuidebug.cli.watch_options import watch_specs

        specs = watch_specs(args)  # before the demo dump is written
    from tuidebug.cli.launch import run_demo

    return run_demo(args, watch_specs=specs, recommended=args.recommended)
