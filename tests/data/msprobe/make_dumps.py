"""Makes the real msprobe dumps under tests/data/msprobe/ (issue 29) and msprobe's own answers.

usage: python3 tests/data/msprobe/make_dumps.py [--answers-only] [NAME…]   (all without a name)

The driver (any Python) runs each fixture's training in the venv that holds its msprobe,
copies the dump here as NAME/ (`step<N>/<proc<pid>|rank<N>|rank>/…`), then runs msprobe's
own `overflow_check -i STEP -o …` on every step and saves its answer as
NAME/msprobe_results/overflow_check_step<N>.json (msprobe's file, unedited) or, where it finds
nothing, overflow_check_step<N>.log (its log, which says "Cannot find any anomaly node"),
and `compare -tp … -gp …` CSVs where COMPARES says. `--answers-only` keeps the dumps and
redoes only msprobe's answers.
8.3.3 has no such analysis command (its `overflow_check` is a dump task, frozen as a
fixture of its own); 26.x's command reads the 8.x layout too, so it answers for all.

Venvs (made by hand; see the README next to this file):
  /tmp/msvenv   torch==2.13.0 + mindstudio-probe 26.x    (26.x layout: proc<pid>, rank<N>)
  /tmp/ms8venv  torch==2.13.0 + mindstudio-probe==8.3.3  (8.x layout: `rank`, is_recompute,
                parameters_grad without a call index; its `overflow_check` dump task)

The model is tiny on purpose (each .pt is ~2 KB): Linear(4→6) → Fault → tanh → Linear(6→2),
cross-entropy, batch 3. `Fault` multiplies by a gain that is 1 at step 0, 1e20 at step 1
(values huge but finite: the Norm statistic overflows to Infinity in float32/bf16 while Max
and Min stay finite, the case where a Norm-based check would raise a false alarm) and, at the
fault step, injects the fault: `inf` multiplies by 1e39 (±Infinity), `nan` takes the square
root of the negative values. The weights are updated outside msprobe's start/stop, so the
optimizer's own calls stay out of the dump.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MS26 = "/tmp/msvenv"
MS8 = "/tmp/ms8venv"
MSMS = "/tmp/msmsvenv"
COMM_FIRST = "MSPROBE_FIXTURE_COMM_FIRST"  # set by --comm-first for the spawned ranks

# name: (venv, config, options of the training run)
FIXTURES: dict[str, tuple[str, dict[str, object], list[str]]] = {
    # (a) 26.x task tensor at L0 (modules only) with a NaN at step 2
    "v26_tensor_L0_nan": (MS26, {"task": "tensor", "level": "L0"}, ["--fault", "nan"]),
    # (a) 26.x task tensor at mix (modules and APIs, forward and backward) with ±Inf at step 2
    "v26_tensor_mix_inf": (MS26, {"task": "tensor", "level": "mix"}, ["--fault", "inf"]),
    # bf16: CPU autocast bfloat16, statistics at mix, NaN at step 2
    "v26_stat_mix_bf16_nan": (
        MS26,
        {"task": "statistics", "level": "mix"},
        ["--fault", "nan", "--amp"],
    ),
    # (b) the structure task: the calls and their arguments' types and shapes, no statistics
    "v26_structure_mix": (MS26, {"task": "structure", "level": "mix"}, ["--steps", "1"]),
    # (c) 2 ranks under torch.distributed (gloo): rank<N> folders; the fault on rank 1 only,
    # the gradients all-reduced across ranks (Distributed.all_reduce in the dump)
    "v26_dist2_stat_L1_inf_rank1": (
        MS26,
        {"task": "statistics", "level": "L1"},
        ["--fault", "inf", "--world", "2"],
    ),
    # (c') the same with a collective (all_reduce of ones) before the fault in every
    # forward: msprobe's answer comes from its cross-rank pass, not its first one
    "v26_dist2_stat_L1_inf_after_comm": (
        MS26,
        {"task": "statistics", "level": "L1"},
        ["--fault", "inf", "--world", "2", "--comm-first"],
    ),
    # (d) 8.3.3: the older layout (folder `rank`, is_recompute, parameters_grad without index)
    "v8_stat_mix_inf": (MS8, {"task": "statistics", "level": "mix"}, ["--fault", "inf"]),
    # (d) 8.3.3's overflow_check dump task: only the calls that overflow are dumped
    "v8_overflow_check_task_inf": (
        MS8,
        {"task": "overflow_check", "level": "L1"},
        ["--fault", "inf"],
    ),
    # (f) the edges of msprobe's own rule (`DataNode.is_anomaly`), one per step, statistics at
    # mix: step 1 an Inf from `torch.fill_` (a name it ignores: Torch.empty*/Torch.fill*)
    # read by the next call; step 2 a NaN in the batch that reaches `torch.einsum` (run every
    # step) inside its operand list (only top-level records count: einsum is blamed); step 3 a NaN weight before the
    # step (parameters are no inputs: the module is blamed, not the linear inside it)
    "v26_stat_mix_rule_edges": (
        MS26,
        {"task": "statistics", "level": "mix"},
        ["--edges", "--steps", "4"],
    ),
    # (e) MindSpore 2.10 PyNative on CPU, msprobe 26.x's MindSpore side: .npy tensors, NaN at
    # step 2 (msprobe's Norm computed without mint.norm, which has no CPU kernel: see below)
    "ms_pynative_tensor_mix_nan": (
        MSMS,
        {"task": "tensor", "level": "mix"},
        ["--fault", "nan", "--mindspore"],
    ),
}


# msprobe's own `compare -tp TARGET -gp GOLDEN` answers (26.x, its CSV), paths relative to
# this folder: (fixture that keeps the answer, answer's name, target, golden)
COMPARES: list[tuple[str, str, str, str]] = [
    # the rank that took the fault against the one that did not, at the fault's step
    (
        "v26_dist2_stat_L1_inf_rank1",
        "compare_rank1_vs_rank0_step2",
        "v26_dist2_stat_L1_inf_rank1/step2/rank1/dump.json",
        "v26_dist2_stat_L1_inf_rank1/step2/rank0/dump.json",
    ),
    # tensor mode: the fault's step against the clean step 0 of the same run (values compared)
    (
        "v26_tensor_mix_inf",
        "compare_step2_vs_step0",
        "v26_tensor_mix_inf/step2",
        "v26_tensor_mix_inf/step0",
    ),
]


# ---------------------------------------------------------------- training (inside a venv)


def train_mindspore(config_path: str, fault: str | None, steps: int) -> None:
    """The same tiny MLP in MindSpore PyNative on CPU under msprobe.mindspore.

    msprobe computes Norm with `mint.norm`, whose LinalgVectorNorm kernel has no CPU
    implementation: every statistic fails ("The kernel LinalgVectorNorm unregistered") and
    dump.json stays empty. `mint.norm` is replaced by ops.LpNorm over all axes, computed in
    the tensor's dtype as on Ascend (so Norm still overflows to Infinity at step 1)."""
    import mindspore as ms  # type: ignore[import-not-found]
    import numpy as np
    from mindspore import mint, nn, ops

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")

    def cpu_norm(x: ms.Tensor, *args: object, **kwargs: object) -> ms.Tensor:
        return ops.LpNorm(axis=tuple(range(x.ndim)), p=2)(x)

    mint.norm = cpu_norm
    from msprobe.mindspore import PrecisionDebugger  # type: ignore[import-not-found]

    ms.set_seed(7)
    np.random.seed(7)

    class Fault(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.gain = 1.0
            self.mode: str | None = None

        def construct(self, x: ms.Tensor) -> ms.Tensor:
            if self.mode == "nan":
                return ops.sqrt(x) * self.gain
            return x * self.gain

    class TinyMLP(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Dense(4, 6)
            self.fault = Fault()
            self.out = nn.Dense(6, 2)

        def construct(self, x: ms.Tensor) -> ms.Tensor:
            return self.out(ops.tanh(self.fault(self.inp(x))))

    net = TinyMLP()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def forward(x: ms.Tensor, y: ms.Tensor) -> ms.Tensor:
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, net.trainable_params())
    dbg = PrecisionDebugger(config_path=config_path)
    xs = np.random.randn(steps, 3, 4).astype(np.float32)
    ys = np.random.randint(0, 2, (steps, 3)).astype(np.int32)
    for step in range(steps):
        net.fault.gain = 1e20 if step == 1 else 1.0
        net.fault.mode = fault if step == steps - 1 else None
        dbg.start(net)
        loss, grads = grad_fn(ms.Tensor(xs[step]), ms.Tensor(ys[step]))
        dbg.stop()
        dbg.step()
        for p, g in zip(net.trainable_params(), grads, strict=True):
            if np.isfinite(g.asnumpy()).all():
                p.set_data(p - 0.01 * g)
        print(f"step {step} loss {loss}", flush=True)


def train(
    config_path: str, fault: str | None, amp: bool, steps: int, world: int, edges: bool = False
) -> None:
    if edges:
        _train_edges(config_path, steps)
        return
    if world > 1:
        import torch.multiprocessing as mp

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        mp.spawn(_train_rank, args=(config_path, fault, amp, steps, world), nprocs=world)
    else:
        _train_rank(0, config_path, fault, amp, steps, 1)


def _train_rank(
    rank: int, config_path: str, fault: str | None, amp: bool, steps: int, world: int
) -> None:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from msprobe.pytorch import PrecisionDebugger, seed_all  # type: ignore[import-not-found]

    if world > 1:
        import torch.distributed as dist

        dist.init_process_group("gloo", rank=rank, world_size=world)
    seed_all(seed=7, mode=False)

    class Fault(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gain = 1.0
            self.mode: str | None = None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if world > 1 and os.environ.get(COMM_FIRST):
                # a collective before the fault: msprobe's first pass stops at it on every
                # rank, and its cross-rank pass has to find rank 1's call
                import torch.distributed as dist

                dist.all_reduce(torch.ones(2))
            if self.mode == "nan":
                return torch.sqrt(x) * self.gain
            return x * self.gain

    class TinyMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(4, 6)
            self.fault = Fault()
            self.out = nn.Linear(6, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(torch.tanh(self.fault(self.inp(x))))

    net = TinyMLP()
    dbg = PrecisionDebugger(config_path=config_path)
    xs = torch.randn(steps, 3, 4) + rank
    ys = torch.randint(0, 2, (steps, 3))
    for step in range(steps):
        net.fault.gain = 1e20 if step == 1 else 1.0
        net.fault.mode = None
        if step == steps - 1 and fault and (world == 1 or rank == 1):
            net.fault.mode = fault
            net.fault.gain = 1e39 if fault == "inf" else 1.0
        dbg.start(model=net)
        if amp:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = F.cross_entropy(net(xs[step]).float(), ys[step])
        else:
            loss = F.cross_entropy(net(xs[step]), ys[step])
        loss.backward()
        if world > 1:
            import torch.distributed as dist

            for p in net.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
        dbg.stop()
        dbg.step()
        with torch.no_grad():
            for p in net.parameters():
                if p.grad is not None and torch.isfinite(p.grad).all():
                    p -= 0.01 * p.grad  # type: ignore[misc]
                p.grad = None
        print(f"rank {rank} step {step} loss {loss.item()}", flush=True)
    if world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()


def _train_edges(config_path: str, steps: int) -> None:
    """The same MLP, one edge of msprobe's rule per step (FIXTURES' `v26_stat_mix_rule_edges`)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from msprobe.pytorch import PrecisionDebugger, seed_all

    seed_all(seed=7, mode=False)

    class Fault(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.edge = 0
            self.eye = torch.eye(6) * 0.5

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.edge == 1:  # an ignored name makes an Inf the next call reads
                buf = torch.fill_(torch.zeros_like(x), float("inf"))
                x = torch.where(torch.isinf(buf), x, buf)
            # every step (the graph is the first step's): x scaled, its operands a list
            # (msprobe 26.2 dumps no torch.cat/stack on CPU; einsum's operand list it does);
            # scales, not identities, so that no two calls' outputs have equal statistics
            x = torch.einsum("bi,ij->bj", [x, self.eye])
            return x * 3.0

    class TinyMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(4, 6)
            self.fault = Fault()
            self.out = nn.Linear(6, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(torch.tanh(self.fault(self.inp(x))))

    net = TinyMLP()
    dbg = PrecisionDebugger(config_path=config_path)
    xs = torch.randn(steps, 3, 4)
    ys = torch.randint(0, 2, (steps, 3))
    xs[2, 0, 0] = float("nan")
    for step in range(steps):
        net.fault.edge = step
        if step == 3:
            with torch.no_grad():
                net.inp.weight[0, 0] = float("nan")
        dbg.start(model=net)
        loss = F.cross_entropy(net(xs[step]), ys[step])
        loss.backward()
        dbg.stop()
        dbg.step()
        with torch.no_grad():
            for p in net.parameters():
                if p.grad is not None and torch.isfinite(p.grad).all():
                    p -= 0.01 * p.grad  # type: ignore[misc]
                p.grad = None
        print(f"step {step} loss {loss.item()}", flush=True)


# ---------------------------------------------------------------- the driver


def _make(name: str) -> None:
    venv, cfg, opts = FIXTURES[name]
    out = HERE / name
    with tempfile.TemporaryDirectory(prefix=f"msprobe_{name}_") as tmp:
        dump = Path(tmp) / "dump"
        task = str(cfg["task"])
        config: dict[str, object] = {
            "task": task,
            "dump_path": str(dump),
            "rank": [],
            "step": [],
            "level": cfg["level"],
            "seed": 7,
            "is_deterministic": False,
        }
        if task in ("tensor", "statistics", "structure"):
            config[task] = {"scope": [], "list": [], "data_mode": ["all"]}
        if task == "statistics":
            config[task] = {**config[task], "summary_mode": "statistics"}  # type: ignore[dict-item]
        if task == "overflow_check":
            config[task] = {"overflow_nums": -1, "check_mode": "all"}
        cfg_path = Path(tmp) / "config.json"
        cfg_path.write_text(json.dumps(config))
        steps = ["--steps", "3"] if "--steps" not in opts else []  # opts may say more
        cmd = [
            f"{venv}/bin/python",
            str(Path(__file__).resolve()),
            "--train",
            str(cfg_path),
            *steps,
            *opts,
        ]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=tmp)
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(dump, out)
        (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
        (out / "train_options.txt").write_text(" ".join(opts) + "\n")
    _answers(name, venv)


def _answers(name: str, venv: str) -> None:
    """msprobe's own answers on the fixture as it is: overflow_check per step, compares."""
    out = HERE / name
    results = out / "msprobe_results"
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir()
    for step_dir in sorted(out.glob("step*")):
        # 8.3.3 has no `overflow_check` analysis command (only the dump task of that name):
        # 26.x's reads both layouts, so it answers for every fixture
        _overflow_check(MS26, step_dir, results)
    _compare(name)


def _compare(name: str) -> None:
    for fixture, answer, target, golden in COMPARES:
        if fixture != name:
            continue
        with tempfile.TemporaryDirectory(prefix="msprobe_cmp_") as tmp:
            proc = subprocess.run(
                [
                    f"{MS26}/bin/msprobe",
                    "compare",
                    "-tp",
                    str(HERE / target),
                    "-gp",
                    str(HERE / golden),
                    "-o",
                    tmp,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            made = sorted(Path(tmp).rglob("*.csv")) + sorted(Path(tmp).rglob("*.xlsx"))
            if not made:
                sys.exit(
                    f"msprobe compare made nothing for {answer}: {(proc.stdout + proc.stderr)[-2000:]}"
                )
            shutil.copy(made[0], HERE / fixture / "msprobe_results" / f"{answer}{made[0].suffix}")


def _overflow_check(venv: str, step_dir: Path, results: Path) -> None:
    """msprobe's own `overflow_check -i STEP` (26.x and 8.x have this analysis command)."""
    with tempfile.TemporaryDirectory(prefix="msprobe_oc_") as tmp:
        proc = subprocess.run(
            [f"{venv}/bin/msprobe", "overflow_check", "-i", str(step_dir), "-o", tmp],
            capture_output=True,
            text=True,
            check=False,
        )
        made = sorted(Path(tmp).glob("*.json"))
        if not made and "only available for PyTorch" in proc.stdout + proc.stderr:
            # msprobe's command refuses a MindSpore dump; its own rule (the same analyzer,
            # DataNode.is_anomaly) is run with that framework test skipped, and the refusal kept
            (results / f"overflow_check_{step_dir.name}.refused.log").write_text(
                (proc.stdout + proc.stderr).replace(str(step_dir.parent), "<fixture>")
            )
            code = (
                "import sys\n"
                "from msprobe.overflow_check.analyzer import OverFlowCheck\n"
                "OverFlowCheck._check_framework = lambda self: None\n"
                "OverFlowCheck(sys.argv[1], sys.argv[2]).analyze()\n"
            )
            proc = subprocess.run(
                [f"{venv}/bin/python", "-c", code, str(step_dir), tmp],
                capture_output=True,
                text=True,
                check=False,
            )
            made = sorted(Path(tmp).glob("*.json"))
        if made:
            shutil.copy(made[0], results / f"overflow_check_{step_dir.name}.json")
        else:
            log = (proc.stdout + proc.stderr).replace(str(step_dir.parent), "<fixture>")
            (results / f"overflow_check_{step_dir.name}.log").write_text(
                f"rc={proc.returncode}\n{log}"
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--train")
    ap.add_argument("--fault", choices=("nan", "inf"))
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--mindspore", action="store_true")
    ap.add_argument("--edges", action="store_true")
    ap.add_argument("--comm-first", action="store_true")
    ap.add_argument(
        "--answers-only", action="store_true", help="keep the dumps, redo msprobe's answers"
    )
    args = ap.parse_args()
    if args.train and args.mindspore:
        train_mindspore(args.train, args.fault, args.steps)
        return
    if args.comm_first:
        os.environ[COMM_FIRST] = "1"
    if args.train:
        train(args.train, args.fault, args.amp, args.steps, args.world, args.edges)
        return
    for name in args.names or FIXTURES:
        if name not in FIXTURES:
            sys.exit(f"no fixture named {name!r}; the names are {', '.join(FIXTURES)}")
        if args.answers_only:
            _answers(name, FIXTURES[name][0])
        else:
            _make(name)


if __name__ == "__main__":
    main()
