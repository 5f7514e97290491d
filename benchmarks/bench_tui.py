#!/usr/bin/env python3
"""TUI responsiveness figures (not assertions), headless, at 160×48.

    first frame (LeNet)     app start → the tree of the real LeNet fixture painted
                            (dump loaded in the app's worker)              target < 1 s
    first frame (50,000)    same on a synthetic graph of 50,000 nodes        target < 2 s
    expand 5,000 children   a scope opened → its 5,000 rows painted          target < 100 ms
    key → repaint           cursor-down in the tree → the frame written      target < 50 ms
    `:` and Esc             on the LeNet 2.10 fixture (the demo dump without it) at step 1,
                            a Conv2D output shown in the tensor view, the tree focused; at
                            160×48 and 80×24, each size in a fresh process:
                              open / close: the key → the first frame drawn with the panel
                                open and its prompt focused (closed), wall; CPU: the
                                process's CPU over the same span (steadier on a busy machine)
                              settled: the key → the last frame before the app is quiet (the
                                footer's keys redrawn, the panes' resize work done)
                              first open: the app's first `:` (it builds the panel, unless
                                built before)
                              no-op: F20, a binding that repaints the footer unchanged: the
                                floor any key that draws pays (Textual's dispatch, one frame);
                                each figure is also given as a ratio to it
                              tree ↓: a tree cursor move, the cheapest visible answer
                                                                     target < 100 ms
    continue over 10 steps  an offline continue through steps without hits, a node and
                            its tensor open: time per step, session events the app
                            receives per step, hit-list rebuilds, tensor reads (summaries
                            and the open tensor) while running and after the stop

"Painted" is the moment the app hands a frame to its driver (`App._display`), so figures
include Textual's frame pacing, not just our handlers. Each figure is the median of
`--repeat` runs (first-frame figures start a fresh app each time).

Usage: python benchmarks/bench_tui.py [--repeat N] [--lenet DUMP_ROOT] [--only continue|command]
                                      [--size 160x48]
                                      [--steps 10] [--nodes 48] [--side 128]

The app freezes what it holds once the graphs are shown (tui/kit/start_gc.py): before it
did, a full collection came with most closes at 160×48, ~0.1 s of the key.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.tui.support: the in-memory session of the TUI tests

from tests.tui.support import FakeSession, synthetic_graph  # noqa: E402
from tuidebug.core.session import (  # noqa: E402
    DebugSession,
    MetadataChanged,
    SessionEvent,
    SessionState,
)
from tuidebug.offline.session import OfflineSession  # noqa: E402
from tuidebug.tui.app import DebuggerApp  # noqa: E402
from tuidebug.tui.panes.hit_list import HitList  # noqa: E402
from tuidebug.tui.panes.scope_tree import GraphTree  # noqa: E402
from tuidebug.tui.tensor.view import TensorView  # noqa: E402

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


COMMAND_DUMP = REPO.parent / "shared" / "fixtures" / "mindspore_lenet_dump" / "ms2_10_0"


class StateFrames:
    """Each frame the app hands its driver (`App._display`), with the wall and CPU clocks
    and whether the command line was open with the focus in its prompt when it was drawn:
    a key's answer is the first frame that shows its result, not the first frame after our
    poll noticed the change (which may be the frame after)."""

    def __init__(self, app: DebuggerApp) -> None:
        self.frames: list[tuple[float, float, bool]] = []
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            panel = app._kept.command_line
            shown = panel is not None and panel.is_open and app.focused is panel.input
            self.frames.append((time.perf_counter(), time.process_time(), shown))

        app._display = display  # type: ignore[method-assign]

    def first(self, shown: bool | None) -> tuple[float, float] | None:
        """The first frame drawn since the last `clear` (`shown`: with the panel open or
        closed; None: any frame)."""
        return next(((t, c) for t, c, s in self.frames if shown is None or s is shown), None)


def _bench_app(session: DebugSession) -> DebuggerApp:
    """The app with one binding more, F20: a no-op that repaints the footer, unchanged (the
    floor: what any key that draws pays for Textual's dispatch and one frame)."""
    from textual.binding import Binding, BindingType
    from textual.widgets import Footer

    class BenchApp(DebuggerApp):
        BINDINGS: ClassVar[list[BindingType]] = [Binding("f20", "bench_noop", "no-op", show=False)]
        CSS_PATH = str(Path(sys.modules[DebuggerApp.__module__].__file__ or "").parent / "app.tcss")

        def action_bench_noop(self) -> None:
            self.query_one(Footer).refresh()

    return BenchApp(session, start_session=True)


async def command_line_keys(
    dump: Path, size: tuple[int, int], repeat: int
) -> dict[str, list[float]]:
    """`:` then Esc, `repeat` times each, on `dump` once loaded with a tensor shown (the
    tree has the focus): seconds from the key to the first frame drawn with the panel open
    and its prompt focused (or closed), wall and process CPU; from the key to the last frame
    before the app goes quiet ("settled": the footer's keys redrawn, the panes' own resize
    work done); and the floor in the same app: the F20 no-op (one unchanged line
    repainted) and ↓ in the tree (one row moved), each key to its first frame.
    The first `:` of the app is timed apart ("first open")."""
    from textual.widgets import Footer

    from tuidebug.tui.kit.dialogs import ConfirmScreen

    session = OfflineSession(dump)
    app = _bench_app(session)
    frames = StateFrames(app)
    names = ("open", "close", "open CPU", "close CPU", "open settled", "close settled")
    times: dict[str, list[float]] = {n: [] for n in (*names, "first open", "no-op", "tree ↓")}
    times["first close"] = []

    async def key(label: str, name: str, shown: bool | None) -> None:
        await _settle(pilot, app)
        await asyncio.sleep(0.05)  # the screen's update timer idle again
        frames.frames.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        app.simulate_key(name)
        await _wait(pilot, lambda: frames.first(shown) is not None)
        first = frames.first(shown)
        assert first is not None
        await _settle(pilot, app)
        times[label].append(first[0] - t0)
        if label in ("open", "close"):
            times[f"{label} CPU"].append(first[1] - c0)
            times[f"{label} settled"].append(frames.frames[-1][0] - t0)

    async with app.run_test(size=size) as pilot:
        await _wait(pilot, lambda: app.loaded)
        await _settle(pilot, app)
        if isinstance(app.screen, ConfirmScreen):  # the recommended watchpoints: declined
            await pilot.press("n")
        while app.screen is not app.screen_stack[0]:  # a notice dialog, if any
            await pilot.press("escape")
            await _settle(pilot, app)
        app.action_run("step")  # step 0 holds nothing yet
        await _wait(pilot, lambda: session.metadata.step == 1 and not app._runs.busy)
        await _settle(pilot, app)
        graph = next(iter(app.graphs))
        node = next(n for n in app.graphs[graph] if n.outputs and n.op_type == "Conv2D")
        app.go_to_node(graph, node.name)  # the tree has the focus, on the node
        app._request_tensor(graph, node.name, 0, None)
        view = app.query_one(TensorView)
        await _wait(pilot, lambda: app._open_tensor is not None and view.state == "tensor")
        await _settle(pilot, app)
        app.query_one(Footer)  # the floor's repaint target exists
        # a user's first `:` comes seconds after the load: the app has built the panel
        # by then (navigation/kept_views.py), if it does so at all
        loaded = time.perf_counter()
        while app._kept.command_line is None and time.perf_counter() - loaded < 4:
            await asyncio.sleep(0.05)
        await _settle(pilot, app)
        times["prebuilt"] = [float(app._kept.command_line is not None)]
        await key("first open", "colon", True)
        await key("first close", "escape", False)  # not reported
        for _ in range(repeat):
            for label, name, shown in (
                ("open", "colon", True),
                ("close", "escape", False),
                ("no-op", "f20", None),
                ("tree ↓", "down", None),
                ("tree ↓", "up", None),
            ):
                await key(label, name, shown)
    session.close()
    return times


def _print_command_line(repeat: int, size: str | None = None) -> None:
    """Both sizes, each in a fresh process (the collector's heap is the app's alone), or
    `size` ("160x48") here."""
    if size is None:
        import subprocess

        for each in ("160x48", "80x24"):
            command = [sys.executable, __file__, "--only", "command", "--size", each]
            command += ["--repeat", str(repeat)]
            subprocess.run(command, check=True)
        return
    from tuidebug.offline.writer.demo import write_demo_dump

    width, height = (int(n) for n in size.split("x"))
    with tempfile.TemporaryDirectory(prefix="tuidebug-bench-demo-") as tmp:
        dump = COMMAND_DUMP if COMMAND_DUMP.is_dir() else write_demo_dump(Path(tmp))
        print(f"`:` and Esc on {dump.name}, a tensor shown, the tree focused:")
        times = asyncio.run(command_line_keys(dump, (width, height), max(repeat, 5)))
        floor = statistics.median(times["no-op"])
        del times["first close"]
        prebuilt = times.pop("prebuilt") == [1.0]
        print(f"  (the panel {'was' if prebuilt else 'was not'} built before the first `:`)")
        for name, values in times.items():
            ratio = statistics.median(values) / floor if floor else float("nan")
            target = "   target < 100 ms" if name in ("open", "close", "first open") else ""
            print(f"  {name:>13} at {width}×{height}  {_ms(values)}  {ratio:5.1f}× no-op{target}")


def write_run_dump(root: Path, iterations: int, nodes: int, side: int) -> Path:
    """A healthy chain of `nodes` kernels (`side`×`side` float32 outputs) dumped over
    `iterations` iterations: nothing overflows, so a continue with TO runs to the end."""
    import numpy as np

    from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

    scope = "Default/network-Chain"
    defs = [ParamDef("w", np.float32, (side, side))]
    names: list[str] = []
    for i in range(nodes):
        name = f"{scope}/layer{i}/MatMul-op{i}"
        defs_in = [names[-1] if names else "w"]
        names.append(name)
        defs.append(NodeDef(name, "MatMul", defs_in, np.float32, (side, side)))  # type: ignore[arg-type]
    rng = np.random.default_rng(13)
    with DumpWriter(root, net_name="Chain", start_timestamp=1000) as writer:
        writer.add_graph(0, defs[1:], defs[:1])  # type: ignore[arg-type]
        for it in range(iterations):
            tensors = {
                (n, "output", 0): rng.standard_normal((side, side), np.float32) for n in names
            }
            tensors[("w", "output", 0)] = rng.standard_normal((side, side), np.float32)
            writer.write_iteration(0, it, tensors)
    return root


class RunCounters:
    """What one continue costs the app: the session events it receives (by kind), the
    hit-list rebuilds and the session's tensor reads, each split into while the session
    runs and after it stopped."""

    def __init__(self, app: DebuggerApp, session: DebugSession) -> None:
        self.events: dict[str, int] = {}
        self.rebuilds = 0
        self.reads_running = 0
        self.reads_after = 0
        self.running = False
        self.steps_seen: list[int] = []
        original = app._on_session_event_thread

        def received(event: SessionEvent) -> None:
            name = type(event).__name__
            self.events[name] = self.events.get(name, 0) + 1
            if isinstance(event, MetadataChanged):
                self.running = event.metadata.state is SessionState.RUNNING
            original(event)

        app._on_session_event_thread = received  # type: ignore[method-assign]
        rebuild = HitList._rebuild

        def counted_rebuild(hit_list: HitList) -> None:
            self.rebuilds += 1
            rebuild(hit_list)

        self._restore_rebuild = rebuild
        HitList._rebuild = counted_rebuild  # type: ignore[method-assign]
        read = session.tensor

        def counted_read(*args: Any, **kwargs: Any) -> Any:
            if self.running:
                self.reads_running += 1
            else:
                self.reads_after += 1
            return read(*args, **kwargs)

        session.tensor = counted_read  # type: ignore[method-assign]

    def reset(self) -> None:
        self.events.clear()
        self.rebuilds = self.reads_running = self.reads_after = 0

    def close(self) -> None:
        HitList._rebuild = self._restore_rebuild  # type: ignore[method-assign]


async def _settle(pilot: Any, app: DebuggerApp) -> None:
    quiet = 0
    while quiet < 3:
        await pilot.pause()
        busy = any(not w.is_finished for w in app.workers) or app.message_queue_size
        quiet = 0 if busy else quiet + 1


async def continue_run(steps: int, nodes: int, side: int) -> dict[str, Any]:
    """Step once, open a node's tensor (its summary too), then continue over `steps` steps
    of a dump where nothing hits; the counters cover the continue alone."""
    with tempfile.TemporaryDirectory(prefix="bench-tui-run-") as tmp:
        root = write_run_dump(Path(tmp), steps + 1, nodes, side)
        session = OfflineSession(root)
        app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
        counters = RunCounters(app, session)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await _wait(pilot, lambda: app.loaded and bool(session.watchpoints))
                await _settle(pilot, app)
                app.action_run("step")
                await _wait(pilot, lambda: session.metadata.step == 1)
                await _settle(pilot, app)
                graph = next(iter(app.graphs))
                node = f"Default/network-Chain/layer{nodes // 2}/MatMul-op{nodes // 2}"
                app.go_to_node(graph, node)
                app._request_tensor(graph, node, 0, None)
                await _settle(pilot, app)
                counters.reset()
                t0 = time.perf_counter()
                app.action_run("continue")
                await _wait(
                    pilot,
                    lambda: (
                        session.metadata.step == steps + 1
                        and session.metadata.state is SessionState.WAITING
                        and not app._runs.busy
                    ),
                )
                elapsed = time.perf_counter() - t0
                await _settle(pilot, app)
        finally:
            counters.close()
            session.close()
    total_events = sum(counters.events.values())
    return {
        "per_step": elapsed / steps,
        "events": total_events,
        "events_per_step": total_events / steps,
        "by_kind": dict(counters.events),
        "rebuilds": counters.rebuilds,
        "reads_running": counters.reads_running,
        "reads_after": counters.reads_after,
    }


def _ms(values: list[float]) -> str:
    # the least of them too: on a busy machine, the nearest to a quiet one's figure
    return (
        f"{statistics.median(values) * 1000:8.1f} ms (median of {len(values)},"
        f" min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lenet", type=Path, default=DEFAULT_LENET)
    parser.add_argument("--only", choices=["continue", "command"], help="run only this figure")
    parser.add_argument("--size", help="the command figure at this size only, e.g. 160x48")
    parser.add_argument("--steps", type=int, default=10, help="steps the continue runs over")
    parser.add_argument("--nodes", type=int, default=48, help="kernels of the continue's dump")
    parser.add_argument("--side", type=int, default=128, help="their outputs are side×side")
    args = parser.parse_args(argv)
    if args.only == "continue":
        _print_continue(args)
        return 0
    if args.only == "command":
        _print_command_line(args.repeat, args.size)
        return 0

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
    _print_command_line(args.repeat, None)
    _print_continue(args)
    return 0


def _print_continue(args: argparse.Namespace) -> None:
    runs = [
        asyncio.run(continue_run(args.steps, args.nodes, args.side)) for _ in range(args.repeat)
    ]
    last = runs[-1]
    per_step = [r["per_step"] for r in runs]
    print(
        f"continue over {args.steps} steps ({args.nodes} tensors of {args.side}×{args.side} "
        f"float32 a step, TO, nothing hits, a tensor open):"
    )
    print(f"  time per step            {_ms(per_step)}")
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(last["by_kind"].items()))
    print(
        f"  session events           {last['events']} ({last['events_per_step']:.1f} a step: {kinds})"
    )
    print(f"  hit-list rebuilds        {last['rebuilds']}   target 1 (once, at the stop)")
    print(
        f"  tensor reads             {last['reads_running']} while running, "
        f"{last['reads_after']} after the stop   target 0 while running"
    )


if __name__ == "__main__":
    sys.exit(main())
