"""Lightning under tuidebug: a LightningModule without `forward` (its `training_step` calls
`self.net`, which the callback finds) learns random data with `accumulate_grad_batches`;
from global step `--poison` the gradient of `net.2.weight` is +inf.

    tuidebug online --port 50051                                  # terminal 1
    python examples/torch_lightning.py --port 50051 --poison 5    # terminal 2

Add "Tensor overflow" on everything (or the recommended set) and continue: the training
stops in step 5 at `net.2.weight`'s gradient, at the end of backward — before Lightning clips
it and before the optimizer writes it into the weights. Terminate: `fit()` returns. Or
write a dump:

    python examples/torch_lightning.py --dump /tmp/pl_dump --poison 3
    tuidebug check /tmp/pl_dump --watch TO
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import lightning as L
import torch
from torch import nn

import tuidebug.torch as tdb


class Regression(L.LightningModule):
    def __init__(self, poison: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
        self.poison = poison
        self.net[2].weight.register_hook(self._fault)

    def _fault(self, grad: torch.Tensor) -> torch.Tensor:
        bad = 0 < self.poison <= self.trainer.global_step + 1
        return torch.full_like(grad, math.inf) if bad else grad

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=50051)
    parser.add_argument("--dump", metavar="DIR", help="write a dump instead of attaching")
    parser.add_argument("--poison", type=int, default=0, help="global step of the fault")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(0)
    x, y = torch.randn(4096, 8), torch.randn(4096, 1)
    loader = torch.utils.data.DataLoader(list(zip(x, y, strict=True)), batch_size=16)
    debug = tdb.LightningCallback(dump_dir=args.dump) if args.dump else tdb.LightningCallback(
        port=args.port
    )  # fmt: skip
    trainer = L.Trainer(
        max_steps=args.steps,
        accumulate_grad_batches=2,
        gradient_clip_val=1.0,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        callbacks=[debug],
    )
    trainer.fit(Regression(args.poison), loader)
    print(f"trained {trainer.global_step} steps")


if __name__ == "__main__":
    main()
