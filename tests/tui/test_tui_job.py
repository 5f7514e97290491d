"""Pilot test of the live TUI on a job of two ranks (`JobSession`, what `tuidebug online`
serves): the header says which rank of how many is shown, and switching the rank shows the
other rank's graph. Two wire clients stand for the ranks (no torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.online.support import TIMEOUT, fixture_graph
from tests.online.test_online_job import joined
from tests.tui.support import wait_until
from tuidebug.core.session import SessionState
from tuidebug.online.job import JobSession
from tuidebug.online.server import ServerOptions
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.scope_tree import ScopeTree

SIZE = (160, 48)


def header(app: DebuggerApp) -> str:
    return str(app.query_one(SessionHeader).render())


async def until(pilot: Any, predicate: Any, what: str) -> None:
    await wait_until(pilot, predicate, what=what, timeout=TIMEOUT)


async def test_the_header_names_the_rank_of_the_job(dump_2_0: Path) -> None:
    job = JobSession("127.0.0.1", 0, server_options=ServerOptions(max_workers=16), wait_slice=0.1)
    job.start()
    clients = joined(job, fixture_graph(dump_2_0))
    waits = [c.wait_future(0) for c in clients]  # kept: a dropped future cancels its call
    try:
        app = DebuggerApp(job)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.query_one(ScopeTree).graph is not None, "the graph")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the offer")
            await pilot.press("n")
            await until(pilot, lambda: job.metadata.state is SessionState.WAITING, "waiting")
            await until(pilot, lambda: "0 of 2" in header(app), "rank 0 of 2 in the header")
            app.action_select_rank(1)
            await until(pilot, lambda: "1 of 2" in header(app), "rank 1 of 2 in the header")
            assert job.graphs is job.rank_sessions[1].graphs or dict(job.graphs) == dict(
                job.rank_sessions[1].graphs
            )
        assert not any(w.done() for w in waits)
    finally:
        for c in clients:
            c.close()
        job.close()
