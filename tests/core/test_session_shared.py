"""What the sessions share (core): the watchpoint book, the watched-tensor resolver, the stop
rule and the outcome → hit conversion. Plain unit tests, no dump, no server, no TUI."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tests.core.small_graph import CONV, RELU, RELU_GRAD, small_graph
from tuidebug.core.condition_catalogue import CheckResult, WatchpointError, get_condition
from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.core.hit_rules import hit_from_outcome, only_no_previous, stops_run
from tuidebug.core.session import SessionError
from tuidebug.core.watch_targets import output_slots, watched_nodes, watched_tensors
from tuidebug.core.watchpoint_book import WatchpointBook, WatchpointChange


# ---------------------------------------------------------------------------------- book
def test_book_ids_start_at_one_and_a_refused_create_takes_none() -> None:
    changes: list[WatchpointChange] = []
    book = WatchpointBook(changes.append)
    first = book.create("TO", {})
    with pytest.raises(WatchpointError):
        book.create("TL", {"abs_mean_gt": "high"})  # type: ignore[dict-item]
    with pytest.raises(WatchpointError):
        book.create("TO", {}, check=lambda wp, new: (_ for _ in ()).throw(WatchpointError("x")))
    second = book.create("TL", {"abs_mean_gt": 1})
    assert (first.id, second.id) == (1, 2)
    assert [c.kind for c in changes] == ["created", "created"]
    assert changes[-1].watchpoints == (first, second)


def test_book_update_delete_and_their_sentences() -> None:
    changes: list[WatchpointChange] = []
    book = WatchpointBook(changes.append)
    wp = book.create("TL", {"abs_mean_gt": 1}, ["a"], "g", place=lambda name: name)
    seen: list[bool] = []
    new = book.update(wp.id, enabled=False, check=lambda w, targets: seen.append(targets))
    assert not new.enabled and new.params == {"abs_mean_gt": 1.0} and seen == [False]
    book.update(wp.id, targets=["b"], check=lambda w, targets: seen.append(targets))
    assert seen == [False, True] and book.get(wp.id).targets == ("b",)
    assert book.delete(wp.id).id == wp.id and len(book) == 0
    with pytest.raises(SessionError, match=r"^There is no watchpoint 1\.$"):
        book.delete(wp.id)
    with pytest.raises(SessionError, match=r"^There is no watchpoint 7\.$"):
        book.update(7, enabled=True)
    assert [c.kind for c in changes] == ["created", "updated", "updated", "deleted"]
    deleted = changes[-1].watchpoint
    assert deleted is not None and deleted.id == wp.id


def test_book_place_names_the_graph_and_clear_restarts_ids() -> None:
    changes: list[WatchpointChange] = []
    book = WatchpointBook(changes.append)
    wp = book.create("TO", {}, place=lambda name: name or "first")
    assert wp.graph_name == "first"
    book.clear()
    book.clear()  # an empty book says nothing
    assert [c.kind for c in changes] == ["created", "cleared"]
    assert changes[-1].watchpoints == () and book.create("TO", {}).id == 1


# ------------------------------------------------------------------------------ resolver
def _with_constant_target() -> tuple[Graph, list[str]]:
    return small_graph(), [RELU, "cst1"]


def test_constants_named_as_targets_are_a_parameter() -> None:
    graph, targets = _with_constant_target()
    kept = watched_nodes("TO", targets, graph, constants=True)
    dropped = watched_nodes("TO", targets, graph, constants=False)
    assert [n.name for n in kept] == [RELU, "cst1"]
    assert [n.name for n in dropped] == [RELU]


def test_graph_prefix_and_node_filter() -> None:
    graph = small_graph()
    prefixed = [f"{graph.name}/{RELU}"]
    with pytest.raises(WatchpointError):
        watched_nodes("TO", prefixed, graph, constants=True)
    assert [
        n.name
        for n in watched_nodes("TO", prefixed, graph, constants=True, strip_graph_prefix=True)
    ] == [RELU]
    pattern = re.compile("Gradients/")
    found = watched_tensors(
        "TO", (), [graph], constants=True, node_filter=lambda n: bool(pattern.search(n.name))
    )
    assert found[graph.name][0][0] == RELU_GRAD


def test_watched_tensors_slots_and_tolerance() -> None:
    wide = Graph(
        "other",
        [
            Node(
                "y",
                NodeKind.OPERATOR,
                "Split",
                outputs=[TensorSpec(0, 11, (1,)), TensorSpec(1, 11, (1,))],
            )
        ],
    )
    assert list(output_slots(wide.node("y"))) == [0, 1]
    assert list(output_slots(small_graph().node(CONV))) == [0]  # no declared output
    graphs = [small_graph(), wide]
    with pytest.raises(WatchpointError):
        watched_tensors("TO", [CONV], graphs, constants=False)
    found = watched_tensors("TO", [CONV], graphs, constants=False, tolerate=True)
    assert found == {"kernel_graph_0": [(CONV, 0)]}
    with pytest.raises(WatchpointError, match="kernel_graph_0"):  # nowhere: the first sentence
        watched_tensors("TO", ["nope"], graphs, constants=False, tolerate=True)
    assert watched_tensors("TO", ["y"], [wide], constants=False) == {"other": [("y", 0), ("y", 1)]}


# ------------------------------------------------------------------------ stop rule, hits
@dataclass(frozen=True)
class _Coded:
    error_code: int


def test_hits_that_are_all_error_4_do_not_stop_a_run() -> None:
    assert not stops_run([])
    assert not stops_run([_Coded(4), _Coded(4)])
    assert stops_run([_Coded(4), _Coded(0)])
    assert stops_run([_Coded(4 | 1)])
    assert only_no_previous(_Coded(4)) and not only_no_previous(_Coded(5))


@dataclass(frozen=True)
class _Key:
    rank: int
    graph: str
    node: str
    slot: int
    iteration: int


@dataclass(frozen=True)
class _Outcome:
    key: _Key
    watchpoint_id: int
    result: CheckResult


def test_outcome_to_hit() -> None:
    outcome = _Outcome(_Key(1, "g", "n", 2, 5), 3, CheckResult(True, 0))
    hit = hit_from_outcome(outcome, get_condition("TO"), order=9)
    assert (hit.watchpoint_id, hit.order, hit.error_code) == (3, 9, 0)
    ref = hit.tensor
    assert (ref.rank, ref.graph, ref.node, ref.slot, ref.iteration) == (1, "g", "n", 2, 5)
