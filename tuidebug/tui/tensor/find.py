"""The tensor view's find (`f`, `]`, `[`): what is looked for, what is known of it, and
the scan a worker runs — everything of the feature except the widgets.

`TensorView` keeps the keys; `TensorFinder` (tensor_finder) the find box, the highlight
and the thread worker: it asks `TensorFind` what to do and passes it what the worker
reports. Everything known about a
search is tagged with the `SearchKey` it was computed for (the spec, the tensor, slice and
mode shown), so a new slice, mode or spec never shows a stale count or moves the cursor to
a stale match. `scan` is the worker's whole job, reporting `SearchEvent`s through a
callback, so it runs (and is tested) without a UI.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tuidebug.core.tensor_search import (
    MatchCount,
    SearchCancelled,
    SearchSpec,
    count_matches,
    describe_value,
    find_match,
    parse_search,
)

# Chunks as small as the statistics' (each numpy call may hold the GIL for a whole chunk,
# and the UI thread must get it back within a frame), and the match positions of one
# search are kept (8 bytes each) when there are at most this many, so ]/[ then need no scan.
SEARCH_CHUNK = 1 << 20
KEEP_MATCHES = 1 << 16
SEARCH_PROGRESS_AFTER = 0.3  # seconds before a running search shows its progress
DEFAULT_FIND = "nonfinite"
# (search spec, tensor generation, slice, mode, displayed array): what a result is about.
SearchKey = tuple[object, ...]


# ------------------------------------------------------ what a scan reports
@dataclass(frozen=True)
class Progressed:
    """The scan is still running: `note` says how far ("searching 'nan'… 40%")."""

    note: str


@dataclass(frozen=True)
class Landed:
    """The match to go to; `rank` (1-based) when already known."""

    flat: int
    rank: int | None


@dataclass(frozen=True)
class Counted:
    """Every match of the search over the slice (positions kept when few)."""

    count: MatchCount


@dataclass(frozen=True)
class Ranked:
    """The landed match `flat` is match number `rank`."""

    flat: int
    rank: int


@dataclass(frozen=True)
class Missed:
    """Nothing in the slice matches."""


@dataclass(frozen=True)
class Failed:
    """The slice could not be read; `sentence` says why."""

    sentence: str


SearchEvent = Progressed | Landed | Counted | Ranked | Missed | Failed


def nearest_position(positions: np.ndarray, start: int, *, backward: bool) -> int | None:
    """The first kept match at or after `start` (or the last at or before it), wrapping."""
    if positions.size == 0:
        return None
    if backward:
        at = int(np.searchsorted(positions, start, side="right")) - 1
        return int(positions[at]) if at >= 0 else int(positions[-1])
    at = int(np.searchsorted(positions, start, side="left"))
    return int(positions[at]) if at < positions.size else int(positions[0])


def scan(
    view: np.ndarray,
    spec: SearchSpec,
    start: int,
    *,
    backward: bool,
    counted: MatchCount | None,
    report: Callable[[SearchEvent], object],
    cancelled: Callable[[], bool],
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Find the match from flat index `start` of `view` (wrapping), report it, then count
    the matches (once per search: `counted` is what is known already) to rank it.

    Runs in a worker thread: `report` is called there, and `cancelled()` is asked between
    chunks (a cancelled scan ends without a word). A read error is reported as `Failed`.
    """
    began = clock()
    shown = 0.0

    def progress(what: str, done: int, total: int) -> None:
        nonlocal shown
        now = clock()
        if now - began < SEARCH_PROGRESS_AFTER or now - shown < 0.1:
            return
        shown = now
        report(Progressed(f"{what} {spec.text!r}… {done * 100 // max(total, 1)}%"))

    def on(what: str) -> Callable[[int, int], None]:
        return lambda done, total: progress(what, done, total)

    try:
        matcher = spec.matcher(view.dtype)
        flat = find_match(
            view,
            matcher,
            start,
            backward=backward,
            progress=on("searching"),
            chunk=SEARCH_CHUNK,
            cancelled=cancelled,
        )
        if flat is None:
            report(Missed())
            return
        rank = counted.rank(flat) if counted is not None else None
        report(Landed(flat, rank))
        if counted is None:
            counted = count_matches(
                view,
                matcher,
                keep=KEEP_MATCHES,
                progress=on("counting"),
                chunk=SEARCH_CHUNK,
                cancelled=cancelled,
            )
            report(Counted(counted))
            rank = counted.rank(flat)
        if rank is None:  # too many matches to keep: count the ones before it
            before = count_matches(
                view,
                matcher,
                stop=flat,
                progress=on("ranking"),
                chunk=SEARCH_CHUNK,
                cancelled=cancelled,
            )
            rank = before.total + 1
        report(Ranked(flat, rank))
    except SearchCancelled:
        return
    except (ValueError, OSError, MemoryError) as exc:
        report(Failed(str(exc)))


# ------------------------------------------------------------- the state
class TensorFind:
    """One view's search: the spec typed last, the active search, and what is known of it
    (its count, the match landed on, the note of a running scan)."""

    def __init__(self) -> None:
        self.text = DEFAULT_FIND  # offered in the box; `]` looks for it without a search
        self.spec: SearchSpec | None = None
        self._count: tuple[SearchKey, MatchCount] | None = None
        self._hit: tuple[SearchKey, int, int | None] | None = None  # flat, rank
        self.note = ""  # "searching 'nan'… 40%" while a scan runs
        self.running: SearchKey | None = None  # what the scan in flight searches

    def next_spec(self) -> SearchSpec:
        """What `]` / `[` look for: the active search, else the spec typed last."""
        return self.spec or parse_search(self.text)

    def end(self) -> None:
        """No search: nothing known, nothing running."""
        self.spec = None
        self._count = None
        self._hit = None
        self.note = ""
        self.running = None

    def begin(self, spec: SearchSpec) -> bool:
        """Make `spec` the active search; True when it is a new one (what was known of the
        previous one is forgotten, and the highlight must change)."""
        if spec == self.spec:
            return False
        self.spec = spec
        self._count = None
        self._hit = None
        return True

    def known_count(self, key: SearchKey) -> MatchCount | None:
        """The match count over what `key` describes, if computed."""
        if self._count is not None and self._count[0] == key:
            return self._count[1]
        return None

    def jump(self, key: SearchKey, start: int, *, backward: bool) -> Landed | Missed | None:
        """Where `]` / `[` go when every match is known already (no scan); None when a
        scan must find out."""
        counted = self.known_count(key)
        if counted is None or counted.positions is None:
            return None
        flat = nearest_position(counted.positions, start, backward=backward)
        return Missed() if flat is None else Landed(flat, counted.rank(flat))

    def land(self, key: SearchKey, flat: int, rank: int | None) -> None:
        """The cursor goes to match `flat`."""
        self._hit = (key, flat, rank)

    def receive(self, key: SearchKey, event: SearchEvent) -> None:
        """Take in what the scan for `key` reported (the caller checked that `key` is what
        is shown now); the caller then moves the cursor (`Landed`), ends the search
        (`Missed`), or redraws and says so."""
        if isinstance(event, Progressed):
            self.note = event.note
        elif isinstance(event, Landed):
            self.note = ""  # the caller lands (`land`) once the cursor is there
        elif isinstance(event, Counted):
            self._count = (key, event.count)
        elif isinstance(event, Ranked):
            self.note = ""
            hit = self._hit
            if hit is not None and hit[0] == key and hit[1] == event.flat:
                self._hit = (key, event.flat, event.rank)
        elif isinstance(event, Failed):
            self.note = ""

    # ------------------------------------------------------------ the status line
    def rank_at(self, key: SearchKey, flat: int) -> int | None:
        """The landed match's rank (0 = not known yet) when the cursor is on it, else None."""
        hit = self._hit
        if hit is None or hit[0] != key or hit[1] != flat:
            return None
        return hit[2] or 0

    def match_status(self, key: SearchKey, rank: int, value: object, at: str, where: str) -> str:
        """The status line with the cursor on the landed match: "NaN at [3, 17]  (match 1
        of 3)   row 3/40 col 17/30"."""
        counted = self.known_count(key)
        of = (
            f"match {rank:,} of {counted.total:,}"
            if rank > 0 and counted is not None
            else "counting matches…"
        )
        text = f"{describe_value(value)} at {at}  ({of})   {where}"
        return text + (f"   {self.note}" if self.note else "")

    def suffix(self, key: SearchKey) -> str:
        """What the status line adds about an active search away from its match."""
        if self.note:
            return f"   {self.note}"
        if self.spec is None:
            return ""
        counted = self.known_count(key)
        total = f": {counted.total:,} matches" if counted is not None else ""
        return f"   find {self.spec.text!r}{total}"
