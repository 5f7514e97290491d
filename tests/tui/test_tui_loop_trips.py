"""A control-flow loop dumps one tensor once per trip in one iteration folder: the tensor
view opens on the last trip (the value the checks read), names it in the title, and `(` /
`)` step through the earlier ones; a tensor with one value says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.tui.support import notices, settled, wait_until
from tests.tui.test_tui_offline import open_dump
from tuidebug.offline.session import OfflineSession
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.tensor.view import TensorView

ADD = "Default/while/Add-op1"


def loop_dump(root: Path) -> Path:
    """One iteration folder with three trips of Add-op1 and one value of Mul-op2."""
    with DumpWriter(root) as writer:
        writer.add_graph(
            0,
            [
                NodeDef(ADD, "Add", inputs=["x"], shape=(2,)),
                NodeDef("Default/Mul-op2", "Mul", inputs=[ADD], shape=(2,)),
            ],
            [ParamDef("x", np.float32, (2,))],
        )
        for trip in (1, 2, 3):
            writer.write_iteration(0, 0, {(ADD, "output", 0): np.full(2, trip, np.float32)})
        writer.write_iteration(0, 0, {("Default/Mul-op2", "output", 0): np.ones(2, np.float32)})
    return root


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_parentheses_step_through_the_trips_of_a_loop(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    session = OfflineSession(loop_dump(tmp_path / "dump"))
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=size) as pilot:
        await open_dump(pilot)
        await pilot.press("n")  # step 1: iteration 0
        await settled(pilot)
        view = app.query_one(TensorView)
        graph = next(iter(app.graphs))
        app._request_tensor(graph, ADD, 0, None)

        async def shows(trip: int) -> None:
            await wait_until(
                pilot,
                lambda: view.state == "tensor" and f"trip {trip}/3" in view.title,
                what=f"trip {trip}/3 in the title",
            )
            assert view._array is not None and float(view._array[0]) == trip

        await shows(3)  # the last trip: what a check reads
        view.focus()
        await pilot.press("left_parenthesis")
        await shows(2)
        await pilot.press("left_parenthesis")
        await shows(1)
        await pilot.press("left_parenthesis")  # no trip 0: a notice, the view stays
        await wait_until(
            pilot,
            lambda: any("first of 3" in n for n in notices(app)),
            what="the first-trip notice",
        )
        await shows(1)
        await pilot.press("right_parenthesis", "right_parenthesis")
        await shows(3)
        app._request_tensor(graph, "Default/Mul-op2", 0, None)
        await wait_until(
            pilot, lambda: view.state == "tensor" and "Mul-op2" in view.title, what="Mul-op2"
        )
        assert "trip" not in view.title
        view.focus()
        await pilot.press("right_parenthesis")
        await wait_until(
            pilot,
            lambda: any("only a control-flow loop" in n for n in notices(app)),
            what="the one-value notice",
        )
