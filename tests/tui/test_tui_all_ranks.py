"""The TUI on a session that checks every rank (`tuidebug offline --all-ranks`, the default
with `--cluster`): continue stops at another rank's hit, the header says which ranks were
checked and which have hits, and Enter on that hit shows its rank with its tensor open."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Select, Tree
from textual.widgets.tree import TreeNode

from tests.offline.many_ranks import write_ranks
from tests.tui.support import settled, tensor_shown, wait_until
from tuidebug.core.session import SessionState
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.messages import HitChosen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.panes.scope_tree import ScopeTree
from tuidebug.tui.tensor.view import TensorView

SIZE = (140, 40)


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("all_ranks_tui") / "dump"
    write_ranks(root, ranks=4, iterations=3, overflows={(2, 1)})
    return root


def walk(node: TreeNode[object]) -> Iterator[TreeNode[object]]:
    for child in node.children:
        yield child
        yield from walk(child)


async def test_enter_on_another_ranks_hit_shows_that_rank(dump: Path) -> None:
    session = OfflineSession(dump, rank=0, all_ranks=True)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot, lambda: app.loaded and len(session.watchpoint_book) == 1, what="TO set"
        )
        await settled(pilot)
        await pilot.press("c")
        await wait_until(
            pilot,
            lambda: session.metadata.state is SessionState.WAITING and session.hits,
            what="continue to stop at rank 2's overflow",
        )
        await settled(pilot)
        assert session.metadata.step == 2 and session.metadata.rank == 0
        assert "Step 2: 4 ranks checked; hits on rank 2." in str(
            app.query_one(SessionHeader).render()
        )
        assert app.query_one(HitList).hit_count == len(session.hits)
        rows = [str(node.label) for node in walk(app.query_one(HitList).query_one(Tree).root)]
        assert any(" r2" in row for row in rows), rows  # hit rows name their rank
        rank_filter = app.query_one("#hit-filter-rank", Select)
        labels = [str(prompt) for prompt, _ in rank_filter._options]
        assert f"rank 2 ({len(session.hits)})" in labels and "rank 1" in labels
        hit = session.hits[0]
        assert hit.tensor.rank == 2
        tree = app.query_one(ScopeTree).tree_view
        assert not tree.node_hits  # rank 0's tree: rank 2's hits are not on its nodes
        app.post_message(HitChosen(hit))  # as Enter on the row
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view.title.startswith("MatMul-op0"), what="the tensor")
        await tensor_shown(pilot, view)
        assert session.metadata.rank == 2
        assert app.current_node is not None and app.current_node.name == hit.tensor.node
        assert tuple(session.hits) and session.hits[0] == hit  # the hits stayed
        assert tree.node_hits.get(hit.tensor.node)  # rank 2's tree shows its hits
        await settled(pilot)
        assert app.query_one(HitList).hit_count == len(session.hits)
