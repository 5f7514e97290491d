"""The watchpoints of a session: one book for the offline and online sessions and the tests'
fake, so ids, validation order, the sentences and the change events are the same everywhere.

Ids start at 1 and are never reused within a book (a failed create takes none); `clear()`
starts them again at 1 (online: a new training is a new session, spec §2.3). Every change
is reported to the owner with the whole book after it (`WatchpointChange`); the owner turns
that into its `WatchpointsChanged` event and keeps what it derives from watchpoints (offline:
resolved targets; online: the SetCMDs still to send) in step with it.

The owner decides two things through callables, as the sessions differ there:
`place(graph_name)` says which graph a new watchpoint lives in (and refuses an unknown one);
`check(watchpoint, targets_changed)` refuses targets that name nothing (raising
`WatchpointError`), before the change is stored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from tuidebug.core.condition_catalogue import get_condition
from tuidebug.core.session_error import SessionError
from tuidebug.core.watchpoints import Watchpoint

__all__ = ["WatchpointBook", "WatchpointChange"]

ChangeKind = Literal["created", "updated", "deleted", "cleared"]


@dataclass(frozen=True)
class WatchpointChange:
    """One change of the book: what happened to which watchpoint (None when cleared), and
    every watchpoint after it, in creation order."""

    kind: ChangeKind
    watchpoint: Watchpoint | None
    watchpoints: tuple[Watchpoint, ...]


Place = Callable[[str | None], str | None]
Check = Callable[[Watchpoint, bool], None]


def _keep(graph_name: str | None) -> str | None:
    return graph_name


def _accept(watchpoint: Watchpoint, targets_changed: bool) -> None:
    return None


class WatchpointBook:
    """Watchpoints by id, in creation order. Thread-safe: every operation holds `lock` (pass
    the owner's own lock when its callables read state guarded by it)."""

    def __init__(
        self,
        on_change: Callable[[WatchpointChange], None] | None = None,
        *,
        lock: threading.RLock | None = None,
    ) -> None:
        self.on_change = on_change
        self.lock = lock if lock is not None else threading.RLock()
        self._items: dict[int, Watchpoint] = {}
        self._next_id = 1

    # ------------------------------------------------------------------ reading
    def all(self) -> tuple[Watchpoint, ...]:
        with self.lock:
            return tuple(self._items.values())

    def __iter__(self) -> Iterator[Watchpoint]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self._items)

    def find(self, watchpoint_id: int) -> Watchpoint | None:
        return self._items.get(watchpoint_id)

    def get(self, watchpoint_id: int) -> Watchpoint:
        """The watchpoint with this id; `SessionError` when there is none."""
        wp = self._items.get(watchpoint_id)
        if wp is None:
            raise SessionError(f"There is no watchpoint {watchpoint_id}.")
        return wp

    # ------------------------------------------------------------------ changes
    def create(
        self,
        condition: str,
        params: Mapping[str, float],
        targets: Sequence[str] = (),
        graph_name: str | None = None,
        *,
        place: Place = _keep,
        check: Check = _accept,
    ) -> Watchpoint:
        """A new watchpoint with the next id. Refusals, in this order: an unknown condition
        (`WatchpointError`), the graph (`place`), the parameters (`WatchpointError`), the
        targets (`check`)."""
        with self.lock:
            spec = get_condition(condition)
            where = place(graph_name)
            wp = Watchpoint(self._next_id, spec, dict(params), tuple(targets), where)
            check(wp, True)
            self._next_id += 1
            self._items[wp.id] = wp
            self._changed("created", wp)
            return wp

    def update(
        self,
        watchpoint_id: int,
        params: Mapping[str, float] | None = None,
        targets: Sequence[str] | None = None,
        enabled: bool | None = None,
        *,
        check: Check = _accept,
    ) -> Watchpoint:
        """The watchpoint with new parameters, targets or enabled state (None = keep)."""
        with self.lock:
            wp = self.get(watchpoint_id).changed(params=params, targets=targets, enabled=enabled)
            check(wp, targets is not None)
            self._items[wp.id] = wp
            self._changed("updated", wp)
            return wp

    def delete(self, watchpoint_id: int) -> Watchpoint:
        """Remove a watchpoint; returns it. `SessionError` when there is none."""
        with self.lock:
            wp = self.get(watchpoint_id)
            del self._items[watchpoint_id]
            self._changed("deleted", wp)
            return wp

    def clear(self) -> None:
        """Forget every watchpoint; ids start again at 1. Reported only when it had some."""
        with self.lock:
            had = bool(self._items)
            self._items.clear()
            self._next_id = 1
            if had:
                self._changed("cleared", None)

    def _changed(self, kind: ChangeKind, wp: Watchpoint | None) -> None:
        if self.on_change is not None:
            self.on_change(WatchpointChange(kind, wp, tuple(self._items.values())))
