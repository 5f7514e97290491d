"""Write the README screenshots (screenshots/*.svg) by driving the real app on the demo dump.

    python scripts/screenshots.py [--out screenshots] [--size 160x48]

The demo dump is written to a temporary folder (it is seeded, so every run shows the same
numbers); the header shows "demo dump" instead of that folder so the pictures do not
change from run to run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tuidebug.offline.demo import write_demo_dump
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.hit_list import HitList
from tuidebug.tui.messages import HitChosen
from tuidebug.tui.watchpoint_editor import WatchpointEditor

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


SCENES: dict[str, Scene] = {
    "tree_and_details": tree_and_details,
    "hit_list": hit_list,
    "tensor_table": tensor_table,
    "tensor_find": tensor_find,
    "heatmap": heatmap,
    "watchpoint_editor": watchpoint_editor,
}


async def shoot(dump: Path, name: str, scene: Scene, out: Path, size: tuple[int, int]) -> Path:
    session = OfflineSession(dump)
    app = DebuggerApp(session, start_session=True, source_label="demo dump")
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
        dump = write_demo_dump(Path(tmp))
        for name in args.scenes or list(SCENES):
            path = asyncio.run(shoot(dump, name, SCENES[name], out, (cols, rows)))
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
