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
)
from tuidebug.tui.tensor_canvas import GridData
from tuidebug.tui.tensor_find import SearchEvent, SearchKey
from tuidebug.tui.tensor_format import block_extreme, download_name, write_npy

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


def refine_job(
    generation: int, data: GridData, factor: int, cancelled: Callable[[], bool]
) -> HeatmapRefined | None:
    """None when there is nothing better to show: the strided picture stays on screen."""
    try:
        image = block_extreme(data.view, factor, cancelled, band_elements=STATISTICS_CHUNK)
    except (ValueError, OSError, MemoryError):
        return None
    return None if image is None else HeatmapRefined(generation, image, factor, data.token)


def save_job(target: np.ndarray, what: str, node_type: str, short_name: str, slot: int) -> Saved:
    """Write `target` as .npy in the current directory under its download name (spec §6.5),
    never over an earlier file."""
    node_type = node_type or "Tensor"
    when = None
    for attempt in range(100):
        name = download_name(node_type, short_name, slot, when)
        path = Path.cwd() / name
        try:
            # "x": never overwrite an earlier download made in the same centisecond.
            with open(path, "xb") as handle:
                write_npy(handle, target)
        except FileExistsError:
            when = (int(name.split(".")[4]) + attempt + 1) / 100
            continue
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            return Saved(f"Could not save {name}: {reason}.", "error")
        note = " (bfloat16 stored as float32)" if target.dtype == BFLOAT16 else ""
        return Saved(f"Saved {what} to {path}{note}", "information")
    return Saved("Could not find a free file name to save to.", "error")
