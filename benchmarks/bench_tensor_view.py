"""Tensor viewer latency on a 10⁸-element float32 memory map (figures, not assertions).

Opens a 10000×10000 float32 `.npy` (sparse on disk, memory-mapped read-only) in the
`TensorView` of a headless Textual app and times, for the table and the heatmap:

* `show()`              — the call the App makes (slice, sample, format choice);
* `first frame (lines)` — rendering every visible line of the fresh surface (all caches cold);
* `first frame (app)`   — `show()` until the app has painted the last visible line;
* `scroll step (lines)` — one line of scrolling: repaint of every visible line;
* `… (repaint)`         — CPU time of the screen update that painted it (layout, compositor
                          and our render_line calls): the repaint cost proper;
* `scroll step (app)`   — one cursor step at the bottom edge until the app has painted it
                          (median and max of 30; Textual paints at most every 1/60 s).

Targets: first frame < 300 ms, scroll step < 16 ms. The statistics worker (a whole-tensor
pass) runs concurrently, as it does for a user.

    python benchmarks/bench_tensor_view.py [--rows 10000 --cols 10000] [--size 120x40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from textual.app import App, ComposeResult
from textual.screen import Screen

from tuidebug.tui.tensor.canvas import TensorCanvas
from tuidebug.tui.tensor.format import Zoom
from tuidebug.tui.tensor.view import TensorView


class BenchApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TensorView()


def make_tensor(folder: Path, rows: int, cols: int) -> np.ndarray:
    """A sparse float32 .npy with a few values and NaN/±Inf scattered in it."""
    path = folder / "big.npy"
    array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
    rng = np.random.default_rng(0)
    for row in range(0, rows, max(rows // 200, 1)):
        array[row, :200] = rng.standard_normal(200, dtype=np.float32)
    array[5, 5] = np.nan
    array[7, 9] = np.inf
    array[rows - 1, cols - 1] = -np.inf
    array.flush()
    del array
    return np.load(path, mmap_mode="r")


def render_all(canvas: TensorCanvas) -> float:
    """Milliseconds to render every visible line of a surface."""
    start = time.perf_counter()
    for y in range(canvas.view_size.height):
        canvas.render_line(y)
    return (time.perf_counter() - start) * 1000


FRAMES: list[tuple[float, float]] = []  # (end time, milliseconds) of each screen update


def _timed_update(original):  # type: ignore[no-untyped-def]
    def update(self: Screen) -> None:  # type: ignore[type-arg]
        start = time.perf_counter()
        original(self)
        end = time.perf_counter()
        FRAMES.append((end, (end - start) * 1000))

    return update


# The screen's frame callback (layout + compositing + our render_line calls): the CPU
# cost of one repaint, without Textual's wait for its next frame slot. Bound at mount,
# so the class attribute must be patched before any app starts.
Screen._on_timer_update = _timed_update(Screen._on_timer_update)  # type: ignore[method-assign]


class PaintClock:
    """Stamps the moment the app paints the last visible line of a surface, so the
    figures include Textual's refresh scheduling and compositing, not just our code."""

    def __init__(self, canvas: TensorCanvas) -> None:
        self.canvas = canvas
        self.stamp: float | None = None
        original = canvas.render_line

        def spy(y: int):  # type: ignore[no-untyped-def]
            strip = original(y)
            if y == canvas.view_size.height - 1:
                self.stamp = time.perf_counter()
            return strip

        canvas.render_line = spy  # type: ignore[method-assign]

    async def wait(self, start: float, timeout: float = 10.0) -> float:
        """Milliseconds from `start` to the next paint of the last line."""
        self.stamp = None
        while self.stamp is None:
            if time.perf_counter() - start > timeout:
                return float("nan")
            await asyncio.sleep(0.0005)
        return (self.stamp - start) * 1000

    def frame_cost(self) -> float:
        """Milliseconds of CPU of the screen update that painted the last stamp."""
        assert self.stamp is not None
        return next((ms for end, ms in reversed(FRAMES) if end >= self.stamp), float("nan"))


async def measure(array: np.ndarray, size: tuple[int, int], heatmap: bool) -> dict[str, float]:
    app = BenchApp()
    out: dict[str, float] = {}
    async with app.run_test(size=size) as pilot:
        view = app.query_one(TensorView)
        if heatmap:
            # Switch to the heatmap on a tiny tensor first so show() lands in heatmap mode.
            view.show("warm-up", np.zeros((2, 2), np.float32))
            await pilot.pause()
            view.action_toggle_heatmap()
            await pilot.pause()
        canvas = view.canvas
        clock = PaintClock(canvas)
        await pilot.pause()
        start = time.perf_counter()
        view.show("Default/fc1/MatMul-op1:0", array, node_type="MatMul")
        out["show()"] = (time.perf_counter() - start) * 1000
        out["first frame (app)"] = await clock.wait(start)
        out["first frame (repaint)"] = clock.frame_cost()
        canvas._clear_caches()
        out["first frame (lines)"] = render_all(canvas)
        canvas.focus()

        steps_lines: list[float] = []
        steps_app: list[float] = []
        steps_frame: list[float] = []
        if heatmap:
            canvas.set_zoom(Zoom())  # type: ignore[attr-defined]
        rows_per_line = 2 if heatmap else 1
        # Put the cursor on the last visible line: every further step scrolls one line.
        last_line = canvas.view_size.height - (1 if heatmap else 2)
        canvas.set_cursor(last_line * rows_per_line, 0)
        await asyncio.sleep(0.1)
        for _ in range(30):
            start = time.perf_counter()
            canvas.action_cursor(1, 0)
            steps_app.append(await clock.wait(start))
            steps_frame.append(clock.frame_cost())
            steps_lines.append(render_all(canvas))
        out["scroll step (lines)"] = statistics.median(steps_lines)
        out["scroll step (repaint)"] = statistics.median(steps_frame)
        out["scroll step (app)"] = statistics.median(steps_app)
        out["scroll step (app, max)"] = max(steps_app)
        await app.workers.wait_for_complete()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--cols", type=int, default=10_000)
    parser.add_argument("--size", default="120x40", help="terminal size WxH")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    with tempfile.TemporaryDirectory() as folder:
        array = make_tensor(Path(folder), args.rows, args.cols)
        print(
            f"tensor float32 {args.rows}×{args.cols} = {array.size:,} elements "
            f"({array.nbytes / 2**20:.0f} MiB, memory-mapped), terminal {width}×{height}"
        )
        results = {
            "table": asyncio.run(measure(array, (width, height), heatmap=False)),
            "heatmap": asyncio.run(measure(array, (width, height), heatmap=True)),
        }
    keys = list(results["table"])
    print(f"{'measure':<22}{'table ms':>12}{'heatmap ms':>12}{'target':>10}")
    for key in keys:
        target = "<300" if "frame" in key or key == "show()" else "<16"
        print(
            f"{key:<22}{results['table'][key]:>12.1f}{results['heatmap'][key]:>12.1f}{target:>10}"
        )


if __name__ == "__main__":
    main()
