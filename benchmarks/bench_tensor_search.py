"""Find in the tensor viewer on a 10⁸-element float32 memory map (figures, not assertions).

Writes a 10000×10000 float32 `.npy` of random normals with one NaN near the end (so the
search reads almost everything), memory-maps it read-only and times, page cache warm:

* `numpy.max`                 — one plain pass over the same data: the floor;
* `find nan` / `find > 1e3`   — `core.tensor_search.find_next` from the start, in the
                                viewer's chunk size (and the module default);
* `count nan`                 — `count_matches`, the pass that says "match k of n";
* `view: f nan ⏎ → cursor`    — `TensorView.find("nan")` until the cursor is on the NaN
                                (worker start, scan, post-back to the UI thread);
* `scroll step, highlight …`  — one cursor step at the bottom edge of the table, without
                                and with `> 0` highlighting about half the cells: rendering
                                every visible line, the screen update's CPU and the app's
                                paint (median of 30; Textual paints at most every 1/60 s).

Targets: search ≤ 3× numpy.max; scroll step < 16 ms.

    python benchmarks/bench_tensor_search.py [--rows 10000 --cols 10000] [--size 120x40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

# The viewer benchmark's helpers (this directory is on sys.path when run as a script);
# importing it also installs its per-frame timer on Textual's Screen.
from bench_tensor_view import BenchApp, PaintClock, render_all

from tuidebug.core.tensor_search import DEFAULT_CHUNK, count_matches, find_next
from tuidebug.tui.tensor.canvas import TensorTable
from tuidebug.tui.tensor.find import SEARCH_CHUNK
from tuidebug.tui.tensor.view import TensorView


def make_tensor(folder: Path, rows: int, cols: int) -> tuple[np.ndarray, int]:
    """Random float32 normals on disk, one NaN 1000 elements before the end."""
    path = folder / "search.npy"
    array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
    flat = array.reshape(-1)
    rng = np.random.default_rng(0)
    step = 8 << 20
    for start in range(0, flat.size, step):
        stop = min(flat.size, start + step)
        flat[start:stop] = rng.standard_normal(stop - start, dtype=np.float32)
    nan_at = max(flat.size - 1000, 0)
    flat[nan_at] = np.nan
    array.flush()
    del array, flat
    return np.load(path, mmap_mode="r"), nan_at


def best_of(run: Callable[[], object], repeat: int = 3) -> float:
    """Seconds of the fastest of `repeat` runs (the page cache is warm after the first)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_passes(array: np.ndarray, nan_at: int) -> list[tuple[str, float]]:
    np.max(array)  # warm the page cache: every figure below reads memory, not disk
    out = [("numpy.max", best_of(lambda: np.max(array)))]
    found = find_next(array, "nan", chunk=SEARCH_CHUNK)
    assert found == nan_at, (found, nan_at)
    out.append(
        (
            f"find nan (chunk {SEARCH_CHUNK >> 20} Mi)",
            best_of(lambda: find_next(array, "nan", chunk=SEARCH_CHUNK)),
        )
    )
    if DEFAULT_CHUNK != SEARCH_CHUNK:
        out.append(
            (
                f"find nan (chunk {DEFAULT_CHUNK >> 20} Mi)",
                best_of(lambda: find_next(array, "nan", chunk=DEFAULT_CHUNK)),
            )
        )
    out.append(("find nonfinite", best_of(lambda: find_next(array, "nonfinite"))))
    out.append(("find > 1e3 (no match)", best_of(lambda: find_next(array, "> 1e3"))))
    out.append(("find [6, 7] (rare)", best_of(lambda: find_next(array, "[6, 7]"))))
    out.append(("count nan", best_of(lambda: count_matches(array, "nan", keep=1 << 16))))
    return out


async def measure_view(array: np.ndarray, nan_at: int, size: tuple[int, int]) -> dict[str, float]:
    out: dict[str, float] = {}
    app = BenchApp()
    async with app.run_test(size=size) as pilot:
        view = app.query_one(TensorView)
        view.show("Default/fc1/MatMul-op1:0", array, node_type="MatMul")
        await app.workers.wait_for_complete()  # the statistics pass: not ours to time
        await pilot.pause()
        table = view.table
        table.focus()
        target = divmod(nan_at, array.shape[1])
        start = time.perf_counter()
        view.find("nan")
        while (table.cursor_row, table.cursor_col) != target:
            if time.perf_counter() - start > 60:
                raise RuntimeError("the search did not land")
            await asyncio.sleep(0.0005)
        out["view: f nan ⏎ → cursor"] = (time.perf_counter() - start) * 1000
        await app.workers.wait_for_complete()  # the count that follows, for "k of n"
        await pilot.pause()
        out["view: … → 'match 1 of 1'"] = (time.perf_counter() - start) * 1000
        assert "(match 1 of 1)" in view.status_text, view.status_text

        # One line per step from the top, without and then with a highlight that marks
        # about half the cells (the same rows, so the two figures compare directly).
        clock = PaintClock(table)
        view.clear_find()
        out |= await scroll_steps(table, clock, "off")
        view.find("> 0")
        await app.workers.wait_for_complete()
        marked = table.row_matches(table.view_size.height, 0, 10)
        assert any(marked) and not all(marked), marked
        out |= await scroll_steps(table, clock, "on")
        await app.workers.wait_for_complete()
    return out


async def scroll_steps(table: TensorTable, clock: PaintClock, label: str) -> dict[str, float]:
    """30 cursor steps at the bottom edge from the top: each scrolls one line."""
    table.set_cursor(0, 0)
    table.set_cursor(table.view_size.height - 2, 0)
    await asyncio.sleep(0.1)
    steps_lines: list[float] = []
    steps_frame: list[float] = []
    steps_app: list[float] = []
    for _ in range(30):
        start = time.perf_counter()
        table.action_cursor(1, 0)
        steps_app.append(await clock.wait(start))
        steps_frame.append(clock.frame_cost())
        steps_lines.append(render_all(table))
    name = f"scroll step, highlight {label}"
    return {
        f"{name} (lines)": statistics.median(steps_lines),
        f"{name} (repaint)": statistics.median(steps_frame),
        f"{name} (app)": statistics.median(steps_app),
        f"{name} (app, max)": max(steps_app),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--cols", type=int, default=10_000)
    parser.add_argument("--size", default="120x40", help="terminal size WxH")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    with tempfile.TemporaryDirectory() as folder:
        array, nan_at = make_tensor(Path(folder), args.rows, args.cols)
        gigabytes = array.nbytes / 1e9
        print(
            f"tensor float32 {args.rows}×{args.cols} = {array.size:,} elements "
            f"({array.nbytes / 2**20:.0f} MiB, memory-mapped, page cache warm), "
            f"NaN at flat index {nan_at:,}"
        )
        passes = measure_passes(array, nan_at)
        floor = passes[0][1]
        print(f"{'pass':<28}{'seconds':>9}{'GB/s':>8}{'× max':>8}{'target':>8}")
        for name, seconds in passes:
            target = "" if name == "numpy.max" else "≤3×"
            print(
                f"{name:<28}{seconds:>9.3f}{gigabytes / seconds:>8.2f}"
                f"{seconds / floor:>8.2f}{target:>8}"
            )
        view = asyncio.run(measure_view(array, nan_at, (width, height)))
    print(f"\n{'viewer (terminal ' + args.size + ')':<36}{'ms':>10}{'target':>8}")
    for name, ms in view.items():
        target = "<16" if "scroll" in name else ""
        print(f"{name:<36}{ms:>10.1f}{target:>8}")


if __name__ == "__main__":
    main()
