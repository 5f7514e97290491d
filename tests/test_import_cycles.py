"""Import circles stay at zero.

The import-linter contract "no import circles" (pyproject.toml, run by test_layering.py)
forbids a cycle among the children of every package, at every depth, and lists the circles
still being broken. It cannot see one kind: a package's `__init__` importing a module
inside it that imports the package back (directly or through others), since a package is
not its own child. That kind is checked here, on the same grimp graph import-linter builds
(function-level imports included).
"""

from __future__ import annotations

import grimp


def test_no_module_imports_a_package_that_imports_it() -> None:
    graph = grimp.build_graph("tuidebug", cache_dir=None)
    circles = []
    for package in sorted(graph.modules):
        if not graph.find_children(package):
            continue
        for module in sorted(graph.find_descendants(package)):
            if graph.chain_exists(package, module) and graph.chain_exists(module, package):
                down = graph.find_shortest_chain(package, module) or ()
                up = graph.find_shortest_chain(module, package) or ()
                circles.append(" -> ".join([*down, *up[1:]]))
    assert not circles, "import circles through a package's __init__:\n" + "\n".join(circles)
