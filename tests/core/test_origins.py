"""core.origins: tracing a NaN/Inf upstream to where it appeared, on hand-built graphs and
on the demo dump (whose first Inf appears in fc2's forward MatMul at iteration 3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pytest

from tests.dump_names import DEMO_FIRST_INF, DEMO_LOSS
from tuidebug.core.graph import Graph, Node, NodeKind, StepInputs, TensorSpec
from tuidebug.core.origins import (
    TraceCancelled,
    has_nonfinite,
    trace_in_session,
    trace_origins,
)
from tuidebug.offline.session import OfflineSession


def op(name: str, *inputs: str, slots: int = 1) -> Node:
    return Node(
        name=name,
        kind=NodeKind.OPERATOR,
        op_type="Op",
        inputs=list(inputs),
        outputs=[TensorSpec(s, 11, (2,)) for s in range(slots)],
    )


def param(name: str) -> Node:
    return Node(name=name, kind=NodeKind.PARAMETER, op_type="Parameter", outputs=[TensorSpec(0)])


def graph(*nodes: Node) -> Graph:
    return Graph("g", nodes)


def values(bad: Iterable[str], missing: Iterable[str] = ()) -> tuple[object, list[tuple]]:
    """A `nonfinite` callback: nodes in `bad` are non-finite on every slot, in `missing`
    have no value; the list records every question asked."""
    bad, missing = set(bad), set(missing)
    asked: list[tuple] = []

    def check(node: str, slot: int) -> bool | None:
        asked.append((node, slot))
        if node in missing:
            return None
        return node in bad

    return check, asked


def names(trace: object) -> list[str]:
    return [o.node for o in trace.origins]  # type: ignore[attr-defined]


def test_chain_finds_the_first_nonfinite_node_and_its_path() -> None:
    g = graph(param("w"), op("a", "w"), op("b", "a"), op("c", "b"), op("d", "c"))
    check, _ = values({"b", "c", "d"})
    trace = trace_origins(g, "d", check)
    assert trace.found and trace.start_slots == (0,)
    assert names(trace) == ["b"] and trace.origins[0].certain
    assert trace.origins[0].slots == (0,)
    assert trace.chain("b") == ["b", "c", "d"]
    assert trace.on_paths == {"b", "c", "d"}
    assert not trace.unknown and not trace.truncated


def test_diamond_is_walked_once_and_meets_at_the_top() -> None:
    g = graph(
        op("x"), op("top", "x"), op("left", "top"), op("right", "top"), op("j", "left", "right")
    )
    check, asked = values({"top", "left", "right", "j"})
    trace = trace_origins(g, "j", check)
    assert names(trace) == ["top"]
    assert len(asked) == len(set(asked))  # every tensor asked once
    assert trace.chain("top") == ["top", "left", "j"]  # breadth-first: the first input wins
    assert trace.on_paths == {"top", "left", "j"}


def test_two_independent_origins_come_in_graph_order() -> None:
    g = graph(op("p"), op("q"), op("a2", "q"), op("a1", "p"), op("sum", "a1", "a2"))
    check, _ = values({"a1", "a2", "sum"})
    trace = trace_origins(g, "sum", check)
    assert names(trace) == ["a2", "a1"]  # graph order, not the order the walk met them


def test_step_inputs_replace_a_nodes_edges_for_the_traced_step_only() -> None:
    """A foreign dump whose edges are matched by statistics (msprobe) may link a call at the
    traced step to another producer than the graph says: `step_inputs` walks that instead,
    its unread positions and passed-on nodes included; the graph is left as it was."""
    g = graph(op("x"), op("fault", "x"), op("sqrt", "x"), op("tanh", "fault"), op("out", "tanh"))

    def check(node: str, slot: int) -> bool | None:
        return node in {"sqrt", "tanh", "out"}

    assert names(trace_origins(g, "out", check)) == ["tanh"]  # the graph's edge: cut off
    at_step = {"tanh": StepInputs(("sqrt",))}
    trace = trace_origins(g, "out", check, step_inputs=at_step)
    assert names(trace) == ["sqrt"] and trace.chain("sqrt") == ["sqrt", "tanh", "out"]
    assert g.nodes["tanh"].inputs == ["fault"]
    # an unread input at the step is followed but does not keep the node from being one
    unread = {"tanh": StepInputs(("sqrt",), frozenset({0}))}
    assert names(trace_origins(g, "out", check, step_inputs=unread)) == ["sqrt", "tanh"]
    # a passed-on node at the step is followed too
    passes = {"tanh": StepInputs(("x",), passes=("sqrt",))}
    assert names(trace_origins(g, "out", check, step_inputs=passes)) == ["sqrt", "tanh"]


def test_a_parameter_with_nan_is_an_origin() -> None:
    g = graph(param("w"), op("x"), op("mm", "x", "w"), op("out", "mm"))
    check, _ = values({"w", "mm", "out"})
    trace = trace_origins(g, "out", check)
    assert names(trace) == ["w"]
    assert trace.chain("w") == ["w", "mm", "out"]


def test_parameters_are_judged_by_their_value_when_the_step_began() -> None:
    # The dump holds w after the update (NaN), but the MatMul read it finite: mm is the origin.
    g = graph(param("w"), op("x"), op("mm", "x", "w"), op("out", "mm"))
    check, _ = values({"w", "mm", "out"})
    entry, _ = values(set())
    trace = trace_origins(g, "out", check, parameter_nonfinite=entry)
    assert names(trace) == ["mm"]


def test_input_dumps_decide_before_producer_outputs() -> None:
    # b's output is NaN in its file, but c read a finite value from it (input dump).
    g = graph(op("a"), op("b", "a"), op("c", "b"))
    check, _ = values({"b", "c"})

    def seen(node: str, index: int) -> bool | None:
        return False if node == "c" else None

    trace = trace_origins(g, "c", check, input_nonfinite=seen)
    assert names(trace) == ["c"]


def test_ordering_edges_are_ignored() -> None:
    g = graph(
        Node("u", NodeKind.OPERATOR, "UpdateState", outputs=[TensorSpec(0)]),
        op("a"),
        op("b", "a", "u"),
    )
    check, asked = values({"b"}, missing={"u"})
    trace = trace_origins(g, "b", check)
    assert names(trace) == ["b"] and trace.origins[0].certain and not trace.unknown
    assert ("u", 0) not in asked


def test_a_cycle_does_not_loop_forever() -> None:
    g = graph(op("a", "c"), op("b", "a"), op("c", "b"), op("d", "c"))
    check, asked = values({"a", "b", "c", "d"})
    trace = trace_origins(g, "d", check)
    assert names(trace) == []  # every node reads a non-finite input: no origin to blame
    assert set(trace.reached_from) == {"a", "b", "c", "d"}
    assert len(asked) == len(set(asked))


def test_missing_values_make_an_uncertain_origin_and_are_listed() -> None:
    g = graph(op("a"), op("gone"), op("b", "a", "gone"), op("c", "b"))
    check, _ = values({"b", "c"}, missing={"gone"})
    trace = trace_origins(g, "c", check)
    assert names(trace) == ["b"] and not trace.origins[0].certain
    assert trace.unknown == ("b",)


def test_certain_origins_come_before_uncertain_ones() -> None:
    g = graph(op("gone"), op("u", "gone"), op("x"), op("s", "x"), op("j", "u", "s"))
    check, _ = values({"u", "s", "j"}, missing={"gone"})
    trace = trace_origins(g, "j", check)
    assert [(o.node, o.certain) for o in trace.origins] == [("s", True), ("u", False)]


def test_multi_output_producers_count_any_slot() -> None:
    g = graph(op("split", slots=2), op("use", "split"))
    check = lambda node, slot: node == "use" or (node == "split" and slot == 1)  # noqa: E731
    trace = trace_origins(g, "use", check)
    assert names(trace) == ["split"] and trace.origins[0].slots == (1,)


def test_a_finite_start_and_a_start_without_value() -> None:
    g = graph(op("a"), op("b", "a"))
    check, asked = values(set())
    trace = trace_origins(g, "b", check)
    assert not trace.found and trace.start_has_value and asked == [("b", 0)]
    check, _ = values(set(), missing={"b"})
    trace = trace_origins(g, "b", check)
    assert not trace.found and not trace.start_has_value


def test_the_walk_stops_at_max_tensors() -> None:
    nodes = [op("n0")] + [op(f"n{i}", f"n{i - 1}") for i in range(1, 50)]
    g = graph(*nodes)
    check, asked = values({n.name for n in nodes})
    trace = trace_origins(g, "n49", check, max_tensors=10)
    assert trace.truncated and trace.tensors_read == 10 == len(asked)
    assert names(trace) == []
    full = trace_origins(g, "n49", values({n.name for n in nodes})[0])
    assert names(full) == ["n0"] and full.tensors_read == 50 and not full.truncated


def test_cancellation_is_checked_between_reads() -> None:
    nodes = [op("n0")] + [op(f"n{i}", f"n{i - 1}") for i in range(1, 20)]
    check, asked = values({n.name for n in nodes})
    seen: list[int] = []
    with pytest.raises(TraceCancelled):
        trace_origins(
            graph(*nodes), "n19", check, cancelled=lambda: len(asked) >= 3, progress=seen.append
        )
    assert len(asked) == 3 and seen == [1, 2, 3]


def test_has_nonfinite_is_chunked_and_skips_integers() -> None:
    a = np.zeros(1000, dtype=np.float32)
    assert not has_nonfinite(a, chunk=7)
    a[993] = np.nan
    assert has_nonfinite(a, chunk=7)
    assert not has_nonfinite(np.arange(10))
    assert has_nonfinite(np.array([1, np.inf], dtype=np.float16))


# ------------------------------------------------------------------ the demo dump
@pytest.fixture(scope="module")
def demo_session(demo_dump: Path) -> Iterable[OfflineSession]:
    session = OfflineSession(demo_dump)
    session.start()
    yield session
    session.close()


def _graph(session: OfflineSession) -> Graph:
    graphs: Mapping[str, Graph] = session.graphs
    return next(iter(graphs.values()))


def test_demo_trace_from_the_loss_finds_the_overflowing_matmul(
    demo_session: OfflineSession,
) -> None:
    g = _graph(demo_session)
    trace = trace_in_session(demo_session, g, DEMO_LOSS, iteration=3)
    assert [o.node for o in trace.origins] == [DEMO_FIRST_INF]
    assert trace.origins[0].certain and trace.origins[0].slots == (0,)
    assert (
        trace.chain(DEMO_FIRST_INF)[0] == DEMO_FIRST_INF
        and trace.chain(DEMO_FIRST_INF)[-1] == DEMO_LOSS
    )
    assert not trace.truncated and not trace.unknown
    assert trace.tensors_read < 40


def test_demo_trace_from_the_optimizer_goes_through_the_gradients(
    demo_session: OfflineSession,
) -> None:
    # ApplyMomentum dumps its weight input after the update (NaN): not an origin.
    g = _graph(demo_session)
    trace = trace_in_session(
        demo_session, g, "Default/optimizer-Momentum/ApplyMomentum-op5", iteration=3
    )
    assert [o.node for o in trace.origins] == [DEMO_FIRST_INF]
    assert any(n.startswith("Gradients/") for n in trace.chain(DEMO_FIRST_INF))


def test_demo_a_step_later_the_weights_were_already_nan(demo_session: OfflineSession) -> None:
    g = _graph(demo_session)
    trace = trace_in_session(demo_session, g, DEMO_LOSS, iteration=4)
    found = {o.node for o in trace.origins}
    assert found and all(g.node(n).is_parameter for n in found)
    assert "fc3.weight" in found


def test_demo_healthy_step_has_nothing_to_trace(demo_session: OfflineSession) -> None:
    trace = trace_in_session(demo_session, _graph(demo_session), DEMO_LOSS, iteration=1)
    assert not trace.found and trace.start_has_value and trace.tensors_read == 1


def test_demo_cancel_from_the_session_glue(demo_session: OfflineSession) -> None:
    with pytest.raises(TraceCancelled):
        trace_in_session(
            demo_session, _graph(demo_session), DEMO_LOSS, iteration=3, cancelled=lambda: True
        )


def test_demo_missing_step_is_no_value(demo_session: OfflineSession) -> None:
    trace = trace_in_session(demo_session, _graph(demo_session), DEMO_LOSS, iteration=99)
    assert not trace.found and not trace.start_has_value


def test_the_trace_says_which_value_of_a_parameter_it_read(
    demo_session: OfflineSession,
) -> None:
    """Issue 28: at the NaN step the weights are NaN in their own files (after the update),
    which `L` and `pt` show, while the trace read them before the update: it says so."""
    from tuidebug.tui.origins.screen import parameter_note

    g = _graph(demo_session)
    trace = trace_in_session(demo_session, g, DEMO_LOSS, iteration=3)
    assert trace.parameters_read and all(trace.parameters_read.values())
    note = parameter_note(trace)
    assert note is not None and "before this step's optimizer update" in note
    assert "L, WI/WCL and pt show the value after it" in note
    later = trace_in_session(demo_session, g, DEMO_LOSS, iteration=4)
    assert later.parameters_read["fc3.weight"] is True  # step 4's weights: step 3's dump
    first = trace_in_session(demo_session, g, DEMO_LOSS, iteration=0)
    assert not any(first.parameters_read.values())  # no earlier dump: after the update


class _RuleGraph(Graph):
    """A graph carrying a dump tool's own rule, as msprobe's ForeignGraph does."""

    def __init__(
        self,
        nodes: Iterable[Node],
        unread: Mapping[str, frozenset[int]],
        blamed: Mapping[str, str | None],
        passes: Mapping[str, tuple[str, ...]],
    ) -> None:
        super().__init__("g", nodes)
        self._unread, self._blamed, self._passes = unread, blamed, passes

    def unread_inputs(self, name: str) -> frozenset[int]:
        return self._unread.get(name, frozenset())

    def blamed_for(self, name: str) -> str | None:
        return self._blamed.get(name, name)

    def passed_on(self, name: str) -> tuple[str, ...]:
        return self._passes.get(name, ())


def test_a_tools_rule_names_its_own_origin() -> None:
    # batch → lin (reads weight w, a module's parameter) → mod (passes lin's output on)
    # → cat (reads lin nested in a list) → out
    nodes = [
        op("batch"),
        op("w"),
        op("lin", "batch", "w"),
        op("mod", "batch"),
        op("cat", "mod"),
        op("out", "cat"),
    ]
    rule = _RuleGraph(
        nodes,
        unread={"cat": frozenset({0})},
        blamed={"batch": None, "w": "mod"},
        passes={"mod": ("lin",)},
    )
    # a NaN weight: lin read it, so mod (whose parameter it is) is named; cat's nested
    # NaN does not keep it from being an origin, and is followed to mod
    check, _ = values({"w", "lin", "mod", "cat", "out"})
    assert names(trace_origins(rule, "out", check)) == ["mod", "cat"]
    # a NaN batch: cat is named first, the batch (named by no rule) after it
    check, _ = values({"batch", "lin", "mod", "cat", "out"})
    trace = trace_origins(rule, "out", check)
    assert names(trace) == ["cat", "batch"]
    assert trace.chain("batch")[-1] == "out"
    # without the rule: the batch alone, as on a MindSpore graph
    plain = graph(*nodes)
    assert names(trace_origins(plain, "out", check)) == ["batch"]
