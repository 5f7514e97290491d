"""Which MindSpore versions `tuidebug online` debugs (spec §0, §1.4, §2.3): every 1.x/2.x
client is accepted and can step; old (< 1.5), unreadable and 3.x+ versions get one warning
naming what was received (log, notice, header banner); `--strict-version X.Y` keeps
MindInsight X.Y's refusal. Driven over loopback gRPC by the raw stub client."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.online.support import TIMEOUT, RawClient, fixture_graph, make_session, wait_state
from tests.tui.support import wait_until
from tuidebug import cli
from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.cli.common import EXIT_USAGE
from tuidebug.core.session import (
    Ending,
    EventLog,
    GraphsLoaded,
    Metadata,
    Notice,
    SessionError,
    SessionState,
)
from tuidebug.online.job import JobSession
from tuidebug.online.session import OnlineSession
from tuidebug.online.versions import (
    VersionCheck,
    check_version,
    parse_strict_version,
    parse_version,
)
from tuidebug.tui.panes.header import SessionHeader, fit_line, header_segments

OK = pb.EventReply.OK


@pytest.fixture
def graph(dump_2_0: Path) -> graph_pb.GraphProto:
    return fixture_graph(dump_2_0)


@pytest.fixture
def online() -> Iterator[tuple[OnlineSession, EventLog]]:
    session, log = make_session()
    yield session, log
    session.close()


@pytest.fixture
def strict() -> Iterator[tuple[OnlineSession, EventLog]]:
    session, log = make_session(strict_version="2.3")
    yield session, log
    session.close()


def notices(log: EventLog) -> list[Notice]:
    return [e for e in log.events if isinstance(e, Notice)]


def handshake(session: OnlineSession, graph: graph_pb.GraphProto, version: str) -> RawClient:
    """SendMetadata with `version` (must be matched) and the graph; not yet waiting."""
    client = RawClient(session.address)
    reply = client.hello(version)
    assert reply.status == OK and reply.WhichOneof("cmd") == "version_matched"
    assert reply.version_matched is True
    assert client.send_graph(graph).status == OK
    return client


def step_once(session: OnlineSession, log: EventLog, client: RawClient) -> None:
    """Initial suspension → graph published → one step → suspended at step 1 → terminate."""
    future = client.wait_future(0)
    wait_state(session, SessionState.WAITING)
    loaded = log.wait_for(GraphsLoaded)
    assert loaded.first_time and len(loaded.graphs) == 1
    session.step()
    reply = future.result(timeout=TIMEOUT)
    assert reply.WhichOneof("cmd") == "run_cmd" and reply.run_cmd.run_level == "step"
    future = client.wait_future(1)
    wait_state(session, SessionState.WAITING)
    assert session.metadata.step == 1 and not future.done()
    session.terminate()
    assert future.result(timeout=TIMEOUT).exit


# ------------------------------------------------------------------ accepted, silently
@pytest.mark.parametrize("version", ["1.8.0", "2.0.0", "2.1.1", "2.2.14", "2.3.1"])
def test_mindspore_versions_with_a_debugger_client_step(
    online, graph, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    session, log = online
    with caplog.at_level(logging.WARNING, logger="tuidebug.online"):
        client = handshake(session, graph, version)
        step_once(session, log, client)
    client.close()
    assert session.metadata.ms_version == version
    assert notices(log) == []  # no warning for 1.5–2.x
    assert not [r for r in caplog.records if version in r.getMessage()]


# ------------------------------------------------------------- accepted, with a warning
@pytest.mark.parametrize(
    ("version", "named", "fragments"),
    [
        ("1.3.0", "1.3.0", ("1.5", "statistics")),
        ("1.1.0", "1.1.0", ("heartbeats", "1.3")),
        ("0.7.0", "0.7.0", ("1.1", "may not work")),
        ("", "''", ("cannot be read",)),
        ("garbage", "'garbage'", ("cannot be read",)),
        ("3.0.0", "3.0.0", ("newer than any MindSpore",)),
    ],
)
def test_old_unreadable_and_future_versions_are_accepted_with_one_warning(
    online,
    graph,
    version: str,
    named: str,
    fragments: tuple[str, ...],
    caplog: pytest.LogCaptureFixture,
) -> None:
    session, log = online
    with caplog.at_level(logging.WARNING, logger="tuidebug.online"):
        client = handshake(session, graph, version)
        step_once(session, log, client)
    client.close()
    (notice,) = notices(log)  # once, however many state changes followed
    assert notice.severity == "warning"
    assert f"MindSpore {named}" in notice.message or f"version {named}" in notice.message
    for fragment in fragments:
        assert fragment in notice.message
    # said last, over the warning
    assert session.metadata.message == Ending.TERMINATED.sentence
    warned = [r for r in caplog.records if r.getMessage() == notice.message]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING


def test_the_warning_stays_the_banner_between_messages(online, graph) -> None:
    session, log = online
    client = handshake(session, graph, "1.3.0")
    future = client.wait_future(0)
    wait_state(session, SessionState.WAITING)
    warning = notices(log)[0].message
    assert session.metadata.message == warning  # the state changes did not clear it
    session.step()
    assert future.result(timeout=TIMEOUT).run_cmd.run_level == "step"
    future = client.wait_future(1)
    wait_state(session, SessionState.WAITING)
    assert session.metadata.message == warning
    session.terminate()
    assert future.result(timeout=TIMEOUT).exit
    # a new training with a current version: no warning left over
    other = RawClient(session.address)
    assert other.hello("2.2.14").version_matched
    wait_state(session, SessionState.PENDING)
    assert session.metadata.message == "" and session.metadata.ms_version == "2.2.14"
    client.close()
    other.close()


def test_torch_clients_keep_their_own_rule(online, graph) -> None:
    session, log = online
    client = handshake(session, graph, "torch-2.1.0")
    step_once(session, log, client)
    client.close()
    assert notices(log) == []


# ------------------------------------------------------------------ --strict-version
def test_strict_version_refuses_what_mindinsight_refused(strict, graph) -> None:
    session, log = strict
    client = RawClient(session.address)
    reply = client.hello("2.2.14")
    assert reply.WhichOneof("cmd") == "version_matched" and reply.version_matched is False
    wait_state(session, SessionState.MISMATCH)
    notice = log.wait_for(Notice)
    assert notice.severity == "error"
    assert "2.2.14" in notice.message and "2.3" in notice.message
    assert "2.2.14" in session.metadata.message
    assert client.send_graph(graph).status == OK  # ignored until terminate (spec §2.3)
    assert session.graphs == {}
    with pytest.raises(SessionError):
        session.step()
    client.close()


def test_strict_version_accepts_its_own_minor(strict, graph) -> None:
    session, log = strict
    client = handshake(session, graph, "2.3.1")
    step_once(session, log, client)
    client.close()
    assert notices(log) == []


def test_strict_version_newer_minor_is_a_warning(strict) -> None:
    session, log = strict
    client = RawClient(session.address)
    assert client.hello("2.4.0").version_matched is True  # MindInsight's result 1
    notice = log.wait_for(Notice)
    assert notice.severity == "warning" and "2.4.0" in notice.message
    client.close()


# ------------------------------------------------------------------ the rules, unit level
def test_check_version_rules() -> None:
    for version in ("1.5.0", "1.10.1", "2.0.0rc1", "2.2.14", "2.3", "2.7.2.rc1"):
        assert check_version(version) == VersionCheck(True, "")
    assert parse_version("2.3.0rc1") == (2, 3) and parse_version("1.10.1") == (1, 10)
    assert parse_version("2") is None and parse_version("v2.3") is None
    assert not check_version("2.2.14", "2.3").matched
    assert not check_version("garbage", "2.3").matched
    assert check_version("2.3.1", "2.3") == check_version("2.3.1")


@pytest.mark.parametrize("text", ["2", "x.y", "2.3.x", "", " ", "2.3.0.1", "-2.3", "2,3"])
def test_bad_strict_versions(text: str) -> None:
    with pytest.raises(ValueError, match="--strict-version"):
        parse_strict_version(text)
    with pytest.raises(ValueError):
        OnlineSession(strict_version=text)


def test_strict_version_is_read_as_major_minor() -> None:
    assert parse_strict_version("2.3") == "2.3"
    assert parse_strict_version(" 2.3.0 ") == "2.3"
    assert parse_strict_version("1.05") == "1.5"


@pytest.mark.parametrize("value", ["two.three", "2", ""])
def test_cli_bad_strict_version(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def never(self: OnlineSession) -> None:
        raise AssertionError("the server must not start")

    monkeypatch.setattr(OnlineSession, "start", never)
    # `tuidebug online` serves a JobSession (every rank of one job)
    monkeypatch.setattr(JobSession, "start", never)
    assert cli.main(["online", "--port", "0", "--strict-version", value]) == EXIT_USAGE
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].endswith(".") and "Traceback" not in captured.err
    assert "--strict-version" in lines[0] and repr(value) in lines[0]
    assert captured.out == ""


def test_cli_threads_strict_version_to_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    def stop_here(self: JobSession) -> None:
        # every rank's session applies the rule (`tuidebug online` serves a JobSession)
        seen.append(self.rank_sessions[0].strict_version)
        raise KeyboardInterrupt  # main answers 130: nothing was bound

    monkeypatch.setattr(JobSession, "start", stop_here)
    assert cli.main(["online", "--port", "0", "--strict-version", "2.3"]) == 130
    assert cli.main(["online", "--port", "0"]) == 130
    assert seen == ["2.3", None]


# ------------------------------------------------------------------ the header
def test_header_shows_the_version_and_its_warning() -> None:
    warning = check_version("1.3.0").warning
    md = Metadata(
        mode="online",
        source="ipv4:127.0.0.1:45678",
        state=SessionState.WAITING,
        step=3,
        backend="GPU",
        device="0",
        ms_version="2.2.14",
        graph_names=("kernel_graph_0",),
        message=warning,
    )
    line = fit_line(header_segments(md, "kernel_graph_0", "", False), 80).plain
    assert "MindSpore 2.2.14" in line and "step 3" in line
    banner = SessionHeader()._second_line(md)
    assert banner is not None and banner.plain == warning and "red" not in str(banner.style)


async def test_tui_header_shows_the_version_warning(online, graph) -> None:
    from tuidebug.tui.app import DebuggerApp

    session, _ = online
    app = DebuggerApp(session)

    def header() -> str:
        return str(app.query_one(SessionHeader).render())

    async with app.run_test(size=(160, 40)) as pilot:

        async def until(predicate: Callable[[], bool], what: str) -> None:
            await wait_until(pilot, predicate, what=what, timeout=TIMEOUT, explain=header)

        client = handshake(session, graph, "garbage")
        future: Any = client.wait_future(0)
        await until(lambda: "MindSpore garbage" in header(), "the version in the header")
        await until(lambda: "cannot be read" in header(), "the warning banner")
        await until(lambda: any("cannot be read" in n.message for n in app.messages), "notice")
        session.terminate()
        assert future.result(timeout=TIMEOUT).exit
        client.close()
