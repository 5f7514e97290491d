"""Benchmark the watchpoint condition engine against the floor of one `numpy.max` pass.

    python benchmarks/bench_conditions.py [--mb 256] [--repeat 5] [--dtypes float32,float16,int32]
                                          [--threads 1,2] [--engine auto|numpy]

For each dtype it builds a tensor of `--mb` MiB and a previous-step tensor of the same size,
then times ONE `evaluate()` call that checks all 17 catalogue conditions with every threshold
enabled (the change conditions against the previous tensor, once changed and once unchanged,
when weight_not_changed has to compare every element), and the 14 conditions that need no
previous tensor alone, each with every thread count of `--threads` (default: 1 and the
engine's `THREADS`). Each line shows the best of `--repeat` runs in seconds, the input
throughput in GB/s (both tensors when a previous one is read), the ratio to one `numpy.max`
over the same tensor (the best of the max runs interleaved with all cases, so a busy machine
inflates rather than hides the ratio), and the peak extra memory of the call (tracemalloc; numpy
reports its buffers to it). Targets: ≤ 4x the floor and ≤ 64 MB extra. The load average is
printed before and after: on a shared machine, compare figures taken at similar loads.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from tuidebug.core import kernels, scan_engine
from tuidebug.core.condition_catalogue import CONDITIONS
from tuidebug.core.scan_engine import evaluate
from tuidebug.core.watchpoints import Watchpoint

# every visible threshold of every condition, with values that keep all statistics live
_THRESHOLDS: dict[str, float] = {
    "zero_percentage_ge": 100.0,
    "max_gt": 1e30,
    "min_gt": 1e30,
    "mean_gt": 1e30,
    "abs_mean_gt": 1e30,
    "max_lt": -1e30,
    "min_lt": -1e30,
    "mean_lt": -1e30,
    "abs_mean_lt": 0.0,
    "rtol": 1e-5,
    "abs_mean_update_ratio_gt": 1e9,
    "abs_mean_update_ratio_lt": 0.0,
    "range_percentage_lt": 0.0,
    "range_percentage_gt": 100.0,
    "max_min_lt": 1e-30,
    "max_min_gt": 1e30,
}
# TR and AR get different ranges, so the engine has two range counts to keep
_RANGES = {"TR": (-1e6, 1e6), "AR": (-1.0, 0.0)}


def all_watchpoints() -> list[Watchpoint]:
    wps = []
    for i, cond in enumerate(CONDITIONS.values(), start=1):
        params = {p.name: _THRESHOLDS[p.name] for p in cond.visible_params if p.kind == "check"}
        if cond.abbr in _RANGES:
            lo, hi = _RANGES[cond.abbr]
            params |= {"range_start_inclusive": lo, "range_end_inclusive": hi}
        wps.append(Watchpoint(i, cond, params))
    return wps


def make_tensors(dtype: np.dtype, mb: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    n = int(mb * 2**20) // dtype.itemsize
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        x = rng.standard_normal(n, dtype=np.float32).astype(dtype)
        prev = (x.astype(np.float32) + np.float32(1e-3)).astype(dtype)
    else:
        x = rng.integers(-1000, 1000, n, dtype=dtype)
        prev = x + dtype.type(1)
    return x, prev


def best_ratio(
    run: Callable[[], object], floor: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Best time of `run` and of `floor`, interleaved so both see the same machine load."""
    best_run = best_floor = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        floor()
        t1 = time.perf_counter()
        run()
        t2 = time.perf_counter()
        best_floor = min(best_floor, t1 - t0)
        best_run = min(best_run, t2 - t1)
    return best_run, best_floor


def peak_extra_mb(run: Callable[[], object]) -> float:
    scan_engine.release_buffers()  # count the buffers the engine keeps between calls too
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=256.0, help="tensor size in MiB")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dtypes", default="float32,float16,int32")
    parser.add_argument("--threads", default="", help="thread counts to time, e.g. 1,2")
    parser.add_argument("--chunk", type=int, default=0, help="override CHUNK_ELEMENTS")
    parser.add_argument(
        "--engine",
        choices=("auto", "numpy"),
        default="auto",
        help="numpy: keep every tensor on the numpy engine (as without numba)",
    )
    args = parser.parse_args(argv)
    if args.engine == "numpy":
        os.environ["TUIDEBUG_KERNEL"] = "numpy"
    t0 = time.perf_counter()
    kernel = kernels.load()
    load_s = time.perf_counter() - t0
    if args.chunk:
        scan_engine.CHUNK_ELEMENTS = args.chunk
    threads = (
        [int(t) for t in args.threads.split(",")]
        if args.threads
        else sorted({1, scan_engine.THREADS})
    )

    wps = all_watchpoints()
    requests = [wp.request() for wp in wps]
    no_prev = [wp.request() for wp in wps if not wp.condition.needs_prev]
    print(
        f"{len(requests)} conditions, {args.mb:g} MiB tensors, best of {args.repeat}, "
        f"blocks of {scan_engine.CHUNK_ELEMENTS} elements, float64 sub-blocks of "
        f"{scan_engine.F64_ELEMENTS}; load average {_load()}"
    )
    if kernel is None:
        print("engine: numpy (no compiled kernel)")
    else:
        print(
            f"engine: compiled kernel for tensors of {scan_engine.KERNEL_MIN_ELEMENTS}+ elements "
            f"(numba {_numba_version()}; loading it took {load_s:.2f} s, the first call of "
            "each dtype loads or compiles its code, outside the timed runs)"
        )
    print(
        f"{'case':42s} {'threads':>7s} {'seconds':>8s} {'GB/s':>6s} {'x floor':>8s} "
        f"{'extra MB':>9s}"
    )
    for name in args.dtypes.split(","):
        dtype = np.dtype(name.strip())
        x, prev = make_tensors(dtype, args.mb)

        def floor(x: np.ndarray = x) -> object:
            return np.max(x)

        same = x.copy()  # unchanged weights: WNC must compare every element
        cases = {
            f"{dtype.name}: all 17 + previous": (
                lambda t, x=x, p=prev: evaluate(x, requests, p, threads=t)
            ),
            f"{dtype.name}: all 17 + unchanged previous": (
                lambda t, x=x, p=same: evaluate(x, requests, p, threads=t)
            ),
            f"{dtype.name}: 14 without previous": (lambda t, x=x: evaluate(x, no_prev, threads=t)),
        }
        rows = []
        floor_s = math.inf
        for label, case in cases.items():
            for t in threads:

                def run(case: Callable[[int], object] = case, t: int = t) -> object:
                    return case(t)

                seconds, case_floor = best_ratio(run, floor, args.repeat)
                floor_s = min(floor_s, case_floor)
                inputs = 1 if "without" in label else 2
                rows.append((label, t, seconds, peak_extra_mb(run), inputs))
        for label, t, seconds, extra, inputs in rows:
            gbps = inputs * x.nbytes / seconds / 1e9
            print(
                f"{label:42s} {t:7d} {seconds:8.3f} {gbps:6.2f} {seconds / floor_s:8.2f} "
                f"{extra:9.1f}"
            )
        print(f"{'  floor: numpy.max':42s} {'':7s} {floor_s:8.3f} {x.nbytes / floor_s / 1e9:6.2f}")
        del x, prev, same
    print(f"load average {_load()}")
    return 0


def _numba_version() -> str:
    import numba

    return str(numba.__version__)


def _load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
