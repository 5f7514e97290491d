"""Server and simulated training in one process: what `tuidebug demo --online` shows."""

from __future__ import annotations

import threading
from pathlib import Path

from tuidebug.online.session import OnlineSession


def run_demo_online(
    dump_dir: str | Path,
    *,
    backend: str = "GPU",
    host: str = "127.0.0.1",
    port: int = 0,
    ms_version: str = "2.3.0",
) -> OnlineSession:
    """Start an `OnlineSession` on `host:port` (0 = a free port) and a `DumpSimulator`
    replaying `dump_dir` against it in a daemon thread. Returns the started session; its
    `close()` also stops the simulator. Raises `SimulatorError` for an unusable dump and
    `ServerStartError` for a busy port."""
    from tuidebug.client.simulator import DumpReplay, DumpSimulator

    replay = DumpReplay(dump_dir)  # first: a bad dump must not leave a server running
    session = OnlineSession(host, port)
    session.start()
    simulator = DumpSimulator(replay, session.address, backend=backend, ms_version=ms_version)
    thread = simulator.start_thread()

    def stop() -> None:
        simulator.stop()
        if thread is not threading.current_thread():
            thread.join(5.0)

    session.add_close_hook(stop)
    return session
