"""Hunt a NaN in a PyTorch training with tuidebug.

A small CNN learns random data; at step `--blowup-step` its learning rate jumps by
`--blowup-factor`, the weights explode, activations overflow to ±Inf and the loss turns NaN
a few steps later. Run it against the debugger:

    tuidebug online --port 50051                          # terminal 1: the debugger
    python examples/torch_nan_hunt.py --port 50051        # terminal 2: the training

In the debugger accept the recommended watchpoints (or add "Tensor overflow" on everything)
and press continue: the training stops at the first tensor that holds Inf/NaN — the module
(or the parameter, right after the optimizer step) that produced it, before anything
downstream runs. Or write a dump instead and check it headless:

    python examples/torch_nan_hunt.py --dump /tmp/nan_dump
    tuidebug check /tmp/nan_dump --watch TO
    tuidebug offline /tmp/nan_dump
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

import tuidebug.torch as tdb


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 7 * 7, 64)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.fc2(self.act(self.fc1(x)))


def main() -> None:
    parser = argparse.ArgumentParser(description="A CNN whose learning rate blows up.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=50051)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--blowup-step", type=int, default=10, help="1-based step")
    parser.add_argument("--blowup-factor", type=float, default=1e30)
    parser.add_argument("--dump", metavar="DIR", help="write a dump instead of attaching")
    parser.add_argument(
        "--on-disconnect", choices=("continue", "wait", "raise"), default="continue"
    )
    args = parser.parse_args()

    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    data = [(torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))) for _ in range(4)]

    if args.dump:
        dbg = tdb.dump(model, opt, args.dump)
    else:
        dbg = tdb.attach(
            model, opt, host=args.host, port=args.port, on_disconnect=args.on_disconnect
        )
    try:
        for step in range(1, args.steps + 1):
            if step == args.blowup_step:
                for group in opt.param_groups:
                    group["lr"] *= args.blowup_factor
            x, y = data[step % len(data)]
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            dbg.step_end()
            print(f"step {step:3d}  loss {loss.item():.6g}", flush=True)
    except tdb.Terminated:
        print("terminated by the debugger")
    finally:
        dbg.close()
    if args.dump:
        print(f"dump written to {args.dump}")


if __name__ == "__main__":
    main()
