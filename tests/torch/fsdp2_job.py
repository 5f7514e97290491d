"""One rank of the FSDP2 test (`test_torch_fsdp.py` runs it under torchrun, gloo, CPU):
a `fully_shard`ed MLP dumped for two steps, and this rank's view of a sharded parameter
through the debugger's lookup (what a ViewCMD answers), written to `<out>/view_<rank>.json`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

import tuidebug.torch as tdb


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
    main(Path(sys.argv[1]))
