"""A PyTorch training in the live TUI: `tdb.attach` connects to the real server, the
DebuggerApp shows the model's graph (module scopes, weights, gradients), a TO watchpoint
stops `continue` on the module that produced the first NaN, and terminate ends the run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.torch.support import TIMEOUT, LogNet, Training, make_session, sgd_loop
from tests.tui.support import wait_until
from tuidebug.core.graph import Category
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.panes.scope_tree import ScopeTree

torch = pytest.importorskip("torch")

SIZE = (160, 48)


async def until(pilot: Any, predicate: Callable[[], bool], what: str) -> None:
    await wait_until(pilot, predicate, what=what, timeout=TIMEOUT)


def header(app: DebuggerApp) -> str:
    return str(app.query_one(SessionHeader).render())


def batches(i: int) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(i)
    return torch.randn(4, 4, generator=g), torch.randn(4, 3, generator=g)


async def test_pytorch_graph_and_nan_origin_in_the_tui() -> None:
    session, _log = make_session()
    torch.manual_seed(0)
    model = LogNet()
    model.offset = -10.0  # Log sees negative inputs: it is the first module to make NaN
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    training = Training(
        model,
        sgd_loop(model, opt, 5, batch=batches),
        optimizer=opt,
        port=session.port,
        retry_delay=0.02,
    )
    app = DebuggerApp(session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            assert "waiting for training" in header(app)
            training.start()
            tree = app.query_one(ScopeTree)
            await until(pilot, lambda: tree.graph is not None, "the PyTorch graph")
            graph = tree.graph
            assert graph is not None
            assert "torch-" in header(app)
            # module scopes, weights by parameter name, gradients under Gradients/
            assert {"Default", "Gradients"} <= set(graph.top_scopes())
            weights = {n.name for n in graph.nodes_in(Category.WEIGHT)}
            assert {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"} <= weights
            assert any(n.op_type == "Log" for n in graph.operators)
            assert graph.nodes_in(Category.GRADIENT)
            assert any(n.op_type == "Tanh" for n in graph.nodes_in(Category.ACTIVATION))
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the offer")
            await pilot.press("n")
            await until(pilot, lambda: "paused" in header(app), "the initial suspension")

            session.create_watchpoint("TO", {})
            await pilot.press("c")
            await until(pilot, lambda: "paused at hit" in header(app), "the NaN hit")
            hits = app.query_one(HitList)
            assert hits.hit_count >= 1
            first = session.hits[0]
            assert graph.node(first.tensor.node).op_type == "Log"  # the origin, first

            await pilot.press("T")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirm")
            await pilot.press("y")
            training.join()
            assert type(training.error).__name__ == "Terminated"
    finally:
        Training.stop_all()
        session.close()
