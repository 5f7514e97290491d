"""The tensor list's health pass (`L`) over a step of many tensors (figures, not assertions).

Writes `--tensors` `.npy` files (float32 mostly, some float16, bfloat16 and int32; sizes from
10² to `--large` elements; one tensor in 50 holds a NaN or an Inf) and reads each memory-mapped,
as the list's worker reads a dump, through:

* `health`  — `tensor_health`: the glyph alone (stops at a tensor's first NaN);
* `summary` — `tensor_summary`: the glyph and the numbers beside it (min/max of the finite
              values, NaN and Inf counts) in the same chunked pass.

Best of `--repeat` passes each (the files are in the page cache after the first), so the
figure is the computing, not the disk.

    python benchmarks/bench_tensor_list.py [--tensors 2000] [--large 4000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tuidebug.core.tensor import BFLOAT16
from tuidebug.core.tensor_health import tensor_health, tensor_summary


def write_step(folder: Path, tensors: int, large: int) -> list[Path]:
    """A step's worth of tensors: sizes log-spread, one in 50 unhealthy, one in 100 large."""
    rng = np.random.default_rng(0)
    paths = []
    for i in range(tensors):
        size = large if i % 100 == 99 else int(10 ** rng.uniform(2, 5))
        dtype: object = np.float32
        if i % 10 == 3:
            dtype = np.float16
        elif i % 10 == 5:
            dtype = BFLOAT16
        elif i % 10 == 7:
            dtype = np.int32
        data = rng.standard_normal(size).astype(np.float32)
        if i % 50 == 10:
            data[size // 2] = np.nan if i % 100 == 10 else np.inf
        path = folder / f"t{i}.npy"
        np.save(path, data.astype(dtype))  # type: ignore[call-overload]
        paths.append(path)
    return paths


def one_pass(paths: list[Path], measure: Callable[[np.ndarray], object]) -> float:
    began = time.perf_counter()
    for path in paths:
        measure(np.load(path, mmap_mode="r"))
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tensors", type=int, default=2000)
    parser.add_argument("--large", type=int, default=4_000_000, help="elements of 1 in 100")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_step(Path(tmp), args.tensors, args.large)
        elements = sum(int(np.load(p, mmap_mode="r").size) for p in paths)
        print(f"{len(paths)} tensors, {elements / 1e6:.1f} M elements")
        best: dict[str, float] = {}
        for _ in range(args.repeat):  # interleaved, so a busy neighbour hurts both alike
            for name, measure in (("health", tensor_health), ("summary", tensor_summary)):
                seconds = one_pass(paths, measure)
                best[name] = min(best.get(name, seconds), seconds)
        for name, seconds in best.items():
            print(f"{name:8} {seconds * 1000:8.1f} ms  ({elements / seconds / 1e6:.0f} M el/s)")
        print(f"summary / health: {best['summary'] / best['health']:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
