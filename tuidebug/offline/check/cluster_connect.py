"""Reaching a Dask cluster for a check: `--cluster tcp://host:8786` (a running scheduler,
probed for Dask's handshake first) or `--cluster local[:N]` (a `LocalCluster` of worker
processes on this machine). Every way it can fail is one sentence (`ClusterError`), within
`CONNECT_SECONDS`; the checking itself is `offline/check/cluster.py`.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from tuidebug.offline.check.cluster import ClusterError, ClusterRunner

if TYPE_CHECKING:
    from distributed import Client, LocalCluster

# How long connecting to a scheduler may take before the check gives up.
CONNECT_SECONDS = 30
# A Dask handshake is a few dozen bytes: a peer announcing more is not a scheduler.
HANDSHAKE_MAX_BYTES = 64 << 10


def _is_local(text: str) -> bool:
    return text == "local" or text.startswith("local:")


def parse_cluster(text: str) -> tuple[str, int | None]:
    """`local`, `local:4` → ("local", None | 4); anything else is a scheduler address.
    Raises ValueError (one sentence) on a bad `local:N`."""
    if _is_local(text):
        count = text.partition(":")[2]
        if not count:
            return "local", None
        if not count.isdigit() or not 1 <= int(count) <= 256:
            raise ValueError(
                f"--cluster {text!r}: local:N needs a number of worker processes from 1 to 256."
            )
        return "local", int(count)
    if not text.strip():
        raise ValueError("--cluster needs a scheduler address (tcp://host:8786) or local[:N].")
    if text.startswith("inproc://") and not _this_process(text):
        # Dask's in-process transport reaches only a scheduler started in this process
        # (`inproc://host/pid/n`); any other such address is a raw unpack error in Dask
        raise ValueError(
            f"--cluster {text!r} names no Dask scheduler of this process (inproc:// addresses "
            "work only there); give a scheduler's tcp://host:port or local[:N]."
        )
    return text, None


def _this_process(address: str) -> bool:
    """Whether an `inproc://host/pid/n` address is one of this process's schedulers."""
    parts = address[len("inproc://") :].split("/")
    return len(parts) == 3 and parts[1] == str(os.getpid()) and parts[2].isdigit()


def connecting_to(text: str) -> str:
    """The line a terminal shows while `connect(text)` works (it may take `CONNECT_SECONDS`
    on an address that does not answer, or seconds to start local workers)."""
    if _is_local(text):
        return "Starting a local Dask cluster…"
    return f"Connecting to the Dask scheduler at {text} (up to {CONNECT_SECONDS:g} s)…"


@contextmanager
def connect(text: str, *, quiet: bool = True) -> Iterator[Client]:
    """A `Client` for `--cluster TEXT`: a running scheduler's address, or `local[:N]` (a
    `LocalCluster` of N single-threaded worker processes, default one per core), closed on
    exit. Raises ClusterError (one sentence) when it cannot be reached or started."""
    from distributed import Client

    from tuidebug.offline.check.checker import default_workers

    try:
        address, count = parse_cluster(text)
    except ValueError as err:
        raise ClusterError(str(err).rstrip(".") + ".") from None
    level = logging.CRITICAL if quiet else logging.WARNING
    if quiet:
        # Dask's own log lines (a worker restarted, a task retried) would interleave with
        # the check's one-sentence warnings: the check reports what matters itself. Dask's
        # config gives some of its loggers levels of their own (distributed.client logs a
        # lost scheduler's traceback), so each one is quieted, not only the parent.
        for name in [*logging.root.manager.loggerDict, "distributed"]:
            if name == "distributed" or name.startswith("distributed."):
                logging.getLogger(name).setLevel(logging.CRITICAL)
    cluster: LocalCluster | None = None
    scratch = ""
    try:
        if address == "local":
            # the workers' scratch space (`dask-scratch-space/`) in a folder of this
            # cluster's own, removed with it: left in the temporary folder, it would pile up
            scratch = tempfile.mkdtemp(prefix="tuidebug-dask-")
            with _workers_ignore_ctrl_c():
                cluster = _local_cluster(count or default_workers(), level, scratch)
            client = Client(cluster)
        else:
            _probe_scheduler(address, CONNECT_SECONDS)
            client = Client(address, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError) as err:
        _close_local(cluster, scratch)
        what = "start a local Dask cluster" if address == "local" else f"reach {address}"
        raise ClusterError(f"cannot {what}: {str(err).rstrip('.')}.") from None
    except BaseException:  # Ctrl+C while the workers start: no folder left behind either
        _close_local(cluster, scratch)
        raise
    try:
        yield client
    finally:
        try:
            client.close()
        finally:  # a client that fails to close (a lost scheduler) still ends its cluster
            _close_local(cluster, scratch)


def _close_local(cluster: LocalCluster | None, scratch: str) -> None:
    """Close a local cluster (its workers first stop writing), then remove its scratch
    folder; a file a worker still held is not worth a traceback at exit."""
    try:
        if cluster is not None:
            cluster.close()
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def _probe_scheduler(address: str, seconds: float) -> None:
    """Raise ClusterError (one sentence) unless a TCP `address` answers as a Dask scheduler
    does: it writes its handshake as soon as it accepts. Dask's own client waits for that
    handshake without a bound (a port that accepts and says nothing hangs it for ever) and
    trusts its length prefix (an SSH banner read as one asks for exabytes), so a plain
    socket reads it first, within `seconds`. Other schemes (tls://, ucx://) go to Dask."""
    import socket
    import struct

    import msgpack
    from distributed.comm import parse_address, parse_host_port
    from distributed.protocol.utils import unpack_frames

    scheme, location = parse_address(address)
    if scheme != "tcp":
        return
    try:
        host, port = parse_host_port(location)
    except ValueError as err:
        raise ClusterError(f"cannot reach {address}: {str(err).rstrip('.')}.") from None
    if not 0 < port < 1 << 16:
        raise ClusterError(f"cannot reach {address}: {port} is not a TCP port (1-65535).")
    deadline = time.monotonic() + seconds
    not_dask = f"{address} is not a Dask scheduler (it does not answer with Dask's handshake)."

    def read(sock: socket.socket, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = sock.recv(count - len(data))
            if not chunk:
                raise ClusterError(not_dask)
            data += chunk
        return bytes(data)

    try:
        with socket.create_connection((host, port), timeout=seconds) as sock:
            (size,) = struct.unpack("<Q", read(sock, 8))
            if not 0 < size <= HANDSHAKE_MAX_BYTES:
                raise ClusterError(not_dask)
            frames = unpack_frames(read(sock, size))
            hello = msgpack.loads(frames[0]) if frames else None
    except ConnectionRefusedError:
        raise ClusterError(
            f"cannot reach {address}: nothing listens there (is the scheduler running? "
            f"`dask scheduler` prints its address)."
        ) from None
    except socket.gaierror:
        raise ClusterError(f"cannot reach {address}: unknown host {host}.") from None
    except TimeoutError:
        raise ClusterError(
            f"cannot reach {address}: no Dask handshake within {seconds:g} s "
            f"(a firewall, or something other than a Dask scheduler on that port)."
        ) from None
    except OSError as err:
        raise ClusterError(f"cannot reach {address}: {err.strerror or err}.") from None
    except (ValueError, IndexError, struct.error, msgpack.UnpackException):
        raise ClusterError(not_dask) from None
    if not isinstance(hello, dict) or "python" not in hello:
        raise ClusterError(not_dask)


def open_runner(text: str) -> ClusterRunner:
    """A `ClusterRunner` on `connect(text)` that outlives this call: an `OfflineSession`
    holds it and `runner.close()` (the session's `close()`) closes the client. Raises
    ClusterError (one sentence) when the cluster cannot be reached or started."""
    stack = ExitStack()
    client = stack.enter_context(connect(text))
    try:
        runner = ClusterRunner(client)
    except BaseException:
        stack.close()
        raise
    runner._owned = stack
    return runner


@contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """Worker processes started inside inherit an ignored SIGINT: Ctrl+C in the terminal
    reaches the whole process group, and it is this process that cancels the tasks and
    closes the cluster, without a traceback from every worker."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _local_cluster(count: int, level: int, scratch: str) -> LocalCluster:
    from distributed import LocalCluster

    return LocalCluster(
        local_directory=scratch,
        # the scheduler makes a scratch folder of its own, by default in the temporary folder
        scheduler_kwargs={"local_directory": scratch},
        n_workers=count,
        threads_per_worker=1,  # the scan is single-threaded per tensor here
        processes=True,
        host="127.0.0.1",
        # any free port: the default 8787 may be another session's, and the scheduler's
        # HTTP server starts whatever this says
        dashboard_address=":0",
        silence_logs=level,
    )
