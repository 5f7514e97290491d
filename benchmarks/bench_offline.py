#!/usr/bin/env python3
"""The offline engine end to end on a synthetic MindSpore 2.10-grammar dump.

    python benchmarks/bench_offline.py [--gb 2] [--ranks 2] [--iterations 4] [--layers 40]
                                       [--workers N] [--tmp DIR] [--keep]

Writes (with `offline.dump_writer`, in a child process so its buffers do not count) a dump of
about `--gb` GB: `--ranks` ranks × `--iterations` iterations of an MLP with `--layers` dense
layers (8 kernels each: MatMul, BiasAdd, ReLU, ReluGrad, weight-gradient MatMul, BiasAddGrad
and two ApplyMomentum) plus an embedding table that is the largest tensor (~1/32 of the dump);
outputs and parameters only (`input_output: 2`). Then measures, in one run:

    index   OfflineDump + every rank's graphs + TensorIndex (per 10,000 files)
    check   the ten reference watchpoints W1–W10 of fixtures/expected (W1–W7 on every output
            tensor, W8–W10 on the weights) over every rank and iteration, default threads
    rss     peak RSS (VmHWM) of the process during the check (its threads included)
    floor   one `numpy.load(mmap_mode="r")` + `numpy.max` pass over every file, one process

and prints the ratios against the targets: index ≤ 1 s / 10k files, check ≤ 3× floor,
peak RSS ≤ 300 MB + the largest tensor (per process). The dump is deleted afterwards
unless `--keep`.

    python benchmarks/bench_offline.py --tiny 100000 [--iterations 10] [--profile]
                                       [--dump DIR] [--keep]

The many-small-files case instead (issue 13): a dump of `--tiny` files of four floats each
(one graph of tiny kernels × `--iterations`; an Inf in a few outputs of the last iteration),
written once (or reused with `--dump DIR`), then, each in a fresh process:

    discovery  OfflineDump + the rank's graphs (per file µs, RSS)
    index      every TensorIndex (listing and matching every file name)
    headers    the first lookup of every iteration (the index checks each output's header)
    read       tensor_store.load_npy over every file (the reader alone)
    check      Checker.check of TensorOverflow on every node over every iteration
    process    `tuidebug check DUMP --watch TO --json`, run twice, the second timed (warm
               page cache), with the peak RSS of the process tree

and prints µs per file against the target (<= 40 µs per tiny file end to end, warm).
`--profile` adds a cProfile of the in-process stages (top functions by own time).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MB = 1 << 20
# W1–W10 of fixtures/README.md, as `tuidebug check` specs
REFERENCE_WATCHPOINTS = [
    ("TO", {}),
    ("TL", {"abs_mean_gt": 1e10}),
    ("TL", {"max_gt": 1e30}),
    ("TL", {"abs_mean_gt": 1.0}),
    ("TS", {"abs_mean_lt": 1e-9}),
    ("TZ", {"zero_percentage_ge": 100.0}),
    (
        "TR",
        {"range_start_inclusive": -1e6, "range_end_inclusive": 1e6, "range_percentage_lt": 100.0},
    ),
    ("WCL", {"abs_mean_update_ratio_gt": 1.0}),
    ("WCS", {"abs_mean_update_ratio_lt": 1e-3}),
    ("WNC", {"rtol": 1e-5, "atol": 1e-8}),
]


# ---------------------------------------------------------------------- writing
def _sizes(gb: float, ranks: int, iterations: int, layers: int) -> tuple[int, int, int]:
    """(hidden size H, batch B, embedding rows V) so the dump is about `gb` GB.

    Per layer and iteration: 4 activations B×H, 3 matrices H×H (weight, its moment, its
    gradient) and the ApplyMomentum output H×H, i.e. 4·(4BH + 4H²) bytes with B = H/4:
    20·H² bytes. The embedding table (V×H; dumped as the parameter, its moment and the
    ApplyMomentum output) takes 3/32 of the budget."""
    per_iteration = gb * 1e9 / (ranks * iterations)
    body = per_iteration * (1 - 3 / 32)
    hidden = max(8, int(math.sqrt(body / (20 * layers))) // 8 * 8)
    embed_rows = max(8, int(per_iteration / 32 / (hidden * 4)))
    return hidden, max(1, hidden // 4), embed_rows


def write_dump(
    root: Path,
    gb: float,
    ranks: int,
    iterations: int,
    layers: int,
    seed: int = 0,
    sizes: tuple[int, int, int] | None = None,
    overflow_from_layer: int | None = None,
) -> None:
    """`sizes` = (hidden, batch, embedding rows) instead of deriving them from `gb`;
    `overflow_from_layer`: in the last iteration, the outputs of that layer's forward kernels
    and every later kernel's (the backward pass included) start with Inf and NaN."""
    from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

    hidden, batch, vocab = sizes or _sizes(gb, ranks, iterations, layers)
    f32 = np.float32
    params = [
        ParamDef("inputs0", f32, (batch, hidden)),
        ParamDef("learning_rate", f32, ()),
        ParamDef("embedding.weight", f32, (vocab, hidden)),
        ParamDef("moments.embedding.weight", f32, (vocab, hidden)),
    ]
    net = "Default/network-WithLossCell/_backbone-Net"
    opt = "Default/optimizer-Momentum"
    embed = f"{net}/embed-Embedding/Gather-op0"
    nodes: list[NodeDef] = [
        NodeDef(embed, "Gather", ("embedding.weight", "inputs0"), f32, (batch, hidden))
    ]
    prev = embed
    fwd: list[tuple[int, str, str]] = []
    for i in range(layers):
        w, b = f"layer{i}.weight", f"layer{i}.bias"
        params += [
            ParamDef(w, f32, (hidden, hidden)),
            ParamDef(b, f32, (hidden,)),
            ParamDef(f"moments.{w}", f32, (hidden, hidden)),
            ParamDef(f"moments.{b}", f32, (hidden,)),
        ]
        scope = f"{net}/layer{i}-Dense"
        mm, ba, relu = f"{scope}/MatMul-op0", f"{scope}/BiasAdd-op0", f"{scope}/ReLU-op0"
        nodes += [
            NodeDef(mm, "MatMul", (prev, w), f32, (batch, hidden)),
            NodeDef(ba, "BiasAdd", (mm, b), f32, (batch, hidden)),
            NodeDef(relu, "ReLU", (ba,), f32, (batch, hidden)),
        ]
        fwd.append((i, relu, scope))
        prev = relu
    grad = prev
    for i, relu, scope in reversed(fwd):
        gscope = f"Gradients/{scope}"
        rg = f"{gscope}/Grad_ReLU/ReluGrad-op0"
        wg = f"{gscope}/Grad_MatMul/MatMul-op0"
        bg = f"{gscope}/Grad_BiasAdd/BiasAddGrad-op0"
        nodes += [
            NodeDef(rg, "ReluGrad", (grad, relu), f32, (batch, hidden)),
            NodeDef(wg, "MatMul", (rg, relu), f32, (hidden, hidden)),
            NodeDef(bg, "BiasAddGrad", (rg,), f32, (hidden,)),
            NodeDef(
                f"{opt}/ApplyMomentum-op{2 * i}",
                "ApplyMomentum",
                (f"layer{i}.weight", f"moments.layer{i}.weight", "learning_rate", wg),
                f32,
                (hidden, hidden),
            ),
            NodeDef(
                f"{opt}/ApplyMomentum-op{2 * i + 1}",
                "ApplyMomentum",
                (f"layer{i}.bias", f"moments.layer{i}.bias", "learning_rate", bg),
                f32,
                (hidden,),
            ),
        ]
        grad = rg
    nodes.append(
        NodeDef(
            f"{opt}/ApplyMomentum-op{2 * layers}",
            "ApplyMomentum",
            ("embedding.weight", "moments.embedding.weight", "learning_rate", grad),
            f32,
            (vocab, hidden),
        )
    )
    rng = np.random.default_rng(seed)
    # A pool of random values sliced at random offsets: generating 2 GB of fresh random
    # numbers would take longer than the whole benchmark.
    pool = rng.standard_normal(max(vocab * hidden, 4 * hidden * hidden) * 2, dtype=f32)

    def sample(shape: tuple[int, ...], scale: float) -> np.ndarray:
        n = math.prod(shape)
        start = int(rng.integers(0, pool.size - n + 1))
        return (pool[start : start + n] * f32(scale)).reshape(shape)

    shapes = {p.name: p.shape for p in params}
    poisoned: set[str] = set()
    if overflow_from_layer is not None:
        first = f"{net}/layer{overflow_from_layer}-Dense/MatMul-op0"
        names = [n.full_name for n in nodes if n.op_type != "ApplyMomentum"]
        poisoned = set(names[names.index(first) :])
    for rank in range(ranks):
        with DumpWriter(root, net_name="Net", rank=rank, start_timestamp=1795310821150000) as w:
            w.add_graph(0, nodes, params)
            trained = [n.inputs[0] for n in nodes if n.op_type == "ApplyMomentum"]
            weights = {name: sample(shapes[name], 0.05) for name in trained}
            for it in range(iterations):
                w.write_iteration(
                    0,
                    it,
                    {
                        ("inputs0", "output", 0): sample((batch, hidden), 1.0),
                        ("learning_rate", "output", 0): np.asarray(0.01, f32),
                    },
                )
                # one node at a time keeps the writer's memory at a few tensors
                for node in nodes:
                    if node.op_type == "ApplyMomentum":
                        name = node.inputs[0]
                        weights[name] = weights[name] + sample(shapes[name], 1e-4)
                        tensors = {
                            (node.full_name, "output", 0): weights[name],  # in-place update
                            (name, "output", 0): weights[name],
                            (f"moments.{name}", "output", 0): sample(shapes[name], 1e-3),
                        }
                    else:
                        out = sample(node.shape, 1.0)
                        if node.op_type == "ReLU":
                            np.maximum(out, 0, out=out)
                        if it == iterations - 1 and node.full_name in poisoned:
                            out.flat[:2] = (np.inf, np.nan)
                        tensors = {(node.full_name, "output", 0): out}
                    w.write_iteration(0, it, tensors)


# ---------------------------------------------------------------------- measuring
def _vm_hwm(pid: int | str = "self") -> int:
    """Peak resident set size of a process in bytes (Linux), 0 when unknown."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset VmHWM to the current RSS (Linux ≥ 4.0)
    except OSError:
        pass


def measure(root: Path, workers: int | None) -> dict[str, float]:
    from tuidebug.core.watchpoints import Watchpoint, resolve_targets
    from tuidebug.offline.check.checker import Checker, Watch
    from tuidebug.offline.dump import OfflineDump

    _reset_peak()
    started = time.perf_counter()
    dump = OfflineDump(root)
    for rank in dump.ranks:
        for graph in dump.graphs(rank):
            dump.index(rank, graph)
    index_s = time.perf_counter() - started
    files = [
        f
        for rank in dump.ranks
        for gid, its in dump.rank_layout(rank).dumped_iterations.items()
        for it in its
        for f in dump.rank_layout(rank).tensor_files(gid, it)
    ]
    problems = dump.problems
    if problems:
        print("problems:", *problems[:5], sep="\n  ", file=sys.stderr)

    watches = []
    for wp_id, (cond, params) in enumerate(REFERENCE_WATCHPOINTS):
        wp = Watchpoint(wp_id, cond, params)
        tensors = {}
        for rank in dump.ranks:
            for name, graph in dump.graphs(rank).items():
                nodes = resolve_targets(wp.condition, (), graph)
                tensors[(rank, name)] = [
                    (n.name, s) for n in nodes for s in range(len(n.outputs) or 1)
                ]
        watches.append(Watch(wp_id, wp.request(), wp.condition.needs_prev, tensors))

    checker = Checker(dump, workers=workers)
    cpu0 = time.process_time()
    started = time.perf_counter()
    report = checker.check(watches, dump.iterations())
    check_s = time.perf_counter() - started
    check_cpu = time.process_time() - cpu0  # the checker's threads are this process's
    parent_peak = _vm_hwm()
    checker.close()

    largest = max(os.path.getsize(f.path) for f in files)
    total_bytes = sum(os.path.getsize(f.path) for f in files)
    cpu0 = time.process_time()
    started = time.perf_counter()
    floor_bytes = 0
    for f in files:
        array = np.load(f.path, mmap_mode="r")
        if array.size:
            np.max(array)
        floor_bytes += array.nbytes
        del array
    floor_s = time.perf_counter() - started
    floor_cpu = time.process_time() - cpu0
    return {
        "check_cpu": check_cpu,
        "floor_cpu": floor_cpu,
        "files": len(files),
        "dump_gb": total_bytes / 1e9,
        "index_s": index_s,
        "check_s": check_s,
        "check_bytes": report.bytes_read,
        "tensors": report.tensors_checked,
        "hits": len(report.outcomes),
        "workers": report.workers,
        "floor_s": floor_s,
        "floor_bytes": floor_bytes,
        "largest": largest,
        "parent_peak": parent_peak,
        "check_problems": len(report.problems),
    }


# ---------------------------------------------------------------------- many tiny files
TINY_SHAPE = (4,)
# The process check prints JSON on stdout; this holds what it reported.
_TINY_SCOPES = 100  # kernels per scope: names look like real ones, folders stay realistic


def write_tiny_dump(root: Path, files: int, iterations: int) -> None:
    """One rank, one graph of `files // iterations - 1` Add kernels plus one parameter, every
    tensor four float32 values; at the last iteration every 1000th kernel holds an Inf."""
    from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

    per_iteration = max(2, files // iterations)
    kernels = per_iteration - 1
    f32 = np.float32
    params = [ParamDef("x", f32, TINY_SHAPE)]
    nodes: list[NodeDef] = []
    prev = "x"
    for i in range(kernels):
        name = f"Default/network-Net/block{i // _TINY_SCOPES}-Cell/Add-op{i}"
        nodes.append(NodeDef(name, "Add", (prev,), f32, TINY_SHAPE))
        prev = name
    value = np.arange(4, dtype=f32)
    poisoned = value.copy()
    poisoned[1] = np.inf
    with DumpWriter(root, net_name="Net", start_timestamp=1795310821150000) as w:
        w.add_graph(0, nodes, params)
        for it in range(iterations):
            last = it == iterations - 1
            tensors = {("x", "output", 0): value}
            for i, node in enumerate(nodes):
                hit = last and i % 1000 == 999
                tensors[(node.full_name, "output", 0)] = poisoned if hit else value
            w.write_iteration(0, it, tensors)


def _vm_rss() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure_tiny(root: Path, stage: str, profile: bool) -> dict[str, float]:
    """One stage (and the stages it needs) in this process; seconds and RSS of the stage."""
    import cProfile
    import pstats

    from tuidebug.core.watchpoints import Watchpoint, resolve_targets
    from tuidebug.offline.check.checker import Checker, Watch
    from tuidebug.offline.dump import OfflineDump
    from tuidebug.offline.files.npy import load_npy

    out: dict[str, float] = {"rss_start": _vm_rss()}
    profiler = cProfile.Profile() if profile else None

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        if stage == name and profiler is not None:
            profiler.enable()
        started = time.perf_counter()
        result = fn()
        out[name] = time.perf_counter() - started
        if stage == name and profiler is not None:
            profiler.disable()
        out[f"rss_{name}"] = _vm_rss()
        return result

    def discover() -> OfflineDump:
        dump = OfflineDump(root)
        for rank in dump.ranks:
            dump.graphs(rank)
        return dump

    dump = timed("discovery", discover)
    pairs = [(r, g) for r in dump.ranks for g in dump.graphs(r)]
    timed("index", lambda: [dump.index(r, g) for r, g in pairs])
    listed = [
        dump.rank_layout(rank).tensor_files(gid, it)
        for rank in dump.ranks
        for gid, its in dump.rank_layout(rank).dumped_iterations.items()
        for it in its
    ]
    out["files"] = sum(len(files) for files in listed)
    if stage in ("headers", "check"):
        timed(
            "headers",
            lambda: [
                len(dump.index(r, g).files_for(i)) for r, g in pairs for i in dump.iterations()
            ],
        )
    if stage == "read":
        files = [os.fspath(f.path) for files in listed for f in files]
        out["rss_before_read"] = _vm_rss()  # the list of paths is the benchmark's
        real_root = dump.root
        from tuidebug.offline.files import npy as tensor_store

        read_dump_tensor = getattr(tensor_store, "read_dump_tensor", None)

        def read_all() -> int:
            # as the checker reads: a path confined to the dump only when it is a link
            n = 0
            if read_dump_tensor is not None:
                for path in files:
                    n += read_dump_tensor(path, real_root).size
                return n
            for path in files:  # before read_dump_tensor: what the checker did
                root = real_root if os.path.islink(path) else None
                n += load_npy(path, root=root, mmap=True).size
            return n

        timed("read", read_all)
    if stage == "check":
        wp = Watchpoint(0, "TO", {})
        tensors = {}
        for rank, name in pairs:
            nodes = resolve_targets(wp.condition, (), dump.graphs(rank)[name])
            tensors[(rank, name)] = [(n.name, s) for n in nodes for s in range(len(n.outputs) or 1)]
        watch = Watch(0, wp.request(), wp.condition.needs_prev, tensors)
        checker = Checker(dump)
        report = timed("check", lambda: checker.check([watch], dump.iterations()))
        checker.close()
        out["hits"] = len(report.outcomes)
        out["tensors"] = report.tensors_checked
        out["check_problems"] = len(report.problems)
    out["peak"] = _vm_hwm()
    if profiler is not None:
        stats = pstats.Stats(profiler, stream=sys.stderr)
        print(f"--- profile of {stage} (own time) ---", file=sys.stderr)
        stats.sort_stats("tottime").print_stats(18)
        stats.sort_stats("cumulative").print_stats(18)
    return out


def _run_check_process(root: Path) -> tuple[float, int, int]:
    """`tuidebug check ROOT --watch TO --json` as a process: seconds, exit status, peak RSS of
    the process tree (the largest of the process and its waited-for children)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuidebug", "check", str(root), "--watch", "TO", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, proc.returncode, usage.ru_maxrss * 1024


def _tiny_stage(root: Path, stage: str, profile: bool) -> dict[str, float]:
    """A stage in a fresh child process (imports and caches of one stage do not help the next)."""
    import json

    done = subprocess.run(
        [sys.executable, __file__, "--tiny-measure", str(root), "--stage", stage]
        + (["--profile"] if profile else []),
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_tiny(args: argparse.Namespace) -> int:
    made = args.dump is None
    root = (
        Path(tempfile.mkdtemp(prefix="tuidebug-tiny-", dir=args.tmp)) / "dump"
        if made
        else Path(args.dump)
    )
    try:
        write_s = 0.0
        if not (root / "rank_0").exists():
            started = time.perf_counter()
            subprocess.run(
                [
                    *(sys.executable, __file__, "--tiny-write", str(root)),
                    *("--tiny", str(args.tiny), "--iterations", str(args.iterations)),
                ],
                check=True,
            )
            write_s = time.perf_counter() - started
        stages = {s: _tiny_stage(root, s, args.profile) for s in ("read", "check")}
        _run_check_process(root)  # warms the page cache and the imports
        runs = [_run_check_process(root) for _ in range(args.repeat)]
    finally:
        if made and not args.keep:
            shutil.rmtree(root.parent, ignore_errors=True)
        elif made:
            print(f"dump kept at {root}")
    chk, rd = stages["check"], stages["read"]
    n = int(chk["files"])
    us = 1e6 / n

    def line(name: str, seconds: float, rss_from: float, rss_to: float) -> None:
        print(
            f"{name:<11} {seconds:7.3f} s  {seconds * us:7.1f} µs/file  "
            f"RSS {rss_from / MB:5.0f} -> {rss_to / MB:5.0f} MiB"
        )

    print(
        f"dump        {n} files of {math.prod(TINY_SHAPE)} float32, {args.iterations} "
        f"iterations" + (f" (written in {write_s:.1f} s)" if write_s else "")
    )
    line("discovery", chk["discovery"], chk["rss_start"], chk["rss_discovery"])
    line("index", chk["index"], chk["rss_discovery"], chk["rss_index"])
    line("headers", chk["headers"], chk["rss_index"], chk["rss_headers"])
    line("read", rd["read"], rd["rss_before_read"], rd["rss_read"])
    line("check", chk["check"], chk["rss_headers"], chk["rss_check"])
    in_process = chk["discovery"] + chk["index"] + chk["headers"] + chk["check"]
    line("in-process", in_process, chk["rss_start"], chk["peak"])
    print(
        f"            {int(chk['hits'])} hits, {int(chk['tensors'])} tensors checked, "
        f"{int(chk['check_problems'])} problems"
    )
    secs = sorted(r[0] for r in runs)
    median = secs[len(secs) // 2]
    peak = max(r[2] for r in runs)
    print(
        f"process     {median:7.3f} s  {median * us:7.1f} µs/file  peak RSS {peak / MB:.0f} MiB "
        f"(median of {len(runs)} warm runs: {', '.join(f'{s:.2f}' for s in secs)}; exit "
        f"{runs[0][1]}); target <= 40 µs/file: {'ok' if median * us <= 40 else 'MISSED'}"
    )
    print(f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gb", type=float, default=2.0, help="dump size in GB (default 2)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--layers", type=int, default=40, help="dense layers (8 kernels each)")
    p.add_argument("--workers", type=int, default=None, help="checker threads (default: cores)")
    p.add_argument("--tmp", default=None, help="where to write the dump (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the dump and print its path")
    p.add_argument("--write-only", default=None, help=argparse.SUPPRESS)
    p.add_argument("--tiny", type=int, default=0, help="the many-tiny-files case: N files")
    p.add_argument("--dump", default=None, help="--tiny: reuse (or write once) this dump")
    p.add_argument("--profile", action="store_true", help="--tiny: cProfile each stage")
    p.add_argument("--repeat", type=int, default=3, help="--tiny: warm process runs")
    p.add_argument("--tiny-write", default=None, help=argparse.SUPPRESS)
    p.add_argument("--tiny-measure", default=None, help=argparse.SUPPRESS)
    p.add_argument("--stage", default="check", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.tiny_write:
        write_tiny_dump(Path(args.tiny_write), args.tiny, args.iterations)
        return 0
    if args.tiny_measure:
        import json

        result = measure_tiny(Path(args.tiny_measure), args.stage, args.profile)
        print(json.dumps(result))
        return 0
    if args.tiny:
        if "--iterations" not in (argv if argv is not None else sys.argv):
            args.iterations = 10
        return main_tiny(args)
    if args.write_only:
        write_dump(Path(args.write_only), args.gb, args.ranks, args.iterations, args.layers)
        return 0

    root = Path(tempfile.mkdtemp(prefix="tuidebug-bench-", dir=args.tmp)) / "dump"
    try:
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--write-only",
                str(root),
                "--gb",
                str(args.gb),
                "--ranks",
                str(args.ranks),
                "--iterations",
                str(args.iterations),
                "--layers",
                str(args.layers),
            ],
            check=True,
        )
        write_s = time.perf_counter() - started
        r = measure(root, args.workers)
    finally:
        if args.keep:
            print(f"dump kept at {root}")
        else:
            shutil.rmtree(root.parent, ignore_errors=True)

    per10k = r["index_s"] / r["files"] * 10_000
    gbps = r["check_bytes"] / r["check_s"] / 1e9
    floor_gbps = r["floor_bytes"] / r["floor_s"] / 1e9
    ratio = r["check_s"] / r["floor_s"]
    budget = 300 * MB + r["largest"]
    print(
        f"dump        {r['dump_gb']:.2f} GB, {r['files']} files, {args.ranks} ranks x "
        f"{args.iterations} iterations, largest tensor {r['largest'] / MB:.1f} MiB "
        f"(written in {write_s:.1f} s)"
    )
    print(
        f"index       {r['index_s']:.3f} s = {per10k:.3f} s per 10k files "
        f"(target <= 1 s: {'ok' if per10k <= 1 else 'MISSED'})"
    )
    print(
        f"check       {r['check_s']:.2f} s, {r['tensors']} tensors, {r['check_bytes'] / 1e9:.2f} GB "
        f"read, {gbps:.2f} GB/s, {r['hits']} hits, {r['workers']} thread(s)"
    )
    print(
        f"floor       {r['floor_s']:.2f} s, {floor_gbps:.2f} GB/s (np.load mmap + np.max, 1 process)"
    )
    print(
        f"ratio       check / floor = {ratio:.2f} (target <= 3: {'ok' if ratio <= 3 else 'MISSED'})"
    )
    # On a shared machine wall time depends on the neighbours; CPU time does not.
    cores = max(1, r["workers"] or 1)
    print(
        f"cpu         check {r['check_cpu']:.2f} s over {cores} thread(s) "
        f"(= {r['check_cpu'] / cores:.2f} s wall on {cores} free core(s), "
        f"{r['check_cpu'] / cores / max(r['floor_cpu'], 1e-9):.2f}x the floor's "
        f"{r['floor_cpu']:.2f} s CPU); load average now {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores"
    )
    print(
        f"peak RSS    {r['parent_peak'] / MB:.0f} MiB (the checker's threads included); budget "
        f"300 MiB + largest tensor = {budget / MB:.0f} MiB "
        f"({'ok' if r['parent_peak'] <= budget else 'MISSED'})"
    )
    if r["check_problems"]:
        print(f"warning: {r['check_problems']} tensor files could not be read", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
