"""Write the README screenshots (screenshots/*.svg) by driving the real app on the demo dump.

    python scripts/screenshots.py [--out screenshots] [--size 160x48]

The demo dump is written to a temporary folder (it is seeded, so every run shows the same
numbers); the header shows "demo dump" instead of that folder so the pictures do not
change from run to run. `small_80x24` is shot at 80×24 whatever --size says, and the
command line's history lives in that temporary folder too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.scroll_view import ScrollView
from textual.widgets import Label, OptionList

import tuidebug
from tuidebug.offline.session import OfflineSession
from tuidebug.offline.writer.demo import write_demo_dump
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.messages import HitChosen
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.tensor_list.screen import TensorListScreen
from tuidebug.tui.watchpoints.editor import WatchpointEditor

Scene = Callable[[DebuggerApp, Any], Awaitable[None]]


async def settle(pilot: Any, rounds: int = 4) -> None:
    for _ in range(rounds):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def _open(app: DebuggerApp, pilot: Any, *, recommended: bool) -> None:
    await settle(pilot)
    await pilot.press("y" if recommended else "n")
    await settle(pilot)


async def _first_overflow(app: DebuggerApp, pilot: Any) -> Any:
    """Continue until the tensor-overflow watchpoint hits; return that hit."""
    session = app.session
    for _ in range(session.metadata.max_step or 0):
        found = [h for h in session.hits if h.condition.abbr == "TO"]
        if found:
            return found[0]
        await pilot.press("c")
        await settle(pilot)
    raise SystemExit("the demo dump produced no overflow hit")


async def tree_and_details(app: DebuggerApp, pilot: Any) -> None:
    await _open(app, pilot, recommended=True)
    hit = await _first_overflow(app, pilot)
    app.go_to_node(hit.tensor.graph, hit.tensor.node)
    await settle(pilot)


async def hit_list(app: DebuggerApp, pilot: Any) -> None:
    await _open(app, pilot, recommended=True)
    await _first_overflow(app, pilot)
    await pilot.press("2")
    hits = app.query_one(HitList)
    groups = hits.tree_view.root.children
    overflow = next((g for g in groups if " TO " in f" {g.label} "), None)
    if overflow is not None and overflow.children:
        hits.tree_view.move_cursor(overflow.children[0])
    await settle(pilot)


async def tensor_table(app: DebuggerApp, pilot: Any) -> None:
    await _open(app, pilot, recommended=True)
    hit = await _first_overflow(app, pilot)
    app.post_message(HitChosen(hit))
    await settle(pilot)
    await pilot.press("5")
    await settle(pilot)


async def tensor_find(app: DebuggerApp, pilot: Any) -> None:
    """The overflowing tensor with its non-finite elements found and highlighted."""
    await tensor_table(app, pilot)
    await pilot.press("f")
    await settle(pilot)
    await pilot.press("enter")  # the prefilled search: nonfinite
    await settle(pilot, rounds=8)


async def heatmap(app: DebuggerApp, pilot: Any) -> None:
    await _open(app, pilot, recommended=False)
    await pilot.press("n")
    await settle(pilot)
    graph = next(iter(app.graphs.values()))
    weight = max(graph.parameters, key=lambda n: len(n.outputs[0].shape or ()) if n.outputs else 0)
    app.go_to_node(graph.name, weight.name)
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("5", "m")
    await settle(pilot)


async def watchpoint_editor(app: DebuggerApp, pilot: Any) -> None:
    await _open(app, pilot, recommended=False)
    graph = next(iter(app.graphs.values()))
    matmul = next(n for n in graph.operators if n.op_type == "MatMul")
    app.go_to_node(graph.name, matmul.name)
    await pilot.press("w")
    await settle(pilot)
    editor = app.screen
    assert isinstance(editor, WatchpointEditor)
    await pilot.press("down", "down", "enter")  # from TO to TL, Tensor above threshold
    await pilot.press(*"1e6")
    await settle(pilot)


async def command_line(app: DebuggerApp, pilot: Any) -> None:
    """`:` with tfdbg's `lt` (the step's MatMuls, largest first), `pt` of the overflow hit's
    tensor (its ±Inf highlighted) and `li` (its inputs' tree); the output maximized
    (Shift+Tab, `z`) to show all three."""
    await _open(app, pilot, recommended=True)
    hit = await _first_overflow(app, pilot)
    tail = "/".join(hit.tensor.node.split("/")[-2:])  # fc2-Dense/MatMul-op0: a unique tail
    await pilot.press("colon")
    await settle(pilot)
    lines = (
        "lt -t MatMul -s size -r",
        f"pt {tail}[0:4] -r [[-inf,-1e30],[1e30,inf]]",
        f"li -r -d 3 -t {tail}",
    )
    for line in lines:
        await pilot.press(*line, "enter")
        await settle(pilot, rounds=8)
    await pilot.press("shift+tab", "z")
    await settle(pilot)
    app.query_one("#command-output", ScrollView).scroll_home(animate=False)
    await settle(pilot)


async def tensor_list(app: DebuggerApp, pilot: Any) -> None:
    """`L` at the step of the overflow, once the background pass has read every tensor."""
    await _open(app, pilot, recommended=True)
    await _first_overflow(app, pilot)
    await pilot.press("L")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, TensorListScreen)
    for _ in range(200):  # the health pass runs in a thread; its batches come as messages
        done = screen.health and all(h is not None for h in screen.health)
        if done and not screen.health_running:
            break
        await pilot.pause(0.05)
    else:
        raise SystemExit("the tensor list's health pass did not finish")
    await settle(pilot)


async def graph_view(app: DebuggerApp, pilot: Any) -> None:
    """`G` on the overflowing node: its inputs above, consumers below, hits marked."""
    await tree_and_details(app, pilot)
    await pilot.press("G")
    await settle(pilot)


async def source_view(app: DebuggerApp, pilot: Any) -> None:
    """`v` on the overflowing node's innermost stack line: the demo's own source (its
    stacks are the real Python stacks of the generator), the line's nodes listed."""
    await tree_and_details(app, pilot)
    await pilot.press("3")
    await settle(pilot)
    lines = app.query_one("#stack-lines", OptionList)
    if lines.highlighted is None:
        await pilot.press("down")  # onto the stack's first (innermost) line
    await pilot.press("v")
    await settle(pilot, rounds=8)
    # the title names the file as the stack does: an absolute path that depends on where
    # tuidebug is installed; shown from the package's folder so every machine draws the same
    title = app.screen.query_one("#source-title", Label)
    root = str(Path(tuidebug.__file__).resolve().parent.parent) + os.sep
    title.update(Text(str(title.render()).replace(root, "", 1)))
    await settle(pilot)


async def compare(app: DebuggerApp, pilot: Any) -> None:
    """`d` on an activation at step 2: its change since step 1, in the diff mode."""
    await _open(app, pilot, recommended=False)
    for _ in range(2):  # to step 1, then step 2
        await pilot.press("n")
        await settle(pilot)
    graph = next(iter(app.graphs.values()))
    relu = next(n for n in graph.operators if n.op_type == "ReLU")
    app.go_to_node(graph.name, relu.name)
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("5", "d")
    await settle(pilot, rounds=8)


def golden_copy(dest: Path) -> Path:
    """The demo dump as another run would have written it, the golden of the compare
    scenes: the same seeded dump, the first MatMul output of iteration 1 with seeded noise
    added."""
    import numpy as np

    dest = write_demo_dump(dest)
    first = sorted(dest.rglob("1/MatMul.*.output.0.*.npy"))[0]
    value = np.load(first)
    value += np.random.default_rng(0).normal(0, 0.05, value.shape).astype(value.dtype)
    np.save(first, value)
    return dest


async def _at_iteration_1(app: DebuggerApp, pilot: Any) -> Any:
    """The divergence tab (`--against`) moved with `S` to iteration 1, compared."""
    from tuidebug.tui.divergence.pane import DivergencePane
    from tuidebug.tui.kit.dialogs import PromptScreen

    async def compared(iteration: int) -> DivergencePane:
        for _ in range(600):
            panes = app.query(DivergencePane)
            outcome = panes.first().outcome if panes else None
            if outcome is not None and outcome.step == iteration:
                await settle(pilot)
                return panes.first()
            await pilot.pause(0.05)
        raise SystemExit(f"the compare of iteration {iteration} did not finish")

    await compared(0)
    await pilot.press("S")
    await settle(pilot)
    assert isinstance(app.screen, PromptScreen)
    app.screen.query_one("#prompt-input").value = "1"  # type: ignore[attr-defined]
    await pilot.press("enter")
    return await compared(1)


async def compare_runs(app: DebuggerApp, pilot: Any) -> None:
    """`tuidebug offline DEMO --against GOLDEN` at iteration 1: the divergence tab (7), on
    the first divergence."""
    await _at_iteration_1(app, pilot)


async def compare_side_by_side(app: DebuggerApp, pilot: Any) -> None:
    """Enter on the first divergence: target, golden, their difference and |difference|."""
    from tuidebug.tui.divergence.side_by_side import SideBySideScreen

    await _at_iteration_1(app, pilot)
    await pilot.press("enter")
    for _ in range(600):
        screen = app.screen
        if isinstance(screen, SideBySideScreen) and screen.loaded:
            break
        await pilot.pause(0.05)
    await settle(pilot, rounds=8)


async def small_80x24(app: DebuggerApp, pilot: Any) -> None:
    """An 80×24 terminal: the overflowing tensor, its pane maximized with `z`."""
    await tensor_table(app, pilot)
    await pilot.press("z")
    await settle(pilot)


async def all_ranks(app: DebuggerApp, pilot: Any) -> None:
    """A 4-rank demo dump with every rank checked (`--all-ranks`, as with `--cluster`):
    continue to the overflow, then Enter on a hit of rank 2 shows that rank."""
    await _open(app, pilot, recommended=True)
    await _first_overflow(app, pilot)
    await pilot.press("2")
    hits = app.query_one(HitList)
    groups = hits.tree_view.root.children
    overflow = next(g for g in groups if " TO " in f" {g.label} ")
    on_rank_2 = next(n for n in overflow.children if " r2 " in f"{n.label} ")
    hits.tree_view.move_cursor(on_rank_2)
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot, rounds=8)
    await pilot.press("2")
    await settle(pilot)


SCENES: dict[str, Scene] = {
    "tree_and_details": tree_and_details,
    "hit_list": hit_list,
    "tensor_table": tensor_table,
    "tensor_find": tensor_find,
    "heatmap": heatmap,
    "watchpoint_editor": watchpoint_editor,
    "command_line": command_line,
    "tensor_list": tensor_list,
    "graph_view": graph_view,
    "source_view": source_view,
    "compare": compare,
    "compare_runs": compare_runs,
    "compare_side_by_side": compare_side_by_side,
    "small_80x24": small_80x24,
    "all_ranks": all_ranks,
}
# scenes shown on the 4-rank demo dump, every rank checked
MANY_RANKS = {"all_ranks"}
# scenes that compare the demo dump with a golden copy (`--against`, golden_copy)
AGAINST = {"compare_runs", "compare_side_by_side"}
# scenes shot at their own size whatever --size says
SIZES: dict[str, tuple[int, int]] = {"small_80x24": (80, 24)}


async def shoot(
    dump: Path, name: str, scene: Scene, out: Path, size: tuple[int, int], golden: Path
) -> Path:
    session = OfflineSession(dump, all_ranks=name in MANY_RANKS)
    against = str(golden) if name in AGAINST else None
    app = DebuggerApp(session, start_session=True, source_label="demo dump", against=against)
    try:
        async with app.run_test(size=size) as pilot:
            await scene(app, pilot)
            app.clear_notifications()
            await pilot.pause()
            return Path(app.save_screenshot(filename=f"{name}.svg", path=str(out)))
    finally:
        session.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default=str(Path(__file__).resolve().parent.parent / "screenshots")
    )
    parser.add_argument("--size", default="160x48", help="terminal size, COLSxROWS")
    parser.add_argument("scenes", nargs="*", help=f"some of: {', '.join(SCENES)}")
    args = parser.parse_args(argv)
    try:
        cols, rows = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        print(f"screenshots: --size must look like 160x48, not {args.size!r}.", file=sys.stderr)
        return 2
    unknown = [s for s in args.scenes if s not in SCENES]
    if unknown:
        print(f"screenshots: unknown scene {unknown[0]!r}.", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tuidebug-shots-") as tmp:
        # the command line's history goes here, not into the user's (nor comes from it)
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        dump = write_demo_dump(Path(tmp))
        many = write_demo_dump(Path(tmp) / "ranks", ranks=4)
        golden = golden_copy(Path(tmp) / "golden")
        for name in args.scenes or list(SCENES):
            size = SIZES.get(name, (cols, rows))
            where = many if name in MANY_RANKS else dump
            path = asyncio.run(shoot(where, name, SCENES[name], out, size, golden))
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
