"""A history save that fails leaves nothing behind: no temporary file beside the history,
whichever step failed (issue 27 §6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tuidebug.commands import History
from tuidebug.tui.panes.command_line import load_history, save_history


def _history(*lines: str) -> History:
    history = History()
    for line in lines:
        history.add(line)
    return history


@pytest.mark.timeout(20)
def test_a_failed_rename_leaves_no_temporary_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "state" / "command_history"

    def refuse(_src: object, _dst: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    assert save_history(_history("lt", "pt x"), path) is False
    assert list(path.parent.iterdir()) == []


@pytest.mark.timeout(20)
def test_a_failed_write_leaves_no_temporary_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "command_history"
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, fd: int, mode: str) -> None:
            self.handle = real_fdopen(fd, mode)

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *_exc: object) -> None:
            self.handle.close()

        def write(self, _data: bytes) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", FullDisk)
    assert save_history(_history("lt"), path) is False
    assert list(tmp_path.iterdir()) == []


@pytest.mark.timeout(20)
def test_a_line_that_is_no_utf8_is_false_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "command_history"
    assert save_history(_history("pt \udcff"), path) is False
    assert list(tmp_path.iterdir()) == []


@pytest.mark.timeout(20)
def test_a_good_save_leaves_only_the_history(tmp_path: Path) -> None:
    path = tmp_path / "command_history"
    assert save_history(_history("lt", "pt x"), path) is True
    assert list(tmp_path.iterdir()) == [path]
    assert load_history(path).lines == ["lt", "pt x"]
