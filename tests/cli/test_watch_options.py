"""--watch, --watch-file and --recommended on `tuidebug offline`, `online`, `demo` (and
`--watch-file` on `check`): validated with the core parser before anything starts, every
mistake one sentence on stderr and exit status 2; good ones reach the app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tuidebug import cli
from tuidebug.cli import launch
from tuidebug.cli import online as cli_online

FAKE_APP = "tuidebug.tui.app.run_app"


def one_sentence(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"tuidebug {command}: ") and lines[0].endswith("."), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Replaces the app: each launch records the session and the keyword arguments."""
    calls: list[dict[str, Any]] = []

    def fake_run_app(session: Any, **kwargs: Any) -> int:
        calls.append({"session": session, **kwargs})
        return 0

    monkeypatch.setattr(FAKE_APP, fake_run_app)
    monkeypatch.setattr(launch, "on_terminal", lambda: True)  # the app would need one
    return calls


# ------------------------------------------------------------------ offline
def test_offline_watch_specs_and_files_reach_the_app(
    opened: list[dict[str, Any]], dump_2_10: Path, tmp_path: Path
) -> None:
    file = tmp_path / "watch.txt"
    file.write_text("# saved by tuidebug\n\nWCL:abs_mean_update_ratio_gt=1  # weights\nGE\n")
    argv = ["offline", str(dump_2_10), "--watch", "TO", "--watch", "TL:abs_mean_gt=1e3"]
    assert cli.main([*argv, "--watch-file", str(file)]) == 0
    (call,) = opened
    assert call["watch_specs"] == [
        "TO",
        "TL:abs_mean_gt=1e3",
        "WCL:abs_mean_update_ratio_gt=1",
        "GE",
    ]
    assert call["recommended"] is False and call["start_session"] is True


def test_offline_recommended_alone(opened: list[dict[str, Any]], dump_2_10: Path) -> None:
    assert cli.main(["offline", str(dump_2_10), "--recommended"]) == 0
    assert opened[0]["watch_specs"] == [] and opened[0]["recommended"] is True


def test_offline_without_watch_options_starts_as_before(
    opened: list[dict[str, Any]], dump_2_10: Path
) -> None:
    assert cli.main(["offline", str(dump_2_10)]) == 0
    # no watchpoints to create: the app offers the recommended set
    assert opened[0]["watch_specs"] == [] and opened[0]["recommended"] is False


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("XX", "--watch 'XX': Unknown condition 'XX'"),
        ("TL", "--watch 'TL': TL (tensor_too_large) needs at least one threshold"),
        ("TL:abs_mean_gt=abc", "needs a number, got 'abc'"),
        ("TZ:zero_percentage_ge=150", "zero_percentage_ge"),
        ("TR:range_percentage_lt=5", "also needs"),
        ("WNC:equal_nan=maybe", "must be true or false"),
    ],
)
def test_offline_bad_spec_is_one_sentence_before_the_app(
    opened: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    dump_2_10: Path,
    spec: str,
    words: str,
) -> None:
    assert cli.main(["offline", str(dump_2_10), "--watch", "TO", "--watch", spec]) == 2
    assert words in one_sentence(capsys.readouterr().err, "offline")
    assert opened == []


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"TO\n\nTL:abs_mean_gt=oops\n", ", line 3 ('TL:abs_mean_gt=oops'): Parameter abs_mean_gt"),
        (b"# only comments\n\n", "holds no watch spec"),
        (b"TO\n\xff\xfe\x00bad\n", "is not UTF-8 text"),
        (b"TO\n" * 400_000, "is larger than 1 MiB"),
    ],
)
def test_offline_bad_watch_file(
    opened: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    dump_2_10: Path,
    tmp_path: Path,
    content: bytes,
    words: str,
) -> None:
    file = tmp_path / "watch.txt"
    file.write_bytes(content)
    assert cli.main(["offline", str(dump_2_10), "--watch-file", str(file)]) == 2
    line = one_sentence(capsys.readouterr().err, "offline")
    assert f"--watch-file {file}" in line and words in line
    assert opened == []


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_offline_unreadable_watch_file(
    opened: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    dump_2_10: Path,
    tmp_path: Path,
    kind: str,
) -> None:
    path = tmp_path / "nope.txt" if kind == "missing" else tmp_path
    assert cli.main(["offline", str(dump_2_10), "--watch-file", str(path)]) == 2
    line = one_sentence(capsys.readouterr().err, "offline")
    assert line.startswith(f"tuidebug offline: cannot read --watch-file {path}: ")
    assert opened == []


def test_bad_spec_fails_without_importing_textual(dump_2_10: Path) -> None:
    code = (
        "import sys\n"
        "from tuidebug.cli import main\n"
        f"rc = main(['offline', {str(dump_2_10)!r}, '--watch', 'TL:nope=1'])\n"
        "assert rc == 2, rc\n"
        "assert 'textual' not in sys.modules, 'textual was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "Unknown parameter 'nope'" in result.stderr


# ------------------------------------------------------------------ demo
def test_demo_bad_spec_writes_no_dump(
    opened: list[dict[str, Any]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "demo"
    assert cli.main(["demo", "--out", str(out), "--watch", "TL:abs_mean_gt"]) == 2
    assert "expected name=value" in one_sentence(capsys.readouterr().err, "demo")
    assert not out.exists() and opened == []


def test_demo_passes_the_watchpoints(opened: list[dict[str, Any]], tmp_path: Path) -> None:
    out = tmp_path / "demo"
    argv = ["demo", "--out", str(out), "--watch", "TO", "--watch", "TL:abs_mean_gt=1e3"]
    assert cli.main([*argv, "--recommended"]) == 0
    assert opened[0]["watch_specs"] == ["TO", "TL:abs_mean_gt=1e3"]
    assert opened[0]["recommended"] is True


# ------------------------------------------------------------------ online
def test_online_bad_spec_ends_before_listening(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tuidebug.online.job import JobSession
    from tuidebug.online.session import OnlineSession

    def never(self: OnlineSession) -> None:
        raise AssertionError("the server must not start")

    monkeypatch.setattr(OnlineSession, "start", never)
    # `tuidebug online` serves a JobSession (every rank of one job)
    monkeypatch.setattr(JobSession, "start", never)
    assert cli.main(["online", "--port", "0", "--watch", "GV:abs_mean_lt=-1"]) == 2
    assert "abs_mean_lt" in one_sentence(capsys.readouterr().err, "online")
    assert cli.main(["online", "--port", "0", "--watch-file", str(tmp_path / "x")]) == 2
    assert "cannot read --watch-file" in one_sentence(capsys.readouterr().err, "online")


def test_online_passes_the_watchpoints_to_the_tui(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, dict[str, Any]]] = []

    def runner(session: Any, **kwargs: Any) -> int:
        seen.append((session, kwargs))
        return 0

    monkeypatch.setattr(cli_online, "_tui_runner", lambda: runner)
    monkeypatch.setattr(launch, "on_terminal", lambda: True)
    assert cli.main(["online", "--port", "0", "--watch", "TO", "--recommended"]) == 0
    assert seen[0][1] == {"watch_specs": ["TO"], "recommended": True}
    assert cli.main(["online", "--port", "0"]) == 0
    assert seen[1][1] == {"watch_specs": [], "recommended": False}


def test_online_headless_says_the_watchpoints_are_not_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_online, "_tui_runner", lambda: None)

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_online, "_wait_forever", ctrl_c)
    assert cli.main(["online", "--port", "0", "--watch", "TO"]) == 0
    err = capsys.readouterr().err
    assert "no watchpoint is set" in one_sentence(err, "online")


# ------------------------------------------------------------------ check
def test_check_reads_a_watch_file_like_watch_options(
    capsys: pytest.CaptureFixture[str], dump_2_10: Path, tmp_path: Path
) -> None:
    specs = ["TL:abs_mean_gt=1", "WCS:abs_mean_update_ratio_lt=1e-3"]
    file = tmp_path / "watch.txt"
    file.write_text("# from the TUI\n" + "\n".join(specs) + "\n")
    base = ["check", str(dump_2_10), "--iteration", "0-1", "--json"]
    assert cli.main([*base, "--watch", specs[0], "--watch", specs[1]]) == 1
    by_options = json.loads(capsys.readouterr().out)
    assert cli.main([*base, "--watch-file", str(file)]) == 1
    by_file = json.loads(capsys.readouterr().out)
    assert by_file == by_options and by_file


def test_check_bad_watch_file(capsys: pytest.CaptureFixture[str], dump_2_10: Path) -> None:
    assert cli.main(["check", str(dump_2_10), "--watch-file", "/no/such/file"]) == 2
    line = one_sentence(capsys.readouterr().err, "check")
    assert line == (
        "tuidebug check: cannot read --watch-file /no/such/file: No such file or directory."
    )
