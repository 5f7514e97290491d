"""`tuidebug offline` / `tuidebug demo`: argument mistakes end before the app starts, with
one sentence on stderr and exit status 2, and without loading Textual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tuidebug.cli import main


def test_offline_missing_path_is_one_sentence_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nope"
    assert main(["offline", str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tuidebug offline: {missing} does not exist."]


def test_offline_file_is_not_a_dump(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    file = tmp_path / "dump.npy"
    file.write_bytes(b"x")
    assert main(["offline", str(file)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"tuidebug offline: {file} is not a directory")
    assert "\n" not in err and "Traceback" not in err


def test_offline_negative_rank(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["offline", str(tmp_path), "--rank", "-1"]) == 2
    assert "--rank must be 0 or more" in capsys.readouterr().err


def test_bad_path_fails_without_importing_textual(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from tuidebug.cli import main\n"
        f"rc = main(['offline', {str(tmp_path / 'missing')!r}])\n"
        "assert rc == 2, rc\n"
        "assert 'textual' not in sys.modules, 'textual was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_offline_opens_the_app_on_the_dump(monkeypatch: pytest.MonkeyPatch, dump_2_0: Path) -> None:
    seen: dict[str, Any] = {}

    def fake_run_app(session: Any, *, start_session: bool = False, **_watches: Any) -> int:
        seen["session"] = session
        seen["start"] = start_session
        return 0

    monkeypatch.setattr("tuidebug.tui.app.run_app", fake_run_app)
    monkeypatch.setattr("tuidebug.cli.launch.on_terminal", lambda: True)  # the app would need one
    assert main(["offline", str(dump_2_0), "--rank", "0"]) == 0
    from tuidebug.offline.session import OfflineSession

    assert isinstance(seen["session"], OfflineSession)
    assert seen["start"] is True  # loading happens in the app's worker, with progress


def test_demo_writes_the_dump_and_opens_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[str] = []

    def fake_run_app(session: Any, *, start_session: bool = False, **_watches: Any) -> int:
        opened.append(session.dump_dir)
        return 0

    monkeypatch.setattr("tuidebug.tui.app.run_app", fake_run_app)
    monkeypatch.setattr("tuidebug.cli.launch.on_terminal", lambda: True)  # the app would need one
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    assert len(opened) == 1 and Path(opened[0]).is_relative_to(out)
    assert any(p.name.startswith("rank_") for p in Path(opened[0]).iterdir())
    assert "demo dump written to" in capsys.readouterr().err


def test_demo_out_must_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    assert main(["demo", "--out", str(file)]) == 2
    assert "is not a directory" in capsys.readouterr().err
