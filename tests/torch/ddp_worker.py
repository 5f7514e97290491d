"""One rank of a tiny DDP training (gloo, CPU) attached to a debugger: run by the tests as
`python -m tests.torch.ddp_worker` with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set
(as torchrun sets them), or by torchrun itself.

Options (environment, so torchrun's command line stays the README's):
  TDB_PORT        the debugger's port
  TDB_STEPS       steps to train (default 6)
  TDB_FAULT       "rank:step": that rank writes +inf into fc1's output at that step (1-based)
  TDB_DIE         "rank:step": that rank kills itself in the middle of that step (after forward)
  TDB_LATE        "1": attach(…, wait=False)
  TDB_START_STEP  attach(…, step=N)
  TDB_OUT         a file where this rank writes what happened (one JSON object)
  TDB_DDP         "0": all-reduce the gradients by hand instead of DistributedDataParallel
                  (the same collectives; DDP's first construction costs seconds of imports)
"""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

import tuidebug.torch as tdb


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def _pair(name: str) -> tuple[int, int] | None:
    text = os.environ.get(name, "")
    if not text:
        return None
    rank, step = text.split(":")
    return int(rank), int(step)


def main() -> int:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Net()
    fault = _pair("TDB_FAULT")
    die = _pair("TDB_DIE")
    step_box = [0]

    def poison(module: nn.Module, args: object, output: torch.Tensor) -> torch.Tensor:
        if fault is not None and fault == (rank, step_box[0]):
            output = output.clone()
            output[0, 0] = float("inf")
        return output

    model.fc1.register_forward_hook(poison)
    use_ddp = os.environ.get("TDB_DDP") != "0"
    ddp = nn.parallel.DistributedDataParallel(model) if use_ddp else model
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = int(os.environ.get("TDB_STEPS", "6"))
    start = int(os.environ.get("TDB_START_STEP", "0"))
    result: dict[str, object] = {"rank": rank, "steps": 0, "terminated": False}
    dbg = tdb.attach(
        model,
        opt,
        port=int(os.environ["TDB_PORT"]),
        wait=os.environ.get("TDB_LATE") != "1",
        step=start,
        example_inputs=torch.zeros(4, 8),
        retry_delay=0.2,
    )
    try:
        for i in range(steps):
            step_box[0] = start + i + 1
            g = torch.Generator().manual_seed(100 * rank + i)
            x = torch.randn(4, 8, generator=g)
            loss = ddp(x).square().mean()
            if die is not None and die == (rank, step_box[0]):
                os._exit(9)  # a rank that dies mid-step, as a killed process does
            opt.zero_grad()
            loss.backward()
            if not use_ddp:
                for p in model.parameters():
                    if p.grad is not None:
                        dist.all_reduce(p.grad)
                        p.grad.div_(dist.get_world_size())
            opt.step()
            dbg.step_end()
            result["steps"] = i + 1
            result["connected"] = dbg.connected
    except tdb.Terminated:
        result["terminated"] = True
    finally:
        dbg.close()
        out = os.environ.get("TDB_OUT")
        if out:
            with open(f"{out}.{rank}", "w") as f:
                json.dump(result, f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
