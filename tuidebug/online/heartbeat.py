"""The heartbeat watchdog (spec §2.10): a training sends a heartbeat every `period` seconds;
three missed in a row mean it is gone.

The watchdog follows one connection's heartbeats (the first that beats, until another
connection beats instead) and runs on a thread of its own, which calls `on_lost` when the
beats stop. It shares the session's condition: `beat`, `stop` and `refresh` are called with
it held, and `on_lost` runs with it held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["HEARTBEAT_LIMITS", "HEARTBEAT_MISSES", "HeartbeatWatchdog"]

log = logging.getLogger("tuidebug.online")

HEARTBEAT_LIMITS = (5, 3600)  # seconds, MindInsight's accepted `period` range (spec §2.10)
HEARTBEAT_MISSES = 3


class HeartbeatWatchdog:
    """`limits`/`scale` are test hooks: a heartbeat is expected every
    `(period + 0.5) * scale` seconds, for a `period` within `limits`."""

    def __init__(
        self,
        cond: threading.Condition,
        on_lost: Callable[[], None],
        limits: tuple[float, float] = HEARTBEAT_LIMITS,
        scale: float = 1.0,
    ) -> None:
        self._cond = cond
        self._on_lost = on_lost
        self.limits = limits
        self.scale = scale
        self.peer = ""  # whose heartbeats it follows
        self._stop: threading.Event | None = None
        self._last = 0.0

    @property
    def running(self) -> bool:
        return self._stop is not None

    def follows_another(self, peer: str) -> bool:
        """Whether it watches a connection other than `peer` (an unknown one is no other)."""
        return self._stop is not None and self.peer not in ("", peer)

    def beat(self, period: int, peer: str) -> bool:
        """A heartbeat from `peer`; False when its period is out of range (then nothing
        is watched). A new connection that beats is followed instead of the old one."""
        if self._stop is not None and self.peer and peer and peer != self.peer:
            self.stop()  # a new connection beats: follow it instead
        if self._stop is None:
            lo, hi = self.limits
            if not lo <= period <= hi:
                log.warning("heartbeat period %d s is outside %g..%g s", period, lo, hi)
                return False
            self._start((period + 0.5) * self.scale)
            self.peer = peer
        self._last = time.monotonic()
        return True

    def refresh(self) -> None:
        """A fresh allowance: count the misses from now (a training says hello while its
        next beat may be a full period away)."""
        self._last = time.monotonic()

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None

    def _start(self, interval: float) -> None:
        stop = threading.Event()
        self._stop = stop
        self._last = time.monotonic()
        threading.Thread(
            target=self._watch,
            args=(stop, interval),
            name="tuidebug-heartbeat-watchdog",
            daemon=True,
        ).start()

    def _watch(self, stop: threading.Event, interval: float) -> None:
        misses = 0
        seen = self._last
        while not stop.wait(interval):
            with self._cond:
                if stop.is_set():
                    return
                if self._last > seen:
                    seen = self._last
                    misses = 0
                    continue
                misses += 1
                if misses < HEARTBEAT_MISSES:
                    continue
                if self._stop is stop:
                    self._stop = None
                self._on_lost()
                return
