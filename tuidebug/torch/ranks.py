"""Which rank of which job this training process is, and late attach.

Under torch.distributed each rank is a process with a debugger connection of its own; it
tells the debugger its rank, world size and job (`core.rank_fields`), so one `tuidebug
online` serves every rank of the job (online/job.py). The job is named by torchrun's run id
(`TORCHELASTIC_RUN_ID`), else by the rendezvous address (`MASTER_ADDR:MASTER_PORT`), which
every rank of one job shares and another job on the same machine does not.

Late attach (`attach(…, wait=False)`): the training runs on without a debugger and connects
at a step end once one listens. Rank 0 alone looks (a TCP connect, at most once per
`PROBE_SECONDS`); under several ranks its answer is shared with one all-reduce of one
integer per step end on a gloo group of the debugger's own, so every rank connects at the
same step end: a rank that connected alone would be held at its initial suspension while
the others wait for it in their next collective.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import torch

from tuidebug.core.rank_fields import MAX_JOB_CHARS, RankInfo

__all__ = ["PROBE_SECONDS", "LateAttach", "debugger_listening", "process_rank"]

PROBE_SECONDS = 1.0


def process_rank() -> RankInfo | None:
    """This process's rank, world size and job; None outside an initialised process group
    (a single training)."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return None
    job = os.environ.get("TORCHELASTIC_RUN_ID", "")
    if not job and os.environ.get("MASTER_ADDR"):
        job = f"{os.environ['MASTER_ADDR']}:{os.environ.get('MASTER_PORT', '')}"
    return RankInfo(dist.get_rank(), dist.get_world_size(), job[:MAX_JOB_CHARS])


def debugger_listening(host: str, port: int, timeout: float = 0.2) -> bool:
    """Whether something accepts connections at host:port (the debugger, presumably)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class LateAttach:
    """When a training attached with `wait=False` tries to connect (module docstring).
    Made on every rank at the same point (`attach`): the gloo group is made collectively."""

    def __init__(self, host: str, port: int, rank: RankInfo | None) -> None:
        self.host = host
        self.port = port
        self.rank = rank
        self._last_probe = float("-inf")
        self._group: Any = None
        if rank is not None and rank.world_size > 1:
            self._group = torch.distributed.new_group(backend="gloo")

    def due(self, *, now: bool = False, look: bool = True) -> bool:
        """Whether every rank should connect at this step end (`now`: look whatever the
        time since the last look; `look=False`: this rank is online, it does not look). Called
        by every rank at every step end, online or not, so the all-reduce always pairs up."""
        found = False
        if look and (self.rank is None or self.rank.rank == 0):
            clock = time.monotonic()
            if now or clock - self._last_probe >= PROBE_SECONDS:
                self._last_probe = clock
                found = debugger_listening(self.host, self.port)
        if self._group is None:
            return found
        flag = torch.tensor([1 if found else 0], dtype=torch.int32)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX, group=self._group)
        return bool(flag.item())
