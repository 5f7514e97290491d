"""FSDP2 (`fully_shard`, DTensor parameters) on CPU with gloo, two processes under torchrun:
each rank dumps its own `rank_<N>` folder with its shard of every parameter and gradient
(DTensors have no `.numpy()`: they crashed the dump), the graph names the sharding in the
node details, a view gives the rank's shard, and `tuidebug check` reads every rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.torch.support import free_port, make_session, torch, wait_state, wait_until
from tuidebug.core.session import SessionState
from tuidebug.core.tensor import TensorRef

JOB = Path(__file__).with_name("fsdp2_job.py")


def torchrun(ranks: int, *args: str) -> list[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks)]
    return [*cmd, "--master_port", str(free_port()), str(JOB), *args]


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path.cwd())}


@pytest.mark.skipif(not torch.distributed.is_available(), reason="no torch.distributed")
def test_fsdp2_ranks_dump_their_shards_and_check_reads_every_rank(tmp_path: Path) -> None:
    from tuidebug.offline.dump import OfflineDump

    done = subprocess.run(
        torchrun(2, str(tmp_path)), capture_output=True, text=True, timeout=120, env=ENV
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        view = json.loads((tmp_path / f"view_{rank}.json").read_text())
        assert view == {"shape": [8, 8], "equal": True}  # the rank's half of (16, 8)

    dump = OfflineDump(tmp_path / "dump")
    assert dump.ranks == [0, 1]
    graph = dump.graph(1, next(iter(dump.graphs(1))))
    fc1 = next(n for n in graph if n.op_type == "Linear")  # FSDPLinear: named as written
    assert "Shard(dim=0)" in fc1.attributes["weight.sharding"]
    assert "rank 1 holds (8, 8) of (16, 8)" in fc1.attributes["weight.sharding"]

    check = subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", str(tmp_path / "dump"), "--watch", "TO"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
    assert "ranks 0-1" in check.stdout, check.stdout


@pytest.mark.skipif(not torch.distributed.is_available(), reason="no torch.distributed")
def test_fsdp2_attached_training_is_checked_and_viewed_on_its_shards() -> None:
    """Online (one rank: a job of several ranks is the server's business): DTensor
    parameters and gradients checked and viewed, the sharding in the node details."""
    session, _log = make_session()
    job = subprocess.Popen(
        torchrun(1, "--port", str(session.port)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        wait_state(session, SessionState.WAITING, timeout=60)
        graph = session.graphs["kernel_graph0"]
        fc1 = next(n for n in graph if n.op_type == "Linear")
        assert fc1.attributes["weight.sharding"].startswith("Shard(dim=0) over a mesh of (1,)")
        weight = session.tensor(TensorRef("0.weight"))
        assert weight is not None and weight.shape == (16, 8)
        session.create_watchpoint("TO", {}, [])
        session.continue_()
        wait_until(
            lambda: session.metadata.state is SessionState.WAITING and bool(session.hits),
            timeout=60,
            what="a hit",
        )
        assert session.hits[0].tensor.node == fc1.name
        assert session.metadata.step == 3
        session.terminate()
        assert job.wait(60) == 0, job.stderr.read() if job.stderr else ""
    finally:
        if job.poll() is None:
            job.kill()
            job.wait(10)
        session.close()
