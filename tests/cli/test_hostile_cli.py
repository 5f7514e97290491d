"""Attack surface: the command line in hostile surroundings. No terminal (`</dev/null
>file`), a folder that is not a dump (an empty one, a `rank_N` folder, a dump without
`graphs/`), a failed start inside the TUI, Ctrl+C in `simulate`, and the warning of an
online server that listens on every address.

Each case ends in one sentence and a documented exit status, never a full-screen app
drawing into a file, a stale "Reading the dump folder…" line, or an exit 0 that reads
as a finished training. Anything that could block runs in a subprocess with a timeout.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.tui.support import wait_until
from tuidebug import cli
from tuidebug.cli import launch
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef
from tuidebug.online import listen_address

TUIDEBUG = [sys.executable, "-m", "tuidebug"]


def write_small_dump(root: Path, iterations: int = 1) -> Path:
    """One ReLU over one parameter, `iterations` iterations."""
    writer = DumpWriter(root, start_timestamp=1000)
    relu = "Default/net/ReLU-op0"
    writer.add_graph(
        0, [NodeDef(relu, "ReLU", ["w"], shape=(4,))], [ParamDef("w", np.float32, (4,))]
    )
    for i in range(iterations):
        writer.write_iteration(
            0,
            i,
            {
                (relu, "output", 0): np.ones(4, np.float32),
                ("w", "output", 0): np.ones(4, np.float32),
            },
        )
    writer.finish()
    return root


@pytest.fixture
def small_dump(tmp_path: Path) -> Path:
    return write_small_dump(tmp_path / "dump")


def one_sentence(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"tuidebug {command}: ") and "Traceback" not in err
    return lines[0][len(f"tuidebug {command}: ") :]


def no_app(monkeypatch: pytest.MonkeyPatch, *, terminal: bool = True) -> None:
    """The app must not start; the terminal test answers `terminal`."""

    def refuse(*_args: Any, **_kwargs: Any) -> int:
        raise AssertionError("the TUI must not start")

    monkeypatch.setattr("tuidebug.tui.app.run_app", refuse)
    monkeypatch.setattr(launch, "on_terminal", lambda: terminal)


# ------------------------------------------------------------------ no terminal
@pytest.mark.timeout(120)
def test_offline_without_a_terminal_refuses(small_dump: Path, tmp_path: Path) -> None:
    """`tuidebug offline DUMP </dev/null >file` drew the full-screen app into the file and
    waited for keys forever."""
    out = tmp_path / "out.txt"
    with open(os.devnull) as stdin, open(out, "w") as stdout:
        proc = subprocess.run(
            [*TUIDEBUG, "offline", str(small_dump)],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=90,
        )
    assert proc.returncode == 2
    sentence = one_sentence(proc.stderr, "offline")
    assert sentence.startswith("the TUI needs a terminal") and "tuidebug check" in sentence
    assert out.read_text() == ""  # nothing drawn


def test_demo_without_a_terminal_writes_nothing_and_refuses(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    no_app(monkeypatch, terminal=False)
    written: list[Path] = []
    monkeypatch.setattr("tuidebug.offline.writer.demo.write_demo_dump", written.append)
    assert cli.main(["demo"]) == 2
    assert one_sentence(capsys.readouterr().err, "demo").startswith("the TUI needs a terminal")
    assert written == []  # a temporary dump nobody could open


@pytest.mark.parametrize("online", [False, True])
def test_demo_out_without_a_terminal_writes_the_dump_then_refuses(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    online: bool,
) -> None:
    no_app(monkeypatch, terminal=False)

    def no_server(_root: Path) -> Any:
        raise AssertionError("the demo's server must not start")

    monkeypatch.setattr("tuidebug.online.demo.run_demo_online", no_server)
    out = tmp_path / "demo"
    assert cli.main(["demo", "--out", str(out), *(["--online"] if online else [])]) == 2
    written, refused = capsys.readouterr().err.splitlines()
    assert written == f"tuidebug demo: demo dump written to {out}"
    assert refused.startswith("tuidebug demo: the TUI needs a terminal")
    assert (out / "rank_0" / "graphs").is_dir()  # a script asking for --out gets the dump


# ------------------------------------------------------------------ not a dump
def check_sentence(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    """check's refusal (after its warnings, if any)."""
    assert cli.main(["check", str(path), "--watch", "TO"]) == 2
    *warnings, last = capsys.readouterr().err.splitlines()
    assert all(w.startswith("warning: ") for w in warnings), warnings
    return one_sentence(last, "check")


def test_offline_on_a_folder_that_is_not_a_dump(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    no_app(monkeypatch)
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8")
    assert cli.main(["offline", str(folder)]) == 2
    sentence = one_sentence(capsys.readouterr().err, "offline")
    assert sentence == check_sentence(capsys, folder)  # the same sentence as check
    assert sentence.startswith(f"{folder} holds no rank_<N> folder")


def test_offline_on_a_rank_folder_says_to_open_its_parent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], small_dump: Path
) -> None:
    no_app(monkeypatch)
    rank = small_dump / "rank_0"
    assert cli.main(["offline", str(rank)]) == 2
    sentence = one_sentence(capsys.readouterr().err, "offline")
    assert "give its parent folder" in sentence and sentence == check_sentence(capsys, rank)


def test_offline_with_an_unreachable_cluster_refuses_before_the_tui(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], small_dump: Path
) -> None:
    """`tuidebug offline DUMP --cluster ADDRESS` with no scheduler there: one sentence,
    exit 2, and the TUI never starts (nothing to wait for inside it)."""
    pytest.importorskip("distributed")
    no_app(monkeypatch)
    monkeypatch.setattr("tuidebug.offline.check.cluster_connect.CONNECT_SECONDS", 2)
    assert cli.main(["offline", str(small_dump), "--cluster", "tcp://127.0.0.1:9"]) == 2
    sentence = one_sentence(capsys.readouterr().err, "offline")
    assert sentence.startswith("cannot reach tcp://127.0.0.1:9: ") and sentence.endswith(".")


def test_offline_on_a_dump_without_graphs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], small_dump: Path
) -> None:
    no_app(monkeypatch)
    for pb in (small_dump / "rank_0" / "graphs").iterdir():
        pb.unlink()
    (small_dump / "rank_0" / "graphs").rmdir()
    assert cli.main(["offline", str(small_dump)]) == 2
    sentence = one_sentence(capsys.readouterr().err, "offline")
    assert (
        sentence
        == f"rank_0 of {small_dump} has no graph file (graphs/*.pb), so there is nothing to show."
    )
    assert "no readable graph" in check_sentence(capsys, small_dump)  # check refuses too


def test_offline_on_a_real_dump_still_opens(
    monkeypatch: pytest.MonkeyPatch, small_dump: Path
) -> None:
    opened: list[object] = []

    def run_app(session: object, **_kw: object) -> int:
        opened.append(session)
        return 0

    monkeypatch.setattr("tuidebug.tui.app.run_app", run_app)
    monkeypatch.setattr(launch, "on_terminal", lambda: True)
    assert cli.main(["offline", str(small_dump)]) == 0 and len(opened) == 1


@pytest.mark.timeout(60)
async def test_tui_failed_start_replaces_the_reading_line(tmp_path: Path) -> None:
    """The dump can vanish between the CLI's check and the app's start: the header must
    then say why, not keep "Reading the dump folder…" as if still reading."""
    from tuidebug.offline.session import OfflineSession
    from tuidebug.tui.app import DebuggerApp
    from tuidebug.tui.panes.header import SessionHeader

    folder = tmp_path / "gone"
    folder.mkdir()
    app = DebuggerApp(OfflineSession(folder), start_session=True)
    async with app.run_test(size=(120, 30)) as pilot:
        header = app.query_one(SessionHeader)

        def says_why() -> bool:
            text = str(header.render())
            return "holds no rank_<N> folder" in text and "Reading the dump folder" not in text

        await wait_until(
            pilot, says_why, what="the header to say why", timeout=15, explain=header.render
        )
        tree_empty = str(app.query_one("#tree-empty").render())
        assert "holds no rank_<N> folder" in tree_empty


# ------------------------------------------------------------------ simulate and Ctrl+C
# what read_until read past the line it wanted, for the next call on the same process
_unread: weakref.WeakKeyDictionary[subprocess.Popen[str], bytes] = weakref.WeakKeyDictionary()


def read_until(proc: subprocess.Popen[str], fragment: str, timeout: float) -> str:
    """stdout of `proc` up to the line holding `fragment` (fail after `timeout` s).

    Reads the pipe's fd itself: `select` sees only the fd, not what `proc.stdout`'s text
    buffer already holds, so `readline()` could swallow two lines written together (the
    server's "loading" and "GraphsLoaded", under load) and the wait then missed the second.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    pending = _unread.pop(proc, b"")
    seen = ""
    deadline = time.monotonic() + timeout
    while True:
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            seen += line.decode("utf-8", "replace") + "\n"
            if fragment in seen:
                _unread[proc] = pending
                return seen
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            _unread[proc] = pending
            pytest.fail(f"no {fragment!r} within {timeout} s; stdout so far: {seen!r}")
        chunk = os.read(fd, 65536)
        if not chunk:
            seen += pending.decode("utf-8", "replace")
            pytest.fail(f"stdout ended before {fragment!r}: {seen!r} (exit {proc.poll()})")
        pending += chunk


def interrupt(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Ctrl+C; the exit status, the rest of stdout, and stderr."""
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("simulate did not stop on Ctrl+C")
    # what read_until had read past its line is stdout too (communicate reads the fd only)
    out = _unread.pop(proc, b"").decode("utf-8", "replace") + out
    return proc.returncode, out, err


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*TUIDEBUG, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_read_until_sees_lines_written_together() -> None:
    """Two lines in one write reach the reader in one read: the second must still be
    found (the CI flake of the interrupted-replay test: "no 'GraphsLoaded' within 60 s"
    while the server had printed it right after "loading step 0")."""
    script = (
        "import sys, time\n"
        "sys.stdout.write('first\\nsecond\\nthird')\n"
        "sys.stdout.flush()\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # Ctrl+C's traceback
        text=True,
    )
    try:
        assert read_until(proc, "first", 30) == "first\n"
        assert read_until(proc, "second", 5) == "second\n"
        proc.send_signal(signal.SIGINT)
        _code, out, _err = interrupt(proc)
        assert out == "third"  # nothing read past the wanted line is lost
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.timeout(120)
def test_simulate_interrupted_while_connecting_exits_130(small_dump: Path) -> None:
    """A debugger that accepts the connection and never answers: simulate waits; Ctrl+C
    must not read as a training that ended."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        proc = spawn("simulate", str(small_dump), "--connect", f"127.0.0.1:{port}")
        try:
            read_until(proc, "tuidebug simulate: replaying", 60)
            code, out, err = interrupt(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert code == 130 and "training ended" not in out
    assert err.strip().splitlines()[-1] == "tuidebug simulate: interrupted after 0 steps."


@pytest.mark.timeout(180)
def test_simulate_interrupted_while_replaying_exits_130(small_dump: Path) -> None:
    """Against a real (headless) debugger: simulate sent its graph and waits for a
    command when Ctrl+C comes."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = spawn("online", "--port", str(port))
    sim: subprocess.Popen[str] | None = None
    try:
        read_until(server, "listening on", 60)
        sim = spawn("simulate", str(small_dump), "--connect", f"127.0.0.1:{port}")
        read_until(server, "GraphsLoaded", 60)  # the training is attached and suspended
        code, out, err = interrupt(sim)
        assert code == 130 and "training ended" not in out
        assert "tuidebug simulate: interrupted after 0 steps." in err
    finally:
        for proc in (sim, server):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.communicate(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()


# ------------------------------------------------------------------ --host warning
@pytest.mark.parametrize("ipv6", [True, False])
def test_wildcard_host_warning_says_whether_ipv6_listens_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], ipv6: bool
) -> None:
    """gRPC binds 0.0.0.0 as one dual-stack [::] socket where the machine has IPv6 (seen
    in /proc/net/tcp6), so the warning must not suggest only IPv4 is exposed. No public
    address is bound here: the start is refused right after the warning."""
    from tuidebug.online.job import JobSession
    from tuidebug.online.server import ServerStartError
    from tuidebug.online.session import OnlineSession

    def refuse(self: OnlineSession) -> None:
        raise ServerStartError("Port 50051 on 0.0.0.0 is already in use; choose another.")

    monkeypatch.setattr(OnlineSession, "start", refuse)
    # `tuidebug online` serves a JobSession (every rank of one job)
    monkeypatch.setattr(JobSession, "start", refuse)
    monkeypatch.setattr(listen_address, "has_ipv6", lambda: ipv6)
    assert cli.main(["online", "--host", "0.0.0.0"]) == 2
    warning = capsys.readouterr().err.splitlines()[0]
    assert "no authentication" in warning and "SSH tunnel" in warning
    if ipv6:
        assert "every IPv4 and IPv6 address of this machine" in warning
        assert "0.0.0.0 listens on IPv6 too" in warning
    else:
        assert "every IPv4 address of this machine" in warning and "IPv6" not in warning


def test_named_host_warning_names_that_address(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuidebug.online.job import JobSession
    from tuidebug.online.server import ServerStartError
    from tuidebug.online.session import OnlineSession

    def refuse(self: OnlineSession) -> None:
        raise ServerStartError("Cannot listen on fe80::1: it is not an address of this machine.")

    monkeypatch.setattr(OnlineSession, "start", refuse)
    # `tuidebug online` serves a JobSession (every rank of one job)
    monkeypatch.setattr(JobSession, "start", refuse)
    assert cli.main(["online", "--host", "fe80::1", "--port", "6000"]) == 2
    warning = capsys.readouterr().err.splitlines()[0]
    assert "anyone who can reach [fe80::1]:6000 can control" in warning


# ------------------------------------------------------------------ a reader that left
@pytest.mark.timeout(120)
def test_a_closed_pipe_is_no_traceback(tmp_path: Path) -> None:
    """`tuidebug keys | head -1`: the reader is gone before tuidebug writes."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write now fails with EPIPE
    try:
        proc = subprocess.run(
            [*TUIDEBUG, "keys"],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=90,
            env={**os.environ, "TUIDEBUG_KEYS": str(tmp_path / "keys.toml")},
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 0 and proc.stderr == ""


@pytest.mark.parametrize(("argv", "all_ranks"), [([], False), (["--all-ranks"], True)])
def test_offline_all_ranks_reaches_the_session(
    monkeypatch: pytest.MonkeyPatch, small_dump: Path, argv: list[str], all_ranks: bool
) -> None:
    """`--all-ranks` makes the session check every rank (without it, and without
    `--cluster`, only the rank shown)."""
    seen: list[bool] = []

    def fake_app(session: Any, **_kwargs: Any) -> int:
        seen.append(session.all_ranks)
        return 0

    monkeypatch.setattr("tuidebug.tui.app.run_app", fake_app)
    monkeypatch.setattr(launch, "on_terminal", lambda: True)
    assert cli.main(["offline", str(small_dump), *argv]) == 0
    assert seen == [all_ranks]
