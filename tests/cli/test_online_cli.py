"""`tuidebug online` / `tuidebug simulate`: user errors are one sentence and exit 2; without a
terminal `online` prints events instead of drawing; the simulate command drives a live session
and its log lines are prefixed sentences; the online layers never load textual."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.cli.support import sentences
from tests.online.support import TIMEOUT, make_session, wait_state, wait_until
from tuidebug import cli
from tuidebug.cli import launch
from tuidebug.cli import online as cli_online
from tuidebug.cli.common import EXIT_OK, EXIT_USAGE
from tuidebug.core.session import Ending, SessionState
from tuidebug.online.job import JobSession
from tuidebug.online.server import ServerStartError


def _one_sentence(text: str) -> None:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert lines[0].endswith("."), text
    assert "Traceback" not in text


def test_online_busy_port(capsys: pytest.CaptureFixture[str]) -> None:
    session, _ = make_session()
    try:
        code = cli.main(["online", "--port", str(session.port)])
        assert code == EXIT_USAGE
        err = capsys.readouterr().err
        _one_sentence(err)
        assert "already in use" in err
    finally:
        session.close()


def test_online_bad_port(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["online", "--port", "70000"]) == EXIT_USAGE
    _one_sentence(capsys.readouterr().err)


def test_online_warns_without_loopback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # never bind a public address in tests: the start fails right after the warning
    def refuse(self: JobSession) -> None:
        raise ServerStartError("Port 50051 on 0.0.0.0 is already in use; choose another.")

    monkeypatch.setattr(JobSession, "start", refuse)
    assert cli.main(["online", "--host", "0.0.0.0"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "no authentication" in err and "SSH tunnel" in err
    assert "already in use" in err


def test_online_headless_without_tui(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_online, "_tui_runner", lambda: None)

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_online, "_wait_forever", ctrl_c)
    assert cli.main(["online", "--port", "0"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "without the TUI" in out and "Ctrl+C" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "/no/such/dump"],
        ["simulate", "DUMP", "--connect", "nohostport"],
        ["simulate", "DUMP", "--connect", "127.0.0.1:99999"],
        ["simulate", "DUMP", "--heartbeat", "0"],
    ],
)
def test_simulate_user_errors(
    argv: list[str], dump_2_0: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(dump_2_0) if a == "DUMP" else a for a in argv]
    assert cli.main(argv) == EXIT_USAGE
    _one_sentence(capsys.readouterr().err)


def test_simulate_unreachable_debugger(dump_2_0: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session, _ = make_session()
    address = session.address
    session.close()
    assert cli.main(["simulate", str(dump_2_0), "--connect", address]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "Cannot reach the debugger" in err


def test_simulate_drives_a_session(dump_2_0: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session, _ = make_session()
    result: dict[str, int] = {}
    argv = ["simulate", str(dump_2_0), "--connect", session.address, "--backend", "GPU"]
    thread = threading.Thread(target=lambda: result.setdefault("code", cli.main(argv)))
    thread.start()
    try:
        wait_state(session, SessionState.WAITING)
        assert session.metadata.backend == "GPU"
        session.step(2)
        wait_until(lambda: session.metadata.step == 2, what="step 2")
        wait_state(session, SessionState.WAITING)
        session.terminate()
        thread.join(TIMEOUT)
        assert result == {"code": 0}
        # a terminate is named as one, on both sides (issue 28: "training ended")
        last = capsys.readouterr().out.splitlines()[-1]
        assert last == "tuidebug simulate: terminated by the debugger after 2 steps."
        assert session.metadata.ending is Ending.TERMINATED
    finally:
        session.close()
        thread.join(TIMEOUT)


@pytest.mark.parametrize(
    "module",
    [
        "tuidebug.online.server",
        "tuidebug.online.session",
        "tuidebug.online.demo",
        "tuidebug.client.protocol",
        "tuidebug.client.simulator",
    ],
)
def test_online_layers_load_without_textual(module: str) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        "print('textual' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


def test_online_host_that_is_not_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    # 192.0.2.0/24 is TEST-NET-1: never an address of this machine
    assert cli.main(["online", "--host", "192.0.2.1", "--port", "0"]) == EXIT_USAGE
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert "no authentication" in lines[0]
    assert lines[-1] == (
        "tuidebug online: Cannot listen on 192.0.2.1: it is not an address of this machine "
        "(use 127.0.0.1, or 0.0.0.0 for every interface)."
    )


def test_online_without_a_terminal_prints_events_instead_of_drawing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    drawn: list[object] = []
    monkeypatch.setattr(cli_online, "_tui_runner", lambda: drawn.append)
    monkeypatch.setattr(launch, "on_terminal", lambda: False)

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_online, "_wait_forever", ctrl_c)
    assert cli.main(["online", "--port", "0"]) == EXIT_OK
    assert drawn == []
    assert "not a terminal" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("connect", "words"),
    [
        ("http://127.0.0.1:50051", "--connect must be HOST:PORT"),
        ("[::1:50051", "--connect must be HOST:PORT"),
        ("a b:1", "--connect must be HOST:PORT"),
        ("127.0.0.1:0", "between 1 and 65535, not 0"),
        ("127.0.0.1:５０", "--connect must be HOST:PORT"),
    ],
)
def test_simulate_bad_connect(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, connect: str, words: str
) -> None:
    code = cli.main(["simulate", str(dump_2_0), "--connect", connect])
    assert code == EXIT_USAGE
    (line,) = sentences(capsys.readouterr().err)
    assert words in line


def test_simulate_unreachable_says_what_to_start(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = cli.main(["simulate", str(dump_2_0), "--connect", f"127.0.0.1:{port}"])
    assert code == EXIT_USAGE
    err = capsys.readouterr().err
    (line,) = sentences(err)
    assert "Cannot reach the debugger" in line and "tuidebug online" in line


def test_simulate_replay_warnings_are_one_prefixed_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    from tuidebug.client import simulator

    class FakeSim:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.replay = type("R", (), {"iterations": [0]})()
            self.cur_step = 1
            self.ending = ""

        def run(self) -> None:
            logging.getLogger("tuidebug.client").warning("x.npy is truncated.")

    monkeypatch.setattr(simulator, "DumpSimulator", FakeSim)
    assert cli.main(["simulate", str(dump_2_0)]) == EXIT_OK
    err = capsys.readouterr().err
    assert err.splitlines() == ["tuidebug simulate: warning: x.npy is truncated."]
    assert not logging.getLogger("tuidebug.client").handlers  # removed afterwards


@pytest.mark.parametrize("version", ["abc", "", "2.3.0; rm -rf /"])
def test_simulate_bad_ms_version(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, version: str
) -> None:
    assert cli.main(["simulate", str(dump_2_0), "--ms-version", version]) == EXIT_USAGE
    (line,) = sentences(capsys.readouterr().err)
    assert line == f"tuidebug simulate: --ms-version must look like 2.3.0, not {version!r}."


def test_simulate_log_lines_are_sentences(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    from tuidebug.client import simulator

    class FakeSim:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.replay = type("R", (), {"iterations": [0]})()
            self.cur_step = 0
            self.ending = ""

        def run(self) -> None:
            log = logging.getLogger("tuidebug.client")
            log.warning("the debugger reports a version mismatch")
            log.error("sending the graph failed:\n  unavailable")
            log.info("not shown")

    monkeypatch.setattr(simulator, "DumpSimulator", FakeSim)
    assert cli.main(["simulate", str(dump_2_0)]) == EXIT_OK
    assert capsys.readouterr().err.splitlines() == [
        "tuidebug simulate: warning: the debugger reports a version mismatch.",
        "tuidebug simulate: error: sending the graph failed: unavailable.",
    ]


# ------------------------------------------------------------------ the sentinel's usage
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--json"], "add --until-hit"),
        (["--until-hit"], "needs watchpoints"),
        (["--connect-timeout", "5"], "is for --until-hit"),
        (["--until-hit", "--watch", "TO", "--connect-timeout", "0"], "positive number"),
        (["--until-hit", "--watch", "NOPE"], "--watch"),
    ],
)
def test_sentinel_usage_errors_are_one_sentence(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["online", "--port", "0", *argv]) == EXIT_USAGE
    err = capsys.readouterr().err
    _one_sentence(err)
    assert words in err


def test_sentinel_without_a_training_gives_up_after_connect_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["online", "--port", "0", "--until-hit", "--watch", "TO", "--connect-timeout", "0.3"]
    assert cli.main(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert "no training connected within 0.3 s" in captured.err
    assert captured.out == ""
