"""Listing the folders of a dump without following what must not be followed.

`Scanner.scan` lists one folder with `os.scandir` and gives each entry its type: a regular
file, a folder, or refused (a FIFO, a socket, a device, a dangling symbolic link, a link
loop, a link leaving the dump), with the sentence saying why. Refusals and names that are
not UTF-8 become problem sentences, named one by one up to `MAX_NAMED_PER_FOLDER` per
folder and then counted, so a folder of garbage cannot flood the problem list. Nothing is
opened here; `layout` (ranks, graphs, history) and `iteration_listing` (tensor files) read
the dump through this.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass

from tuidebug.offline.files.budget import BinBudget
from tuidebug.offline.files.names import is_utf8_name, show_name
from tuidebug.offline.files.regular_file import file_kind

# Garbage in one folder is reported name by name up to this many, then as a count.
MAX_NAMED_PER_FOLDER = 20


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    path: str
    is_dir: bool
    is_file: bool
    # why the entry is not used (a FIFO, a dangling link…), as a sentence; None when usable
    refused: str | None = None


class Scanner:
    """Lists folders inside the dump root, refusing what must not be followed, and words
    every refusal as a problem sentence."""

    def __init__(self, root: str) -> None:
        self.root = root  # already resolved (realpath)
        # one scanner lists one dump: it carries the budget all its `.bin` headers share
        self.bin_budget = BinBudget()
        self._root_prefix = root.rstrip(os.sep) + os.sep

    def show(self, path: str | os.PathLike[str]) -> str:
        """A path as shown in messages: relative to the dump root when inside it."""
        text = os.fspath(path)
        if text.startswith(self._root_prefix):
            text = text[len(self._root_prefix) :]
        return show_name(text)

    def inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self._root_prefix)

    def scan(self, folder: str, problems: list[str]) -> list[Entry] | None:
        """The entries of `folder`, or None (with a problem) when it cannot be listed."""
        try:
            iterator = os.scandir(folder)
        except FileNotFoundError:
            problems.append(f"{self.show(folder)} disappeared while the dump was being read.")
            return None
        except PermissionError:
            problems.append(f"cannot read the folder {self.show(folder)}: permission denied.")
            return None
        except OSError as err:
            problems.append(f"cannot read the folder {self.show(folder)}: {err.strerror or err}.")
            return None
        entries: list[Entry] = []
        bad_names: list[str] = []
        refused = 0
        with iterator:
            for entry in iterator:
                name = entry.name
                if not is_utf8_name(name):
                    bad_names.append(show_name(name))
                    continue
                try:
                    found = self._entry(entry)
                except FileNotFoundError:
                    continue  # removed since the folder was listed (a dump being written)
                if found.refused is not None:
                    # named up to a bound per folder; every refused entry is still returned
                    refused += 1
                    if refused <= MAX_NAMED_PER_FOLDER:
                        problems.append(found.refused)
                entries.append(found)
        if refused > MAX_NAMED_PER_FOLDER:
            problems.append(
                f"{self.show(folder)}: {refused - MAX_NAMED_PER_FOLDER} more entries that are "
                "not regular files or folders were skipped."
            )
        for shown in bad_names[:MAX_NAMED_PER_FOLDER]:
            problems.append(
                f"{self.show(os.path.join(folder, shown))}: the name is not valid UTF-8, "
                "so the file was skipped."
            )
        if len(bad_names) > MAX_NAMED_PER_FOLDER:
            problems.append(
                f"{self.show(folder)}: {len(bad_names) - MAX_NAMED_PER_FOLDER} more names "
                "that are not valid UTF-8 were skipped."
            )
        return entries

    def _entry(self, entry: os.DirEntry[str]) -> Entry:
        """One listed entry with its type. A symbolic link is resolved only when it stays
        inside the dump; what is neither a regular file nor a folder is refused with its
        true reason (the listing's own type first: no `stat` for ordinary entries)."""
        name, path = entry.name, entry.path
        try:
            if not entry.is_symlink():
                if entry.is_file(follow_symlinks=False):  # the common case first
                    return Entry(name, path, False, True)
                if entry.is_dir(follow_symlinks=False):
                    return Entry(name, path, True, False)
                shown = self.show(path)
                kind = file_kind(entry.stat(follow_symlinks=False).st_mode)  # lstat
                return refused_entry(name, path, f"{shown} is {kind}, not a regular file")
            shown = self.show(path)
            real = os.path.realpath(path)
            if not self.inside(real):
                return refused_entry(
                    name,
                    path,
                    f"{shown} is a symbolic link to {show_name(real)}, outside the dump "
                    "folder, so it was not followed",
                    end=".",
                )
            try:
                mode = os.stat(path).st_mode  # the target, known to be inside the dump
            except FileNotFoundError:
                return refused_entry(
                    name,
                    path,
                    f"{shown} is a dangling symbolic link (its target {self.show(real)} does "
                    "not exist)",
                )
        except FileNotFoundError:
            raise
        except OSError as err:
            shown = self.show(path)
            if err.errno == errno.ELOOP:
                return refused_entry(name, path, f"{shown} is a symbolic link loop")
            return refused_entry(name, path, f"cannot read {shown}: {reason(err)}")
        if stat.S_ISDIR(mode):
            return Entry(name, path, True, False)
        if stat.S_ISREG(mode):
            return Entry(name, path, False, True)
        return refused_entry(
            name, path, f"{shown} is a symbolic link to {file_kind(mode)}, not a regular file"
        )


def refused_entry(name: str, path: str, sentence: str, end: str = "; it was skipped.") -> Entry:
    return Entry(name, path, False, False, sentence + end)


def reason(err: BaseException) -> str:
    """Why a file could not be read, to follow "cannot read PATH: ". Never `str()` of an
    OSError, which repeats the path in its own quoting; the first letter is lowered to
    continue the sentence (the reason only: paths are never changed)."""
    if isinstance(err, OSError):
        text = (err.strerror or type(err).__name__).rstrip(".")
        return text[:1].lower() + text[1:]
    if isinstance(err, RecursionError):
        return "it is nested too deeply"
    if isinstance(err, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(err, json.JSONDecodeError):
        return f"it is not valid JSON ({err.msg} at line {err.lineno})"
    return str(err)
