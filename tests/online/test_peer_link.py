"""The connection watch reads the kernel's TCP table, which is not a snapshot: a read can
skip a live row while sockets come and go. One read that misses the training's row must
not end its session; a row that stays gone must. Fed real-format tables from a file, so
the parser is the one the server runs."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tuidebug.online import peer_link
from tuidebug.online.peer_link import ConnectionWatch, connection_open

PEER = "ipv4:127.0.0.1:54321"
HEADER = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
    "   uid  timeout inode\n"
)


def _address(host: str, port: int) -> str:
    """`host:port` as /proc/net/tcp spells it (each 32-bit word in native byte order)."""
    word = int.from_bytes(socket.inet_aton(host), sys.byteorder)
    return f"{word:08X}:{port:04X}"


def _row(number: int, remote_port: int, state: str = "01") -> str:
    local = _address("127.0.0.1", 50051)
    remote = _address("127.0.0.1", remote_port)
    return (
        f"{number:4}: {local} {remote} {state} 00000000:00000000 00:00000000 00000000"
        f"  1000        0 {40000 + number} 1 0000000000000000 20 4 30 10 -1\n"
    )


def _table(with_peer: bool, state: str = "01") -> str:
    """A busy host's table (more than a page of rows), the training's row among them."""
    rows = [_row(i, 40000 + i) for i in range(60)]
    if with_peer:
        rows.insert(30, _row(60, 54321, state))
    return HEADER + "".join(rows)


def _probe_over(
    tmp_path: Path, tables: Callable[[int], str]
) -> tuple[Callable[[str], bool | None], list[int]]:
    """A probe that lays down the n-th table read, then reads it as the server does."""
    path = tmp_path / "tcp"
    calls = [0]

    def probe(peer: str) -> bool | None:
        path.write_text(tables(calls[0]), encoding="ascii")
        calls[0] += 1
        return connection_open(peer)

    return probe, calls


@pytest.fixture(autouse=True)
def _one_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(peer_link, "_TABLES", (tmp_path / "tcp",))


def _watch(probe: Callable[[str], bool | None]) -> tuple[ConnectionWatch, threading.Event]:
    lost = threading.Event()
    cond = threading.Condition()
    watch = ConnectionWatch(cond, lost.set, probe=probe, interval=0.01)
    with cond:
        watch.follow(PEER)
    return watch, lost


def test_the_table_spells_the_peer_as_the_kernel_does(tmp_path: Path) -> None:
    (tmp_path / "tcp").write_text(_table(True), encoding="ascii")
    assert connection_open(PEER) is True
    (tmp_path / "tcp").write_text(_table(True, state="08"), encoding="ascii")  # CLOSE_WAIT
    assert connection_open(PEER) is False


def test_one_read_missing_the_row_is_not_a_lost_connection(tmp_path: Path) -> None:
    """Read 0 is follow()'s; read 1, the first poll's, skips the row; the rest show it."""
    probe, calls = _probe_over(tmp_path, lambda n: _table(with_peer=n != 1))
    watch, lost = _watch(probe)
    try:
        deadline = time.monotonic() + 30
        while calls[0] < 20 and not lost.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not lost.is_set(), "a live connection was declared lost on one read"
        assert calls[0] >= 20, "the watch stopped polling"
        assert watch.peer == PEER
    finally:
        watch.stop()


def test_a_row_that_stays_gone_is_a_lost_connection(tmp_path: Path) -> None:
    probe, _calls = _probe_over(tmp_path, lambda n: _table(with_peer=n < 5))
    watch, lost = _watch(probe)
    try:
        assert lost.wait(30), "a closed connection was never declared lost"
        assert watch.peer == ""
    finally:
        watch.stop()


def test_gone_reads_twice_before_it_says_closed(tmp_path: Path) -> None:
    cond = threading.Condition()
    probe, _ = _probe_over(tmp_path, lambda n: _table(with_peer=n != 0))
    assert not ConnectionWatch(cond, lambda: None, probe=probe).gone(PEER)
    probe, _ = _probe_over(tmp_path, lambda n: _table(with_peer=False))
    assert ConnectionWatch(cond, lambda: None, probe=probe).gone(PEER)
    assert not ConnectionWatch(cond, lambda: None, probe=lambda _p: None).gone(PEER)
