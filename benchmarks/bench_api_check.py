#!/usr/bin/env python3
"""The offline check as a user's script and a CI job see it, against the floor (and MindInsight).

    python benchmarks/bench_api_check.py [--dump DIR] [--repeat 3] [--mindinsight PYTHON]
                                         [--tmp DIR] [--keep]

Without `--dump`, writes (with `offline.dump_writer`, in a child process) a dump like
MindInsight's reference case: a 5-layer 2048-wide MLP, batch 32, 3 iterations, outputs and
parameters, every forward and backward output of the last iteration from layer 3 on
non-finite (the overflow TensorOverflow must find). `benchmarks/mindspore_mlp/run_dump.sh`
writes the same network with a real MindSpore (2.0.0 in MindInsight's venv: then
`--mindinsight /tmp/mi-venv/bin/python` also times MindInsight on the same dump).

Each measurement runs in a fresh process (the API script is MindInsight's usage with only the
import changed), alternating tuidebug and MindInsight, `--repeat` times; medians are shown:

    ten     `check_watchpoints` with the ten reference watchpoints W1–W10 in one call
            (W1–W7 on every tensor, W8–W10 on the weights), analyzer already open: the
            second such call, as MindInsight's script (watch_api.py) times its combined call
            after other checks; the first call of the process (the kernel's load included)
            too: the C kernel (built first if need be) unless TUIDEBUG_KERNEL says numba
    to      TensorOverflow on every tensor, on a freshly opened `DumpAnalyzer`
    cli     `tuidebug check DUMP --watch TO --json`, the whole process
    floor   one `numpy.load(mmap_mode="r")` + `numpy.max` pass over the output files
    rss     peak RSS of the process tree (the child and any process it starts) during `ten`

and the goals: ten ≥ 10× faster than MindInsight (0.33 s on its reference dump when
MindInsight is not run), to ≤ 2× the floor, cli ≤ 0.5 s, rss ≤ 300 MiB + the largest tensor.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MB = 1 << 20
HERE = Path(__file__).resolve().parent
MINDINSIGHT_TEN_SECONDS = 3.28  # its reference dump, measured by the reviewer

# MindInsight's usage (tools/mindinsight/watch_api.py): the same text runs on both, only the
# module differs. Prints one JSON line.
API_SCRIPT = r"""
import json, sys, time
module, dump, mode = sys.argv[1:4]
api = __import__(module, fromlist=["DumpAnalyzer"])
WEIGHTS_RE = r"^(?!(moments|accum|stat|moment1|moment2)\.).*\.(weight|bias)$"
t = time.perf_counter()
a = api.DumpAnalyzer(dump)
all_t = a.select_tensors("")
opened = time.perf_counter() - t
if mode == "to":
    wps = [api.Watchpoint(tensors=all_t, condition=api.TensorOverflowCondition())]
else:
    weights = [x for n in a.select_nodes(WEIGHTS_RE, use_regex=True) for x in n.get_output_tensors()]
    conds = [
        ("all", api.TensorOverflowCondition()),
        ("all", api.TensorTooLargeCondition(abs_mean_gt=1e10)),
        ("all", api.TensorTooLargeCondition(max_gt=1e30)),
        ("all", api.TensorTooLargeCondition(abs_mean_gt=1.0)),
        ("all", api.TensorTooSmallCondition(abs_mean_lt=1e-9)),
        ("all", api.TensorAllZeroCondition(zero_percentage_ge=100)),
        ("all", api.TensorRangeCondition(range_start_inclusive=-1e6, range_end_inclusive=1e6,
                                         range_percentage_lt=100)),
        ("weights", api.TensorChangeAboveThresholdCondition(abs_mean_update_ratio_gt=1.0)),
        ("weights", api.TensorChangeBelowThresholdCondition(abs_mean_update_ratio_lt=1e-3)),
        ("weights", api.TensorUnchangedCondition(rtol=1e-5, atol=1e-8)),
    ]
    wps = [api.Watchpoint(tensors=all_t if target == "all" else weights, condition=c)
           for target, c in conds]
t = time.perf_counter()
hits = list(a.check_watchpoints(wps))
seconds = time.perf_counter() - t
again = seconds
if mode == "ten":  # as MindInsight's own script times its combined call: after other checks
    t = time.perf_counter()
    a.check_watchpoints(wps)
    again = time.perf_counter() - t
kernels = sys.modules.get("tuidebug.core.kernels")
print("\nRESULT " + json.dumps({"open": opened, "seconds": seconds, "again": again,
                               "hits": len(hits), "kernel": kernels.kind() if kernels else "-"}))
"""

FLOOR_SCRIPT = r"""
import json, os, sys, time
import numpy as np
files = json.load(sys.stdin)
for _ in range(2):  # the second pass is the one measured: warm, as the checks are
    t = time.perf_counter()
    for f in files:
        a = np.load(f, mmap_mode="r")
        if a.size:
            np.max(a)
        del a
    seconds = time.perf_counter() - t
print("\nRESULT " + json.dumps({"seconds": seconds}))
"""


# ---------------------------------------------------------------------- the dump
def write_mlp_dump(root: Path, width: int, layers: int, batch: int, iterations: int) -> None:
    """The MLP of the module docstring, with `bench_offline`'s network (dense layers, their
    gradients and ApplyMomentum) at an explicit size, the last iteration overflowing."""
    sys.path.insert(0, str(HERE))
    from bench_offline import write_dump

    write_dump(
        root,
        gb=0,
        ranks=1,
        iterations=iterations,
        layers=layers,
        sizes=(width, batch, 8),
        overflow_from_layer=layers // 2,
    )


# ---------------------------------------------------------------------- measuring
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _tree_rss(pid: int) -> int:
    kids = _children()
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(kids.get(p, ()))
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def run_child(argv: list[str], stdin: str | None = None) -> tuple[float, dict, int]:
    """(wall seconds, the RESULT json or {}, peak RSS of the process tree)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate(stdin)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    if proc.returncode not in (0, 1):  # `check` exits 1 when it found hits
        raise SystemExit(f"{argv[:3]} failed ({proc.returncode}):\n{err[-2000:]}")
    match = re.search(r"^RESULT (.*)$", out, re.M)
    return wall, json.loads(match.group(1)) if match else {}, peak


def output_files(root: Path) -> list[str]:
    return sorted(
        str(p) for p in root.rglob("*.npy") if ".output." in p.name and "constants" not in p.parts
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dump", type=Path, help="an existing dump (default: write the MLP)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--mindinsight", help="a Python with MindInsight 2.0.0 (2.0-grammar dumps)")
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--tmp", default=None, help="where to write the dump (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the written dump")
    p.add_argument("--write-only", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.write_only:
        write_mlp_dump(Path(args.write_only), args.width, args.layers, 32, 3)
        return 0

    made = None
    root = args.dump
    if root is None:
        made = Path(tempfile.mkdtemp(prefix="tuidebug-bench-", dir=args.tmp))
        root = made / "dump"
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--write-only",
                str(root),
                "--width",
                str(args.width),
                "--layers",
                str(args.layers),
            ],
            check=True,
        )
    try:
        return measure(root, args)
    finally:
        if made is not None:
            if args.keep:
                print(f"dump kept at {root}")
            else:
                shutil.rmtree(made, ignore_errors=True)


def measure(root: Path, args: argparse.Namespace) -> int:
    files = output_files(root)
    every = [p for p in root.rglob("*.npy")]
    largest = max(p.stat().st_size for p in every)
    out_bytes = sum(os.path.getsize(f) for f in files)
    print(
        f"dump        {root}: {sum(p.stat().st_size for p in every) / 1e9:.2f} GB, "
        f"{len(every)} .npy; the output files {len(files)}, {out_bytes / 1e9:.2f} GB; "
        f"largest {largest / MB:.0f} MiB"
    )
    api = [sys.executable, "-c", API_SCRIPT, "tuidebug.api", str(root)]
    mi = [args.mindinsight, "-c", API_SCRIPT, "mindinsight.debugger", str(root)]
    cli = [sys.executable, "-m", "tuidebug", "check", str(root), "--watch", "TO", "--json"]
    floor_argv = [sys.executable, "-c", FLOOR_SCRIPT]
    runs: dict[str, list[tuple[float, dict, int]]] = {}
    run_child(cli)  # warm the page cache
    if os.environ.get("TUIDEBUG_KERNEL", "") in ("", "c"):
        # the C kernel's library, as the first big check of a new install builds it (in the
        # background, for the next processes): every measured process then loads it
        from tuidebug.core import c_kernel

        print(f"kernel      C library {c_kernel.build() or 'not built (no C compiler): numba'}")
    for _ in range(max(1, args.repeat)):
        runs.setdefault("floor", []).append(run_child(floor_argv, json.dumps(files)))
        for mode in ("ten", "to"):
            runs.setdefault(mode, []).append(run_child([*api, mode]))
            if args.mindinsight:
                runs.setdefault(f"mi-{mode}", []).append(run_child([*mi, mode]))
        runs.setdefault("cli", []).append(run_child(cli))

    def med(name: str, key: str = "seconds") -> float:
        return statistics.median(r[1][key] for r in runs[name])

    floor = med("floor")
    ten, to = med("ten", "again"), med("to")
    ten_first = med("ten")
    cli_s = statistics.median(r[0] for r in runs["cli"])
    rss = max(r[2] for r in runs["ten"] + runs["to"])
    hits = {m: runs[m][-1][1]["hits"] for m in ("ten", "to")}
    print(f"floor       {floor:.3f} s ({out_bytes / floor / 1e9:.1f} GB/s, numpy.max, 1 thread)")
    mi_ten = med("mi-ten", "again") if args.mindinsight else MINDINSIGHT_TEN_SECONDS
    source = "measured" if args.mindinsight else "its reference dump, not measured here"
    print(
        f"ten         {ten:.3f} s, {hits['ten']} hits; MindInsight {mi_ten:.2f} s ({source}): "
        f"{mi_ten / ten:.1f}x faster (goal >= 10x: {'ok' if mi_ten / ten >= 10 else 'MISSED'})"
    )
    kernel = runs["ten"][-1][1].get("kernel", "?")
    print(
        f"ten first   {ten_first:.3f} s, the first check of a fresh process (loads the {kernel} "
        f"kernel): {mi_ten / ten_first:.1f}x faster than MindInsight "
        f"(goal >= 10x: {'ok' if mi_ten / ten_first >= 10 else 'MISSED'})"
    )
    if args.mindinsight:
        print(
            f"to          {to:.3f} s, {hits['to']} hits = {to / floor:.2f}x the floor "
            f"(goal <= 2x: {'ok' if to <= 2 * floor else 'MISSED'}); MindInsight "
            f"{med('mi-to'):.3f} s ({med('mi-to') / to:.1f}x); hits MindInsight "
            f"{runs['mi-ten'][-1][1]['hits']} and {runs['mi-to'][-1][1]['hits']}"
        )
    else:
        print(
            f"to          {to:.3f} s, {hits['to']} hits = {to / floor:.2f}x the floor "
            f"(goal <= 2x: {'ok' if to <= 2 * floor else 'MISSED'})"
        )
    print(f"open        DumpAnalyzer + select_tensors('') {med('to', 'open'):.3f} s")
    print(
        f"cli         {cli_s:.3f} s whole process (goal <= 0.5 s: {'ok' if cli_s <= 0.5 else 'MISSED'})"
    )
    budget = 300 * MB + largest
    print(
        f"rss         peak {rss / MB:.0f} MiB (process tree, ten and to); budget 300 MiB + "
        f"largest tensor = {budget / MB:.0f} MiB ({'ok' if rss <= budget else 'MISSED'})"
    )
    if args.mindinsight:
        mi_rss = max(r[2] for r in runs["mi-ten"] + runs["mi-to"])
        print(f"            MindInsight peak {mi_rss / MB:.0f} MiB")
    print(
        f"load        {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {args.repeat}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
