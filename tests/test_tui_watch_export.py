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
from tui_support import FakeSession, synthetic_graph

from tuidebug import cli
from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.core.watchpoints import parse_watch_spec
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.dialogs import ConfirmScreen, PromptScreen
from tuidebug.tui.help_screen import context_help
from tuidebug.tui.hit_list import HitList
from tuidebug.tui.watchpoint_list import WatchpointList

SIZE = (160, 48)


async def settle(pilot: Any, rounds: int = 4) -> None:
    for _ in range(rounds):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def notifications(app: DebuggerApp) -> list[str]:
    return [n.message for n in app._notifications]


async def run_palette(pilot: Any, title: str) -> None:
    await pilot.press("ctrl+p")
    await settle(pilot)
    await pilot.press(*title)
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)


def as_watchpoints(specs: list[str]) -> list[tuple[Any, dict[str, float]]]:
    return [parse_watch_spec(spec) for spec in specs]


# ------------------------------------------------------------ watchpoints at start
SPECS = ["TO", "TL:abs_mean_gt=1e3", "WNC:equal_nan=true,rtol=0.01"]


async def test_started_with_watch_specs_has_them_and_no_offer() -> None:
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, watch_specs=SPECS)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
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
        await settle(pilot)
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
        await settle(pilot)
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
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert [wp.spec for wp in session.watchpoints] == ["TO"]


# ------------------------------------------------------------ watchpoints → specs
async def test_copy_check_command_parses_back_to_the_same_watchpoints() -> None:
    session = FakeSession()
    session._metadata = session._metadata.with_(source="/dumps/my run (1)")
    app = DebuggerApp(session, start_session=True, watch_specs=SPECS)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
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
        await settle(pilot)
        await run_palette(pilot, "Copy watchpoints as a check command")
        command = app.clipboard
        words = shlex.split(command)
        assert words[:3] == ["tuidebug", "check", "/dumps/my run (1)"]
        args = cli.build_parser().parse_args(words[1:])
        parsed = [
            (o.condition, parse_watch_spec(o.spec)[1]) for o in cli.parse_watch_arguments(args)
        ]
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
        await settle(pilot)
        await run_palette(pilot, "Copy watchpoints as a check command")
        assert app.clipboard == "--watch TO --watch GV:abs_mean_lt=1e-9"


async def test_save_watchpoints_to_a_file_read_back_by_watch_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, watch_specs=SPECS)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        off = session.create_watchpoint("GE", {})
        session.update_watchpoint(off.id, enabled=False)
        await settle(pilot)
        await run_palette(pilot, "Save watchpoints to file")
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one(Input).value == "tuidebug-watchpoints.txt"
        await pilot.press("enter")
        await settle(pilot)
        saved = tmp_path / "tuidebug-watchpoints.txt"
        assert [o.spec for o in cli.read_watch_file(str(saved))] == SPECS
        assert "# disabled: GE" in saved.read_text()
        assert f"Saved 3 watchpoints and 1 disabled one as comments to {saved}; read them" in (
            "\n".join(notifications(app))
        )
        # a second save asks before replacing the file
        await run_palette(pilot, "Save watchpoints to file")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        error = str(app.screen.query_one("#prompt-error").render())
        assert "exists: press Enter again to replace it" in error
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, PromptScreen)


async def test_save_to_an_unwritable_place_is_a_notice(tmp_path: Path) -> None:
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await run_palette(pilot, "Save watchpoints to file")
        field = app.screen.query_one(Input)
        field.value = str(tmp_path / "missing" / "w.txt")
        await pilot.press("enter")
        await settle(pilot)
        error = str(app.screen.query_one("#prompt-error").render())
        assert error == f"There is no folder {tmp_path / 'missing'}."
        field.value = str(tmp_path)
        await pilot.press("enter")
        await settle(pilot)
        assert "is a folder" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("escape")
        await settle(pilot)
        app._write_file_worker(str(tmp_path / "missing" / "w.txt"), lambda: "TO\n", "done")
        await settle(pilot)
        assert any(
            m.startswith("Could not write") and "No such file or directory" in m
            for m in notifications(app)
        )


# ------------------------------------------------------------ saving hits
async def test_s_in_the_hit_list_saves_all_hits_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    session = FakeSession(graph_list=[synthetic_graph()])
    app = DebuggerApp(session, start_session=True, watch_specs=["TO", "TL:abs_mean_gt=1e3"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")  # FakeSession: every watchpoint hits two nodes
        await settle(pilot)
        await pilot.press("2")
        hits = app.query_one(HitList)
        hits.query_one("#hit-filter-watchpoint", Select).value = str(session.watchpoints[1].id)
        await settle(pilot)
        assert hits.shown_count == 2 and hits.hit_count == 4
        hits.tree.focus()
        help_text = context_help(hits.tree, app.key_hint)
        assert help_text is not None and "s saves every hit" in help_text[1]
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one(Input).value == "tuidebug-hits-step1.json"
        await pilot.press("enter")
        await settle(pilot)
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
        await settle(pilot)
        assert "Save hits…" not in [c.title for c in app.palette_commands()]
        await pilot.press("2")
        await pilot.press("s")
        await settle(pilot)
        assert not isinstance(app.screen, PromptScreen)
        assert any(m.startswith("There are no hits to save yet") for m in notifications(app))


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
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmScreen)
            assert len(session.watchpoints) == 3
            for _ in range(2):  # step 2 = dump iteration 1
                await pilot.press("n")
                await settle(pilot, 6)
            assert session.metadata.step == 2 and session.hits
            await run_palette(pilot, "Save hits")
            assert app.screen.query_one(Input).value == "tuidebug-hits-step2.json"
            await pilot.press("enter")
            await settle(pilot)
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
