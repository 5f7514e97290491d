"""`tuidebug offline TARGET --against GOLDEN` (issue 30): a golden dump that cannot be
compared at all is one sentence and exit 2 before the app starts; a MindSpore pair opens the
debugger with the golden passed on; two msprobe dumps open the compare screen alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tuidebug.cli import main


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_against_a_missing_folder(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, tmp_path: Path
) -> None:
    assert main(["offline", str(dump_2_0), "--against", str(tmp_path / "nope")]) == 2
    assert _err(capsys) == f"tuidebug offline: --against {tmp_path / 'nope'} does not exist."


def test_against_a_file(capsys: pytest.CaptureFixture[str], dump_2_0: Path, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert main(["offline", str(dump_2_0), "--against", str(tmp_path / "f")]) == 2
    assert "is not a folder holding a dump" in _err(capsys)


def test_msprobe_against_mindspore(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, fixtures_dir: Path
) -> None:
    msprobe = fixtures_dir / "msprobe_mlp" / "stat_mix_fp32"
    assert main(["offline", str(msprobe), "--against", str(dump_2_0)]) == 2
    assert "is an msprobe dump and the other is not" in _err(capsys)
    assert main(["offline", str(dump_2_0), "--against", str(msprobe)]) == 2
    assert "is an msprobe dump and the other is not" in _err(capsys)


def test_msprobe_pair_needs_a_terminal(
    capsys: pytest.CaptureFixture[str], fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tuidebug.cli.launch.on_terminal", lambda: False)
    root = fixtures_dir / "msprobe_mlp"
    argv = ["offline", str(root / "stat_mix_bf16"), "--against", str(root / "stat_mix_fp32")]
    assert main(argv) == 2
    assert "the TUI needs a terminal" in _err(capsys)


def test_msprobe_pair_opens_the_compare_screen(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []
    monkeypatch.setattr("tuidebug.cli.launch.on_terminal", lambda: True)

    def fake_compare_app(target: str, golden: str) -> int:
        seen.append((target, golden))
        return 0

    monkeypatch.setattr("tuidebug.tui.divergence.standalone.run_compare_app", fake_compare_app)
    root = fixtures_dir / "msprobe_mlp"
    target, golden = str(root / "tensor_mix_bf16"), str(root / "tensor_mix_fp32")
    assert main(["offline", target, "--against", golden]) == 0
    assert seen == [(target, golden)]


def test_mindspore_pair_passes_the_golden_to_the_app(
    monkeypatch: pytest.MonkeyPatch, dump_2_0: Path
) -> None:
    seen: dict[str, Any] = {}

    def fake_run_app(session: Any, **kwargs: Any) -> int:
        seen.update(kwargs)
        return 0

    monkeypatch.setattr("tuidebug.tui.app.run_app", fake_run_app)
    monkeypatch.setattr("tuidebug.cli.launch.on_terminal", lambda: True)
    assert main(["offline", str(dump_2_0), "--against", str(dump_2_0)]) == 0
    assert seen["against"] == str(dump_2_0)
