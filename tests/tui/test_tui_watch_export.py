"""Watchpoints between the TUI and scripts: a session started with --watch specs has them
(and no recommended offer); the palette copies them as a `tuidebug check` command and saves
them as a --watch-file, both read back by the command line's parser; `s` in the hit list
saves the hits as `tuidebug check --json` prints them for the same dump, step and specs."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select

from tests.tui.support import (
    FakeSession,
    notices,
    run_palette,
    settled,
    synthetic_graph,
    wait_for_notice,
    wait_for_screen,
    wait_until,
)
from tuidebug import cli
from tuidebug.cli.watch_options import parse_watch_arguments, read_watch_file
from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.core.watchpoints import parse_watch_spec
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.help_screen import context_help
from tuidebug.tui.kit.dialogs import ConfirmScreen, PromptScreen
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.watchpoints.list_pane import WatchpointList

SIZE = (160, 48)


notifications = notices


async def loaded(pilot: Any) -> None:
    """The graphs shown and the --watch specs applied (a worker): nothing left pending."""
    await wait_until(pilot, lambda: pilot.app.graphs, what="the graphs to load")
    await settled(pilot)


def as_watchpoints(specs: list[str]) -> list[tuple[Any, dict[str, float]]]:
    return [parse_watch_spec(spec) for spec in specs]


# ------------------------------------------------------------ watchpoints at start
SPECS = ["TO", "TL:abs_mean_gt=1e3", "WNC:equal_nan=true,rtol=0.01"]


async def test_started_with_watch_specs_has_them_and_no_offer() -> None:
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, watch_specs=SPECS)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_notice(pilot, "3 watchpoints created from the command line.")
        await settled(pilot)
        assert not isinstance(app.screen, ConfirmScreen)  # no recommended offer
        assert [(wp.condition, wp.params) for wp in session.watchpoints] == as_watchpoints(SPECS)
        assert app.query_one(WatchpointList).row_count == 3
        assert "3 watchpoints created from the command line." in notifications(app)
        # unchanged, they are exported as written
        assert [app.spec_of(wp) for wp in session.watchpoints] == SPECS


async def test_started_with_recommended_applies_them_without_asking() -> None:
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"], recommended=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_notice(pilot, "3 watchpoints created from the command line.")
        await settled(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        # the spec, then FakeSession's two recommended ones
        assert [wp.condition.abbr for wp in session.watchpoints] == ["TO", "TO", "WCL"]
        assert "3 watchpoints created from the command line." in notifications(app)


async def test_a_spec_that_watches_nothing_is_a_notice_naming_it() -> None:
    only_ops = Graph(
        "g",
        [
            Node(
                name="Default/Add-op0",
                kind=NodeKind.OPERATOR,
                op_type="Add",
                scope="Default",
                outputs=[TensorSpec(0, 11, (2,))],
            )
        ],
    )
    session = FakeSession(graph_list=[only_ops])
    app = DebuggerApp(session, start_session=True, watch_specs=["GV:abs_mean_lt=1e-9", "TO", "XX"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_notice(pilot, "1 watchpoint created from the command line.")
        await settled(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert [wp.condition.abbr for wp in session.watchpoints] == ["TO"]
        shown = notifications(app)
        assert (
            "--watch GV:abs_mean_lt=1e-9 watches no gradient node in the loaded graphs, so it "
            "was not created."
        ) in shown
        assert any(m.startswith("--watch XX: Unknown condition 'XX'") for m in shown)
        assert "1 watchpoint created from the command line." in shown


async def test_online_session_started_before_the_app_gets_them_on_mount() -> None:
    session = FakeSession(live=True)
    session.start()  # online: the graph arrived before the app was drawn
    app = DebuggerApp(session, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: session.watchpoints, what="the --watch spec applied")
        await settled(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert [wp.spec for wp in session.watchpoints] == ["TO"]


# ------------------------------------------------------------ watchpoints → specs
async def test_copy_check_command_parses_back_to_the_same_watchpoints() -> None:
    session = FakeSession()
    session._metadata = session._metadata.with_(source="/dumps/my run (1)")
    app = DebuggerApp(session, start_session=True, watch_specs=SPECS)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        # one made in the TUI, with a range, targets and a float that %g would round
        session.create_watchpoint(
            "AR",
            {
                "range_start_inclusive": -0.1234567891,
                "range_end_inclusive": 2.5,
                "range_percentage_gt": 99.9,
            },
            ["Default/network-Net/layer0-Block/ReLU-op1"],
        )
        disabled = session.create_watchpoint("TZ", {"zero_percentage_ge": 100})
        session.update_watchpoint(disabled.id, enabled=False)
        table = app.query_one(WatchpointList)
        await wait_until(pilot, lambda: len(table.watchpoints) == 5, what="5 watchpoints listed")
        await run_palette(pilot, "Copy watchpoints as a check command")
        await wait_for_notice(pilot, "Copied to the clipboard")
        command = app.clipboard
        words = shlex.split(command)
        assert words[:3] == ["tuidebug", "check", "/dumps/my run (1)"]
        args = cli.build_parser().parse_args(words[1:])
        parsed = [(o.condition, parse_watch_spec(o.spec)[1]) for o in parse_watch_arguments(args)]
        enabled = [wp for wp in session.watchpoints if wp.enabled]
        assert parsed == [(wp.condition, wp.params) for wp in enabled]
        shown = next(m for m in notifications(app) if m.startswith("Copied to the clipboard"))
        assert command in shown
        assert "1 disabled watchpoint is left out." in shown
        assert "1 of them watches chosen nodes here" in shown


async def test_copy_online_is_only_the_watch_options() -> None:
    session = FakeSession(live=True)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO", "GV:abs_mean_lt=1e-9"])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await run_palette(pilot, "Copy watchpoints as a check command")
        await wait_for_notice(pilot, "Copied to the clipboard")
        assert app.clipboard == "--watch TO --watch GV:abs_mean_lt=1e-9"


async def test_save_watchpoints_to_a_file_read_back_by_watch_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, watch_specs=SPECS)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        off = session.create_watchpoint("GE", {})
        session.update_watchpoint(off.id, enabled=False)
        table = app.query_one(WatchpointList)
        await wait_until(pilot, lambda: len(table.watchpoints) == 4, what="4 watchpoints listed")
        await run_palette(pilot, "Save watchpoints to file")
        prompt = await wait_for_screen(pilot, PromptScreen)
        assert prompt.query_one(Input).value == "tuidebug-watchpoints.txt"
        await pilot.press("enter")
        await wait_for_notice(pilot, "Saved 3 watchpoints")
        saved = tmp_path / "tuidebug-watchpoints.txt"
        assert [o.spec for o in read_watch_file(str(saved))] == SPECS
        assert "# disabled: GE" in saved.read_text()
        assert f"Saved 3 watchpoints and 1 disabled one as comments to {saved}; read them" in (
            "\n".join(notifications(app))
        )
        # a second save asks before replacing the file
        await run_palette(pilot, "Save watchpoints to file")
        prompt = await wait_for_screen(pilot, PromptScreen)
        await pilot.press("enter")
        error_line = prompt.query_one("#prompt-error")
        await wait_until(
            pilot,
            lambda: "exists: press Enter again" in str(error_line.render()),
            what="the question before replacing the file",
        )
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: not isinstance(app.screen, PromptScreen), what="the prompt to close"
        )


async def test_save_to_an_unwritable_place_is_a_notice(tmp_path: Path) -> None:
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await run_palette(pilot, "Save watchpoints to file")
        prompt = await wait_for_screen(pilot, PromptScreen)
        field = prompt.query_one(Input)
        error_line = prompt.query_one("#prompt-error")
        field.value = str(tmp_path / "missing" / "w.txt")
        await pilot.press("enter")
        await wait_until(pilot, lambda: str(error_line.render()), what="the prompt's error")
        error = str(error_line.render())
        assert error == f"There is no folder {tmp_path / 'missing'}."
        field.value = str(tmp_path)
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: "is a folder" in str(error_line.render()), what="'is a folder'"
        )
        await pilot.press("escape")
        await wait_until(
            pilot, lambda: not isinstance(app.screen, PromptScreen), what="the prompt to close"
        )
        app._watch_flows.write_file(str(tmp_path / "missing" / "w.txt"), lambda: "TO\n", "done")
        shown = await wait_for_notice(pilot, "Could not write")
        assert "No such file or directory" in shown


# ------------------------------------------------------------ saving hits
async def test_s_in_the_hit_list_saves_all_hits_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    session = FakeSession(graph_list=[synthetic_graph()])
    app = DebuggerApp(session, start_session=True, watch_specs=["TO", "TL:abs_mean_gt=1e3"])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("r")  # FakeSession: every watchpoint hits two nodes
        hits = app.query_one(HitList)
        await wait_until(pilot, lambda: hits.hit_count == 4, what="4 hits in the hit list")
        await settled(pilot)
        await pilot.press("2")
        hits.query_one("#hit-filter-watchpoint", Select).value = str(session.watchpoints[1].id)
        await wait_until(pilot, lambda: hits.shown_count == 2, what="the filter to show 2 hits")
        assert hits.hit_count == 4
        hits.tree_view.focus()
        help_text = context_help(hits.tree_view, app.key_hint)
        assert help_text is not None and "s saves every hit" in help_text[1]
        await pilot.press("s")
        prompt = await wait_for_screen(pilot, PromptScreen)
        assert prompt.query_one(Input).value == "tuidebug-hits-step1.json"
        await pilot.press("enter")
        await wait_for_notice(pilot, "Saved all 4 hits")
        saved = json.loads((tmp_path / "tuidebug-hits-step1.json").read_text())
        assert [h["watchpoint"] for h in saved] == [*["TO"] * 2, *["TL:abs_mean_gt=1e3"] * 2]
        assert saved[2]["params"] == [
            {"name": "abs_mean_gt", "value": 1000.0, "actual": 2001.0, "hit": True}
        ]
        path = tmp_path / "tuidebug-hits-step1.json"
        assert f"Saved all 4 hits (not only the 2 the filters show) to {path}." in notifications(
            app
        )


async def test_save_hits_without_hits_says_so() -> None:
    app = DebuggerApp(FakeSession(), start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        assert "Save hits…" not in [c.title for c in app.palette_commands()]
        await pilot.press("2")
        await pilot.press("s")
        await wait_for_notice(pilot, "There are no hits to save yet")
        await settled(pilot)
        assert not isinstance(app.screen, PromptScreen)


async def test_saved_hits_equal_check_json(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    dump_2_10: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same dump, step and specs: the TUI's file and `tuidebug check --json` agree."""
    specs = ["TL:abs_mean_gt=1", "WCS:abs_mean_update_ratio_lt=1e-3", "TZ:zero_percentage_ge=50"]
    monkeypatch.chdir(tmp_path)
    session = OfflineSession(dump_2_10)
    app = DebuggerApp(session, start_session=True, watch_specs=specs)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_notice(pilot, "3 watchpoints created from the command line.")
            await settled(pilot)
            assert not isinstance(app.screen, ConfirmScreen)
            assert len(session.watchpoints) == 3
            for step in (1, 2):  # step 2 = dump iteration 1
                await pilot.press("n")
                await wait_until(
                    pilot, lambda s=step: session.metadata.step == s, what=f"step {step}"
                )
                await settled(pilot)  # the check of the step done
            assert session.hits
            await run_palette(pilot, "Save hits")
            prompt = await wait_for_screen(pilot, PromptScreen)
            assert prompt.query_one(Input).value == "tuidebug-hits-step2.json"
            await pilot.press("enter")
            await wait_for_notice(pilot, "Saved all")
    finally:
        session.close()
    saved = json.loads((tmp_path / "tuidebug-hits-step2.json").read_text())
    argv = ["check", str(dump_2_10), "--iteration", "1", "--json", "--workers", "1"]
    for spec in specs:
        argv += ["--watch", spec]
    capsys.readouterr()
    assert cli.main(argv) == 1
    expected = json.loads(capsys.readouterr().out)
    assert {h["condition"] for h in saved} == {
        "tensor_too_large",
        "weight_change_too_small",
        "tensor_all_zero",
    }

    def key(hit: dict[str, Any]) -> str:
        return json.dumps(hit, sort_keys=True)

    assert sorted(saved, key=key) == sorted(expected, key=key)
