"""A small DDP training (gloo, CPU) for torchrun, attached to `tuidebug online`: every rank
connects to the same debugger, which holds them together.

    tuidebug online --port 50051                                        # terminal 1
    torchrun --nproc-per-node 2 examples/torch_ddp.py --port 50051 --poison 1:8

`--poison RANK:STEP` writes +inf into `fc1`'s output on that rank at that step (1-based): the
debugger stops both ranks at the end of that step and names RANK as the first offending rank.
`--late` attaches with `wait=False` (train on until a debugger listens); `--steps N`.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from torch import nn

import tuidebug.torch as tdb


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=50051)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--poison", default="", metavar="RANK:STEP")
    parser.add_argument("--late", action="store_true", help="attach with wait=False")
    args = parser.parse_args()
    poison = tuple(int(v) for v in args.poison.split(":")) if args.poison else None

    dist.init_process_group("gloo")  # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR/PORT
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Net()
    step = [0]

    def inject(module: nn.Module, inputs: object, output: torch.Tensor) -> torch.Tensor:
        if poison == (rank, step[0]):
            output = output.clone()
            output[0, 0] = float("inf")
        return output

    model.fc1.register_forward_hook(inject)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # each rank sends its rank and world size: one debugger serves the whole job
    dbg = tdb.attach(model, opt, port=args.port, wait=not args.late)
    try:
        for i in range(args.steps):
            step[0] = i + 1
            x = torch.randn(16, 32, generator=torch.Generator().manual_seed(97 * rank + i))
            loss = ddp(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            dbg.step_end()
    except tdb.Terminated:
        print(f"rank {rank}: terminated by the debugger at step {dbg.step}")
    finally:
        dbg.close()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
