"""The tensor view's background work and the messages it answers with.

Whole-tensor passes (statistics and histogram, compare, the block-extreme heatmap, find,
saving) run in thread workers. Each job here is a plain function; the view runs it in a
worker and posts what it returns to itself. Results carry the `generation` of the tensor
they were computed for, so the view drops those about a tensor it no longer shows. The
messages do not bubble: they are the view's own business, not the App's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
from textual.message import Message
from textual.worker import get_current_worker

from tuidebug.core.tensor import (
    BFLOAT16,
    CompareError,
    Comparison,
    Histogram,
    TensorStatistics,
    compare,
    histogram,
    tensor_statistics,
    write_npy,
)
from tuidebug.tui.tensor.canvas import GridData
from tuidebug.tui.tensor.find import SearchEvent, SearchKey
from tuidebug.tui.tensor.format import block_extreme

HISTOGRAM_BINS = 40
# Smaller than core's default chunk: each numpy call on a chunk may hold the GIL for its
# whole duration, and the UI thread must get it back within a frame (16 ms).
STATISTICS_CHUNK = 1 << 20
Severity = Literal["information", "error"]


def worker_cancelled() -> bool:
    """In a worker's thread: whether the worker has been cancelled (a newer one replaces it)."""
    return get_current_worker().is_cancelled


class TensorWorkDone(Message, bubble=False):
    """A worker's result about the tensor shown at `generation`."""

    def __init__(self, generation: int) -> None:
        super().__init__()
        self.generation = generation


class StatisticsDone(TensorWorkDone):
    """The whole tensor's statistics and histogram, or why they could not be computed."""

    def __init__(
        self,
        generation: int,
        stats: TensorStatistics | None = None,
        hist: Histogram | None = None,
        problem: str = "",
    ) -> None:
        super().__init__(generation)
        self.stats = stats
        self.hist = hist
        self.problem = problem


class CompareDone(TensorWorkDone):
    """The comparison with the previous step at `tolerance`, or why it failed."""

    def __init__(
        self,
        generation: int,
        tolerance: float,
        result: Comparison | None = None,
        problem: str = "",
    ) -> None:
        super().__init__(generation)
        self.tolerance = tolerance
        self.result = result
        self.problem = problem


class HeatmapRefined(TensorWorkDone):
    """A block-extreme image of the heatmap's grid `token` at zoom `factor`."""

    def __init__(self, generation: int, image: np.ndarray, factor: int, token: int) -> None:
        super().__init__(generation)
        self.image = image
        self.factor = factor
        self.token = token


class SearchReported(TensorWorkDone):
    """What the find scan for `key` reported (`tensor_find.scan`)."""

    def __init__(self, generation: int, key: SearchKey, event: SearchEvent) -> None:
        super().__init__(generation)
        self.key = key
        self.event = event


class ReferenceRead(TensorWorkDone):
    """What to compare the tensor with (`array`, None: no value), or why it is unreadable."""

    def __init__(
        self, generation: int, label: str, array: np.ndarray | None, problem: str = ""
    ) -> None:
        super().__init__(generation)
        self.label = label
        self.array = array
        self.problem = problem


class Saved(Message, bubble=False):
    """A save ended: the sentence to show (whatever tensor is shown by then)."""

    def __init__(self, sentence: str, severity: Severity) -> None:
        super().__init__()
        self.sentence = sentence
        self.severity = severity


def statistics_job(generation: int, array: np.ndarray) -> StatisticsDone:
    try:
        stats = tensor_statistics(array, chunk=STATISTICS_CHUNK)
        hist = histogram(array, HISTOGRAM_BINS, stats=stats, chunk=STATISTICS_CHUNK)
    except (ValueError, OSError, MemoryError) as exc:
        return StatisticsDone(generation, problem=f"could not be computed: {exc}")
    return StatisticsDone(generation, stats, hist)


def compare_job(
    generation: int, current: np.ndarray, previous: np.ndarray, tolerance: float
) -> CompareDone:
    try:
        result = compare(current, previous, tolerance, chunk=STATISTICS_CHUNK)
    except (CompareError, ValueError, OSError, MemoryError) as exc:
        return CompareDone(generation, tolerance, problem=str(exc))
    return CompareDone(generation, tolerance, result)


def reference_job(
    generation: int, label: str, read: Callable[[], np.ndarray | None]
) -> ReferenceRead:
    """Read what to compare with (the session may read a file or ask the training)."""
    try:
        array = read()
    except Exception as exc:  # any session failure is one sentence, not a crash
        return ReferenceRead(generation, label, None, f"Reading {label} failed: {exc}")
    return ReferenceRead(generation, label, array)


def refine_job(
    generation: int, data: GridData, factor: int, cancelled: Callable[[], bool]
) -> HeatmapRefined | None:
    """None when there is nothing better to show: the strided picture stays on screen."""
    try:
        image = block_extreme(
            data.view,
            factor,
            cancelled,
            band_elements=STATISTICS_CHUNK,
            special_order=data.scale.special_order,
        )
    except (ValueError, OSError, MemoryError):
        return None
    return None if image is None else HeatmapRefined(generation, image, factor, data.token)


def save_job(target: np.ndarray, what: str, path: Path) -> Saved:
    """Write `target` as .npy to `path` (the prompt has checked its folder and asked
    before replacing a file); the notice names the full path."""
    path = path.expanduser().absolute()
    try:
        with open(path, "wb") as handle:
            write_npy(handle, target)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return Saved(f"Could not save to {path}: {reason}.", "error")
    note = " (bfloat16 stored as float32)" if target.dtype == BFLOAT16 else ""
    return Saved(f"Saved {what} to {path}{note}", "information")
