"""Per-step cost of the PyTorch client on a DDP job of several ranks (gloo, CPU), against
one `JobSession` (what `tuidebug online` serves) in this process.

Each run is a fresh job of `--ranks` processes (DistributedDataParallel over the small CNN of
bench_torch.py, same seed and data on every run); rank 0 reports the median wall time of its
measured steps. Runs:

* plain       — no tuidebug;
* anomaly     — `torch.autograd.detect_anomaly()` around every step (the competing tool:
                what PyTorch offers to find where a NaN came from);
* attached    — every rank `tdb.attach`ed, no watchpoint, continue (in a job of several
                ranks every step end is a WaitCMD: the ranks move in lockstep, so that all
                stop at the same step end);
* overflow    — TensorOverflow on every node, continue;
* recommended — the recommended watchpoints, continue (the controller continues again
                after any hit).

The runs are made in turns (`--rounds`, the order reversed every other round) so a shared
machine's load hits all alike; the median over rounds is printed with its ratio to plain
and to anomaly.

    python benchmarks/bench_torch.py --ddp 2 [--steps 200] [--rounds 2] [--batch 32]
    python benchmarks/bench_torch_ddp.py --ranks 2 …    (the same)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

RUNS = ("plain", "anomaly", "attached", "overflow", "recommended")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------------- one rank
def worker(run: str, steps: int, warmup: int, batch: int, port: int, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_torch import SmallCNN

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = SmallCNN()
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(rank)
    data = [
        (torch.randn(batch, 3, 32, 32, generator=g), torch.randint(0, 10, (batch,), generator=g))
        for _ in range(8)
    ]
    dbg = None
    if run in ("attached", "overflow", "recommended"):
        import tuidebug.torch as tdb

        dbg = tdb.attach(model, opt, port=port)
    times = []
    for i in range(warmup + steps):
        x, y = data[i % len(data)]
        start = time.perf_counter()
        if run == "anomaly":
            with torch.autograd.detect_anomaly(check_nan=True):
                loss = loss_fn(ddp(x), y)
                loss.backward()
        else:
            loss = loss_fn(ddp(x), y)
            loss.backward()
        opt.step()
        opt.zero_grad()
        if dbg is not None:
            dbg.step_end()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    if dbg is not None:
        dbg.close()
    if rank == 0:
        Path(out).write_text(json.dumps({"median": statistics.median(times)}))
    dist.destroy_process_group()


# -------------------------------------------------------------------- the debugger side
def _control(job: object, watch: str, stop: threading.Event) -> None:
    """Set `watch` at the initial suspension and continue after every stop."""
    from tuidebug.core.session import SessionError, SessionState

    armed = False
    while not stop.is_set():
        md = job.metadata  # type: ignore[attr-defined]
        if md.state is SessionState.WAITING:
            try:
                if not armed:
                    armed = True
                    if watch == "overflow":
                        job.create_watchpoint("TO", {})  # type: ignore[attr-defined]
                    elif watch == "recommended":
                        job.apply_recommended()  # type: ignore[attr-defined]
                job.continue_()  # type: ignore[attr-defined]
            except SessionError:
                pass  # the state moved meanwhile: look again
        time.sleep(0.01)


def measure(run: str, ranks: int, steps: int, warmup: int, batch: int) -> float:
    """One job of `ranks` processes; rank 0's median seconds per step."""
    job = None
    stop = threading.Event()
    port = _free_port()
    if run in ("attached", "overflow", "recommended"):
        from tuidebug.online.job import JobSession

        job = JobSession(port=0, join_timeout=120)
        job.start()
        port = job.port
        threading.Thread(target=_control, args=(job, run, stop), daemon=True).start()
    master = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rank0.json")
        procs = []
        for rank in range(ranks):
            env = dict(
                os.environ,
                RANK=str(rank),
                LOCAL_RANK=str(rank),
                WORLD_SIZE=str(ranks),
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(master),
                OMP_NUM_THREADS="1",
            )
            cmd = [sys.executable, __file__, "--worker", run, "--steps", str(steps)]
            cmd += ["--warmup", str(warmup), "--batch", str(batch), "--port", str(port)]
            procs.append(subprocess.Popen([*cmd, "--out", out], env=env))
        try:
            for proc in procs:
                if proc.wait(900) != 0:
                    raise SystemExit(f"run {run}: a rank exited with {proc.returncode}")
        finally:
            stop.set()
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
            if job is not None:
                job.close()
        return float(json.loads(Path(out).read_text())["median"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", "--ddp", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated runs (plain always)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.steps, args.warmup, args.batch, args.port, args.out)
        return
    wanted = [r for r in RUNS if r == "plain" or not args.only or r in args.only.split(",")]
    times: dict[str, list[float]] = {r: [] for r in wanted}
    for n in range(args.rounds):
        for run in wanted if n % 2 == 0 else list(reversed(wanted)):
            times[run].append(measure(run, args.ranks, args.steps, args.warmup, args.batch))
            print(f"round {n + 1}: {run:<12} {times[run][-1] * 1e3:8.2f} ms/step", flush=True)
    med = {r: statistics.median(v) for r, v in times.items()}
    print(f"\nDDP, {args.ranks} ranks (gloo, CPU), small CNN, batch {args.batch} per rank:")
    print(f"{'run':<12} {'ms/step':>8} {'× plain':>8} {'× anomaly':>10}")
    for run in wanted:
        vs_anomaly = f"{med[run] / med['anomaly']:10.2f}" if "anomaly" in med else ""
        print(f"{run:<12} {med[run] * 1e3:8.2f} {med[run] / med['plain']:8.2f} {vs_anomaly}")


if __name__ == "__main__":
    main()
