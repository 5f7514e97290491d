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

The task code (`Task`, `run_task`, `run_batch`) lives here, so this module imports nothing
of the checker: the checker imports it, runs small checks in-process with the same
`run_task`, and reruns a failed worker's batch with `run_batch`.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from tuidebug.core.condition_catalogue import CheckRequest, CheckResult, untouched_params
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.scan_engine import evaluate
from tuidebug.offline.tensor_store import TensorFileError, TensorTooLargeError, load_npy

HEADER_BYTES = 8


# ---------------------------------------------------------------------- the tasks
@dataclass(frozen=True, slots=True)
class Task:
    """One tensor file to check against the requests of every watchpoint watching it (and
    its previous value's file for the change conditions). Paths, never arrays, cross the
    pipe."""

    tid: int
    path: str
    prev_path: str | None
    requests: tuple[CheckRequest, ...]
    needs_prev: tuple[bool, ...]
    nbytes: int


@dataclass(frozen=True, slots=True)
class TaskResult:
    """What checking a `Task` gave: the results worth reporting, and one sentence per file
    that could not be read."""

    tid: int
    # (request index, result) for results worth reporting (hit or error), None if unreadable
    reported: tuple[tuple[int, CheckResult], ...]
    problems: tuple[str, ...]
    nbytes: int
    readable: bool = True


def error_result(request: CheckRequest, error_code: int) -> CheckResult:
    """A result with an error code and nothing evaluated (parameters echoed, not hit)."""
    return CheckResult(False, int(error_code), untouched_params(request))  # int: as on the wire


def _confine(path: str, root: str) -> Path | None:
    """The root to confine `path` to, or None when it needs no check: discovery already
    refused symbolic links leaving the dump, so only a file that is (now) a link is resolved
    again — resolving every path costs more than reading a small tensor."""
    return Path(root) if os.path.islink(path) else None


def run_task(task: Task, root: str, max_bytes: int | None) -> TaskResult:
    problems: list[str] = []
    try:
        tensor = load_npy(task.path, root=_confine(task.path, root), mmap=True, max_bytes=max_bytes)
    except TensorTooLargeError:
        reported = tuple(
            (i, error_result(r, ErrorCode.OUT_OF_MEMORY)) for i, r in enumerate(task.requests)
        )
        return TaskResult(task.tid, reported, (), 0)
    except TensorFileError as err:
        return TaskResult(task.tid, (), (_located(err, task.path, root),), 0, False)
    nbytes = int(getattr(tensor, "nbytes", 0))
    previous = None
    prev_too_large = False
    if task.prev_path is not None:
        try:
            previous = load_npy(
                task.prev_path,
                root=_confine(task.prev_path, root),
                mmap=True,
                max_bytes=max_bytes,
            )
            nbytes += int(getattr(previous, "nbytes", 0))
        except TensorTooLargeError:
            prev_too_large = True
        except TensorFileError as err:
            # An unreadable previous value is reported and treated as absent (error 4).
            problems.append(_located(err, task.prev_path, root))
    requests = task.requests
    results: list[CheckResult | None] = [None] * len(requests)
    todo: list[int] = []
    for i, request in enumerate(requests):
        if prev_too_large and task.needs_prev[i]:
            results[i] = error_result(request, ErrorCode.OUT_OF_MEMORY)
        else:
            todo.append(i)
    if todo:
        try:
            evaluated = evaluate(tensor, [requests[i] for i in todo], previous=previous)
        except (ValueError, TypeError, OSError) as err:
            # evaluate refuses what it cannot compute (e.g. an unsupported dtype); the file
            # is named and the check goes on.
            return TaskResult(
                task.tid,
                (),
                (*problems, f"{_relative(task.path, root)} cannot be checked: {_clause(err)}."),
                nbytes,
                False,
            )
        for i, res in zip(todo, evaluated, strict=True):
            results[i] = res
    del tensor, previous
    reported = tuple((i, r) for i, r in enumerate(results) if r is not None and r.reported)
    return TaskResult(task.tid, reported, tuple(problems), nbytes)  # type: ignore[arg-type]


def _clause(err: Exception) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text.rstrip(".")


def _relative(path: str, root: str) -> str:
    """A path as messages show it: relative to the dump root (like the layout's problems)."""
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _located(err: Exception, path: str, root: str) -> str:
    """The reader's sentence names the file by its base name; name its folder too, since
    every iteration folder holds a file of that name."""
    text = str(err)
    name = os.path.basename(path)
    if text.startswith(name):
        return _relative(path, root) + text[len(name) :]
    return text


def run_batch(tasks: Sequence[Task], root: str, max_bytes: int | None) -> list[TaskResult]:
    """Check a batch of tensors (what a worker process runs)."""
    return [run_task(t, root, max_bytes) for t in tasks]


# ---------------------------------------------------------------------- the pipe protocol
def read_message(stream: IO[bytes]) -> object | None:
    """The next message, or None at end of input."""
    header = stream.read(HEADER_BYTES)
    if len(header) < HEADER_BYTES:
        return None
    size = int.from_bytes(header, "little")
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return pickle.loads(payload)


def write_message(stream: IO[bytes], message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(HEADER_BYTES, "little"))
    stream.write(data)
    stream.flush()


def main() -> int:
    import signal

    from tuidebug.core import scan_engine

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
        tasks, root, max_bytes = cast("tuple[list[Task], str, int | None]", message)
        try:
            reply: tuple[str, object] = ("ok", run_batch(tasks, root, max_bytes))
        except Exception as err:  # a bug: the parent reruns the batch in-process
            reply = ("error", f"{type(err).__name__}: {err}")
        write_message(out, reply)


if __name__ == "__main__":
    # Run the importable module's main, not this `__main__` copy's: the results must
    # pickle as `tuidebug.offline.check_worker.TaskResult`, the class the parent knows.
    from tuidebug.offline import check_worker

    raise SystemExit(check_worker.main())
