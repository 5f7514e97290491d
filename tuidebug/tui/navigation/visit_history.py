"""Back and forward over the nodes and tensors visited, like a browser's history.

A `Visit` is a place the user went to: a node, or one output tensor of it (at a dump
iteration, or None for the current step). The app records a visit each time it jumps
somewhere (Enter in the tree, a hit, the palette, an origin, the tensor list, an output
of the details pane), and never while it replays one (back and forward themselves).

Moving the tree cursor is not a jump, as scrolling a page is not: the place the cursor
rests on is recorded only when the user leaves it by a jump or by going back, so back
returns there. No Textual here: plain unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMIT", "Visit", "VisitHistory"]

DEFAULT_LIMIT = 100  # places kept; the oldest are forgotten first


@dataclass(frozen=True)
class Visit:
    """A node of a graph, or (`slot` set) one of its output tensors."""

    graph: str
    node: str
    slot: int | None = None
    iteration: int | None = None  # the tensor's dump iteration; None = the current step

    @property
    def is_tensor(self) -> bool:
        return self.slot is not None

    def same_node(self, other: Visit) -> bool:
        return self.graph == other.graph and self.node == other.node


class VisitHistory:
    """A bounded list of visits with a position in it (the place shown now)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("A visit history keeps at least one place.")
        self._limit = limit
        self._places: list[Visit] = []
        self._at = -1  # index of the current place; -1 while empty

    def __len__(self) -> int:
        return len(self._places)

    @property
    def current(self) -> Visit | None:
        return self._places[self._at] if self._places else None

    @property
    def can_back(self) -> bool:
        return self._at > 0

    @property
    def can_forward(self) -> bool:
        return 0 <= self._at < len(self._places) - 1

    def places(self) -> list[Visit]:
        """Every place kept, oldest first (for tests and a future history list)."""
        return list(self._places)

    def visit(self, place: Visit) -> None:
        """The user went to `place`: it becomes the current place, and the places ahead of
        the old one are forgotten (a new branch, as in a browser).

        Going to the place shown now changes nothing. Opening a tensor of the node shown
        now (no tensor open) refines that place instead of adding one, so back does not
        stop at the node on its way to the tensor before; so does the same tensor shown
        at another step. Going to the node of the tensor shown now is staying there."""
        here = self.current
        if here is not None and place.same_node(here):
            if not place.is_tensor:
                return  # the node of the tensor shown: still here
            if not here.is_tensor or here.slot == place.slot:
                # the node's tensor opened, or the same tensor shown at another step
                self._places[self._at] = place
                return
        del self._places[self._at + 1 :]
        self._places.append(place)
        overflow = len(self._places) - self._limit
        if overflow > 0:
            del self._places[:overflow]
        self._at = len(self._places) - 1

    def _wandered(self, here: Visit | None) -> bool:
        """The place shown now is another node than the current place: the tree cursor
        moved since the last jump. (Another tensor of the same node, or the same tensor
        refreshed at a new step, is still the current place.)"""
        current = self.current
        return here is not None and (current is None or not here.same_node(current))

    def leave(self, here: Visit | None) -> None:
        """Before a jump: record `here`, the place shown now, when the user wandered off
        the current place (the tree cursor moved since the last jump), so back returns
        there."""
        if self._wandered(here):
            assert here is not None
            self.visit(here)

    def back(self, here: Visit | None = None) -> Visit | None:
        """The place before the current one (None at the first). `here`, the place shown
        now, is recorded first when the user wandered off the current place, so forward
        comes back to it."""
        self.leave(here)
        if not self.can_back:
            return None
        self._at -= 1
        return self._places[self._at]

    def forward(self, here: Visit | None = None) -> Visit | None:
        """The place after the current one (None at the newest). When the user wandered
        off since going back, that is a new branch: `here` is recorded and nothing is
        ahead any more."""
        if self._wandered(here):
            assert here is not None
            self.visit(here)
            return None
        if not self.can_forward:
            return None
        self._at += 1
        return self._places[self._at]

    def can_back_from(self, here: Visit | None) -> bool:
        """Whether `back(here)` would go somewhere (nothing is recorded)."""
        return self.can_back or (self.current is not None and self._wandered(here))

    def can_forward_from(self, here: Visit | None) -> bool:
        """Whether `forward(here)` would go somewhere (nothing is recorded)."""
        return self.can_forward and not self._wandered(here)

    def clear(self) -> None:
        self._places.clear()
        self._at = -1
