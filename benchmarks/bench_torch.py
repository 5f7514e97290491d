"""Per-step cost of the PyTorch client on a small CNN on CPU.

Three copies of the same training (same seed, same data) run in turns of a few steps, so
that the load of a shared machine hits all of them alike:

* plain       — no tuidebug;
* attached    — `tuidebug.torch.attach`ed to a debugger with no watchpoint, in continue mode
                (the server gives our client a step budget, so it does a step-end WaitCMD
                round trip only every `FREE_RUN_SECONDS`, not every step as MindSpore does);
* recommended — MindInsight's recommended watchpoints (spec §4) set at the initial
                suspension, continue mode (the controller continues again after any hit).

Each debugger is an `OnlineSession` served in this process on 127.0.0.1, so its gRPC and
event threads compete with the training for the GIL (a pessimistic setting: a real debugger
runs in another process). Prints the median wall time per step and the median CPU time of
the training thread per step (less sensitive to other processes), with ratios to plain,
then the mean ratios (which include the occasional step that pays a WaitCMD round trip) and
the number of step-end WaitCMDs.

    python benchmarks/bench_torch.py [--steps 300] [--warmup 30] [--batch 32] [--threads 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
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


def make_training(batch: int) -> tuple[nn.Module, torch.optim.Optimizer, Callable[[int], None]]:
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = [(torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))) for _ in range(8)]

    def step(i: int) -> None:
        x, y = data[i % len(data)]
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return model, opt, step


class Controller:
    """The debugger side: a served session that continues whenever the training waits
    (event-driven, so it costs nothing while the training runs)."""

    def __init__(self, recommended: bool) -> None:
        self.recommended = recommended
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
                if self.recommended:
                    session.apply_recommended()
            self.hits += len(session.hits)
            session.continue_()
        except SessionError:
            pass

    def close(self) -> None:
        self.session.close()


def _serve(recommended: bool, conn: Any) -> None:
    """`--server-process`: the debugger side in its own process (as `tuidebug online`)."""
    controller = Controller(recommended)
    conn.send(controller.session.port)
    conn.recv()  # told to stop
    conn.send(controller.hits)
    controller.close()


class RemoteController:
    """A `Controller` in a child process."""

    def __init__(self, recommended: bool) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(recommended, child), daemon=True)
        self.process.start()
        self.port: int = self.conn.recv()
        self.hits = 0

    def close(self) -> None:
        self.conn.send("stop")
        self.hits = self.conn.recv()
        self.process.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="measured steps per run")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--block", type=int, default=25, help="steps per turn")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--server-process",
        action="store_true",
        help="run each debugger in its own process (as `tuidebug online` would) instead of "
        "in this one",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    plain = make_training(args.batch)
    runs: dict[str, tuple[Callable[[int], None], Callable[[], None]]] = {
        "plain": (plain[2], lambda: None)
    }
    controllers: list[Controller | RemoteController] = []
    debuggers: list[tdb.Debugger] = []
    for label, recommended in (("attached", False), ("recommended", True)):
        controller: Controller | RemoteController
        if args.server_process:
            controller = RemoteController(recommended)
            port = controller.port
        else:
            controller = Controller(recommended)
            port = controller.session.port
        model, opt, step = make_training(args.batch)
        dbg = tdb.attach(model, opt, port=port)
        controllers.append(controller)
        debuggers.append(dbg)
        runs[label] = (step, dbg.step_end)
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
        for dbg in debuggers:
            dbg.close()
        for controller in controllers:
            controller.close()

    base_wall = statistics.median(wall["plain"])
    base_cpu = statistics.median(cpu["plain"])
    where = "separate processes" if args.server_process else "this process"
    print(
        f"small CNN on CPU, batch {args.batch}, {args.threads} torch thread(s), "
        f"{args.steps} steps each (in turns of {args.block}), debuggers in {where}; "
        "median per step:"
    )
    notes = {
        "plain": "",
        "attached": "no watchpoint, continue mode",
        "recommended": f"recommended watchpoints, continue mode ({controllers[1].hits} hits)",
    }
    waits = {"plain": 0} | {
        label: dbg.waits for label, dbg in zip(("attached", "recommended"), debuggers, strict=True)
    }
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
            f"{c / base_cpu:6.3f}   {mw:5.3f} {mc:5.3f} {waits[label]:8d}   {notes[label]}"
        )


if __name__ == "__main__":
    main()
