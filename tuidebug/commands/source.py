"""Source files and the nodes their lines created (tfdbg's `ps`, the TUI's source view).

A node's stack (parsed from the graph's `source_address`) names the files and lines that
created it. `nodes_by_line` inverts that for one file; `read_source` reads the file when it
exists on this machine (bounded, regular files only: a stack path is untrusted input), and
`source_lines` puts the two together, falling back to the code lines the stacks quote when
the file is not here (a dump copied from the training server).

A stack names any path it likes (`/etc/shadow`, `~/.ssh/id_rsa`), so a file is read for
its stack's path only under a source root (`source_roots`): the dump's own folder, the
working folder (unless it is `/` or the home folder itself or above it: that is no
project), the folders in `TUIDEBUG_SOURCE_ROOTS` (separated as in PATH) and those the user
named (`ps --root DIR`, `tuidebug exec --source-root DIR`). Elsewhere the stacks' quoted
lines are shown with a sentence saying where the file is and how to allow it. A path the
user types (`ps /etc/shadow`, perhaps copied from `ps`'s listing of the stacks' files)
follows the same rule: `ps --root /etc /etc/shadow` is how the user says so.

A dump made on another machine names that machine's paths (`/home/dev/ws/train.py`). A
root given as `PREFIX=DIR` (`--source-root /home/dev/ws=~/ws`, the same in
`TUIDEBUG_SOURCE_ROOTS`) is a path map: a stack path under PREFIX is read from the same
place under DIR, and DIR is a source root like any other (`path_maps`). A path mapped
there is still read only when its real path is under a root: a stack's `../..` or a link
in DIR leads nowhere else.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from tuidebug.core.graph import Graph, Node
from tuidebug.offline.files.regular_file import read_regular

__all__ = [
    "MAX_SOURCE_BYTES",
    "ROOTS_VARIABLE",
    "SourceLine",
    "SourceText",
    "nodes_by_line",
    "path_maps",
    "source_files",
    "source_lines",
    "source_roots",
]

ROOTS_VARIABLE = "TUIDEBUG_SOURCE_ROOTS"

MAX_SOURCE_BYTES = 4 << 20  # a source file larger than this is not a source file


@dataclass(frozen=True)
class SourceLine:
    line_no: int
    text: str
    nodes: tuple[tuple[str, str], ...]  # (graph name, node name) created at this line


def _common_tail(a: str, b: str) -> int:
    """How many trailing path components `a` and `b` share."""
    pa, pb = PurePath(a).parts, PurePath(b).parts
    n = 0
    while n < min(len(pa), len(pb)) and pa[-1 - n] == pb[-1 - n]:
        n += 1
    return n


def _matching_paths(stack_paths: set[str], wanted: str) -> set[str]:
    """The stack paths that name `wanted`: those sharing the longest tail with it, at least
    the file name (stacks hold the training machine's absolute paths; the user types a
    short one, or the path of a copy on this machine)."""
    scores = {path: _common_tail(path, wanted) for path in stack_paths}
    best = max(scores.values(), default=0)
    return {path for path, score in scores.items() if score == best} if best else set()


def source_files(graphs: Iterable[Graph]) -> Counter[str]:
    """Every file the stacks name, with how many nodes each created."""
    counts: Counter[str] = Counter()
    for graph in graphs:
        for node in graph:
            for path in {f.file_path for f in node.stack if f.file_path}:
                counts[path] += 1
    return counts


def nodes_by_line(
    graphs: Iterable[Graph], path: str
) -> tuple[dict[int, list[Node]], dict[int, str], str | None]:
    """Nodes created at each line of `path`, the code each line holds according to the
    stacks, and the stack's own spelling of the path (None when no stack names it)."""
    graphs = list(graphs)
    by_line: dict[int, list[Node]] = defaultdict(list)
    code: dict[int, str] = {}
    spelled: str | None = None
    named = _matching_paths(set(source_files(graphs)), path)
    for graph in graphs:
        for node in graph:
            for frame in node.stack:
                if frame.line_no is None or not frame.file_path:
                    continue
                if frame.file_path in named:
                    spelled = spelled or frame.file_path
                    if not by_line[frame.line_no] or by_line[frame.line_no][-1] is not node:
                        by_line[frame.line_no].append(node)
                    code.setdefault(frame.line_no, frame.code_line)
    return dict(by_line), code, spelled


def read_source(path: str) -> list[str] | None:
    """The file's lines, or None when it is not a readable regular file of sane size here."""
    try:
        data = read_regular(path, MAX_SOURCE_BYTES)
    except OSError:
        return None
    # lines as Python numbers them (\n, \r\n, \r): str.splitlines() also breaks at form
    # feeds and \u2028, which would shift every stack frame's line number after one
    lines = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline that ends the file starts no line
    return lines


def _entries(named: Iterable[str], environ: Mapping[str, str] | None) -> list[str]:
    """The roots the user named, then those of `TUIDEBUG_SOURCE_ROOTS`: `DIR` or `PREFIX=DIR`."""
    env = os.environ if environ is None else environ
    return [*named, *(p for p in env.get(ROOTS_VARIABLE, "").split(os.pathsep) if p.strip())]


def _split(entry: str) -> tuple[str, str]:
    """`PREFIX=DIR` → (PREFIX, DIR); a plain `DIR` → ("", DIR). A folder here whose name
    holds `=` is that folder, not a map."""
    prefix, equals, local = entry.partition("=")
    if not equals or not prefix.strip() or not local.strip():
        return "", entry
    if os.path.isdir(os.path.expanduser(entry)):
        return "", entry
    return prefix, local


def path_maps(
    named: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> tuple[tuple[str, str], ...]:
    """The `PREFIX=DIR` entries among the roots: (the other machine's prefix, with `/`
    separators and no trailing one; this machine's folder, a real path), longest prefix
    first, so `/ws/lib=…` wins over `/ws=…` for a file under both."""
    maps = []
    for entry in _entries(named, environ):
        prefix, local = _split(entry)
        if prefix:
            other = prefix.replace("\\", "/").rstrip("/") or "/"
            maps.append((other, os.path.realpath(os.path.expanduser(local))))
    return tuple(sorted(dict.fromkeys(maps), key=lambda m: -len(m[0])))


def mapped_paths(path: str, maps: Sequence[tuple[str, str]]) -> list[str]:
    """Where `path` (a stack's, maybe another machine's, maybe Windows') lies under each
    map whose prefix holds it, whole components only (`/ws=…` does not map `/wsx/a.py`)."""
    spelled = path.replace("\\", "/")
    found = []
    for prefix, local in maps:
        if prefix == "/" or spelled == prefix or spelled.startswith(prefix + "/"):
            rest = [part for part in spelled[len(prefix) :].split("/") if part]
            found.append(os.path.join(local, *rest))
    return found


def source_roots(
    dump: str | None = None,
    named: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """The folders whose files a stack's path may show (real paths, links resolved): the
    folders the user named (a `PREFIX=DIR` map's DIR), those of `TUIDEBUG_SOURCE_ROOTS`,
    the dump's own folder and the working folder when it is a project's (not `/`, not the
    home folder or above it)."""
    wanted = [_split(entry)[1] for entry in _entries(named, environ)]
    roots = [os.path.realpath(os.path.expanduser(p)) for p in wanted]
    if dump and os.path.isdir(dump):
        roots.append(os.path.realpath(dump))
    cwd = os.path.realpath(os.getcwd())
    home = os.path.realpath(os.path.expanduser("~"))
    if not _under(home, cwd):  # "/" or $HOME itself would make every file of the user's a source
        roots.append(cwd)
    return tuple(dict.fromkeys(roots))


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # paths on two drives (Windows) share no folder
        return False


@dataclass(frozen=True)
class SourceText:
    """What `source_lines` found: the annotated lines, the path as found, whether the file
    itself was read (False: only the lines the stacks quote) and, when a file here was left
    unread because it is outside the source roots, the sentence saying so."""

    lines: list[SourceLine]
    path: str
    whole: bool
    outside: str = ""
    from_dump: bool = False  # the dump's own copy of the file, not a file here


def source_lines(
    graphs: list[Graph],
    path: str,
    roots: Sequence[str] = (),
    *,
    typed: bool = False,
    maps: Sequence[tuple[str, str]] = (),
    dumped: Callable[[str], list[str] | None] | None = None,
) -> SourceText:
    """The annotated lines of `path` (a stack's path, or one the user `typed`), read only
    under `roots`; `maps` (`path_maps`) say where another machine's paths lie here;
    `dumped` gives the dump's own copy of a file (a tfdbg dump's `.source_files`, through
    `DebugSession.source_text`): it is what ran, so it comes first, and needs no file here."""
    by_line, code, spelled = nodes_by_line(graphs, path)
    for name in dict.fromkeys((spelled or path, path)):
        text = dumped(name) if dumped is not None else None
        if text is not None and sum(len(line) for line in text) <= MAX_SOURCE_BYTES:
            annotated = [
                SourceLine(i, line, tuple((n.graph_name, n.name) for n in by_line.get(i, ())))
                for i, line in enumerate(text, start=1)
            ]
            return SourceText(annotated, name, True, from_dump=True)
    # a typed path has ~ expanded, as a shell would; a stack's path is taken as written (no
    # ~ of the training machine means this home). Both are read only under a root: a name
    # typed after the stacks' listing is still the dump's choice of file
    named = [os.path.expanduser(path) if typed else path]
    if spelled and spelled != path:
        named.append(spelled)
    # the mapped copies first: a map says the files here are the ones the stacks mean
    candidates = [*(m for p in named for m in mapped_paths(p, maps)), *named]
    outside = ""
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if not any(_under(real, root) for root in roots):
            if not outside and os.path.lexists(candidate):
                outside = _outside(candidate, roots)
            continue
        text = read_source(real)  # the resolved path: a link swapped in later is not followed
        if text is not None:
            annotated = [
                SourceLine(i, line, tuple((n.graph_name, n.name) for n in by_line.get(i, ())))
                for i, line in enumerate(text, start=1)
            ]
            return SourceText(annotated, candidate, True)
    lines = [
        SourceLine(i, code.get(i, ""), tuple((n.graph_name, n.name) for n in by_line[i]))
        for i in sorted(by_line)
    ]
    return SourceText(lines, spelled or path, False, outside)


def _outside(path: str, roots: Sequence[str]) -> str:
    folder = os.path.dirname(os.path.realpath(path)) or "/"
    return (
        f"{path} is on this machine but outside the folders source files are shown from "
        f"({', '.join(roots) or 'none'}): name its folder with ps --root {shlex.quote(folder)} "
        f"or {ROOTS_VARIABLE}={shlex.quote(folder)} to show it."
    )
