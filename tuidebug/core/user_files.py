"""Writing the user's files: a command's `> FILE`, `-w FILE.npy`, the API's CSV exports.

The user's files are worth more than any output tuidebug makes, so a write here:
- never replaces an existing file unless the caller says the user asked for it
  (`overwrite=True`: `>| FILE`, `-f`, `overwrite=True` in the API);
- goes only to a regular file: a folder (`.`, `/`, `~`), a FIFO, a device or a socket under
  the name is refused with a sentence, and nothing is ever opened at the target's path, so
  a FIFO there cannot block;
- never leaves a half-written file: the bytes go to a temporary file in the target's folder,
  which is renamed into place when complete (hard-linked when it must not replace anything,
  so a file created meanwhile is not replaced either) and removed on any failure.
`~` and `~user` expand as a shell expands them.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from tuidebug.core.file_kinds import file_kind

__all__ = ["TargetExistsError", "WriteRefusedError", "spreadsheet_text", "write_user_file"]


class WriteRefusedError(Exception):
    """The file was not written; `str()` is one sentence saying why."""


class TargetExistsError(WriteRefusedError):
    """The target exists and the caller did not allow replacing it."""


def _umask() -> int:
    """The process's umask, read without changing it: `os.umask` can only be read by
    setting it, and the TUI writes from worker threads while other threads create files."""
    with (
        contextlib.suppress(OSError, ValueError, IndexError),
        open("/proc/self/status", encoding="ascii", errors="replace") as status,
    ):
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _target(target: str | os.PathLike[str], suffix: str) -> Path:
    """The path to write: `~` expanded, `suffix` appended when the name lacks it; a name
    that is a folder (or can only be one) is refused."""
    text = os.path.expanduser(os.fspath(target))
    path = Path(text)
    if not text.strip() or text.endswith(("/", os.sep)) or path.name in ("", ".", ".."):
        raise WriteRefusedError(f"{text or repr(text)} is a folder; name a file in it.")
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.stat(path).st_mode):
            raise WriteRefusedError(f"{path} is a folder; name a file in it.")
    if suffix and path.suffix != suffix:
        path = path.with_name(path.name + suffix)
    return path


def write_user_file(
    target: str | os.PathLike[str],
    write: Callable[[BinaryIO], object],
    *,
    overwrite: bool = False,
    how_to_overwrite: str = "",
    suffix: str = "",
) -> Path:
    """Write `target` with `write(handle)` as the module says; the absolute path written.

    `how_to_overwrite` ends the sentence refusing an existing file ("write >| FILE to
    replace it"). Raises `TargetExistsError` for an existing file, `WriteRefusedError` for
    everything else (not a regular file, no such folder, no permission, a full disk…).
    """
    path = _target(target, suffix)
    # a link at the name is followed, as a shell's `>` follows it: its target is the file
    final = Path(os.path.realpath(path))
    try:
        mode: int | None = os.stat(final).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise WriteRefusedError(f"Cannot write {path}: {err.strerror or err}.") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise WriteRefusedError(f"{path} is {file_kind(mode)}; output goes only to regular files.")
    if mode is not None and not overwrite:
        raise _exists(path, how_to_overwrite)
    try:
        fd, partial = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent)
    except OSError as err:
        raise WriteRefusedError(f"Cannot write {path}: {err.strerror or err}.") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            # mkstemp makes the file 0600; the user's file gets the mode a plain open would
            # give it, or that of the file it replaces
            os.fchmod(handle.fileno(), stat.S_IMODE(mode) if mode else 0o666 & ~_umask())
            os.fsync(handle.fileno())
        _install(partial, final, path, overwrite, how_to_overwrite)
    except OSError as err:
        raise WriteRefusedError(f"Cannot write {path}: {err.strerror or err}.") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(partial)  # gone already when it was renamed into place
    return final


def _exists(path: Path, how: str) -> TargetExistsError:
    return TargetExistsError(f"{path} exists and was left as it is" + (f"; {how}." if how else "."))


def _install(partial: str, final: Path, shown: Path, overwrite: bool, how: str) -> None:
    if overwrite:
        os.replace(partial, final)
        return
    try:
        # link() fails when the name exists: a file created since the check is not replaced
        os.link(partial, final)
    except FileExistsError:
        raise _exists(shown, how) from None
    except OSError:
        # a file system without hard links (FAT, some network mounts): check, then rename
        if os.path.lexists(final):
            raise _exists(shown, how) from None
        os.replace(partial, final)


# OWASP's CSV-injection advice: a text cell a spreadsheet would read as a formula (= + - @,
# or a tab / carriage return before one) is written with a leading apostrophe
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(cell: object) -> object:
    """`cell` as a CSV cell a spreadsheet shows as text: a string starting like a formula
    gets a leading `'`; numbers (negative ones included) are left as they are."""
    if isinstance(cell, str) and cell.startswith(_FORMULA_STARTS):
        return "'" + cell
    return cell
