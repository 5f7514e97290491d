"""Checking one tensor file against every watchpoint that watches it: the checker's unit of
work, run by its threads (`offline/check/checker.py`).

A `Task` is a path (and the previous value's path for the change conditions) with the check
requests of every watchpoint on that tensor; `run_task` reads the file once, evaluates all
the requests in one `core.scan_engine.evaluate` pass, and answers a `TaskResult`: the results
worth reporting and one sentence per file that could not be read. Nothing here raises for a
bad file; the checker goes on with the next task.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from tuidebug.core.condition_catalogue import CheckRequest, CheckResult, untouched_params
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.scan_engine import evaluate
from tuidebug.offline.files.bin_tensors import BinTensorFile, read_bin_file
from tuidebug.offline.files.npy import TensorFileError, TensorTooLargeError, read_dump_tensor
from tuidebug.offline.files.pt import load_pt
from tuidebug.offline.files.tfdbg_values import is_value_ref, read_value_ref


# ---------------------------------------------------------------------- the tasks
@dataclass(frozen=True, slots=True)
class Task:
    """One tensor file to check against the requests of every watchpoint watching it (and
    its previous value's file for the change conditions)."""

    tid: int
    path: str
    prev_path: str | None
    requests: tuple[CheckRequest, ...]
    needs_prev: tuple[bool, ...]
    nbytes: int
    # the tensor (and previous value) when it is one slot of a `.bin` file: read from it
    bin: BinTensorFile | None = None
    prev_bin: BinTensorFile | None = None


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
    # what the file held (None when unreadable): the checker verifies it against the graph
    dtype: np.dtype | None = None
    shape: tuple[int, ...] | None = None


def error_result(request: CheckRequest, error_code: int) -> CheckResult:
    """A result with an error code and nothing evaluated (parameters echoed, not hit)."""
    return CheckResult(False, int(error_code), untouched_params(request))  # int: as on the wire


def run_task(task: Task, root: str, max_bytes: int | None, threads: int = 1) -> TaskResult:
    """Check one tensor; `threads` scan it (more than one only for a tensor checked alone)."""
    problems: list[str] = []
    try:
        tensor = _read(task.path, task.bin, root, max_bytes)
    except TensorTooLargeError:
        reported = tuple(
            (i, error_result(r, ErrorCode.OUT_OF_MEMORY)) for i, r in enumerate(task.requests)
        )
        return TaskResult(task.tid, reported, (), 0)
    except TensorFileError as err:
        return TaskResult(task.tid, (), (_located(err, task.path, root),), 0, False)
    nbytes = int(getattr(tensor, "nbytes", 0))
    if task.prev_path is None:  # the usual task (a dump of tiny files pays the rest per file)
        try:
            evaluated = evaluate(tensor, task.requests, threads=threads)
        except (ValueError, TypeError, OSError) as err:
            return _refused(task, err, root, [], nbytes)
        reported = tuple((i, r) for i, r in enumerate(evaluated) if r.reported)
        return TaskResult(task.tid, reported, (), nbytes, True, tensor.dtype, tensor.shape)
    previous = None
    prev_too_large = False
    if task.prev_path is not None:
        try:
            previous = _read(task.prev_path, task.prev_bin, root, max_bytes)
            nbytes += int(getattr(previous, "nbytes", 0))
        except TensorTooLargeError:
            prev_too_large = True
        except TensorFileError as err:
            # An unreadable previous value is reported and treated as absent (error 4).
            problems.append(_located(err, task.prev_path, root))
    requests = task.requests
    results: list[CheckResult | None] = [None] * len(requests)
    todo = list(range(len(requests)))
    if prev_too_large:  # the change conditions get error 8, the others are evaluated
        todo = [i for i in todo if not task.needs_prev[i]]
        for i, request in enumerate(requests):
            if task.needs_prev[i]:
                results[i] = error_result(request, ErrorCode.OUT_OF_MEMORY)
    if todo:
        try:
            evaluated = evaluate(
                tensor,
                requests if len(todo) == len(requests) else [requests[i] for i in todo],
                previous=previous,
                threads=threads,
            )
        except (ValueError, TypeError, OSError) as err:
            return _refused(task, err, root, problems, nbytes)
        for i, res in zip(todo, evaluated, strict=True):
            results[i] = res
    dtype, shape = tensor.dtype, tensor.shape
    del tensor, previous
    reported = tuple((i, r) for i, r in enumerate(results) if r is not None and r.reported)
    return TaskResult(task.tid, reported, tuple(problems), nbytes, True, dtype, shape)


def _read(path: str, in_bin: BinTensorFile | None, root: str, max_bytes: int | None) -> np.ndarray:
    """A `.npy` file, a `.pt` file (a foreign dump's: msprobe's tensor dumps, read without
    torch), a tfdbg record's recorded value (`files/tfdbg_values`), or one tensor of a `.bin` file (same errors, same limit)."""
    if in_bin is None:
        if path.endswith(".pt"):
            return load_pt(path, root=root, max_bytes=max_bytes)
        if is_value_ref(path):  # a tfdbg record's tensor proto (files/tfdbg_values.py)
            return read_value_ref(path, max_bytes)
        return read_dump_tensor(path, root, max_bytes)
    return read_bin_file(in_bin, root, max_bytes)


def _refused(task: Task, err: Exception, root: str, problems: list[str], nbytes: int) -> TaskResult:
    """`evaluate` refuses what it cannot compute (e.g. an unsupported dtype): the file is
    named and the check goes on."""
    sentence = f"{_relative(task.path, root)} cannot be checked: {_clause(err)}."
    return TaskResult(task.tid, (), (*problems, sentence), nbytes, False)


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
