"""Whether the attached training's connection is still open, between its calls.

gRPC's Python server tells a call that its peer left (`context.add_callback`), but nothing
about a connection with no call in flight: a training that closes its channel while it runs
a step, or between its handshake and its first WaitCMD, would be seen only when three
heartbeats are missed (15–90 s), and a second training would be refused all that while.

The kernel knows at once: the server's side of the TCP connection leaves ESTABLISHED when
the peer closes it. On Linux the connection table is `/proc/net/tcp` and `/proc/net/tcp6`,
and a gRPC peer ("ipv4:127.0.0.1:54321", "ipv6:[::1]:54321") names its row. Elsewhere, or
for a peer that is not TCP, the answer is "unknown" and the heartbeats decide as before.

One read of the table is not a snapshot: the kernel hands it out a page (~27 rows) per
read() and resumes by position, so a row can be skipped when sockets come and go between
two reads on a busy host. A missing row is therefore read a second time before the
connection is called closed: one read that missed a live row does not end the session.
"""

from __future__ import annotations

import ipaddress
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["POLL_SECONDS", "ConnectionWatch", "connection_open"]

log = logging.getLogger("tuidebug.online")

POLL_SECONDS = 0.5  # "at once" for a person; one read of a small table twice a second
_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
_ESTABLISHED = "01"  # the `st` column of /proc/net/tcp (include/net/tcp_states.h)


def _proc_words(packed: bytes) -> str:
    """An address as /proc/net/tcp spells it: each 32-bit word printed as a native int."""
    return "".join(
        f"{int.from_bytes(packed[i : i + 4], sys.byteorder):08X}" for i in range(0, len(packed), 4)
    )


def _peer_rows(peer: str) -> set[str] | None:
    """The `rem_address` spellings of `peer` ("ADDR:PORT" in hex): an IPv4 peer may sit in
    tcp6 as ::ffff:a.b.c.d when the server listens dual-stack. None: not a TCP peer."""
    kind, _, rest = peer.partition(":")
    host, _, port_text = rest.rpartition(":")
    try:
        port = int(port_text)
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if kind not in ("ipv4", "ipv6") or not 0 < port < 65536:
        return None
    addresses = [address]
    if isinstance(address, ipaddress.IPv4Address):
        addresses.append(ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + address.packed))
    elif address.ipv4_mapped is not None:
        addresses.append(address.ipv4_mapped)
    return {f"{_proc_words(a.packed)}:{port:04X}" for a in addresses}


def connection_open(peer: str) -> bool | None:
    """True while the kernel shows `peer`'s TCP connection to this process's host as
    established, False once it does not (closed, closing, reset), None when it cannot tell
    (not Linux, not a TCP peer, the tables unreadable): then nothing may be concluded."""
    wanted = _peer_rows(peer)
    if wanted is None:
        return None
    read_any = False
    for table in _TABLES:
        # line by line, stopping at the peer's row: on a host with many sockets the table
        # is megabytes, read twice a second (and with the session's lock held)
        try:
            with table.open(encoding="ascii", errors="replace") as rows:
                read_any = True
                next(rows, None)  # the header
                for line in rows:
                    fields = line.split()
                    # sl local_address rem_address st ...
                    if len(fields) > 3 and fields[2] in wanted and fields[3] == _ESTABLISHED:
                        return True
        except OSError:
            continue  # no IPv6 on this machine, or no /proc: the other table may do
    return False if read_any else None


class ConnectionWatch:
    """Follows one peer's connection on a thread of its own and calls `on_lost` (with
    `cond` held, as the heartbeat watchdog does) once the kernel shows it closed. `follow`
    and `stop` are called with `cond` held."""

    def __init__(
        self,
        cond: threading.Condition,
        on_lost: Callable[[], None],
        probe: Callable[[str], bool | None] = connection_open,
        interval: float = POLL_SECONDS,
    ) -> None:
        self._cond = cond
        self._on_lost = on_lost
        self._probe = probe
        self.interval = interval
        self.peer = ""
        self._stop: threading.Event | None = None

    def gone(self, peer: str) -> bool:
        """Whether `peer`'s connection is known to be closed (unknown is not gone): two
        reads agree, since one read of the table may skip a live row (module docstring)."""
        return bool(peer) and self._probe(peer) is False and self._probe(peer) is False

    def follow(self, peer: str) -> None:
        """Watch `peer` from now on (instead of whoever was watched); "" watches nobody."""
        if peer == self.peer and self._stop is not None:
            return
        self.stop()
        if not peer or self._probe(peer) is None:
            return  # nothing to learn here: the heartbeats decide
        self.peer = peer
        stop = threading.Event()
        self._stop = stop
        threading.Thread(
            target=self._watch, args=(stop, peer), name="tuidebug-peer-link", daemon=True
        ).start()

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        self.peer = ""

    def _watch(self, stop: threading.Event, peer: str) -> None:
        while not stop.wait(self.interval):
            if not self.gone(peer):  # the probe runs outside the lock: no stall
                continue
            with self._cond:
                if stop.is_set():
                    return
                log.info("the connection of %s closed", peer)
                self._stop = None
                self.peer = ""
                self._on_lost()
                return
