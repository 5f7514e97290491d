"""Per-step cost of the PyTorch client, on CPU or a CUDA GPU.

Copies of the same training (same seed, same data) run in turns of a few steps, so that the
load of a shared machine hits all of them alike:

* plain       — no tuidebug;
* attached    — `tuidebug.torch.attach`ed to a debugger with no watchpoint, in continue mode
                (the server gives our client a step budget, so it does a step-end WaitCMD
                round trip only every `FREE_RUN_SECONDS`, not every step as MindSpore does);
* overflow    — TensorOverflow on every node (activations, gradients, parameters), continue;
* recommended — MindInsight's recommended watchpoints (spec §4), continue mode (the
                controller continues again after any hit);
* floor       — no tuidebug: every leaf-module output, parameter and gradient of the step
                checked for finiteness with `torch._foreach_norm(ord=inf)` and one host
                synchronisation per step (what TensorOverflow on everything cannot beat);
* floor+L1    — the same plus an L1 norm per tensor (what an abs-mean condition needs).

Models: `cnn` (a small CNN), `gpt2` (a 6-layer, 512-wide GPT-2-shaped transformer written
here, no download; bf16 autocast with `--amp bf16`, the default on CUDA), `resnet50`
(torchvision's, when installed). On CUDA every step ends with a synchronisation, so the
times are the GPU's.

Each debugger is an `OnlineSession` served in this process on 127.0.0.1, so its gRPC and
event threads compete with the training for the GIL (a pessimistic setting: a real debugger
runs in another process; `--server-process` puts each in its own). Prints the median wall
time per step and the median CPU time of the training thread per step, with ratios to
plain, then the mean ratios and the number of step-end WaitCMDs.

    python benchmarks/bench_torch.py [--model cnn|gpt2|resnet50] [--device cpu|cuda]
        [--amp none|bf16] [--steps 300] [--warmup 30] [--batch 32] [--threads 1]
    python benchmarks/bench_torch.py --ddp 2 [--steps 200] [--rounds 2]   (bench_torch_ddp.py:
        DDP ranks attached / TO / recommended vs plain and vs detect_anomaly)
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import tuidebug.torch as tdb
from tuidebug.core.session import MetadataChanged, SessionError, SessionEvent, SessionState
from tuidebug.online.server import ServerOptions
from tuidebug.online.session import OnlineSession


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(32 * 8 * 8, 128)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.fc2(self.relu3(self.fc1(x)))


class Block(nn.Module):
    """One GPT-2 block: pre-LayerNorm causal self-attention and a 4x GELU MLP."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.act = nn.GELU(approximate="tanh")
        self.mlp_proj = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(self.act(self.c_fc(self.ln_2(x))))


class SmallGPT2(nn.Module):
    """GPT-2-shaped: token and position embeddings, 6 blocks, a tied-size LM head."""

    def __init__(self, vocab: int = 8192, width: int = 512, layers: int = 6, ctx: int = 128):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(ctx, width)
        self.h = nn.ModuleList(Block(width, 8) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def make_training(
    batch: int, model_name: str = "cnn", device: str = "cpu", amp: str = "none"
) -> tuple[nn.Module, torch.optim.Optimizer, Callable[[int], None]]:
    torch.manual_seed(0)
    dev = torch.device(device)
    model: nn.Module
    if model_name == "gpt2":
        model = SmallGPT2()
        data = [
            (torch.randint(0, 8192, (batch, 128)), torch.randint(0, 8192, (batch, 128)))
            for _ in range(4)
        ]
    elif model_name == "resnet50":
        try:
            import torchvision  # type: ignore[import-not-found]
        except ImportError:
            raise SystemExit(
                "--model resnet50 needs torchvision (pip install torchvision)."
            ) from None
        model = torchvision.models.resnet50()
        data = [
            (torch.randn(batch, 3, 224, 224), torch.randint(0, 1000, (batch,))) for _ in range(4)
        ]
    else:
        model = SmallCNN()
        data = [(torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))) for _ in range(8)]
    model.to(dev)
    data = [(x.to(dev), y.to(dev)) for x, y in data]
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    autocast = amp == "bf16"

    def step(i: int) -> None:
        x, y = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
            out = model(x)
        loss = loss_fn(out.float().reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if dev.type == "cuda":
            torch.cuda.synchronize()  # the step's time is the GPU's

    return model, opt, step


def make_floor(
    batch: int, model_name: str, device: str, amp: str, l1: bool
) -> Callable[[int], None]:
    """A plain training whose every leaf output, parameter and gradient is checked for
    finiteness (and L1-normed with `l1`) by multi-tensor norms, one host sync per step."""
    model, opt, step = make_training(batch, model_name, device, amp)
    outputs: list[torch.Tensor] = []

    def keep(module: nn.Module, args: object, out: object) -> None:
        if isinstance(out, torch.Tensor):
            outputs.append(out.detach())

    for module in model.modules():
        if not list(module.children()):
            module.register_forward_hook(keep)
    params = [p for p in model.parameters() if p.requires_grad]
    orig_step = opt.step

    def checked_step(*a: Any, **k: Any) -> Any:
        tensors = [
            *outputs,
            *(p.detach() for p in params),
            *(p.grad for p in params if p.grad is not None),
        ]
        groups: dict[torch.dtype, list[torch.Tensor]] = {}
        for t in tensors:
            if t.is_floating_point():
                groups.setdefault(t.dtype, []).append(t)
        norms = [n.float() for g in groups.values() for n in torch._foreach_norm(g, ord=math.inf)]
        if l1:
            norms += [n.float() for g in groups.values() for n in torch._foreach_norm(g, ord=1)]
        bool(torch.stack(norms).isfinite().all())  # the one host synchronisation
        outputs.clear()
        return orig_step(*a, **k)

    opt.step = checked_step  # type: ignore[method-assign]
    return step


class Controller:
    """The debugger side: a served session that continues whenever the training waits
    (event-driven, so it costs nothing while the training runs)."""

    def __init__(self, watch: str) -> None:
        self.watch = watch
        self.hits = 0
        self.session = OnlineSession(
            "127.0.0.1", 0, server_options=ServerOptions(max_workers=8), wait_slice=0.5
        )
        self.session.subscribe(self._on_event)
        self._configured = False
        self.session.start()

    def _on_event(self, event: SessionEvent) -> None:
        if not isinstance(event, MetadataChanged):
            return
        if event.metadata.state is not SessionState.WAITING:
            return
        # a listener must not block the dispatcher: act from a short-lived thread
        threading.Thread(target=self._continue, daemon=True).start()

    def _continue(self) -> None:
        session = self.session
        try:
            if not self._configured:
                self._configured = True
                if self.watch == "recommended":
                    session.apply_recommended()
                elif self.watch == "overflow":
                    session.create_watchpoint("TO", {}, [])  # every node
            self.hits += len(session.hits)
            session.continue_()
        except SessionError:
            pass

    def close(self) -> None:
        self.session.close()


def _serve(watch: str, conn: Any) -> None:
    """`--server-process`: the debugger side in its own process (as `tuidebug online`)."""
    controller = Controller(watch)
    conn.send(controller.session.port)
    conn.recv()  # told to stop
    conn.send(controller.hits)
    controller.close()


class RemoteController:
    """A `Controller` in a child process."""

    def __init__(self, watch: str) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(watch, child), daemon=True)
        self.process.start()
        self.port: int = self.conn.recv()
        self.hits = 0

    def close(self) -> None:
        self.conn.send("stop")
        self.hits = self.conn.recv()
        self.process.join(10)


def main() -> None:
    if any(a == "--ddp" or a.startswith("--ddp=") for a in sys.argv[1:]):
        # a DDP job of several ranks: bench_torch_ddp.py (processes, a JobSession)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from bench_torch_ddp import main as ddp_main

        ddp_main(sys.argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("cnn", "gpt2", "resnet50"), default="cnn")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--amp", choices=("none", "bf16"), default=None)
    parser.add_argument("--steps", type=int, default=300, help="measured steps per run")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--block", type=int, default=25, help="steps per turn")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--only", default="", help="comma-separated runs (plain is always measured)"
    )
    parser.add_argument(
        "--server-process",
        action="store_true",
        help="run each debugger in its own process (as `tuidebug online` would) instead of "
        "in this one",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--device cuda: this torch sees no CUDA GPU.")
    amp = args.amp or ("bf16" if args.model == "gpt2" and args.device != "cpu" else "none")
    shape = (args.batch, args.model, args.device, amp)
    wanted = {w for w in args.only.split(",") if w} or {
        "attached",
        "overflow",
        "recommended",
        "floor",
        "floor+L1",
    }

    runs: dict[str, tuple[Callable[[int], None], Callable[[], None]]] = {
        "plain": (make_training(*shape)[2], lambda: None)
    }
    controllers: dict[str, Controller | RemoteController] = {}
    debuggers: dict[str, tdb.Debugger] = {}
    for label, watch in (
        ("attached", "none"),
        ("overflow", "overflow"),
        ("recommended", "recommended"),
    ):
        if label not in wanted:
            continue
        controller: Controller | RemoteController
        if args.server_process:
            controller = RemoteController(watch)
            port = controller.port
        else:
            controller = Controller(watch)
            port = controller.session.port
        model, opt, step = make_training(*shape)
        dbg = tdb.attach(model, opt, port=port)
        controllers[label] = controller
        debuggers[label] = dbg
        runs[label] = (step, dbg.step_end)
    for label, l1 in (("floor", False), ("floor+L1", True)):
        if label in wanted:
            runs[label] = (make_floor(*shape, l1=l1), lambda: None)
    wall: dict[str, list[float]] = {label: [] for label in runs}
    cpu: dict[str, list[float]] = {label: [] for label in runs}
    done = dict.fromkeys(runs, 0)
    total = args.warmup + args.steps
    try:
        # blocks of steps in turn: the load of a shared machine hits every run alike
        while min(done.values()) < total:
            for label, (step, step_end) in runs.items():
                for _ in range(args.block):
                    i = done[label]
                    if i >= total:
                        break
                    t0, c0 = time.perf_counter(), time.thread_time()
                    step(i)
                    step_end()
                    if i >= args.warmup:
                        wall[label].append(time.perf_counter() - t0)
                        cpu[label].append(time.thread_time() - c0)
                    done[label] = i + 1
    finally:
        for dbg in debuggers.values():
            dbg.close()
        for controller in controllers.values():
            controller.close()

    base_wall = statistics.median(wall["plain"])
    base_cpu = statistics.median(cpu["plain"])
    where = "separate processes" if args.server_process else "this process"
    print(
        f"{args.model} on {args.device} (amp {amp}), batch {args.batch}, {args.threads} torch "
        f"thread(s), {args.steps} steps each (in turns of {args.block}), debuggers in {where}; "
        "median per step:"
    )
    notes = {
        "plain": "",
        "attached": "no watchpoint, continue mode",
        "overflow": "TensorOverflow on every node, continue mode",
        "recommended": "recommended watchpoints, continue mode",
        "floor": "foreach inf-norm of every output/param/grad, 1 sync",
        "floor+L1": "the same + an L1 norm per tensor",
    }
    for label, controller in controllers.items():
        notes[label] += f" ({controller.hits} hits)"
    waits = {label: dbg.waits for label, dbg in debuggers.items()}
    mean_wall = statistics.fmean(wall["plain"])
    mean_cpu = statistics.fmean(cpu["plain"])
    print(
        f"  {'':12s} {'wall ms':>8s} {'ratio':>6s}   {'train-thread CPU ms':>8s} {'ratio':>6s}"
        f"   {'mean ratios':>11s} {'WaitCMDs':>8s}"
    )
    for label in runs:
        w = statistics.median(wall[label])
        c = statistics.median(cpu[label])
        mw = statistics.fmean(wall[label]) / mean_wall
        mc = statistics.fmean(cpu[label]) / mean_cpu
        print(
            f"  {label:12s} {1000 * w:8.2f} {w / base_wall:6.3f}   {1000 * c:19.2f} "
            f"{c / base_cpu:6.3f}   {mw:5.3f} {mc:5.3f} {waits.get(label, 0):8d}   {notes[label]}"
        )


if __name__ == "__main__":
    main()
