"""A checker worker process: `python -m tuidebug.offline.check_worker`.

The checker (offline/checker.py) starts a few of these and talks to each over its stdin and
stdout: a message is an 8-byte little-endian length followed by a pickle. The parent sends
`(tasks, root, max_bytes)` — file paths and check requests, never arrays — and the worker
answers `("ok", results)` or `("error", sentence)`. End of input ends the worker.

Why not `multiprocessing`: its spawn and forkserver methods re-import the parent's
`__main__` in every worker (a user's script without an ``if __name__ == "__main__"`` guard, or
`python -m tuidebug`, would run again there), and fork is unsafe in a process running UI and
gRPC threads. A plain child process imports only what it needs. Pickle is safe here: both ends
are this program; nothing from the dump is unpickled (`.npy` files are read with
`allow_pickle=False` semantics by `tensor_store`).
"""

from __future__ import annotations

import pickle
import sys
from typing import BinaryIO

HEADER_BYTES = 8


def read_message(stream: BinaryIO) -> object | None:
    """The next message, or None at end of input."""
    header = stream.read(HEADER_BYTES)
    if len(header) < HEADER_BYTES:
        return None
    size = int.from_bytes(header, "little")
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return pickle.loads(payload)


def write_message(stream: BinaryIO, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(HEADER_BYTES, "little"))
    stream.write(data)
    stream.flush()


def main() -> int:
    import signal

    from tuidebug.core import scan_engine
    from tuidebug.offline.checker import run_batch

    # the pool already runs one worker per core: a scan thread each would only compete
    scan_engine.THREADS = 1

    # Ctrl-C in a terminal reaches the whole process group: let the parent decide (it stops
    # sending work and closes our stdin, which ends this loop).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    # Anything printed by accident must not corrupt the protocol on stdout.
    sys.stdout = sys.stderr
    while True:
        message = read_message(inp)
        if message is None:
            return 0
        tasks, root, max_bytes = message  # type: ignore[misc]
        try:
            reply: tuple[str, object] = ("ok", run_batch(tasks, root, max_bytes))
        except Exception as err:  # a bug: the parent reruns the batch in-process
            reply = ("error", f"{type(err).__name__}: {err}")
        write_message(out, reply)


if __name__ == "__main__":
    raise SystemExit(main())
