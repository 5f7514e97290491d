"""The user's keys file: where it is found, how it is read and checked, how the app applies
it (a remapped key runs its action, the old key no longer does, mistakes are a notice) and
what `tuidebug keys` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button

from tests.tui.support import FakeSession, first_frame_of, settled, wait_for_screen, wait_until
from tuidebug import cli
from tuidebug.cli.common import EXIT_USAGE
from tuidebug.core.session import SessionState
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.help_screen import HelpScreen, context_help
from tuidebug.tui.keys.keymap import (
    ENV_VAR,
    active_keys,
    keys_file,
    keys_file_origin,
    known_bindings,
    load_config,
    load_keymap,
    parse_config,
    parse_keymap,
)
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.run.control_bar import ControlBar
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.watchpoints.editor import WatchpointEditor
from tuidebug.tui.watchpoints.list_pane import WatchpointList

SIZE = (160, 48)
FILE = "/home/u/.config/tuidebug/keys.toml"


def parse(text: str) -> tuple[dict[str, str], list[str]]:
    return parse_keymap(text, FILE)


# ------------------------------------------------------------------- where the file is
def test_the_file_is_found_by_env_then_xdg_then_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    assert keys_file({ENV_VAR: "~/my keys.toml"}) == Path("/home/u/my keys.toml")
    assert keys_file({ENV_VAR: "/k.toml", "XDG_CONFIG_HOME": "/xdg"}) == Path("/k.toml")
    assert keys_file({"XDG_CONFIG_HOME": "/xdg"}) == Path("/xdg/tuidebug/keys.toml")
    # the XDG spec: a relative XDG_CONFIG_HOME is ignored
    assert keys_file({"XDG_CONFIG_HOME": "rel"}) == Path("/home/u/.config/tuidebug/keys.toml")
    assert keys_file({ENV_VAR: " "}) == Path("/home/u/.config/tuidebug/keys.toml")
    assert keys_file_origin({ENV_VAR: "/k.toml"})[1] == "$TUIDEBUG_KEYS"


def test_a_missing_file_is_no_remapping(tmp_path: Path) -> None:
    assert load_keymap(tmp_path / "keys.toml") == ({}, [])
    assert load_keymap(tmp_path / "no" / "such" / "keys.toml") == ({}, [])
    (tmp_path / "empty.toml").write_text("")
    assert load_keymap(tmp_path / "empty.toml") == ({}, [])


# --------------------------------------------------------------------------- parsing
def test_short_and_full_ids_and_several_keys() -> None:
    keymap, problems = parse(
        "[keys]\n"
        'step = "j"\n'
        '"tuidebug.continue" = "ctrl+r, c"\n'
        'tensor.heatmap = "H"\n'  # a dotted TOML key: the id it spells
        'help = "?,f2"\n'
    )
    assert problems == []
    assert keymap == {
        "tuidebug.step": "j",
        "tuidebug.continue": "ctrl+r,c",
        "tensor.heatmap": "H",
        "tuidebug.help": "question_mark,f2",  # Textual's names, as it matches key presses
    }


def test_every_id_of_the_tui_is_known_and_remappable() -> None:
    known = known_bindings()
    for binding in DebuggerApp.BINDINGS:
        assert getattr(binding, "id", None) in known
    assert known["tuidebug.help"].keys == ("question_mark", "f1")
    assert known["tuidebug.step"].description == "Step"
    for widget_id in ("tensor.heatmap", "watchpoints.toggle", "editor.save", "help.close"):
        assert widget_id in known
    assert active_keys("tuidebug.step", {}) == ["n"]
    assert active_keys("tuidebug.step", {"tuidebug.step": "j,k"}) == ["j", "k"]


BAD = [
    ("[keys\n", "is not valid TOML (", "no keys were remapped"),
    ('[keys]\nstepp = "j"\n', "[keys] stepp is not a key binding", "did you mean tuidebug.step?"),
    ('[keys]\nheatmap = "j"\n', "[keys] heatmap is not", "did you mean tensor.heatmap?"),
    ('[keys]\nzzz = "j"\n', "[keys] zzz is not a key binding", "`tuidebug keys` lists them all"),
    ("[keys]\nstep = 5\n", "[keys] step must be a string of keys", "not a number (5)"),
    ("[keys]\nstep = true\n", "[keys] step must be a string", "not true/false"),
    ('[keys]\nstep = ["j", "k"]\n', "[keys] step must be a string", '"ctrl+r,c"'),
    ('[keys]\nstep = ""\n', '[keys] step = "": no key is given', "delete the line"),
    ('[keys]\nstep = "  "\n', "[keys] step", "no key is given"),
    ('[keys]\nstep = "j,,k"\n', '[keys] step = "j,,k": one of its keys is empty', "comma"),
    ('[keys]\nstep = "j,"\n', "[keys] step", "one of its keys is empty"),
    ('[keys]\nstep = "ctrl r"\n', "'ctrl r' is not a key name", "ctrl+r, not ctrl r"),
    ("keys = 3\n", "keys must be a table ([keys]", "not a number"),
    ('step = "j"\n', "has 'step' outside the [keys] table", "ignored"),
    (
        '[keys]\nstep = "j"\n"tuidebug.step" = "k"\n',
        "[keys] tuidebug.step remaps tuidebug.step again (after step)",
        'the later line, "k", wins',
    ),
    ('[keys]\nstep = "c"\n', "[keys] step gives c to tuidebug.step", "from tuidebug.continue"),
    (
        '[keys]\npause = "r"\nrecheck = "r"\n',
        "r is given to both tuidebug.pause and tuidebug.recheck",
        "only one of them",
    ),
]


@pytest.mark.parametrize(("text", "entry", "hint"), BAD)
def test_every_mistake_is_one_sentence_naming_the_file_and_entry(
    text: str, entry: str, hint: str
) -> None:
    _keymap, problems = parse(text)
    assert len(problems) == 1, problems
    sentence = problems[0]
    assert FILE in sentence and entry in sentence and hint in sentence
    assert sentence.endswith(".") and "\n" not in sentence


def test_the_valid_entries_still_apply_beside_a_mistake() -> None:
    keymap, problems = parse('[keys]\nstep = "j"\nstepp = "k"\nquit = 1\n')
    assert keymap == {"tuidebug.step": "j"}
    assert len(problems) == 2


def test_remapping_both_sides_of_a_key_is_no_clash() -> None:
    assert parse('[keys]\nstep = "c"\ncontinue = "n"\n') == (
        {"tuidebug.step": "c", "tuidebug.continue": "n"},
        [],
    )


def test_unreadable_and_non_utf8_files_are_sentences(tmp_path: Path) -> None:
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[keys]\nstep = "\xe9"\n')
    assert load_keymap(latin) == (
        {},
        [f"The keys file {latin} is not UTF-8 text, so no keys were remapped."],
    )
    keymap, problems = load_keymap(tmp_path)  # a directory
    assert keymap == {} and len(problems) == 1
    assert problems[0].startswith(f"The keys file {tmp_path} cannot be read (")


# ------------------------------------------------------------------------------ app
async def started(pilot: Any) -> None:
    """Loaded, the recommended-watchpoints offer declined, nothing left pending."""
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("n")  # the dialog's own n (confirm.no), not the app's step
    await wait_until(
        pilot,
        lambda: not isinstance(pilot.app.screen, ConfirmScreen),
        what="the recommended-watchpoints offer to close",
    )
    await settled(pilot)


def warnings(app: DebuggerApp) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "warning"]


def keys_file_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keys.toml"
    path.write_text(text)
    monkeypatch.setenv(ENV_VAR, str(path))
    return path


def steps(session: FakeSession) -> list[str]:
    return [c for c in session.calls if c.startswith("step")]


async def test_a_remapped_key_steps_and_the_old_one_no_longer_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keys_file_with(monkeypatch, tmp_path, '[keys]\nstep = "j"\n')
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, user_keys=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await pilot.press("j")
        await wait_until(pilot, lambda: steps(session) == ["step 1"], what="j to step")
        await settled(pilot)
        await pilot.press("n")
        await settled(pilot)  # n is not bound any more: nothing is to come
        assert steps(session) == ["step 1"]
        assert warnings(app) == []
        # the help screen, its footer and the palette show the key as it is now
        assert app.help_keys()[0][0] == "j"
        bar = app.query_one(ControlBar)
        assert str(bar.query_one("#control-step", Button).label) == "j Step"
        assert str(bar.query_one("#control-continue", Button).label) == "c Continue"
        step_help = next(c.help for c in app.palette_commands() if c.title == "Step")
        assert step_help.endswith("(j)")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "Esc closes" in str(app.screen.query_one("#help-footer").render())
        await pilot.press("escape")
        # a refused key is explained for its new key, and the old key says nothing
        session._set(state=SessionState.RUNNING)
        await wait_until(
            pilot,
            lambda: app._metadata.state is SessionState.RUNNING,
            what="the app to know the training runs",
        )
        await pilot.press("n")
        await settled(pilot)
        assert warnings(app) == []
        await pilot.press("j")
        await wait_until(pilot, lambda: warnings(app), what="j's refusal")
        await settled(pilot)
        assert len(warnings(app)) == 1
        assert steps(session) == ["step 1"]


async def test_a_remapped_widget_key_works_in_its_pane(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keys_file_with(monkeypatch, tmp_path, '[keys]\nhelp = "f2"\n"help.close" = "x"\n')
    app = DebuggerApp(FakeSession(), start_session=True, user_keys=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f2")
        assert isinstance(app.screen, HelpScreen)
        assert "x closes" in str(app.screen.query_one("#help-footer").render())
        help_row = next(row for row in app.help_keys() if row[1].startswith("this help"))
        assert help_row[0] == "f2"
        await pilot.press("x")
        assert not isinstance(app.screen, HelpScreen)


async def test_a_bad_keys_file_is_a_notice_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = keys_file_with(monkeypatch, tmp_path, '[keys]\nstepp = "j"\nstep = 3\n')
    session = FakeSession()
    app = DebuggerApp(session, start_session=True, user_keys=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        [notice] = warnings(app)
        assert f"In the keys file {path}, [keys] stepp is not a key binding" in notice
        assert "[keys] step must be a string" in notice
        await pilot.press("n")  # the defaults still work
        await wait_until(pilot, lambda: steps(session) == ["step 1"], what="n to step")


async def test_malformed_toml_is_a_notice_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keys_file_with(monkeypatch, tmp_path, "[keys\nstep = ")
    app = DebuggerApp(FakeSession(), start_session=True, user_keys=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        [notice] = warnings(app)
        assert "is not valid TOML" in notice


async def test_without_user_keys_the_file_is_not_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Tests and screenshots build the app directly: a developer's own keys.toml must not
    change them (only run_app, the real start, reads it)."""
    keys_file_with(monkeypatch, tmp_path, '[keys]\nstep = "j"\n')
    session = FakeSession()
    app = DebuggerApp(session, start_session=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await pilot.press("n")
        await wait_until(pilot, lambda: steps(session) == ["step 1"], what="n to step")
        assert app.keymap == {}


def test_run_app_reads_the_users_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    built: dict[str, Any] = {}

    def fake_run(self: DebuggerApp) -> int:
        built["user_keys"] = self._user_keys
        return 0

    monkeypatch.setattr(DebuggerApp, "run", fake_run)
    from tuidebug.tui.app import run_app

    assert run_app(FakeSession()) == 0
    assert built["user_keys"] is True


# ------------------------------------------------------------------------------ CLI
def test_keys_lists_every_binding_and_the_missing_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "keys.toml"
    monkeypatch.setenv(ENV_VAR, str(missing))
    assert cli.main(["keys"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["binding", "id", "default", "keys", "does"]
    step = next(line for line in lines if line.startswith("tuidebug.step "))
    assert step.split() == ["tuidebug.step", "n", "Step"]
    help_line = next(line for line in lines if line.startswith("tuidebug.help "))
    assert help_line.split() == ["tuidebug.help", "question_mark,f1", "Help"]
    for binding_id in known_bindings():
        assert any(line.startswith(f"{binding_id} ") for line in lines), binding_id
    assert f"Keys file: {missing} ($TUIDEBUG_KEYS; not found: create it to remap keys)." in out
    assert '"tuidebug.continue" = "ctrl+r,c"' in out


def test_keys_shows_the_users_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = keys_file_with(monkeypatch, tmp_path, '[keys]\nstep = "j"\n')
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "tuidebug").mkdir(parents=True)
    path.rename(tmp_path / "xdg" / "tuidebug" / "keys.toml")
    assert cli.main(["keys"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[-2:] == ["your", "keys"]
    step = next(line for line in out.splitlines() if line.startswith("tuidebug.step "))
    assert step.split() == ["tuidebug.step", "n", "Step", "j"]
    assert "($XDG_CONFIG_HOME; found, 1 binding remapped)." in out


def test_keys_with_a_bad_file_prints_the_sentences_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = keys_file_with(monkeypatch, tmp_path, '[keys]\nstepp = "j"\nstep = ""\n')
    assert cli.main(["keys"]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert "tuidebug.step" in out  # the list still helps to fix the file
    assert err.splitlines() == [
        f"tuidebug keys: In the keys file {path}, [keys] stepp is not a key binding "
        "(did you mean tuidebug.step? `tuidebug keys` lists them all).",
        f'tuidebug keys: In the keys file {path}, [keys] step = "": no key is given '
        "(write one, or delete the line to keep the default).",
    ]
    path.write_text("[keys")
    assert cli.main(["keys"]) == EXIT_USAGE
    assert "is not valid TOML" in capsys.readouterr().err


async def test_the_tensor_panes_help_shows_its_keys_as_bound_now(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keys_file_with(monkeypatch, tmp_path, '[keys]\n"tensor.find" = "F"\n')
    app = DebuggerApp(FakeSession(), start_session=True, user_keys=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        # what the help screen shows when focus is in the tensor pane
        found = context_help(app.query_one(TensorView), app.key_hint)
        assert found is not None
        text = found[1]
        assert "  F    " in text and "find nan" in text
        assert "  m    " in text  # a default key, filled in too
        assert "] / [" in text and "{" not in text


def test_keys_warns_once_per_pane_that_keeps_a_remapped_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # step = "t": the tree's own t (node type filter) and the tensor view's (tolerance) win
    # while the focus is there, and `tuidebug keys` said nothing of it.
    keys_file_with(monkeypatch, tmp_path, '[keys]\nstep = "t"\n')
    assert cli.main(["keys"]) == 0  # the remapping still works elsewhere: warnings only
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "warning: t is remapped to tuidebug.step, but ScopeTree binds t itself "
        "(tree.type_filter), so t does not run tuidebug.step while the focus is in ScopeTree.",
        "warning: t is remapped to tuidebug.step, but TensorView binds t itself "
        "(tensor.tolerance), so t does not run tuidebug.step while the focus is in TensorView.",
    ]
    # moving the pane's own binding away too leaves nothing to warn about
    keys_file_with(monkeypatch, tmp_path, '[keys]\nstep = "t"\n"tree.type_filter" = "T"\n')
    assert cli.main(["keys"]) == 0
    assert "ScopeTree" not in capsys.readouterr().err
    # a key no pane binds: no warning
    keys_file_with(monkeypatch, tmp_path, '[keys]\nstep = "ctrl+n"\n')
    assert cli.main(["keys"]) == 0
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- [source] roots
def test_the_source_table_gives_standing_source_roots(tmp_path: Path) -> None:
    """`[source] roots` are `--source-root` entries kept in the keys file; they are no
    problem for the [keys] part, and `load_keymap` still reads only the keymap."""
    text = '[keys]\nstep = "j"\n[source]\nroots = ["/home/dev/ws=~/ws", "~/src"]\n'
    config = parse_config(text, FILE, known_bindings())
    assert config.source_roots == ["/home/dev/ws=~/ws", "~/src"]
    assert config.problems == [] and config.keymap == {"tuidebug.step": "j"}
    path = tmp_path / "keys.toml"
    path.write_text(text)
    assert load_keymap(path) == ({"tuidebug.step": "j"}, [])
    assert load_config(path).source_roots == ["/home/dev/ws=~/ws", "~/src"]
    # a single string is one root
    assert parse_config('[source]\nroots = "~/src"\n', FILE).source_roots == ["~/src"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("source = 3\n", "[source] must be a table"),
        ("[source]\nroot = []\n", "[source] has 'root', which is not a setting"),
        ("[source]\nroots = 3\n", "[source] roots must be a list of folders"),
        ('[source]\nroots = ["", 1]\n', '[source] roots has "", which is not a folder'),
        ('[source]\nroots = ["/a:/b"]\n', "holds ':'"),
    ],
)
def test_a_wrong_source_entry_is_one_sentence_and_left_out(text: str, said: str) -> None:
    config = parse_config(text, FILE, known_bindings())
    assert config.source_roots == [] and config.keymap == {}
    assert any(said in problem for problem in config.problems), config.problems
    assert all(problem.startswith(f"In the keys file {FILE}") for problem in config.problems)


async def test_the_empty_watchpoint_list_names_the_remapped_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """ "none: press w" names the key that adds a watchpoint now: in the first frame's shell
    and in the list that replaces it."""
    keys_file_with(monkeypatch, tmp_path, '[keys]\nnew_watchpoint = "f6"\n')
    app = DebuggerApp(FakeSession(), start_session=True, user_keys=True)

    def shown(app: DebuggerApp) -> list[object]:
        return [str(app.query_one("#watchpoints").render())]

    with first_frame_of(shown) as first:
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot)
            key = app.key_hint("tuidebug.new_watchpoint")
            assert key != "w"
            assert f"none: press {key}" in str(first[0])
            await wait_until(pilot, lambda: app._watchpoints.built, what="the list")
            table = app.query_one("#watchpoints", WatchpointList)
            assert f"none: press {key}" in str(table.get_row_at(0)[4])
            await pilot.press("f6")
            await wait_for_screen(pilot, WatchpointEditor)
