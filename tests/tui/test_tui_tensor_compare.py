"""Compare anything (issue 15): the previous step of any tensor offline, the same tensor on
another rank, any tensor of the same shape; and a hit's condition shown with its tensor.

The dump is written here with `DumpWriter`: two ranks of one small graph, three iterations,
values chosen so every difference is known exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.widgets import Input, Static

from tests.tui.support import (
    CONV,
    make_app,
    notices,
    run_palette,
    screen_text,
    settled,
    tensor_shown,
    wait_for_notice,
    wait_for_screen,
    wait_until,
)
from tuidebug.core.condition_catalogue import ParamResult, get_condition
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.offline.session import OfflineSession
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen, PromptScreen
from tuidebug.tui.messages import HitChosen, TensorRequested
from tuidebug.tui.tensor.statistics_panel import StatisticsPanel
from tuidebug.tui.tensor.view import TensorView

SIZE = (120, 40)
MATMUL = "Default/net/MatMul-op0"
RELU_OP = "Default/net/ReLU-op1"
SUM = "Default/net/ReduceSum-op2"
# node names from a hostile .pb: OSC 0 (sets the terminal's title, ended by BEL) and markup
TITLE = "\x1b]0;pwned\x07"
EVIL = f"Default/net/Evil[bold]{TITLE}-op3"
EVIL_SUM = f"Default/net/Sum[bold]{TITLE}-op4"


def value(rank: int, iteration: int, which: int) -> np.ndarray:
    """A (2, 3) value that differs by rank, iteration and tensor in a known way."""
    return np.full((2, 3), 100 * rank + 10 * iteration + which, np.float32) + np.arange(
        6, dtype=np.float32
    ).reshape(2, 3)


@pytest.fixture(scope="module")
def two_rank_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ranks") / "dump"
    for rank in (0, 1):
        writer = DumpWriter(root, rank=rank, start_timestamp=1000 + rank)
        writer.add_graph(
            0,
            [
                NodeDef(MATMUL, "MatMul", ["w"], shape=(2, 3)),
                NodeDef(RELU_OP, "ReLU", [MATMUL], shape=(2, 3)),
                NodeDef(SUM, "ReduceSum", [RELU_OP], shape=(3,)),
            ],
            [ParamDef("w", np.float32, (2, 3))],
        )
        for iteration in range(3):
            writer.write_iteration(
                0,
                iteration,
                {
                    ("w", "output", 0): value(rank, iteration, 0),
                    (MATMUL, "output", 0): value(rank, iteration, 1),
                    (RELU_OP, "output", 0): value(rank, iteration, 2),
                    (SUM, "output", 0): np.zeros(3, np.float32),
                },
            )
        writer.finish()
    return root


@pytest.fixture(scope="module")
def hostile_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rank: MatMul, a tensor of its shape and one of another shape, both named hostile."""
    root = tmp_path_factory.mktemp("hostile") / "dump"
    writer = DumpWriter(root, rank=0, start_timestamp=1000)
    writer.add_graph(
        0,
        [
            NodeDef(MATMUL, "MatMul", ["w"], shape=(2, 3)),
            NodeDef(EVIL, "ReLU", [MATMUL], shape=(2, 3)),
            NodeDef(EVIL_SUM, "ReduceSum", [EVIL], shape=(3,)),
        ],
        [ParamDef("w", np.float32, (2, 3))],
    )
    for iteration in range(3):
        writer.write_iteration(
            0,
            iteration,
            {
                ("w", "output", 0): value(0, iteration, 0),
                (MATMUL, "output", 0): value(0, iteration, 1),
                (EVIL, "output", 0): value(0, iteration, 2),
                (EVIL_SUM, "output", 0): np.zeros(3, np.float32),
            },
        )
    writer.finish()
    return root


async def opened(pilot: Any, app: DebuggerApp, node: str) -> TensorView:
    """The dump at step 2 (iteration 1), `node`'s output open, the grid focused."""
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")  # no recommended watchpoints
    await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="the offer gone")
    await settled(pilot)
    for _ in range(2):
        await pilot.press("n")
        await settled(pilot)
    assert app.session.metadata.step == 2
    view = app.query_one(TensorView)
    graph = next(iter(app.graphs))
    app.post_message(TensorRequested(graph, node, 0))
    await wait_until(pilot, lambda: view.title.startswith(node.rsplit("/", 1)[-1]), what=node)
    await tensor_shown(pilot, view)
    view.focus()
    return view


def mode_text(view: TensorView) -> str:
    return str(view.query_one("#tv-mode", Static).content)


async def diff_shown(pilot: Any, view: TensorView) -> np.ndarray:
    await wait_until(
        pilot, lambda: view.mode == "diff" and view.comparison is not None, what="the diff"
    )
    await settled(pilot)
    assert view.comparison is not None
    return np.asarray(view.comparison.diff)


async def test_previous_step_of_any_tensor_offline(two_rank_dump: Path) -> None:
    app = DebuggerApp(OfflineSession(two_rank_dump), start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        view = await opened(pilot, app, MATMUL)  # an activation, not a parameter
        await pilot.press("d")
        diff = await diff_shown(pilot, view)
        np.testing.assert_array_equal(diff, value(0, 1, 1) - value(0, 0, 1))  # = 10
        assert "[diff]" in mode_text(view)


async def test_no_previous_step_says_so(two_rank_dump: Path) -> None:
    app = DebuggerApp(OfflineSession(two_rank_dump), start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="the offer")
        await pilot.press("n")  # step 1: iteration 0, the first one
        await settled(pilot)
        view = app.query_one(TensorView)
        app.post_message(TensorRequested(next(iter(app.graphs)), MATMUL, 0))
        await tensor_shown(pilot, view)
        view.focus()
        await pilot.press("d")
        assert view.error_text == "There is no previous step to compare with."
        assert view.mode == "current"


async def test_compare_with_the_other_rank(two_rank_dump: Path) -> None:
    app = DebuggerApp(OfflineSession(two_rank_dump), start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        view = await opened(pilot, app, RELU_OP)
        assert app.session.metadata.ranks == (0, 1)
        await pilot.press("R")  # one other rank: no question asked
        diff = await diff_shown(pilot, view)
        np.testing.assert_array_equal(diff, value(0, 1, 2) - value(1, 1, 2))  # = -100
        assert "[diff vs rank 1]" in mode_text(view)
        assert "rank 1 " in view.status_text  # the element on rank 1 beside the current one
        await pilot.press("d")  # diff → the other rank's value
        await wait_until(pilot, lambda: view.mode == "previous", what="rank 1's value")
        assert "[rank 1]" in mode_text(view)


async def test_one_rank_only_says_so() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="the offer")
        assert app.go_to_node("kernel_graph_0", CONV)
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await tensor_shown(pilot, view)
        view.focus()
        await pilot.press("R")
        await wait_for_notice(pilot, "there is no other rank to compare with")


async def test_compare_with_a_named_tensor_of_the_same_shape(two_rank_dump: Path) -> None:
    app = DebuggerApp(OfflineSession(two_rank_dump), start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        view = await opened(pilot, app, MATMUL)
        await pilot.press("D")
        prompt = await wait_for_screen(pilot, PromptScreen)
        box = prompt.query_one("#prompt-input", Input)
        assert box.value == f"{MATMUL}:0"  # prefilled with the tensor shown, to edit
        error = prompt.query_one("#prompt-error", Static)

        box.value = "NoSuchOp-op9:0"  # an unknown node: the prompt says so and stays
        await pilot.press("enter")
        await wait_until(pilot, lambda: str(error.content), what="the name's error")
        assert str(error.content) == "No node is named 'NoSuchOp-op9'."

        box.value = "ReLU-op1:0@0"  # a unique tail, at iteration 0
        await pilot.press("enter")
        diff = await diff_shown(pilot, view)
        np.testing.assert_array_equal(diff, value(0, 1, 1) - value(0, 0, 2))
        assert "[diff vs ReLU-op1:0 @ step 1 (iteration 0)]" in mode_text(view)

        await pilot.press("D")  # a tensor of another shape: one sentence, the diff stays
        prompt = await wait_for_screen(pilot, PromptScreen)
        prompt.query_one("#prompt-input", Input).value = "ReduceSum-op2"
        await pilot.press("enter")
        sentence = "ReduceSum-op2:0 @ step 2 (iteration 1) has shape (3,), not (2, 3), so it cannot be compared."
        await wait_until(pilot, lambda: view.error_text == sentence, what="the shape sentence")
        assert sentence in notices(app)
        assert view.mode == "diff" and "ReLU-op1" in mode_text(view)


async def test_a_hit_opens_with_its_condition_value_and_advice() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="the offer")
        condition = get_condition("tensor_too_large")
        hit = WatchpointHit(
            4,
            condition,
            TensorRef(CONV, 0, None, 0, "kernel_graph_0"),
            0,
            (
                ParamResult("abs_mean_gt", 1.0, False, False, 0.8),
                ParamResult("max_gt", 10.0, False, True, 12.5),
                ParamResult("min_gt", 0.0, True),
            ),
        )
        app.post_message(HitChosen(hit))
        view = app.query_one(TensorView)
        await tensor_shown(pilot, view)
        context = view.query_one("#tv-context", Static)
        assert context.display and context.region.y < view.query_one("#tv-title", Static).region.y
        assert str(context.content) == (
            "▲ TL max_gt: 12.5 > 10  (other settings abs_mean_gt=1)"
            "  ·  Tensor above threshold, watchpoint 4"
        )
        advice = view.query_one("#tv-advice", Static)
        assert advice.display and str(advice.content) == (
            "the tensor is above the threshold — try: check whether the operator's input "
            "tensors are normal (trace them upstream)."
        )
        # the same tensor opened from the tree has no hit line
        app.post_message(TensorRequested("kernel_graph_0", CONV, 0))
        await wait_until(pilot, lambda: not context.display, what="the hit line to go")
        assert not advice.display


async def test_the_palette_compares_with_the_other_rank(two_rank_dump: Path) -> None:
    app = DebuggerApp(OfflineSession(two_rank_dump), start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        view = await opened(pilot, app, RELU_OP)
        await pilot.press("1")  # from another pane: the palette reaches the tensor view
        await run_palette(pilot, "Compare the tensor with another rank")
        diff = await diff_shown(pilot, view)
        np.testing.assert_array_equal(diff, value(0, 1, 2) - value(1, 1, 2))
        await run_palette(pilot, "Compare the tensor with another tensor")
        prompt = await wait_for_screen(pilot, PromptScreen)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not prompt, what="the prompt to close")


async def test_a_hostile_tensor_name_is_escaped_wherever_the_view_names_it(
    hostile_dump: Path,
) -> None:
    app = DebuggerApp(OfflineSession(hostile_dump), start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        view = await opened(pilot, app, MATMUL)

        def assert_clean(where: str, text: str) -> None:
            assert "\x1b" not in text and "\x07" not in text, f"{where}: {text!r}"

        def stats_text() -> str:
            return str(view.query_one(StatisticsPanel).content)

        await pilot.press("D")
        prompt = await wait_for_screen(pilot, PromptScreen)
        prompt.query_one("#prompt-input", Input).value = f"{EVIL}:0@1"
        await pilot.press("enter")
        diff = await diff_shown(pilot, view)
        np.testing.assert_array_equal(diff, value(0, 1, 1) - value(0, 1, 2))
        label = "Evil[bold]\\x1b]0;pwned\\x07-op3:0 @ step 2 (iteration 1)"
        assert f"[diff vs {label}]" in mode_text(view)
        assert label in view.status_text
        for where, text in [
            ("mode", mode_text(view)),
            ("status", view.status_text),
            ("title", str(view.query_one("#tv-title", Static).content)),
            ("statistics", stats_text()),
            ("screen", screen_text(app)),
        ]:
            assert_clean(where, text)

        await pilot.press("d")  # the reference's own values: the statistics name it
        await wait_until(pilot, lambda: view.mode == "previous", what="the reference's values")
        await wait_until(pilot, lambda: label in stats_text(), what="the reference's statistics")
        assert_clean("statistics", stats_text())
        assert_clean("mode", mode_text(view))

        await pilot.press("D")  # another shape: the error sentence names it
        prompt = await wait_for_screen(pilot, PromptScreen)
        prompt.query_one("#prompt-input", Input).value = f"{EVIL_SUM}:0"
        await pilot.press("enter")
        sentence = (
            "Sum[bold]\\x1b]0;pwned\\x07-op4:0 @ step 2 (iteration 1) has shape (3,), "
            "not (2, 3), "
            "so it cannot be compared."
        )
        await wait_until(pilot, lambda: view.error_text == sentence, what="the shape sentence")
        assert sentence in notices(app)
        assert_clean("error", view.error_text)
        assert_clean("screen", screen_text(app))
