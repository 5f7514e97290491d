"""The tensor view's find, its widget side: the find box, the highlight in the table, the
search worker, and putting the cursor on a match.

What is looked for and what is known of it is `TensorFind`'s, the scan is `scan`'s (both
in tensor_find, no Textual). `TensorFinder` is a helper object of one `TensorView`: the
view keeps the keys and the `@on` handlers (Textual finds those only on its widgets) and
hands them over; the finder reaches the view only through what it is given here — the
view's table, the key of what is shown, where the cursor is, how to move it, how to run
a job — so which of the view's state a search depends on stays listed in one place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from textual.css.query import NoMatches
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input

from tuidebug.core.tensor_search import SearchSpec, SearchSpecError, parse_search
from tuidebug.tui.tensor.canvas import TensorTable
from tuidebug.tui.tensor.find import (
    Counted,
    Failed,
    Landed,
    Missed,
    SearchEvent,
    SearchKey,
    TensorFind,
    scan,
)
from tuidebug.tui.tensor.jobs import SearchReported, worker_cancelled


@dataclass(frozen=True)
class FindHooks:
    """What the finder reads and does in its view (bound methods of the view)."""

    ready: Callable[[], bool]  # the view's children can be queried
    generation: Callable[[], int]  # bumps with every tensor shown
    key: Callable[[], SearchKey]  # what results are about now (spec, tensor, slice, mode)
    cursor: Callable[[], int | None]  # the cursor as a flat index (None: nothing to search)
    check: Callable[[SearchSpec], None]  # SearchSpecError: the dtype shown cannot be searched
    land: Callable[[SearchKey, int, int | None], None]  # cursor on a match, status says which
    update_status: Callable[[], None]
    run_job: Callable[[Callable[[], Message | None], str], None]
    post_result: Callable[[Message | None], None]


class TensorFinder:
    """The find of one tensor view (see the module docstring)."""

    def __init__(self, view: Widget, hooks: FindHooks) -> None:
        self._view = view
        self._hooks = hooks
        # the spec typed last, the active search and what is known of it
        self.state = TensorFind()
        self._unread: str | None = None  # a spec typed that could not be read, to correct

    @property
    def _table(self) -> TensorTable:
        return self._view.query_one("#tv-table", TensorTable)

    @property
    def _ready(self) -> bool:
        return self._hooks.ready()

    # --------------------------------------------------------------- the box
    def open_box(self) -> None:
        """f: the find box, holding the spec typed last (selected: typing replaces it)."""
        if self._hooks.cursor() is None:
            return
        box = self._view.query_one("#tv-find", Input)
        box.display = True
        box.value = self.state.text if self._unread is None else self._unread
        box.focus()

    def find(self, text: str) -> bool:
        """Look for `text` (a search spec) in the slice from the cursor on and highlight
        the matches; an empty text ends the search. A bad spec is a notice and False."""
        start = self._hooks.cursor()
        if start is None:
            return False
        if not text.strip():
            self.clear()
            return True
        try:
            spec = parse_search(text)
            self._hooks.check(spec)
        except SearchSpecError as exc:
            self._view.notify(str(exc), severity="error", timeout=6)
            self._unread = text
            return False
        self._unread = None
        self.state.text = spec.text
        self.start(spec, start, backward=False)
        return True

    def find_next(self, direction: int) -> None:
        """The next (1) or previous (-1) match from the cursor, wrapping around; without
        an active search, the last spec (`nonfinite` at first) is looked for."""
        start = self._hooks.cursor()
        if start is None:
            return
        spec = self.state.next_spec()
        self.start(spec, start + direction, backward=direction < 0)

    # ------------------------------------------------------------ the search
    def clear(self) -> None:
        """End the search: no highlight, no match note."""
        self.end()
        if self._ready:
            self._hooks.update_status()

    def end(self) -> None:
        self.cancel()
        self.state.end()
        if self._ready:
            with contextlib.suppress(NoMatches):
                self._table.set_highlight(None)

    def cancel(self) -> None:
        """Stop the running scan (its results would be about what is no longer shown)."""
        self.state.running = None
        if self._ready:
            with contextlib.suppress(NoMatches, RuntimeError):
                self._view.workers.cancel_group(self._view, "tensor-search")

    def start(self, spec: SearchSpec, start: int, *, backward: bool) -> None:
        table = self._table
        data = table.data
        if data is None or data.geometry.size == 0:
            return
        find = self.state
        if find.begin(spec):
            table.set_highlight(spec)
        key = self._hooks.key()
        start %= data.geometry.size
        counted = find.known_count(key)
        self.cancel()
        jump = find.jump(key, start, backward=backward)
        if isinstance(jump, Missed):
            self._missed(spec)
        elif jump is not None:  # every match is known: no need to read the tensor again
            self._hooks.land(key, jump.flat, jump.rank)
        else:
            find.note = ""
            find.running = key
            generation = self._hooks.generation()
            post_result = self._hooks.post_result

            def report(event: SearchEvent) -> None:
                post_result(SearchReported(generation, key, event))

            work = partial(scan, data.view, spec, start, backward=backward, counted=counted)
            self._hooks.run_job(
                partial(work, report=report, cancelled=worker_cancelled), "tensor-search"
            )

    def reported(self, message: SearchReported) -> None:
        """What the scan found (dropped unless it is about what is shown now)."""
        key, event = message.key, message.event
        if message.generation != self._hooks.generation():
            return
        if self.state.spec is None or key != self._hooks.key() or not self._ready:
            return
        self.state.receive(key, event)
        if isinstance(event, Landed):
            self._hooks.land(key, event.flat, event.rank)
        elif isinstance(event, Missed):
            self._missed(self.state.spec)
        elif isinstance(event, Failed):
            self._hooks.update_status()
            self._view.notify(f"The search failed: {event.sentence}", severity="error", timeout=6)
        elif not isinstance(event, Counted):  # a count shows once the match is ranked
            self._hooks.update_status()

    def _missed(self, spec: SearchSpec | None) -> None:
        self.clear()  # nothing to highlight or step through
        if spec is not None:
            self._view.notify(f"No element of this slice matches {spec.text!r}.", timeout=5)


__all__ = ["FindHooks", "TensorFinder"]
