"""A session that checks every rank (`OfflineSession(all_ranks=True)`, the default with
`--cluster`): each step's hits are exactly the union of what one-rank sessions find on each
rank, continue stops at the first step with a hit on any rank, switching the shown rank
keeps the hits, and the message says how many ranks were checked and which have hits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.offline.dump_copy import copy_dump
from tests.offline.many_ranks import write_ranks
from tuidebug.core.session import EventLog, HitsArrived, Notice
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.offline.session import OfflineSession

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 ranks x 4 iterations: rank 3 overflows at iteration 1, ranks 0 and 2 at
    iteration 2; rank 1's weight changes fast."""
    root = tmp_path_factory.mktemp("all_ranks") / "dump"
    write_ranks(root, ranks=4, iterations=4, overflows={(3, 1), (0, 2), (2, 2)}, fast_rank=1)
    return root


def _key(hit: WatchpointHit) -> tuple[Any, ...]:
    t = hit.tensor
    return (t.rank, t.graph, t.node, t.slot, t.iteration, hit.watchpoint_id, hit.error_code)


def _one_rank_hits(root: Path, rank: int, step: int, watches: list[tuple[str, dict]]) -> set:
    session = OfflineSession(root, rank=rank)
    try:
        session.start()
        for condition, params in watches:
            session.create_watchpoint(condition, params)
        session.reset_step(step)
        session.recheck()
        return {_key(h) for h in session.hits}
    finally:
        session.close()


def test_each_step_finds_the_union_of_the_ranks(dump: Path) -> None:
    watches = [("TO", {}), ("WCL", {"abs_mean_update_ratio_gt": 0.0001})]
    session = OfflineSession(dump, rank=0, all_ranks=True)
    try:
        session.start()
        assert session.metadata.max_step == 4
        for condition, params in watches:
            session.create_watchpoint(condition, params)
        for step in range(1, 5):
            session.reset_step(step)
            session.recheck()
            union = set().union(*(_one_rank_hits(dump, r, step, watches) for r in range(4)))
            assert {_key(h) for h in session.hits} == union
            assert len(session.hits) == len(union)  # nothing counted twice
    finally:
        session.close()


def test_continue_stops_at_the_first_hit_of_any_rank(dump: Path) -> None:
    session = OfflineSession(dump, rank=0, all_ranks=True)
    log = EventLog()
    session.subscribe(log)
    try:
        session.start()
        session.create_watchpoint("TO", {})
        session.continue_()
        # rank 0, the one shown, first overflows at step 3; rank 3 already at step 2
        assert session.metadata.step == 2
        assert {h.tensor.rank for h in session.hits} == {3}
        assert session.metadata.message == "Step 2: 4 ranks checked; hits on rank 3."
        session.continue_()
        assert session.metadata.step == 3
        assert {h.tensor.rank for h in session.hits} == {0, 2}
        assert session.metadata.message == "Step 3: 4 ranks checked; hits on ranks 0, 2."
        session.continue_()
        assert session.metadata.step == 4 and not session.hits
        assert session.metadata.message == "Step 4: 4 ranks checked, no hits."
        session.reset_step(3)
        session.recheck()
        assert session.metadata.message == "Step 3: 4 ranks checked; hits on ranks 0, 2."
        session.delete_watchpoint(session.hits[0].watchpoint_id)  # its hits go, and the line
        assert not session.hits
        assert session.metadata.message == "Step 3: 4 ranks checked, no hits."
    finally:
        session.close()


def test_switching_the_shown_rank_keeps_every_ranks_hits(dump: Path) -> None:
    session = OfflineSession(dump, rank=0, all_ranks=True)
    log = EventLog()
    session.subscribe(log)
    try:
        session.start()
        session.create_watchpoint("TO", {})
        session.step(2)
        hits = tuple(session.hits)
        assert hits and hits[0].tensor.rank == 3
        arrived = sum(isinstance(e, HitsArrived) for e in log.events)
        session.select_rank(3)
        assert session.metadata.rank == 3 and session.metadata.step == 2
        assert session.metadata.message == "Step 2: 4 ranks checked; hits on rank 3."
        assert tuple(session.hits) == hits
        assert sum(isinstance(e, HitsArrived) for e in log.events) == arrived
        # the hit's tensor reads on its own rank
        value = session.tensor(hits[0].tensor)
        assert value is not None and not bool(value[0, 0] < float("inf"))
        session.reset_step(2)  # not checked any more: no line about the ranks
        session.select_rank(0)
        assert session.metadata.message == "" and not session.hits
    finally:
        session.close()


def test_one_rank_session_is_unchanged(dump: Path) -> None:
    """Without all_ranks (and without a cluster) only the shown rank is checked."""
    session = OfflineSession(dump, rank=0)
    try:
        session.start()
        assert not session.all_ranks
        session.create_watchpoint("TO", {})
        session.continue_()
        assert session.metadata.step == 3
        assert {h.tensor.rank for h in session.hits} == {0}
        assert session.metadata.message == ""
    finally:
        session.close()


def test_a_target_missing_on_other_ranks_is_one_notice(tmp_path: Path) -> None:
    """A watchpoint on a node that only the shown rank's graph has is checked there; the
    other ranks are named once in a notice, not silently skipped."""
    root = tmp_path / "dump"
    write_ranks(root, ranks=3, iterations=2, overflows={(0, 0)})
    # rank 1 and 2 of another network: rename their MatMul in the graph and the files
    for rank in (1, 2):
        for path in (root / f"rank_{rank}").rglob("*"):
            if path.is_file() and path.suffix == ".pb" and "graphs" in path.parts:
                path.write_bytes(path.read_bytes().replace(b"MatMul-op0", b"MatMul-op9"))
            elif path.is_file() and "MatMul-op0" in path.name:
                path.rename(path.with_name(path.name.replace("MatMul-op0", "MatMul-op9")))
    session = OfflineSession(root, rank=0, all_ranks=True)
    log = EventLog()
    session.subscribe(log)
    try:
        session.start()
        session.create_watchpoint("TO", {}, ["Default/network/MatMul-op0"])
        session.step()
        assert {h.tensor.rank for h in session.hits} == {0}
        notices = [e.message for e in log.events if isinstance(e, Notice)]
        missing = [m for m in notices if m.startswith("Watchpoint 1 watches nothing on ranks 1–2")]
        assert len(missing) == 1, notices
        session.step()  # resolved once: no second notice
        notices = [e.message for e in log.events if isinstance(e, Notice)]
        assert sum(m.startswith("Watchpoint 1 watches nothing") for m in notices) == 1
    finally:
        session.close()


def test_real_mindspore_files_on_two_ranks(lenet_dump: Path, tmp_path: Path) -> None:
    """The real LeNet dump (both file grammars) as rank 0 and, copied, rank 1: checking
    every rank finds each rank's hits exactly as a one-rank session does on it."""
    root = tmp_path / "dump"
    for rank in (0, 1):
        copy_dump(lenet_dump / "rank_0", root / f"rank_{rank}", with_data=True)
    watches = [("TL", {"abs_mean_gt": 1.0}), ("WCL", {"abs_mean_update_ratio_gt": 1e-4})]
    session = OfflineSession(root, rank=0, all_ranks=True)
    try:
        session.start()
        for condition, params in watches:
            session.create_watchpoint(condition, params)
        session.continue_()
        step = session.metadata.step
        assert session.hits and {h.tensor.rank for h in session.hits} == {0, 1}
        union = _one_rank_hits(root, 0, step, watches) | _one_rank_hits(root, 1, step, watches)
        assert {_key(h) for h in session.hits} == union
        assert len(session.hits) == len(union)
        # the same tensors on both ranks: each rank's hits are the other's, rank aside
        per_rank = [{k[1:] for k in union if k[0] == r} for r in (0, 1)]
        assert per_rank[0] == per_rank[1]
    finally:
        session.close()
