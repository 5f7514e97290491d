"""`tuidebug offline DUMP 2>log`: the TUI is drawn on the terminal, the log file gets no
screen (issue 27 §6). Textual's Linux driver draws on `sys.__stderr__`; the launcher points it
at the terminal for the run."""

from __future__ import annotations

import io
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tuidebug.cli.launch import drawn_on_the_terminal

ALT_SCREEN = b"\x1b[?1049h"  # what a full-screen app writes first


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.timeout(20)
@pytest.mark.skipif(sys.platform == "win32", reason="Textual's Linux driver")
async def test_the_driver_draws_on_stdout_when_only_stdout_is_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from textual.app import App
    from textual.drivers.linux_driver import LinuxDriver

    terminal = _Tty()
    with (tmp_path / "log").open("w") as log:
        monkeypatch.setattr(sys, "__stdout__", terminal)
        monkeypatch.setattr(sys, "__stderr__", log)
        with drawn_on_the_terminal():
            driver = LinuxDriver(App())
        assert driver._file is terminal
        assert sys.__stderr__ is log  # only for the run
        # stderr a terminal too: nothing to change
        other = _Tty()
        monkeypatch.setattr(sys, "__stderr__", other)
        with drawn_on_the_terminal():
            assert LinuxDriver(App())._file is other
    signal.signal(signal.SIGTSTP, signal.SIG_DFL)  # the drivers set these: leave none behind
    signal.signal(signal.SIGCONT, signal.SIG_DFL)


def _read_until(fd: int, wanted: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


@pytest.mark.timeout(90)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pty and Linux's driver")
def test_offline_with_stderr_to_a_file_draws_on_the_terminal(
    dump_2_0: Path, tmp_path: Path
) -> None:
    import pty

    log = tmp_path / "log"
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="30")
    env.pop("TUIDEBUG_KEYS", None)
    with log.open("wb") as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "tuidebug", "offline", str(dump_2_0)],
            stdin=slave,
            stdout=slave,
            stderr=err,
            env=env,
            start_new_session=True,
        )
    os.close(slave)
    try:
        seen = _read_until(master, ALT_SCREEN, 60)
        assert ALT_SCREEN in seen, f"the terminal got no screen; the log has {log.read_bytes()!r}"
        seen += _read_until(master, b"\x00never", 1.0)  # let it draw a first frame
    finally:
        child.kill()
        child.wait(20)
        os.close(master)
    assert ALT_SCREEN not in log.read_bytes()
    assert b"\x1b[" not in log.read_bytes()  # no screen at all, only log lines may be there
