"""What a `st_mode` describes, in words: the one wording of "a FIFO (named pipe)", "a folder"…
for every sentence that refuses a path, whether a dump file read (`offline/files`) or an
output written (`core/user_files.py`)."""

from __future__ import annotations

import stat

__all__ = ["file_kind"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a `st_mode` describes, in words ("a FIFO (named pipe)"…)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"
