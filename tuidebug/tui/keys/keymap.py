"""The user's own keys: `keys.toml` → a Textual keymap (binding id → keys).

Every binding of the TUI has an id (`tuidebug.step`, `tensor.heatmap`…), and Textual can
rebind any of them by id (`App.set_keymap`). This module finds the user's file, reads it
and checks it against the ids the TUI really defines, so a typo becomes one sentence the
app shows as a notice (and `tuidebug keys` on stderr) instead of a key that silently
keeps its old meaning — or a traceback. A missing file is no remapping, not a problem.

The file (`$TUIDEBUG_KEYS`, else `$XDG_CONFIG_HOME/tuidebug/keys.toml`, else
`~/.config/tuidebug/keys.toml`)::

    [keys]
    step = "j"                        # no namespace: "tuidebug." is implied
    "tuidebug.continue" = "ctrl+r,c"  # several keys, comma-separated
    tensor.heatmap = "H"              # a dotted TOML key is the same as "tensor.heatmap"

    [source]
    roots = ["/home/dev/ws=~/ws", "~/src"]  # as `--source-root`: DIR or PREFIX=DIR

The `[source]` table is the TUI's standing `--source-root` (a dump made on another machine
names that machine's paths; the maps say where they are here), read with the keys because
it is the same kind of personal setting and one file is simpler to keep than two.
The ids are collected from the `BINDINGS` of the classes in `tuidebug.tui`, so a new
binding with an id is remappable (and listed by `tuidebug keys`) without touching this file.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import json
import os
import sys
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from textual.binding import Binding, BindingType
from textual.dom import DOMNode

if TYPE_CHECKING:
    from textual.app import App

ENV_VAR = "TUIDEBUG_KEYS"
DEFAULT_NAMESPACE = "tuidebug"
TABLE = "keys"
SOURCE_TABLE = "source"  # [source] roots = [...]: standing --source-root entries
# a keys file is a few lines; past this it is not one (and parsing it would stall the start)
MAX_KEYS_BYTES = 1024 * 1024
EXAMPLE = '[keys]\nstep = "j"                        # "tuidebug." is implied\n'
EXAMPLE += '"tuidebug.continue" = "ctrl+r,c"  # several keys, comma-separated\n'
EXAMPLE += "\n[source]                          # the source view's standing --source-root\n"
EXAMPLE += 'roots = ["/home/dev/ws=~/ws"]     # DIR, or PREFIX=DIR for another machine\'s paths\n'

Keymap = dict[str, str]


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class BindingInfo(NamedTuple):
    """One remappable binding, as its class defines it (keys before any remapping)."""

    id: str
    keys: tuple[str, ...]  # Textual key names: "n", "question_mark", "ctrl+s"
    description: str
    action: str
    owner: str  # the class that defines it: DebuggerApp, TensorView…


# ------------------------------------------------------------------ where the file is
def keys_file(environ: Mapping[str, str] | None = None) -> Path:
    """The file to read: `$TUIDEBUG_KEYS`, else the XDG config folder's tuidebug/keys.toml."""
    return keys_file_origin(environ)[0]


def keys_file_origin(environ: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """(path, which setting chose it) — `tuidebug keys` says why it looks where it looks."""
    env = os.environ if environ is None else environ
    explicit = env.get(ENV_VAR, "").strip()
    if explicit:
        return Path(explicit).expanduser(), f"${ENV_VAR}"
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    # the XDG spec: a relative XDG_CONFIG_HOME is invalid and must be ignored
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "tuidebug" / "keys.toml", "$XDG_CONFIG_HOME"
    return Path("~/.config/tuidebug/keys.toml").expanduser(), "the default location"


# ----------------------------------------------------------- what can be remapped
def _tui_classes() -> Iterable[type[DOMNode]]:
    """Every app, screen and widget class of tuidebug.tui, the app first (its keys are the
    ones users remap most, so `tuidebug keys` lists them first)."""
    import pkgutil  # here, not at the top: only `tuidebug keys` and the checks list classes

    import tuidebug.tui as package

    # every module of every feature package: a screen in a sub-package has bindings too
    names = sorted(
        (
            info.name
            for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")
            if not info.ispkg
        ),
        key=lambda name: (name != f"{package.__name__}.app", name),
    )
    for name in names:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, DOMNode)
                and value.__module__ == module.__name__
            ):
                yield value


def _own_bindings(cls: type[DOMNode]) -> list[Binding]:
    """The class's own BINDINGS, one Binding per key, key names normalised ("?" →
    "question_mark") exactly as Textual does when it builds its bindings map."""
    own: list[BindingType] = list(vars(cls).get("BINDINGS", []))
    return list(Binding.make_bindings(own))


@functools.cache
def known_bindings() -> dict[str, BindingInfo]:
    """Every binding id the TUI defines → its default keys and description.

    Read from the classes' BINDINGS rather than kept as a list here, so it cannot go
    stale. Imports all of tuidebug.tui (Textual included): call it when the TUI or
    `tuidebug keys` runs, not at import time.
    """
    found: dict[str, BindingInfo] = {}
    for cls in _tui_classes():
        for binding in _own_bindings(cls):
            if not binding.id:
                continue  # Textual can only remap bindings that have an id
            known = found.get(binding.id)
            if known is None:
                found[binding.id] = BindingInfo(
                    binding.id,
                    (binding.key,),
                    binding.description,
                    binding.action,
                    cls.__name__,
                )
            elif binding.key not in known.keys:  # "question_mark,f1" comes as two
                found[binding.id] = BindingInfo(
                    known.id,
                    (*known.keys, binding.key),
                    known.description,
                    known.action,
                    known.owner,
                )
    return found


@functools.cache
def _namespaces() -> tuple[tuple[str, tuple[Binding, ...]], ...]:
    """(class name, all bindings it answers to, inherited ones included) for every class
    with a remappable binding: a remapped key can only clash with keys of the same place."""
    spaces = []
    for cls in _tui_classes():
        if not any(b.id for b in _own_bindings(cls)):
            continue
        merged: list[Binding] = []
        for base in reversed(cls.__mro__):
            if isinstance(base, type) and issubclass(base, DOMNode):
                merged.extend(_own_bindings(base))
        spaces.append((cls.__name__, tuple(merged)))
    return tuple(spaces)


@functools.cache
def _defaults_of(owner: type[DOMNode]) -> dict[str, tuple[str, ...]]:
    """Binding id → default keys, for the ids `owner` and its tuidebug.tui bases define:
    the same answer as `known_bindings()` for those ids (each id has one owner class),
    without importing every module of tuidebug.tui."""
    found: dict[str, tuple[str, ...]] = {}
    for cls in reversed(owner.__mro__):
        if not (
            isinstance(cls, type)
            and issubclass(cls, DOMNode)
            and cls.__module__.startswith("tuidebug.tui.")
        ):
            continue
        for binding in _own_bindings(cls):
            keys = found.get(binding.id or "", ())
            if binding.id and binding.key not in keys:
                found[binding.id] = (*keys, binding.key)
    return found


def active_keys(
    binding_id: str, keymap: Mapping[str, str], owner: type[DOMNode] | None = None
) -> list[str]:
    """The keys that run `binding_id` now: the user's, else the defaults (empty for an
    unknown id). The help screen and the palette show these, so they stay true.

    `owner`, the class that defines the binding when the caller knows it, saves the
    first frame from `known_bindings()`, which imports all of tuidebug.tui (the
    control bar asks the app's keys on mount; help and palette load the rest anyway)."""
    if keymap.get(binding_id):
        return keymap[binding_id].split(",")
    if owner is not None:
        keys = _defaults_of(owner).get(binding_id)
        if keys is not None:
            return list(keys)
    info = known_bindings().get(binding_id)
    return list(info.keys) if info else []


def _normalise(keys: str) -> str:
    """Spell keys as Textual matches presses ("?,ctrl+r" → "question_mark,ctrl+r"), so the
    keymap the app applies and the one it shows in the help agree."""
    return ",".join(binding.key for binding in Binding.make_bindings([Binding(keys, "")]))


# --------------------------------------------------------------------- reading
def load_keymap(
    path: Path | None = None, known: Collection[str] | None = None
) -> tuple[Keymap, list[str]]:
    """Read the user's keys file → (keymap for `App.set_keymap`, problem sentences).

    `path` defaults to `keys_file()`, `known` to the ids of `known_bindings()`. A missing
    file gives ({}, []). The keymap holds only the valid entries, so one typo does not
    cost the user the rest of their keys.
    """
    config = load_config(path, known)
    return config.keymap, config.problems


# a NamedTuple, not a dataclass: built at import without exec'd methods (issue 28)
class UserConfig(NamedTuple):
    """What the user's keys file says: the keymap, the standing source roots (`[source]
    roots`, entries as `--source-root` takes them) and the problem sentences."""

    keymap: Keymap
    source_roots: list[str]
    problems: list[str]


def load_config(path: Path | None = None, known: Collection[str] | None = None) -> UserConfig:
    """Read the user's keys file whole (`load_keymap` is its [keys] part)."""
    from tuidebug.offline.files.regular_file import (
        FileTooLargeError,
        NotRegularFileError,
        read_regular,
    )

    path = keys_file() if path is None else path
    nothing = "so no keys were remapped"
    try:
        # a FIFO would block the TUI's start on a blank screen and /dev/zero would never
        # end: only a regular file is read, opened non-blocking, and only so much of it
        raw = read_regular(path, MAX_KEYS_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return UserConfig({}, [], [])
    except NotRegularFileError as exc:
        return _unread(f"The keys file {path} cannot be read (it is {exc.strerror}), {nothing}.")
    except FileTooLargeError:
        return _unread(
            f"The keys file {path} is larger than the 1 MiB a keys file may have, {nothing}."
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return _unread(f"The keys file {path} cannot be read ({reason}), {nothing}.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _unread(f"The keys file {path} is not UTF-8 text, {nothing}.")
    try:
        return parse_config(text, path, known)
    except RecursionError:  # tables nested thousands deep: the parser's or _flatten's stack
        return _unread(f"The keys file {path} nests its tables too deeply, {nothing}.")
    except Exception as exc:  # a parser bug on hostile text is still one sentence
        return _unread(
            f"The keys file {path} could not be read ({type(exc).__name__}: {exc}), {nothing}."
        )


def _unread(sentence: str) -> UserConfig:
    return UserConfig({}, [], [sentence])


def apply_user_keys(app: App[Any]) -> Keymap:
    """Remap the app's keys from the user's keys.toml and return the keymap applied; the
    file's mistakes are one warning, never a traceback (the valid entries still apply)."""
    config = load_config()
    keymap, problems = config.keymap, config.problems
    if keymap:
        app.set_keymap(keymap)
    if config.source_roots:
        from tuidebug.commands.source import ROOTS_VARIABLE

        # after the command line's --source-root entries (cli/offline.py puts them first):
        # the source view and :ps read both from this variable
        known = os.environ.get(ROOTS_VARIABLE, "")
        os.environ[ROOTS_VARIABLE] = os.pathsep.join(
            [*([known] if known else []), *config.source_roots]
        )
    if problems:
        shown = problems[:3]
        if len(problems) > 3:
            shown.append(f"(+{len(problems) - 3} more: `tuidebug keys` lists them)")
        app.notify("\n".join(shown), title="Your keys file", severity="warning", timeout=20)
    return keymap


def parse_keymap(
    text: str, path: Path | str, known: Collection[str] | None = None
) -> tuple[Keymap, list[str]]:
    """Check the text of a keys file → (keymap of its valid entries, problem sentences).

    Each problem is one sentence naming `path` and the offending entry, fit for a notice.
    """
    config = parse_config(text, path, known)
    return config.keymap, config.problems


def parse_config(text: str, path: Path | str, known: Collection[str] | None = None) -> UserConfig:
    """The text of a keys file → its valid [keys] and [source] entries and problems."""
    # the TOML parser loads only when there is a keys file (most starts have none)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 installs tomli (a dependency there): the same parser
        import tomli as tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return _unread(f"The keys file {path} is not valid TOML ({exc}), so no keys were remapped.")
    problems: list[str] = []
    roots: list[str] = []
    for name in data:
        if name == SOURCE_TABLE:
            roots = _source_entries(data[name], path, problems)
        elif name != TABLE:
            problems.append(
                f"The keys file {path} has {name!r} outside the [keys] table; it was ignored "
                "(remappings go under [keys], source roots under [source])."
            )
    table = data.get(TABLE, {})
    if not isinstance(table, dict):
        problems.append(
            f"In the keys file {path}, keys must be a table ([keys] on a line of its own), "
            f"not {_kind(table)}."
        )
        return UserConfig({}, roots, problems)
    known_ids = set(known_bindings() if known is None else known)
    keymap: Keymap = {}
    entry_of: dict[str, str] = {}  # binding id → the entry that set it, for the sentences
    for entry, value in _flatten(table):
        where = f"In the keys file {path}, [keys] {entry}"
        binding_id = entry if "." in entry else f"{DEFAULT_NAMESPACE}.{entry}"
        if binding_id not in known_ids:
            problems.append(f"{where} is not a key binding ({_suggest(binding_id, known_ids)}).")
            continue
        if not isinstance(value, str):
            problems.append(
                f'{where} must be a string of keys such as "j" or "ctrl+r,c", not '
                f"{_kind(value)} ({json.dumps(value, default=str)})."
            )
            continue
        problem = _check_keys(value)
        if problem:
            problems.append(f"{where} = {_toml(value)}: {problem}")
            continue
        if binding_id in entry_of:
            problems.append(
                f"{where} remaps {binding_id} again (after {entry_of[binding_id]}); "
                f"the later line, {_toml(value)}, wins."
            )
        keymap[binding_id] = _normalise(value)
        entry_of[binding_id] = entry
    problems.extend(_clashes(path, keymap, entry_of))
    return UserConfig(keymap, roots, problems)


def _source_entries(table: object, path: Path | str, problems: list[str]) -> list[str]:
    """The `[source]` table → its roots; each wrong entry is a sentence in `problems` and
    is left out, the others still apply."""
    where = f"In the keys file {path}, [source]"
    found: list[str] = []
    if not isinstance(table, dict):
        problems.append(
            f"{where} must be a table ([source] on a line of its own), not {_kind(table)}."
        )
        return found
    for name, value in table.items():
        if name != "roots":
            problems.append(f"{where} has {name!r}, which is not a setting (only roots = [...]).")
            continue
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            problems.append(
                f'{where} roots must be a list of folders such as ["~/src", "/ws=~/ws"], '
                f"not {_kind(value)}."
            )
            continue
        for entry in value:
            if not isinstance(entry, str) or not entry.strip():
                shown = json.dumps(entry, default=str)
                problems.append(
                    f"{where} roots has {shown}, which is not a folder; it was ignored."
                )
            elif os.pathsep in entry:
                problems.append(
                    f"{where} roots has {_toml(entry)}, which holds {os.pathsep!r}; give each "
                    "folder as an entry of its own."
                )
            else:
                found.append(entry)
    return found


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    """`tuidebug.step = "j"` (dotted, unquoted) is a nested table in TOML: read it as the
    id it spells, as the user meant."""
    for name, value in table.items():
        if isinstance(value, dict) and value:
            yield from _flatten(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def _check_keys(value: str) -> str:
    """The problem with a keys string, as the end of a sentence; "" when it is fine."""
    if not value.strip():
        return "no key is given (write one, or delete the line to keep the default)."
    for key in value.split(","):
        key = key.strip()
        if not key:
            return "one of its keys is empty (a doubled or trailing comma?)."
        if any(c.isspace() for c in key):
            return f"{key!r} is not a key name (names have no spaces: ctrl+r, not ctrl r)."
    return ""


def _toml(value: str) -> str:
    """A string as the file writes it ("j", not Python's 'j')."""
    return json.dumps(value, ensure_ascii=False)


def _kind(value: object) -> str:
    """A TOML value's type as a user would name it."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return 'a list (several keys go in one string: "ctrl+r,c")'
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


def _short(binding_id: str) -> str:
    """The id as the file may write it: "tuidebug." is implied."""
    return binding_id.removeprefix(f"{DEFAULT_NAMESPACE}.")


def _suggest(binding_id: str, known_ids: Collection[str]) -> str:
    """The hint after an unknown id: the close ones, else a few valid ones. Compared
    without the shared "tuidebug." so every app id does not look alike."""
    ids = sorted(known_ids)
    by_short = {_short(i): i for i in ids}
    last = binding_id.rsplit(".", 1)[-1]
    close = [i for i in ids if i.rsplit(".", 1)[-1] == last]
    close += [by_short[s] for s in difflib.get_close_matches(_short(binding_id), by_short, 3, 0.7)]
    close = list(dict.fromkeys(close))[:3]
    if close:
        return f"did you mean {' or '.join(close)}? `tuidebug keys` lists them all"
    examples = [i for i in ids if i.startswith(f"{DEFAULT_NAMESPACE}.")][:3] or ids[:3]
    return f"valid ones are e.g. {', '.join(examples)}; `tuidebug keys` lists them all"


def _clashes(path: Path | str, keymap: Mapping[str, str], entry_of: Mapping[str, str]) -> list[str]:
    """A remapped key that another binding of the same place already has: Textual gives the
    key to the remapped binding and the other one silently loses it — say so."""
    problems: list[str] = []
    for owner, bindings in _namespaces():
        holders: dict[str, list[Binding]] = {}
        for binding in bindings:
            bound = keymap.get(binding.id) if binding.id is not None else None
            keys = bound.split(",") if bound is not None else [binding.key]
            for key in keys:
                holders.setdefault(key, []).append(binding)
        for key, holding in holders.items():
            names = list(dict.fromkeys(b.id or f"the {b.action} action" for b in holding))
            remapped = [n for n in names if n in keymap]
            if len(names) < 2 or not remapped:
                continue
            where = f"In the keys file {path}, [keys] {entry_of[remapped[0]]}"
            if len(remapped) > 1:
                sentence = (
                    f"In the keys file {path}, {key} is given to both {' and '.join(remapped)}, "
                    f"which share {owner}; only one of them can have it."
                )
            else:
                others = " and ".join(n for n in names if n != remapped[0])
                sentence = (
                    f"{where} gives {key} to {remapped[0]}, taking it from {others} (both "
                    f"are keys of {owner}); remap that too, or pick another key."
                )
            if sentence not in problems:
                problems.append(sentence)
    return problems


def shadowed_keys(keymap: Mapping[str, str]) -> list[str]:
    """One sentence per pane that keeps a remapped app key for itself. Textual offers a key
    to the focused widget and its parents before the App, so an app binding remapped to a
    key a pane binds (`step = "t"`, with the tree's own `t`) runs everywhere but there:
    a warning, as the remapping still works elsewhere. Keys a pane inherits from Textual
    (a Tree's `enter`) count too; screens are left out (their keys are the screen's own)."""
    from textual.app import App
    from textual.screen import Screen

    classes = list(_tui_classes())
    app_ids = {
        b.id
        for cls in classes
        if issubclass(cls, App)
        for b in _own_bindings(cls)
        if b.id is not None and b.id in keymap
    }
    warnings: list[str] = []
    for binding_id in sorted(app_ids):
        for key in keymap[binding_id].split(","):
            for cls in classes:
                if issubclass(cls, (App, Screen)):
                    continue
                for base in cls.__mro__:
                    if not (isinstance(base, type) and issubclass(base, DOMNode)):
                        continue
                    own = [
                        b
                        for b in _own_bindings(base)
                        # the pane's binding, on its remapped keys when the user moved it
                        if key in (keymap.get(b.id, b.key) if b.id else b.key).split(",")
                    ]
                    if own:
                        what = own[0].id or f"its {own[0].action} action"
                        warnings.append(
                            f"{key} is remapped to {binding_id}, but {cls.__name__} binds {key} "
                            f"itself ({what}), so {key} does not run {binding_id} while "
                            f"the focus is in {cls.__name__}."
                        )
                        break
    return warnings


__all__ = [
    "ENV_VAR",
    "EXAMPLE",
    "BindingInfo",
    "Keymap",
    "UserConfig",
    "active_keys",
    "apply_user_keys",
    "keys_file",
    "keys_file_origin",
    "known_bindings",
    "load_config",
    "load_keymap",
    "parse_config",
    "parse_keymap",
    "shadowed_keys",
]


# (in this module, not the help's: the app names keys from its first frame, the help
# screen loads with the first `?`, issue 28)
_KEY_NAMES = {
    "slash": "/",
    "colon": ":",
    "question_mark": "?",
    "escape": "Esc",
    "alt+left": "Alt+←",
    "alt+right": "Alt+→",
    "plus": "+",
    "minus": "-",
    "equals_sign": "=",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "less_than_sign": "<",
    "greater_than_sign": ">",
    "left_curly_bracket": "{",
    "right_curly_bracket": "}",
}


def key_display(key: str) -> str:
    """A Textual key name as the help shows it ("question_mark" → "?")."""
    return _KEY_NAMES.get(key, key)
