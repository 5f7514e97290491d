"""`CommandRegistry`: command lines in, `Output` out (tfdbg's `CommandHandlerRegistry`).

A command is a name, a few aliases, an argparse parser and a handler. The registry splits
a line the shell way (quotes, backslashes), peels a trailing `> FILE` redirection off
(`> FILE` never replaces an existing file, `>| FILE` does, as in a shell with noclobber
set), parses the rest and runs the handler; every user mistake comes back as
`Output.error`, one sentence, never an exception. It also completes a partly typed line (command names,
flags, node names) for the TUI's Tab and documents itself (`help`). A completed node name
is written so that the line reads it back as that name and nothing else (`references`):
escaped for the split, and inside `eval` as a backquoted reference.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import NoReturn

from tuidebug.commands.context import CommandContext, CommandError
from tuidebug.commands.output import Output, Span
from tuidebug.commands.references import (
    BACKQUOTE,
    common_prefix,
    encode_word,
    escape_name,
    open_reference,
    unreferable,
    word_at_end,
)
from tuidebug.core.user_files import WriteRefusedError, write_user_file

__all__ = ["Command", "CommandParser", "CommandRegistry", "Completion"]

Handler = Callable[[argparse.Namespace, CommandContext], Output]


class CommandParser(argparse.ArgumentParser):
    """argparse that raises `CommandError` instead of printing and exiting."""

    def __init__(self, prog: str, description: str = "") -> None:
        super().__init__(prog=prog, description=description, add_help=False, allow_abbrev=False)

    def error(self, message: str) -> NoReturn:
        raise CommandError(f"{self.prog}: {message}.")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise CommandError(message or f"{self.prog} stopped.")


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    parser: CommandParser
    handler: Handler
    aliases: tuple[str, ...] = ()
    # the positional argument completes node names (ni, li, pt…), backquoted references to
    # them (eval), file paths (ps) or nothing
    completes: str = "node"

    def flags(self) -> list[str]:
        return sorted(
            opt for action in self.parser._actions for opt in action.option_strings if opt
        )


@dataclass(frozen=True)
class Completion:
    """Candidates for the word under the cursor, which starts at `start` in the line."""

    start: int
    candidates: tuple[str, ...]
    # the candidates' common start when the registry wrote it: a prefix of escaped names
    # could end inside an escape (half a doubled backquote, a lone backslash)
    common_text: str | None = None
    # one sentence when names were left out, or when nothing completes here and why
    note: str = ""

    @property
    def common(self) -> str:
        if self.common_text is not None:
            return self.common_text
        return common_prefix(self.candidates)


@dataclass
class CommandRegistry:
    context: CommandContext
    commands: dict[str, Command] = field(default_factory=dict)
    _by_alias: dict[str, str] = field(default_factory=dict)

    def register(self, command: Command) -> None:
        self.commands[command.name] = command
        for alias in (command.name, *command.aliases):
            self._by_alias[alias] = command.name

    def names(self) -> list[str]:
        return sorted(self._by_alias)

    def find(self, name: str) -> Command | None:
        canonical = self._by_alias.get(name)
        return self.commands[canonical] if canonical else None

    # -------------------------------------------------------------------- run
    def run(self, line: str) -> Output:
        try:
            words, redirect = _split(line)
            if not words:
                return Output()
            name, args = words[0], words[1:]
            if name in ("help", "h", "?"):
                out = self.help(args[0] if args else None)
            else:
                command = self.find(name)
                if command is None:
                    raise CommandError(
                        f"There is no command {name!r}; the commands are "
                        f"{', '.join(sorted(self.commands))} (help NAME says more)."
                    )
                if "-h" in args or "--help" in args:
                    out = Output()
                    out.add_text(command.parser.format_help())
                else:
                    out = command.handler(command.parser.parse_args(args), self.context)
        except CommandError as err:
            return Output.failure(str(err))
        if redirect is not None and out.error is None:
            return _redirect(out, redirect)
        return out

    def help(self, name: str | None = None) -> Output:
        out = Output()
        if name is None:
            out.add(Span("Commands (NAME -h for its options):", "header"))
            for command in sorted(self.commands.values(), key=lambda c: c.name):
                aliases = f" ({', '.join(command.aliases)})" if command.aliases else ""
                out.add(Span(f"  {command.name}{aliases}".ljust(22), "bold"), command.summary)
            out.add(
                "Append > FILE to write a command's output to a new file, >| FILE to replace "
                "FILE; -w FILE.npy saves a tensor (-f: replace it)."
            )
            return out
        found = self.find(name)
        if found is None:
            raise CommandError(f"There is no command {name!r}.")
        out.add_text(found.parser.format_help())
        return out

    # ------------------------------------------------------------- completion
    def complete(self, line: str) -> Completion:
        """Candidates for the last word of `line` (the cursor is at its end)."""
        start = len(line) - len(line.split(" ")[-1]) if line else 0
        word = line[start:]
        before = line[:start].split()
        if not before:
            return Completion(start, tuple(n for n in self.names() if n.startswith(word)))
        command = self.find(before[0])
        if command is None:
            return Completion(start, ())
        if word.startswith("-"):
            return Completion(start, tuple(f for f in command.flags() if f.startswith(word)))
        if command.completes == "path":
            return Completion(start, tuple(_paths(word)))
        if command.completes == "node":
            return self._complete_name(line)
        if command.completes == "reference":
            return self._complete_reference(line)
        return Completion(start, ())

    def _complete_name(self, line: str) -> Completion:
        """Node names for the word the line ends in, each escaped for the line's split (a
        name holding a space, a quote or `> FILE` stays one word: the name)."""
        word = word_at_end(line)
        found, note = _referable_names(self.context.node_names(), word.text)
        return Completion(
            word.start,
            tuple(encode_word(name) for name in found),
            encode_word(common_prefix(found)),
            note,
        )

    def _complete_reference(self, line: str) -> Completion:
        """In `eval`, names complete only inside a backquoted reference, and each is
        written as one (escaped, closed when it is a whole node name): a name never
        reaches the expression as text of its own."""
        ref = open_reference(line)
        if ref is None:
            note = "Tensor names complete inside backquotes: type ` and then Tab."
            return Completion(len(line), (), note=note)
        names = self.context.node_names()
        found, note = _referable_names(names, ref.partial)
        whole = set(names)

        def written(name: str, close: bool) -> str:
            text = escape_name(name) + (BACKQUOTE if close else "")
            return BACKQUOTE + encode_word(text, ref.quote)

        return Completion(
            ref.start,
            tuple(written(name, name in whole) for name in found),
            written(common_prefix(found), False),
            note,
        )


@dataclass(frozen=True)
class Redirect:
    """A line's `> FILE` (`>| FILE`: replace FILE if it exists, as with bash's noclobber)."""

    target: str
    replace: bool = False


def _split(line: str) -> tuple[list[str], Redirect | None]:
    """Shell-like words and the `> FILE` / `>| FILE` target, if the line ends with one."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=">")
        lexer.whitespace_split = True
        # `#` is no comment: it picks a loop trip (`pt NAME@3#2`) and ends duplicate node
        # names (`MatMul-op0#1`); shlex's default would drop the rest of the line
        lexer.commenters = ""
        words = list(lexer)
    except ValueError as err:  # an unclosed quote
        raise CommandError(f"The command line cannot be split: {err}.") from None
    if ">>" in words:
        raise CommandError(
            "Output is not appended to a file (>>): write > NEW_FILE, or >| FILE to replace FILE."
        )
    if ">" not in words:
        return words, None
    at = words.index(">")
    rest = words[at + 1 :]
    # `|` is no punctuation of the split (an unquoted regex `a|b` stays one word), so
    # `>| FILE` arrives as `>`, `|`, FILE and `>|FILE` as `>`, `|FILE`
    replace = bool(rest) and rest[0].startswith("|")
    if replace:
        rest = rest[1:] if rest[0] == "|" else [rest[0][1:], *rest[1:]]
    if len(rest) != 1:
        raise CommandError("Write '> FILE' once, at the end of the command.")
    return words[:at], Redirect(rest[0], replace)


def _redirect(out: Output, redirect: Redirect) -> Output:
    text = (out.plain() + "\n").encode("utf-8")
    try:
        path = write_user_file(
            redirect.target,
            lambda handle: handle.write(text),
            overwrite=redirect.replace,
            how_to_overwrite=f"write >| {shlex.quote(redirect.target)} to replace it",
        )
    except WriteRefusedError as err:
        return Output.failure(str(err))
    done = Output()
    done.add(f"Wrote {len(out.lines)} lines to {path}.")
    return done


def _referable_names(names: Sequence[str], word: str) -> tuple[list[str], str]:
    """The candidates for `word` that a command line can name, and a sentence for those
    it cannot (a control character or a line break in the name)."""
    refused = [name for name in names if name.startswith(word) and unreferable(name)]
    if not refused:
        return _names(names, word), ""
    note = unreferable(refused[0]) or ""
    if len(refused) > 1:
        note = (
            f"{len(refused)} nodes cannot be named in a command line: their names hold a "
            "control character or a line break."
        )
    kept = [name for name in names if not unreferable(name)]
    return _names(kept, word), note


def _names(names: Sequence[str], word: str) -> list[str]:
    """Node names starting with `word`, cut after the next '/' so a scope completes one
    level at a time, as a shell completes directories."""
    out: set[str] = set()
    for name in names:
        if name.startswith(word):
            cut = name.find("/", len(word))
            out.add(name if cut < 0 else name[: cut + 1])
    return sorted(out)


PATH_CANDIDATES = 200  # at most this many paths complete a Tab


def _paths(word: str) -> list[str]:
    folder, _, stem = word.rpartition("/")
    base = Path(folder or ".").expanduser()
    try:
        # Tab runs on the UI thread: the typed prefix filters while the folder is read, and
        # the read stops at the cap, so a 10⁵-file folder is neither listed whole nor sorted
        with os.scandir(base) as scan:
            matching = (e for e in scan if e.name.startswith(stem))
            entries = sorted(islice(matching, PATH_CANDIDATES), key=lambda e: e.name)
    except OSError:
        return []
    prefix = f"{folder}/" if folder else ""
    return [f"{prefix}{e.name}{'/' if e.is_dir() else ''}" for e in entries]


def parser(prog: str, description: str) -> CommandParser:
    return CommandParser(prog, description)


__all__ += ["parser"]
