"""The online package's seams stay cut: the server knows the session only through the
`WireHandler` protocol (no import circle), and the `.pb` → Graph reader the online session uses lives in core."""

from __future__ import annotations

import grimp


def test_the_server_does_not_import_the_session() -> None:
    graph = grimp.build_graph("tuidebug")
    assert (
        graph.find_shortest_chain(
            importer="tuidebug.online.server", imported="tuidebug.online.session"
        )
        is None
    )


def test_graphs_from_the_wire_are_read_without_the_offline_package() -> None:
    graph = grimp.build_graph("tuidebug")
    for module in graph.find_children("tuidebug.online"):
        imported = graph.find_modules_directly_imported_by(module)
        assert not any(m.startswith("tuidebug.offline") for m in imported), module
