"""Opening dump files that may not be files: the one way every dump file is opened.

A dump folder is untrusted input. A FIFO named `mapping.csv` or `x.npy` would block a plain
`open()` forever (the open itself waits for a writer), and a file may be swapped for a FIFO,
a device or a directory between the index and the read. So a dump file is opened
non-blocking (a FIFO open returns at once), its type is checked on the open descriptor
(`fstat`, so nothing can be swapped in between) and only a regular file is handed out.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from tuidebug.core.file_kinds import file_kind

__all__ = ["FileTooLargeError", "NotRegularFileError", "file_kind", "open_regular", "read_regular"]


class NotRegularFileError(OSError):
    """The path exists but is a FIFO, a device, a socket or a directory.

    `str()` is a sentence with the path intact: "<path> is a FIFO (named pipe), not a
    regular file"; `strerror` is the reason alone, `filename` the path.
    """

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}"


class FileTooLargeError(OSError):
    """A dump file larger than its kind may be; `str()` names the path and both sizes."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for binary reading, or `NotRegularFileError` when it is not a regular
    file (an `OSError` with the path intact for everything else: missing, no permission…).

    Never blocks: the open is non-blocking, and the type is read from the open descriptor.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(0, f"{file_kind(mode)}, not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The whole content of a regular file, refusing one larger than `max_bytes` (an
    `OSError` naming the size, read from the descriptor before any byte is read)."""
    with open_regular(path) as handle:
        if max_bytes is not None:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise FileTooLargeError(
                    None,
                    f"the file is {size:,} bytes, more than the {max_bytes:,} a file of "
                    "this kind may have",
                    os.fspath(Path(path)),
                )
        if max_bytes is None:
            data = handle.read()
        else:
            # read(n) allocates n bytes before reading: asking for the file's size, not the
            # limit, keeps a 2-byte construct.json from costing its 128 MiB limit
            data = handle.read(min(size, max_bytes) + 1)
            if len(data) > size:  # it grew while being read: the rest, up to the limit
                data += handle.read(max_bytes + 1 - len(data))
        if max_bytes is not None and len(data) > max_bytes:  # it grew while being read
            raise FileTooLargeError(
                None, f"the file grew past {max_bytes:,} bytes while read", os.fspath(path)
            )
        return data
