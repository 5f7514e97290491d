"""Helpers of the command-line tests: `tuidebug check` run in this process, and the rule every
line a command writes to stderr follows (one sentence: a warning or the final error, never a
traceback)."""

from __future__ import annotations

import pytest

from tuidebug.cli import main as cli_main


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`tuidebug check ARGV` in this process: its exit status, stdout and stderr."""
    code = cli_main(["check", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def sentences(err: str, command: str = "") -> list[str]:
    """The non-blank stderr lines, each checked to be one sentence: a warning or an error of
    `tuidebug COMMAND` (of any command when none is named)."""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    for line in lines:
        assert line.startswith(("warning: ", f"tuidebug {command}")), line
        assert line.endswith("."), line
    return lines
