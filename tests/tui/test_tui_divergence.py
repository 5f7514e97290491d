"""Compare two runs in the TUI (issue 30): `tuidebug offline TARGET --against GOLDEN`.

On real dumps: MindSpore's LeNet (2.10.0) against a copy of itself whose conv2 output at
iteration 1 was moved by +0.5 on one channel and whose second MaxPool output has one NaN
(`perturbed`, made once per session in a tmp folder); and msprobe's own fp32 and bf16
dumps of one MLP (`msprobe_mlp`), which open in the compare screen alone. Pilot tests drive
the divergence tab (filters, kinds, step keys moving both dumps, the side-by-side screen)
at 160×48 and 80×24; the plain functions (rows, engine) are tested without Textual; the
snapshots are at the end.
"""

from __future__ import annotations

import glob
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.tui.support import notices, settled, wait_for_notice, wait_for_screen, wait_until
from tuidebug.compare.report import CompareReport, Row
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.divergence.engine import CompareProblem, open_pair, run_compare
from tuidebug.tui.divergence.flows import golden_check
from tuidebug.tui.divergence.pane import DivergencePane
from tuidebug.tui.divergence.rows import (
    as_number,
    bar,
    fit_name,
    number_text,
    shown_rows,
    summary_line,
)
from tuidebug.tui.divergence.side_by_side import (
    SideBySideScreen,
    difference,
    largest_at,
    statistics_text,
)
from tuidebug.tui.divergence.standalone import CompareApp
from tuidebug.tui.kit.dialogs import ConfirmScreen, PromptScreen
from tuidebug.tui.kit.name_filter import name_filter
from tuidebug.tui.tensor.view import TensorView

CONV2 = "conv2-Conv2d_Conv2D-op0"
POOL2 = "max_pool2d-MaxPool2d_MaxPool-op1"


def _file(root: Path, iteration: int, part: str) -> str:
    found = glob.glob(
        str(root / "rank_0" / "LeNet" / "0" / str(iteration) / f"*{part}*.output.0.*")
    )
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="session")
def golden(fixtures_dir: Path) -> Path:
    return fixtures_dir / "mindspore_lenet_dump" / "ms2_10_0"


@pytest.fixture(scope="session")
def perturbed(golden: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden dump with conv2's output at iteration 1 moved by +0.5 on channel 3 and
    one NaN in the MaxPool after it."""
    root = tmp_path_factory.mktemp("divergence") / "perturbed"
    shutil.copytree(golden, root)
    for path in root.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    conv = _file(root, 1, CONV2)
    value = np.load(conv)
    value[0, 3] += 0.5
    np.save(conv, value)
    pool = _file(root, 1, POOL2)
    value = np.load(pool)
    value[1, 2, 0, 0] = np.nan
    np.save(pool, value)
    return root


@pytest.fixture(scope="session")
def msprobe_mlp(fixtures_dir: Path) -> Path:
    return fixtures_dir / "msprobe_mlp"


def debugger(target: Path, golden: Path | str) -> DebuggerApp:
    return DebuggerApp(
        OfflineSession(target), start_session=True, against=str(golden), source_label="perturbed"
    )


async def compared(pilot: Any, step: int, *, count: int = 1) -> DivergencePane:
    """The divergence pane once it has compared `step` (the `count`-th compare)."""
    await wait_until(pilot, lambda: pilot.app.query(DivergencePane), what="the divergence tab")
    pane: DivergencePane = pilot.app.query_one(DivergencePane)
    await wait_until(
        pilot,
        lambda: pane.compares >= count and pane.outcome is not None and pane.outcome.step == step,
        what=f"the compare of step {step}",
        explain=lambda: pane.status_text,
    )
    await settled(pilot)
    return pane


async def at_iteration_1(pilot: Any) -> DivergencePane:
    """The pane compared iteration 0 (the session shows none yet), then `S` 1 moved both
    dumps to iteration 1."""
    await compared(pilot, 0)
    await pilot.press("S")
    prompt = await wait_for_screen(pilot, PromptScreen)
    prompt.query_one("#prompt-input").value = "1"  # type: ignore[attr-defined]
    await pilot.press("enter")
    return await compared(pilot, 1, count=2)


def highlighted(pane: DivergencePane) -> Row:
    return pane.shown[pane.table.cursor_row].row


# ------------------------------------------------------------------- the debugger
async def test_against_opens_on_the_first_divergence_and_steps_move_both(
    perturbed: Path, golden: Path
) -> None:
    app = debugger(perturbed, golden)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await compared(pilot, 0)
        # the session shows no iteration yet: the first both dumps have, all passing
        assert "iteration 0, rank 0: 0 diverged of 195 compared" in pane.status_text
        assert app.focused is pane.table
        pane = await at_iteration_1(pilot)
        assert app.session.metadata.step == 2  # the session moved with the compare
        assert pane.outcome is not None
        report = pane.outcome.report
        first = report.rows[report.first or 0]
        assert CONV2.replace("_", "/") in first.name and first.name.endswith(":output.0")
        assert highlighted(pane) is first  # opened on it
        assert "2 diverged (first: Conv2D-op0:output.0) of 195" in pane.status_text
        # the second divergence is the NaN, on one side only
        await pilot.press("d")
        nan_row = highlighted(pane)
        assert "MaxPool-op1:output.0" in nan_row.name and "NaN" in nan_row.reason
        await pilot.press("d")  # wraps around to the first
        assert highlighted(pane) is first
        # the session's own step key moves both dumps too
        await pilot.press("n")
        pane = await compared(pilot, 2, count=3)
        assert pane.outcome is not None and pane.outcome.report.first is None


async def test_filters_by_name_and_kind(perturbed: Path, golden: Path) -> None:
    app = debugger(perturbed, golden)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await at_iteration_1(pilot)
        await pilot.press("slash")
        await pilot.press(*"/maxpool-op")  # case-insensitive, anywhere in the name
        await wait_until(pilot, lambda: len(pane.shown) == 4, what="the MaxPool rows")
        assert all("/MaxPool-op" in s.row.name for s in pane.shown)
        await pilot.press("enter")  # back to the rows
        assert app.focused is pane.table
        await pilot.press("k")  # diverged only
        assert [s.row.status for s in pane.shown] == ["diverged"]
        await pilot.press("slash", "ctrl+u")
        await pilot.press("enter")
        assert [s.row.status for s in pane.shown] == ["diverged", "diverged"]
        await pilot.press("slash", *"op(")  # not a regular expression: plain text
        await wait_for_notice(pilot, "matched as plain text")
        await pilot.press("escape")  # empties the box, back to the rows
        assert app.focused is pane.table
        assert [s.row.status for s in pane.shown] == ["diverged", "diverged"]


async def test_enter_shows_the_pair_side_by_side(perturbed: Path, golden: Path) -> None:
    app = debugger(perturbed, golden)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await at_iteration_1(pilot)
        await pilot.press("enter")
        screen = await wait_for_screen(pilot, SideBySideScreen)
        await wait_until(pilot, lambda: screen.loaded, what="both values")
        views = {n: screen.query_one(f"#sbs-{n}", TensorView) for n in ("target", "golden")}
        target, gold = views["target"]._array, views["golden"]._array
        assert target is not None and gold is not None
        diff = screen.query_one("#sbs-diff", TensorView)._array
        assert diff is not None and np.allclose(diff, target.astype(float) - gold)
        absdiff_view = screen.query_one("#sbs-absdiff", TensorView)
        assert absdiff_view._heatmap  # a heatmap of |diff|
        assert float(np.max(np.abs(diff))) == pytest.approx(0.5, rel=1e-6)
        assert not screen.query_one("#sbs-grid").has_class("-single")  # 2×2 at 160×48
        assert screen.current == "diff"
        await pilot.press("tab")
        assert screen.current == "absdiff"
        await pilot.press("f")  # find over the difference, in the focused view
        await settled(pilot)
        assert app.focused is not None and app.focused.id == "tv-find"
        await pilot.press("escape", "escape")
        await wait_until(
            pilot, lambda: not isinstance(app.screen, SideBySideScreen), what="the list again"
        )
        assert app.focused is pane.table


async def test_small_terminal_shows_one_view_at_a_time(perturbed: Path, golden: Path) -> None:
    app = debugger(perturbed, golden)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await at_iteration_1(pilot)
        assert highlighted(pane).status == "diverged"
        await pilot.press("enter")
        screen = await wait_for_screen(pilot, SideBySideScreen)
        await wait_until(pilot, lambda: screen.loaded, what="both values")
        grid = screen.query_one("#sbs-grid")
        assert grid.has_class("-single")
        shown = [v.id for v in screen.query(TensorView) if v.display and v.has_class("-current")]
        assert shown == ["sbs-diff"]
        await pilot.press("shift+tab")
        assert screen.current == "golden"


async def test_a_golden_that_is_no_dump_is_a_notice(perturbed: Path, tmp_path: Path) -> None:
    app = debugger(perturbed, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        text = await wait_for_notice(pilot, "rank")
        assert "Traceback" not in text
        pane = app.query_one(DivergencePane)
        assert pane.pair is None and "-problem" in pane.query_one("#dv-status").classes


async def test_palette_entry_asks_for_the_golden_dump(perturbed: Path, golden: Path) -> None:
    app = DebuggerApp(OfflineSession(perturbed), start_session=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)  # the recommended watchpoints
        await pilot.press("n")
        await settled(pilot)
        titles = [c.title for c in app.palette_commands()]
        assert "Compare with a golden dump…" in titles
        assert "Focus divergence list" not in titles
        await pilot.press("7")  # nothing to compare yet: says how
        await wait_for_notice(pilot, "No golden dump")
        app.action_compare_golden()
        prompt = await wait_for_screen(pilot, PromptScreen)
        prompt.query_one("#prompt-input").value = str(golden)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await compared(pilot, 0)
        assert "Focus divergence list" in [c.title for c in app.palette_commands()]


def test_golden_check() -> None:
    assert golden_check("") == "Give the folder of the golden dump."
    assert golden_check("/nonexistent/x") == "/nonexistent/x is not a folder."
    assert golden_check("/") is None


# ------------------------------------------------------------------ msprobe, alone
async def test_msprobe_pair_opens_in_the_compare_screen(msprobe_mlp: Path) -> None:
    app = CompareApp(str(msprobe_mlp / "tensor_mix_bf16"), str(msprobe_mlp / "tensor_mix_fp32"))
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await compared(pilot, 0)
        assert pane.outcome is not None
        report = pane.outcome.report
        # bf16 autocast against fp32: judged by bf16's tolerance over the whole step, as
        # `tuidebug compare` does, nothing diverges (per pair, fp32 rows looked diverged)
        assert report.first is None and report.summary["diverged"] == 0
        assert any("differ in precision" in note for note in report.notes)
        assert pane.status_text.startswith("step 0, rank 0: ")
        assert f"{report.summary['diverged']} diverged" in pane.status_text
        await pilot.press("S")
        prompt = await wait_for_screen(pilot, PromptScreen)
        prompt.query_one("#prompt-input").value = "2"  # type: ignore[attr-defined]
        await pilot.press("enter")
        pane = await compared(pilot, 2, count=2)
        await pilot.press("enter")
        screen = await wait_for_screen(pilot, SideBySideScreen)
        await settled(pilot)
        if not screen.query("#sbs-grid"):  # statistics dumps: the statistics side by side
            assert "target" in str(screen.query_one("#sbs-stats Static").render())
        await pilot.press("escape", "question_mark")
        await settled(pilot)
        assert not [n for n in notices(app) if "Traceback" in n]


def test_msprobe_against_mindspore_is_one_sentence(msprobe_mlp: Path, golden: Path) -> None:
    with pytest.raises(CompareProblem, match="msprobe dump and the other is not"):
        open_pair(msprobe_mlp / "stat_mix_bf16", golden)


# ---------------------------------------------------------------- without Textual
def test_engine_steps_ranks_progress_and_stop(perturbed: Path, golden: Path) -> None:
    pair = open_pair(perturbed, golden)
    assert (pair.kind, pair.steps, pair.ranks) == ("mindspore", [0, 1, 2, 3], [0])
    seen: list[tuple[int, int]] = []
    outcome = run_compare(pair, 1, 0, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (195, 195) and len(outcome.pairs) == len(outcome.report.rows) == 195
    assert outcome.report.summary["diverged"] == 2
    asked = iter(range(1000))
    stopped = run_compare(pair, 1, 0, stopped=lambda: next(asked) >= 10)
    assert stopped.stopped and len(stopped.report.rows) == len(stopped.pairs) < 195
    with pytest.raises(CompareProblem, match="iteration 7"):
        run_compare(pair, 7, 0)
    with pytest.raises(CompareProblem, match="rank 3"):
        run_compare(pair, 1, 3)
    with pytest.raises(CompareProblem, match="not a folder"):
        open_pair(perturbed / "nope", golden)


def test_rows_numbers_bar_and_filters() -> None:
    assert as_number("12.5%") == pytest.approx(0.125)
    assert as_number("unsupported") is None and as_number("0") == 0.0
    assert number_text(0.99998765) == "0.9999877"
    assert number_text(1.23456e-5) == "1.235e-05"
    assert number_text("unsupported") == "unsuppor…"
    assert fit_name("abcdefghij", 5) == "…ghij"
    ok = Row("g/Default/a-op0:output.0", 0, 1, "pass")
    bad = Row("g/Default/b-op1:output.0", 0, 1, "diverged", reason="NaN or Inf in the target only")
    report = CompareReport([ok, bad])
    assert bar(bad).plain == "████████"  # no number (a NaN), drawn whole
    assert bar(ok).plain.strip() == ""
    assert [s.index for s in shown_rows(report, name_filter(""), "diverged")] == [1]
    assert [s.index for s in shown_rows(report, name_filter("a-op"), "all")] == [0]
    assert summary_line(report, False) == (
        "1 diverged (first: b-op1:output.0) of 2 compared, 0 unmatched, 0 skipped"
    )


def test_statistics_side_by_side_text() -> None:
    from tuidebug.compare.metrics import StatRecord, stat_diffs

    t, g = StatRecord(0.285156, -0.5, 0.1, 1.0), StatRecord(0.28635, -0.5, 0.1, 1.0)
    row = Row("Functional.x.0.forward.output.0", 0, 0, "pass", target_stats=t, golden_stats=g)
    row.stat_diffs = stat_diffs(t, g)
    lines = statistics_text(row).splitlines()
    assert len(lines) == 5 and all(len(line) <= 56 for line in lines)  # fits 80 columns
    assert lines[1].split()[0] == "max" and lines[1].endswith("%")
    assert number_text("0.4167128507190922%") == "0.4167%"


def test_difference_and_largest() -> None:
    t = np.array([[1.0, 2.0], [3.0, np.nan]], dtype=np.float32)
    g = np.array([[1.0, 2.5], [3.0, 4.0]], dtype=np.float32)
    d = difference(t, g)
    assert d is not None and d.dtype == np.float64
    assert largest_at(np.abs(d)) == (0, 1)
    assert difference(t, g[:1]) is None
    assert largest_at(np.array([np.nan])) is None


# ------------------------------------------------------------------------ snapshots
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_divergence_tab(
    snap_compare: Any, perturbed: Path, golden: Path, size: tuple[int, int]
) -> None:
    async def run_before(pilot: Any) -> None:
        await at_iteration_1(pilot)
        pilot.app.clear_notifications()

    app = debugger(perturbed, golden)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_side_by_side(
    snap_compare: Any, perturbed: Path, golden: Path, size: tuple[int, int]
) -> None:
    async def run_before(pilot: Any) -> None:
        await at_iteration_1(pilot)
        await pilot.press("enter")
        screen = await wait_for_screen(pilot, SideBySideScreen)
        await wait_until(pilot, lambda: screen.loaded, what="both values")
        await settled(pilot)
        pilot.app.clear_notifications()

    app = debugger(perturbed, golden)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_msprobe_compare(
    snap_compare: Any, msprobe_mlp: Path, size: tuple[int, int]
) -> None:
    async def run_before(pilot: Any) -> None:
        await compared(pilot, 0)
        pilot.app.clear_notifications()

    app = CompareApp(
        str(msprobe_mlp / "tensor_mix_bf16"),
        str(msprobe_mlp / "tensor_mix_fp32"),
        source_label="tensor_mix_bf16 against tensor_mix_fp32",
    )
    assert snap_compare(app, terminal_size=size, run_before=run_before)
