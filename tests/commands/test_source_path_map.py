"""A dump made on another machine: `--source-root PREFIX=DIR` maps the stacks' paths under
PREFIX to DIR, which is a source root; a mapped path still has to stay under a root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tuidebug.commands.source import (
    ROOTS_VARIABLE,
    mapped_paths,
    path_maps,
    source_lines,
    source_roots,
)
from tuidebug.core.graph import Graph, Node, NodeKind, StackFrame


def graph_naming(path: str) -> Graph:
    stack = [StackFrame(path, 2, "y = relu(x)")]
    return Graph("g", [Node("ReLU-op1", NodeKind.OPERATOR, "ReLU", stack=stack)])


def test_a_map_is_a_root_and_maps_whole_components(tmp_path: Path) -> None:
    env = {ROOTS_VARIABLE: f"/home/dev/ws={tmp_path}{os.pathsep}/other"}
    maps = path_maps(["C:\\Users\\dev\\proj=~"], env)
    home = os.path.realpath(os.path.expanduser("~"))
    assert maps == (("C:/Users/dev/proj", home), ("/home/dev/ws", str(tmp_path.resolve())))
    assert str(tmp_path.resolve()) in source_roots(environ=env)
    assert os.path.realpath("/other") in source_roots(environ=env)
    ws = maps[1:]
    assert mapped_paths("/home/dev/ws/a/b.py", ws) == [str(tmp_path.resolve() / "a" / "b.py")]
    assert mapped_paths("/home/dev/wsx/b.py", ws) == []  # a prefix is whole components
    assert mapped_paths("C:\\Users\\dev\\proj\\t.py", maps) == [os.path.join(home, "t.py")]
    # longest prefix first: the more precise map wins
    both = path_maps(["/ws=/a", "/ws/lib=/b"], {})
    assert [m[0] for m in both] == ["/ws/lib", "/ws"]


def test_an_existing_folder_with_equals_is_a_folder(tmp_path: Path) -> None:
    odd = tmp_path / "a=b"
    odd.mkdir()
    assert path_maps([str(odd)], {}) == ()
    assert str(odd.resolve()) in source_roots(named=[str(odd)], environ={})


def test_source_lines_read_the_mapped_copy(tmp_path: Path) -> None:
    (tmp_path / "net.py").write_text("x = 1\ny = relu(x)\n")
    graphs = [graph_naming("/home/dev/ws/net.py")]
    named = [f"/home/dev/ws={tmp_path}"]
    roots = source_roots(named=named, environ={})
    found = source_lines(graphs, "/home/dev/ws/net.py", roots, maps=path_maps(named, {}))
    assert found.whole and found.path == str(tmp_path.resolve() / "net.py")
    assert [line.text for line in found.lines] == ["x = 1", "y = relu(x)"]
    assert found.lines[1].nodes == (("g", "ReLU-op1"),)
    unmapped = source_lines(graphs, "/home/dev/ws/net.py", roots)
    assert not unmapped.whole  # no map: only the quoted line


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_mapped_path_cannot_leave_the_roots(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "secret.py"
    secret.write_text("password = 1\n")
    (ws / "link.py").symlink_to(secret)
    named = [f"/home/dev/ws={ws}"]
    roots = source_roots(named=named, environ={})
    maps = path_maps(named, {})
    for path in ("/home/dev/ws/../secret.py", "/home/dev/ws/link.py"):
        found = source_lines([graph_naming(path)], path, roots, maps=maps)
        assert not found.whole, path
        assert "password" not in "".join(line.text for line in found.lines)
