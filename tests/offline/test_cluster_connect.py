"""`--cluster tcp://…` that is not a Dask scheduler: a port nobody listens on, one that
accepts and says nothing (Dask's client alone would wait for ever), one that speaks
another protocol (an SSH banner read as Dask's length prefix asks for exabytes). Each is
one sentence, within the connect bound; a real scheduler still connects."""

from __future__ import annotations

import re
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from tests.cli.support import check, sentences
from tuidebug.offline.check import cluster_connect as connect_mod
from tuidebug.offline.check.cluster import ClusterError
from tuidebug.offline.check.cluster_connect import connect


@pytest.fixture(autouse=True)
def short_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connect_mod, "CONNECT_SECONDS", 1)


def _serve(greeting: bytes | None) -> Iterator[str]:
    """A loopback server that accepts, writes `greeting` (None: nothing) and holds the
    connection open until the test ends; yields its tcp:// address."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if greeting is not None:
                conn.sendall(greeting)
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


@pytest.fixture
def silent() -> Iterator[str]:
    yield from _serve(None)


@pytest.fixture
def ssh() -> Iterator[str]:
    yield from _serve(b"SSH-2.0-OpenSSH_9.6\r\n")


@pytest.fixture
def half_handshake() -> Iterator[str]:
    yield from _serve(struct.pack("<Q", 58) + b"\x01\x00")  # the length, then stalls


@pytest.mark.timeout(30)
def test_a_silent_port_is_bounded(silent: str) -> None:
    with pytest.raises(ClusterError, match=r"no Dask handshake within 1 s"), connect(silent):
        pass


@pytest.mark.timeout(30)
def test_a_handshake_that_stalls_is_bounded(half_handshake: str) -> None:
    with (
        pytest.raises(ClusterError, match=r"no Dask handshake within 1 s"),
        connect(half_handshake),
    ):
        pass


@pytest.mark.timeout(30)
def test_another_protocol_is_not_a_scheduler(ssh: str) -> None:
    with pytest.raises(ClusterError) as err, connect(ssh):
        pass
    assert str(err.value) == (
        f"{ssh} is not a Dask scheduler (it does not answer with Dask's handshake)."
    )


def test_nothing_listening_is_said_at_once() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with (
        pytest.raises(ClusterError, match=r"nothing listens there"),
        connect(f"tcp://127.0.0.1:{port}"),
    ):
        pass


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("tcp://127.0.0.1:99999", "99999 is not a TCP port (1-65535)"),
        ("tcp://no-such-host.invalid:8786", "unknown host no-such-host.invalid"),
    ],
)
def test_bad_addresses(address: str, said: str) -> None:
    with pytest.raises(ClusterError, match=re.escape(said)), connect(address):
        pass


@pytest.mark.timeout(60)
def test_the_command_line_says_it_in_one_sentence(
    capsys: pytest.CaptureFixture[str], silent: str, demo_dump: Path
) -> None:
    code, out, err = check(capsys, str(demo_dump), "--watch", "TO", "--cluster", silent)
    assert code == 2 and out == ""
    (line,) = sentences(err, "check")
    assert "no Dask handshake within 1 s" in line


@pytest.mark.timeout(60)
def test_a_real_scheduler_passes_the_probe() -> None:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, processes=False, dashboard_address=":0", scheduler_port=0
    ) as cluster:
        connect_mod._probe_scheduler(cluster.scheduler_address, 5)
        with connect(cluster.scheduler_address) as client:
            assert client.scheduler_info()["workers"]


def test_the_line_shown_while_connecting() -> None:
    from tuidebug.offline.check.cluster_connect import connecting_to

    assert connecting_to("local:2") == connecting_to("local") == "Starting a local Dask cluster…"
    assert connecting_to("tcp://h:8786") == (
        "Connecting to the Dask scheduler at tcp://h:8786 (up to 1 s)…"  # the bound in force
    )
