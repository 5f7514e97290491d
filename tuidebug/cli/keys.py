"""`tuidebug keys`: list the TUI's key bindings and where the user's keys file is read."""

from __future__ import annotations

import argparse

from tuidebug.cli.common import EXIT_OK, EXIT_USAGE, say

NAME = "keys"
HELP = "list the TUI's key bindings and where to remap them"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No options."""


def run(_args: argparse.Namespace) -> int:
    """List every key binding the TUI defines and where the user's keys file is read from;
    a bad keys file: its problems on stderr (one sentence each) and exit status 2.
    Loads the TUI's classes (and so Textual), as only this subcommand needs them."""
    from tuidebug.core.text import printable
    from tuidebug.tui.keys.keymap import (
        EXAMPLE,
        keys_file_origin,
        known_bindings,
        load_config,
        shadowed_keys,
    )

    path, origin = keys_file_origin()
    config = load_config(path)
    keymap, problems = config.keymap, config.problems
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
    if config.source_roots:  # [source] roots: the TUI's standing --source-root entries
        roots = ", ".join(printable(root) for root in config.source_roots)
        print(f"Source roots it adds to the TUI's source view: {roots}.")
    if origin != "$TUIDEBUG_KEYS":
        print("Set $TUIDEBUG_KEYS to read another file.")
    print("Its format, for example:\n")
    print("".join(f"  {line}\n" for line in EXAMPLE.splitlines()), end="")
    for problem in problems:
        say(f"tuidebug keys: {problem}")
    for shadowing in shadowed_keys(keymap):  # the remapping works elsewhere: a warning
        say(f"warning: {printable(shadowing)}")
    return EXIT_USAGE if problems else EXIT_OK
