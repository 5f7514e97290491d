"""The back/forward history (no Textual): visits, branches, the bound, the refinements."""

from __future__ import annotations

import pytest

from tuidebug.tui.navigation.visit_history import Visit, VisitHistory

A, B, C, D = (Visit("g", name) for name in "ABCD")


def history(*places: Visit, limit: int = 100) -> VisitHistory:
    h = VisitHistory(limit)
    for place in places:
        h.visit(place)
    return h


def test_back_and_forward_walk_the_visits() -> None:
    h = history(A, B, C)
    assert h.current == C and h.can_back and not h.can_forward
    assert h.back() == B
    assert h.back() == A
    assert h.back() is None and h.current == A
    assert h.forward() == B
    assert h.forward() == C
    assert h.forward() is None
    assert h.places() == [A, B, C]


def test_an_empty_history_goes_nowhere() -> None:
    h = VisitHistory()
    assert h.current is None and not h.can_back and not h.can_forward
    assert h.back() is None and h.forward() is None
    assert len(h) == 0


def test_a_visit_after_going_back_drops_what_was_ahead() -> None:
    h = history(A, B, C)
    h.back()
    h.visit(D)
    assert h.places() == [A, B, D] and not h.can_forward


def test_visiting_the_current_place_again_changes_nothing() -> None:
    h = history(A, A, B, B)
    assert h.places() == [A, B]


def test_the_oldest_places_are_forgotten_beyond_the_limit() -> None:
    h = history(*(Visit("g", str(i)) for i in range(10)), limit=4)
    assert [p.node for p in h.places()] == ["6", "7", "8", "9"]
    assert [h.back(), h.back(), h.back(), h.back()] == [
        Visit("g", "8"),
        Visit("g", "7"),
        Visit("g", "6"),
        None,
    ]
    with pytest.raises(ValueError):
        VisitHistory(0)


def test_opening_the_nodes_tensor_refines_the_place() -> None:
    a0 = Visit("g", "A", 0)
    h = history(B, A, a0)
    assert h.places() == [B, a0]  # back from the tensor goes to B, not to A's node first
    h.visit(A)  # going to the node of the tensor shown: still there
    assert h.places() == [B, a0]
    h.visit(Visit("g", "A", 0, iteration=3))  # the same tensor at another step
    assert h.places() == [B, Visit("g", "A", 0, 3)]
    h.visit(Visit("g", "A", 1))  # another output of the node is another place
    assert h.places() == [B, Visit("g", "A", 0, 3), Visit("g", "A", 1)]


def test_a_node_of_the_same_name_in_another_graph_is_another_place() -> None:
    h = history(A, Visit("other", "A"))
    assert len(h) == 2


def test_where_the_cursor_wandered_is_kept_by_back_and_leave() -> None:
    h = history(A, B)
    assert h.back(here=C) == B  # C, where the tree cursor rested, is recorded first
    assert h.places() == [A, B, C]
    assert h.forward(here=B) == C
    h.leave(D)  # before a jump from D: kept
    h.leave(D)
    assert h.places() == [A, B, C, D]
    h.leave(Visit("g", "D", 0))  # the same node with its tensor: not a new place
    assert len(h) == 4


def test_forward_after_wandering_is_a_new_branch() -> None:
    h = history(A, B, C)
    h.back()
    h.back()
    assert h.forward(here=D) is None  # the user went elsewhere: nothing ahead any more
    assert h.places() == [A, D]
    h.clear()
    assert h.current is None and len(h) == 0
