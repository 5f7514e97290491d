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

from tests.torch.support import free_port, torch

JOB = Path(__file__).with_name("fsdp2_job.py")


@pytest.mark.skipif(not torch.distributed.is_available(), reason="no torch.distributed")
def test_fsdp2_ranks_dump_their_shards_and_check_reads_every_rank(tmp_path: Path) -> None:
    from tuidebug.offline.dump import OfflineDump

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path.cwd())}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    cmd += ["--master_port", str(free_port()), str(JOB), str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
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
