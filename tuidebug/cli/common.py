"""What every subcommand shares: the exit statuses, the user's-mistake exception and the
ways a line reaches stderr.

Every user mistake ends in one sentence on stderr and exit status 2; tracebacks are for bugs.
Only the standard library is imported here: `tuidebug --help` stays light.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import TextIO

EXIT_OK = 0
EXIT_HITS = 1  # `tuidebug check` found hits
EXIT_USAGE = 2  # a mistake the user can fix, or data that could not be read
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a program stopped by Ctrl+C


class UsageError(Exception):
    """A mistake the user can fix; its message is one sentence shown on stderr."""


def say(line: str) -> None:
    """One line on stderr; a closed, full or broken stderr must not become a traceback.
    The line often quotes a path or a name from a dump or a peer, so it is escaped whole
    (core.text.printable): nothing written here can move the cursor or retitle the
    terminal, and a line break inside it cannot fake a second line."""
    from tuidebug.core.text import printable

    stream = sys.stderr
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        stream.write(printable(line) + "\n")
        stream.flush()


def silence_stdout() -> None:
    """Point stdout at /dev/null: the reader left (`| head`) or stdout failed, and the
    interpreter's final flush must not fail again on it."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def is_tty(stream: TextIO | None) -> bool:
    """Whether `stream` is a terminal; a closed or odd stream is not."""
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


class LogLine(logging.Formatter):
    """A log record as one stderr sentence: `tuidebug simulate: warning: … .`"""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        from tuidebug.core.text import printable

        # the warnings quote file and node names of a dump, or what a peer sent
        text = printable(" ".join(record.getMessage().split()))
        if not text.endswith((".", "!", "?")):
            text += "."
        return f"{self.prefix}: {record.levelname.lower()}: {text}"
