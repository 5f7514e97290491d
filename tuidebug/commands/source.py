"""Source files and the nodes their lines created (tfdbg's `ps`, the TUI's source view).

A node's stack (parsed from the graph's `source_address`) names the files and lines that
created it. `nodes_by_line` inverts that for one file; `read_source` reads the file when it
exists on this machine (bounded, regular files only: a stack path is untrusted input), and
`source_lines` puts the two together, falling back to the code lines the stacks quote when
the file is not here (a dump copied from the training server).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath

from tuidebug.core.graph import Graph, Node
from tuidebug.offline.files.regular_file import read_regular

__all__ = ["MAX_SOURCE_BYTES", "SourceLine", "nodes_by_line", "source_files", "source_lines"]

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


def source_lines(graphs: list[Graph], path: str) -> tuple[list[SourceLine], str, bool]:
    """The annotated lines of `path`, the path as found, and whether the file itself was
    read (False: only the lines the stacks quote)."""
    by_line, code, spelled = nodes_by_line(graphs, path)
    candidates = [p for p in (path, spelled) if p]
    for candidate in candidates:
        text = read_source(os.path.expanduser(candidate))
        if text is not None:
            return (
                [
                    SourceLine(i, line, tuple((n.graph_name, n.name) for n in by_line.get(i, ())))
                    for i, line in enumerate(text, start=1)
                ],
                candidate,
                True,
            )
    lines = [
        SourceLine(i, code.get(i, ""), tuple((n.graph_name, n.name) for n in by_line[i]))
        for i in sorted(by_line)
    ]
    return lines, spelled or path, False
