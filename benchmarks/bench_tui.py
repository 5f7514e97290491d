#!/usr/bin/env python3
"""TUI responsiveness figures (not assertions), headless, at 160×48.

    first frame (LeNet)     app start → the tree of the real LeNet fixture painted
                            (dump loaded in the app's worker)              target < 1 s
    first frame (50,000)    same on a synthetic graph of 50,000 nodes        target < 2 s
    expand 5,000 children   a scope opened → its 5,000 rows painted          target < 100 ms
    key → repaint           cursor-down in the tree → the frame written      target < 50 ms

"Painted" is the moment the app hands a frame to its driver (`App._display`), so figures
include Textual's frame pacing, not just our handlers. Each figure is the median of
`--repeat` runs (first-frame figures start a fresh app each time).

Usage: python benchmarks/bench_tui.py [--repeat N] [--lenet DUMP_ROOT]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.tui.support: the in-memory session of the TUI tests

from tests.tui.support import FakeSession, synthetic_graph  # noqa: E402
from tuidebug.core.session import DebugSession  # noqa: E402
from tuidebug.offline.session import OfflineSession  # noqa: E402
from tuidebug.tui.app import DebuggerApp  # noqa: E402
from tuidebug.tui.scope_tree import GraphTree  # noqa: E402

SIZE = (160, 48)
DEFAULT_LENET = REPO.parent / "shared" / "fixtures" / "mindspore_lenet_dump" / "ms2_0_0"


class Frames:
    """Timestamps of frames the app writes (wraps `App._display`)."""

    def __init__(self, app: DebuggerApp) -> None:
        self.times: list[float] = []
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            self.times.append(time.perf_counter())

        app._display = display  # type: ignore[method-assign]

    def first_after(self, t0: float) -> float | None:
        return next((t for t in self.times if t >= t0), None)


async def _wait(pilot: Any, condition: Callable[[], bool], limit: float = 60.0) -> None:
    end = time.perf_counter() + limit
    while not condition():
        if time.perf_counter() > end:
            raise TimeoutError("the app did not get there")
        await asyncio.sleep(0.001)


def _tree_painted(app: DebuggerApp) -> bool:
    try:
        tree = app.query_one(GraphTree)
    except Exception:
        return False
    return bool(tree.root.children) and app.loaded


async def first_frame(make_session: Callable[[], DebugSession]) -> float:
    session = make_session()
    app = DebuggerApp(session, start_session=True)
    frames = Frames(app)
    t0 = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await _wait(pilot, lambda: _tree_painted(app))
        t_tree = time.perf_counter()
        await _wait(pilot, lambda: frames.first_after(t_tree) is not None)
        painted = frames.first_after(t_tree)
        assert painted is not None
        elapsed = painted - t0
        await app.workers.wait_for_complete()
    session.close()
    return elapsed


async def expand_and_keys(repeat: int) -> tuple[list[float], list[float]]:
    graph = synthetic_graph(scopes=20, per_scope=10, wide=5000)
    session = FakeSession(graph_list=[graph], first_time=False)
    app = DebuggerApp(session, start_session=True)
    frames = Frames(app)
    expands: list[float] = []
    keys: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await _wait(pilot, lambda: _tree_painted(app))
        await app.workers.wait_for_complete()
        await pilot.pause()
        tree = app.query_one(GraphTree)
        tree.focus()
        default = tree.root.children[0]
        default.expand()
        await pilot.pause()
        wide = next(c for c in default.children if c.data and c.data.path == "Default/wide")
        for _ in range(repeat):
            wide.collapse()
            wide.remove_children()
            assert wide.data is not None
            wide.data.loaded = False
            await pilot.pause()
            tree.move_cursor(wide)
            await pilot.pause()
            t0 = time.perf_counter()
            app.simulate_key("right")  # as a user opens it
            await _wait(pilot, lambda: len(wide.children) == 5000)
            await _wait(pilot, lambda t0=t0: frames.first_after(t0) is not None)
            painted = frames.first_after(t0)
            assert painted is not None
            expands.append(painted - t0)
        tree.move_cursor(wide)
        await pilot.pause()
        for _ in range(max(repeat, 20)):
            await pilot.pause()
            t0 = time.perf_counter()
            app.simulate_key("down")
            await _wait(pilot, lambda t0=t0: frames.first_after(t0) is not None)
            painted = frames.first_after(t0)
            assert painted is not None
            keys.append(painted - t0)
        await app.workers.wait_for_complete()
    return expands, keys


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:8.1f} ms (median of {len(values)}, max {max(values) * 1000:.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lenet", type=Path, default=DEFAULT_LENET)
    args = parser.parse_args(argv)

    def big() -> DebugSession:
        # 1,000 scopes × 49 operators + weights + gradients ≈ 50,000 nodes
        return FakeSession(
            graph_list=[synthetic_graph(scopes=1000, per_scope=49)], first_time=False
        )

    rows: list[tuple[str, str, str]] = []
    if args.lenet.is_dir():
        lenet = [
            asyncio.run(first_frame(lambda: OfflineSession(args.lenet))) for _ in range(args.repeat)
        ]
        rows.append(("first frame, LeNet fixture", _ms(lenet), "< 1 s"))
    else:
        rows.append(("first frame, LeNet fixture", f"skipped: {args.lenet} not found", "< 1 s"))
    graph_size = len(synthetic_graph(scopes=1000, per_scope=49))
    synthetic = [asyncio.run(first_frame(big)) for _ in range(args.repeat)]
    rows.append((f"first frame, {graph_size:,} nodes", _ms(synthetic), "< 2 s"))
    expands, keys = asyncio.run(expand_and_keys(args.repeat))
    rows.append(("expand a scope of 5,000 children", _ms(expands), "< 100 ms"))
    rows.append(("key → repaint (tree cursor down)", _ms(keys), "< 50 ms"))
    width = max(len(r[0]) for r in rows)
    for name, figure, target in rows:
        print(f"{name:<{width}}  {figure}   target {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
