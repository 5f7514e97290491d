"""One rank of the FSDP2 tests (`test_torch_fsdp.py` runs it under torchrun, gloo, CPU):
a `fully_shard`ed MLP dumped for two steps, and this rank's view of a sharded parameter
through the debugger's lookup (what a ViewCMD answers), written to `<out>/view_<rank>.json`.
With `--port P` it attaches to the debugger at P instead, and from step 3 on the first
layer's output is +inf (a fault for the debugger to find)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

import tuidebug.torch as tdb


def online(port: int) -> None:
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    for layer in (model[0], model[2]):
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = [0]
    model[0].register_forward_hook(lambda m, a, out: out * float("inf") if step[0] >= 2 else out)
    try:
        with tdb.attach(model, opt, port=port, retry_delay=0.02) as debugger:
            for i in range(50):
                step[0] = i
                model(torch.randn(4, 8)).square().mean().backward()
                opt.step()
                opt.zero_grad()
                debugger.step_end()
    except tdb.Terminated:
        pass
    dist.destroy_process_group()


def main(out: Path) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    for layer in (model[0], model[2]):
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    debugger = tdb.dump(model, opt, out / "dump", steps=2)
    for i in range(2):
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(i + 10 * rank))
        model(x).square().mean().backward()
        opt.step()
        opt.zero_grad()
        debugger.step_end()
    view = debugger.lookup("0.weight", "0", "")
    local = model[0].weight.to_local()
    debugger.close()
    report = {
        "shape": list(view.shape) if view is not None else None,
        "equal": view is not None and bool((torch.from_numpy(view) == local).all()),
    }
    (out / f"view_{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1] == "--port":
        online(int(sys.argv[2]))
    else:
        main(Path(sys.argv[1]))
