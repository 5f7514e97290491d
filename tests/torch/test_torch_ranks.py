"""A real torch.distributed job against one real debugger: 2 ranks (separate processes,
backend gloo, CPU, `ddp_worker.py`) attached to a `JobSession` on a loopback port, or to
`tuidebug online --until-hit` run as a command. A fault on rank 1 stops both ranks at the
same step and names rank 1; a rank that dies mid-step is named and the job is not held for
it; late attach connects both ranks at the same step end; the sentinel's exit codes.

Every wait is bounded (a stuck job fails its test instead of hanging the run); the worker
processes are killed whatever happens. Starting torch in a process takes seconds on a busy
machine: the tests wait up to `START` for the ranks."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
import torch.distributed as dist

from tuidebug.core.session import EventLog, Notice, SessionState
from tuidebug.core.tensor import TensorRef
from tuidebug.online.job import JobSession

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo"
)

ROOT = Path(__file__).resolve().parents[2]
START = 120.0  # seconds for the ranks to start torch and connect (a loaded machine)
RUN = 60.0  # seconds for anything after that


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(what: str, check: Callable[[], Any], timeout: float = RUN) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Ranks:
    """The worker processes of one job; killed at the end whatever happened."""

    def __init__(self, tmp: Path, port: int, *, world: int = 2, **env: str) -> None:
        self.out = tmp / "rank"
        master = free_port()
        self.procs = []
        for rank in range(world):
            penv = dict(
                os.environ,
                RANK=str(rank),
                LOCAL_RANK=str(rank),
                WORLD_SIZE=str(world),
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(master),
                TDB_PORT=str(port),
                TDB_OUT=str(self.out),
                PYTHONPATH=str(ROOT),
                **env,
            )
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tests.torch.ddp_worker"],
                    env=penv,
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            )

    def wait(self, timeout: float = RUN) -> list[int]:
        end = time.monotonic() + timeout
        codes = []
        for proc in self.procs:
            codes.append(proc.wait(max(0.1, end - time.monotonic())))
        return codes

    def result(self, rank: int) -> dict[str, Any]:
        return json.loads(Path(f"{self.out}.{rank}").read_text())

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            if proc.stderr is not None:
                proc.stderr.close()


@pytest.fixture
def job() -> Iterator[JobSession]:
    session = JobSession(port=0, join_timeout=START)
    session.start()
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def ranks() -> Iterator[list[Ranks]]:
    made: list[Ranks] = []
    yield made
    for r in made:
        r.kill()


def suspended(job: JobSession) -> bool:
    return job.metadata.state is SessionState.WAITING


def test_fault_on_rank_1_stops_both_ranks_at_its_step(
    job: JobSession, ranks: list[Ranks], tmp_path: Path
) -> None:
    """DDP: +inf in rank 1's fc1 output at step 3. Both ranks stop at the end of step 3 (the
    same check point); the first offending rank is 1 and its kernel's value is viewable."""
    events = EventLog()
    job.subscribe(events)
    run = Ranks(tmp_path, job.port, TDB_FAULT="1:3", TDB_STEPS="8")
    ranks.append(run)
    wait_until("both ranks at their initial suspension", lambda: suspended(job), START)
    md = job.metadata
    assert md.ranks == (0, 1) and "2 of 2 ranks" in md.source
    job.create_watchpoint("TO", {})
    job.continue_()
    wait_until("the stop at the hit", lambda: suspended(job) and job.hits)
    steps = {r: s.metadata.step for r, s in job.rank_sessions.items()}
    assert steps == {0: 3, 1: 3}
    assert job.first_offending_rank() == 1
    assert "First offending rank: 1" in job.metadata.message
    rank1 = [h for h in job.hits if h.tensor.rank == 1]
    assert rank1 and all(h.step == 3 for h in job.hits)
    fc1 = next(h for h in rank1 if "fc1-Linear" in h.tensor.node)
    value = job.tensor(TensorRef(fc1.tensor.node, 0, rank=1))
    assert value is not None and np.isinf(value).any()
    # rank 0's own fc1 output is finite: the fault is rank 1's
    value0 = job.tensor(TensorRef(fc1.tensor.node, 0, rank=0))
    assert value0 is not None and np.isfinite(value0).all()
    job.terminate()
    assert run.wait() == [0, 0]
    assert run.result(0)["terminated"] and run.result(1)["terminated"]
    assert run.result(0)["steps"] == run.result(1)["steps"] == 2


def test_four_ranks_stop_together_at_rank_2s_fault(
    job: JobSession, ranks: list[Ranks], tmp_path: Path
) -> None:
    """4 ranks (gradients all-reduced by hand: the same collectives as DDP without its
    seconds of imports per process): +inf on rank 2 at step 2 stops all four at step 2."""
    run = Ranks(tmp_path, job.port, world=4, TDB_FAULT="2:2", TDB_STEPS="6", TDB_DDP="0")
    ranks.append(run)
    wait_until("four ranks at their initial suspension", lambda: suspended(job), START)
    assert job.metadata.ranks == (0, 1, 2, 3)
    job.create_watchpoint("TO", {})
    job.continue_()
    wait_until("the stop at the hit", lambda: suspended(job) and job.hits)
    assert {r: s.metadata.step for r, s in job.rank_sessions.items()} == dict.fromkeys(range(4), 2)
    assert job.first_offending_rank() == 2
    job.terminate()
    assert run.wait() == [0, 0, 0, 0]


def test_a_rank_dying_mid_step_is_named_and_nobody_is_held(
    job: JobSession, ranks: list[Ranks], tmp_path: Path
) -> None:
    """Rank 1 exits in the middle of step 3: a notice names it, rank 0 is not held by the
    debugger (its all-reduce fails, it ends), and the job ends instead of hanging."""
    events = EventLog()
    job.subscribe(events)
    run = Ranks(tmp_path, job.port, TDB_DIE="1:3", TDB_STEPS="8", TDB_DDP="0")
    ranks.append(run)
    wait_until("both ranks at their initial suspension", lambda: suspended(job), START)
    job.create_watchpoint("TO", {})
    job.continue_()
    wait_until(
        "the notice naming rank 1",
        lambda: [
            e
            for e in events.events
            if isinstance(e, Notice) and e.message.startswith("Rank 1 is gone")
        ],
    )
    wait_until(
        "the job's end",
        lambda: job.metadata.state in (SessionState.DONE, SessionState.DISCONNECTED),
    )
    codes = run.wait()
    assert codes[1] == 9  # the rank that died
    assert codes[0] != 0  # rank 0's collective failed without it: not held forever


def test_late_attach_connects_every_rank_at_one_step(ranks: list[Ranks], tmp_path: Path) -> None:
    """`attach(…, wait=False, step=100)`: the ranks train without a debugger; one that
    starts later gets both ranks at the same step end, numbered from 100."""
    port = free_port()
    run = Ranks(tmp_path, port, TDB_LATE="1", TDB_START_STEP="100", TDB_STEPS="100000", TDB_DDP="0")
    ranks.append(run)
    time.sleep(2.0)  # the ranks start (and may train) without a debugger
    job = JobSession(port=port, join_timeout=START)
    job.start()
    try:
        wait_until("both ranks attached", lambda: suspended(job), START)
        steps = {r: s.metadata.step for r, s in job.rank_sessions.items()}
        assert steps[0] == steps[1] >= 100
        job.step(2)
        wait_until("two steps", lambda: suspended(job) and job.metadata.step == steps[0] + 2)
        assert {r: s.metadata.step for r, s in job.rank_sessions.items()} == {
            0: steps[0] + 2,
            1: steps[0] + 2,
        }
        job.terminate()
        assert run.wait() == [0, 0]
    finally:
        job.close()


def _sentinel(port: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tuidebug", "online", "--port", str(port), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )


@pytest.mark.parametrize("fault", [True, False])
def test_sentinel_exit_codes(fault: bool, ranks: list[Ranks], tmp_path: Path) -> None:
    """`tuidebug online --watch TO --until-hit --json`: exit 1 and the hits as JSON (rank
    and step in each) when rank 1 overflows; exit 0 when the job ends with no hit."""
    port = free_port()
    sentinel = _sentinel(port, "--watch", "TO", "--until-hit", "--json", "--connect-timeout", "120")
    try:
        wait_until("the sentinel listening", lambda: _listening(port), START)
        run = Ranks(tmp_path, port, TDB_STEPS="5", TDB_DDP="0", TDB_FAULT="1:3" if fault else "")
        ranks.append(run)
        out, err = sentinel.communicate(timeout=START + RUN)
        assert "Traceback" not in err
        hits = json.loads(out)
        if fault:
            assert sentinel.returncode == 1, err
            assert hits and {h["step"] for h in hits} == {3}
            assert any(h["rank"] == 1 and "fc1-Linear" in h["node"] for h in hits)
            assert {"watchpoint", "condition", "node", "slot", "error_code"} <= set(hits[0])
            assert run.wait() == [0, 0]
            assert run.result(1)["terminated"]
        else:
            assert sentinel.returncode == 0, err
            assert hits == []
            assert run.wait() == [0, 0]
            assert run.result(0)["steps"] == 5
    finally:
        if sentinel.poll() is None:
            sentinel.kill()
            sentinel.communicate()


def test_sentinel_recommended_on_a_healthy_job_exits_0(ranks: list[Ranks], tmp_path: Path) -> None:
    """`--recommended --until-hit` on two healthy ranks: exit 0. A check error (a weight
    change with no previous value yet) is not a hit: the JSON holds check errors only."""
    port = free_port()
    sentinel = _sentinel(port, "--recommended", "--until-hit", "--json", "--connect-timeout", "120")
    try:
        wait_until("the sentinel listening", lambda: _listening(port), START)
        run = Ranks(tmp_path, port, TDB_STEPS="5", TDB_DDP="0", TDB_FAULT="")
        ranks.append(run)
        out, err = sentinel.communicate(timeout=START + RUN)
        assert "Traceback" not in err
        assert sentinel.returncode == 0, err
        records = json.loads(out)
        assert all(r["check_error"] for r in records), records
        assert run.wait() == [0, 0]
        assert run.result(0)["steps"] == 5
    finally:
        if sentinel.poll() is None:
            sentinel.kill()
            sentinel.communicate()


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
