"""core/graph.py on hand-built graphs: lookup, data flow, scope tree, categories."""

from __future__ import annotations

import gc

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuidebug.core.graph import (
    Category,
    Graph,
    Node,
    NodeKind,
    StackFrame,
    distinct_short_names,
    node_categories,
    paused_gc,
)

NET = "Default/network-WithLossCell/_backbone-Net"


def op(name: str, op_type: str, *inputs: str) -> Node:
    return Node(
        name=name,
        kind=NodeKind.OPERATOR,
        op_type=op_type,
        scope=name.rsplit("/", 1)[0] if "/" in name else "",
        inputs=list(inputs),
    )


def param(name: str) -> Node:
    return Node(name=name, kind=NodeKind.PARAMETER, op_type="Parameter")


def const(name: str) -> Node:
    return Node(name=name, kind=NodeKind.CONSTANT, op_type="Const")


@pytest.fixture
def graph() -> Graph:
    """x, conv.weight → Conv2D → ReLU → MatMul(ReLU, ReLU, fc.bias); grads; optimizer."""
    return Graph(
        "kernel_graph_3",
        [
            param("x"),
            param("conv.weight"),
            param("fc.bias"),
            param("moments.conv.weight"),
            const("cst1"),
            op(f"{NET}/conv-Conv2d/Conv2D-op1", "Conv2D", "x", "conv.weight"),
            op(f"{NET}/relu-ReLU/ReLU-op2", "ReLU", f"{NET}/conv-Conv2d/Conv2D-op1"),
            op(
                f"{NET}/fc-Dense/MatMul-op3",
                "MatMul",
                f"{NET}/relu-ReLU/ReLU-op2",
                f"{NET}/relu-ReLU/ReLU-op2",
                "fc.bias",
                "not-a-node",
            ),
            op(f"Gradients/{NET}/relu-ReLU/ReluGrad-op4", "ReluGrad", f"{NET}/fc-Dense/MatMul-op3"),
            op(f"Gradients/{NET}/relu-ReLU/gradReLU/ReLU-op5", "ReLU", "cst1"),
            op(
                "Default/optimizer-Momentum/ApplyMomentum-op6",
                "ApplyMomentum",
                "conv.weight",
                "moments.conv.weight",
                f"Gradients/{NET}/relu-ReLU/ReluGrad-op4",
            ),
        ],
        root_name="1",
    )


# ---------------------------------------------------------------- identity and lookup


def test_graph_ids() -> None:
    assert Graph("kernel_graph_3", [], root_name="1").graph_id == 3
    assert Graph("kernel_graph_3", [], root_name="1").root_graph_id == 1
    assert Graph("kernel_graph12", [], root_name="").root_graph_id == 12
    assert Graph("kernel_graph_3", [], root_name="x").root_graph_id == 3
    assert Graph("weird", []).graph_id == 0


def test_lookup(graph: Graph) -> None:
    conv = graph.node(f"{NET}/conv-Conv2d/Conv2D-op1")
    assert conv.short_name == "Conv2D-op1" and conv.op_id == 1
    assert conv.graph_name == "kernel_graph_3"
    assert conv in graph
    assert op(conv.name, "Conv2D") not in graph  # another object of the same name
    assert 3 not in graph and ["x"] not in graph
    assert f"{NET}/conv-Conv2d/Conv2D-op1" in graph
    assert len(graph) == 11
    assert graph.get("nope") is None
    with pytest.raises(KeyError, match="nope"):
        graph.node("nope")
    assert [n.name for n in graph.parameters] == [
        "x",
        "conv.weight",
        "fc.bias",
        "moments.conv.weight",
    ]
    assert [n.name for n in graph.constants] == ["cst1"]
    assert len(graph.operators) == 6
    assert graph.node("cst1").op_id is None


def test_parameters_take_their_first_consumers_scope(graph: Graph) -> None:
    weight = graph.node("conv.weight")
    assert weight.scope == f"{NET}/conv-Conv2d"  # Conv2D reads it before ApplyMomentum
    assert weight.ui_name == f"{NET}/conv-Conv2d/conv.weight"
    assert graph.node(weight.ui_name) is weight
    assert graph.get(weight.ui_name) is weight
    assert graph.node("moments.conv.weight").ui_name == (
        "Default/optimizer-Momentum/moments.conv.weight"
    )
    assert graph.node("cst1").ui_name == f"Gradients/{NET}/relu-ReLU/gradReLU/cst1"
    # an operator's UI name is its full name whatever its scope
    assert graph.node(f"{NET}/relu-ReLU/ReLU-op2").ui_name == f"{NET}/relu-ReLU/ReLU-op2"


def test_unconsumed_parameter_stays_at_the_top() -> None:
    g = Graph("g", [param("lonely"), op("S/A-op1", "A")])
    assert g.node("lonely").ui_name == "lonely"
    assert [e.label for e in g.children("")] == ["S", "lonely"]


def test_explicit_parameter_scope_is_kept() -> None:
    p = param("w")
    p.scope = "Mine"
    g = Graph("g", [p, op("S/A-op1", "A", "w")])
    assert g.node("w").ui_name == "Mine/w"


# ---------------------------------------------------------------- data flow


def test_inputs_and_consumers(graph: Graph) -> None:
    matmul = f"{NET}/fc-Dense/MatMul-op3"
    # duplicates kept once, unknown references skipped, input order kept
    assert [n.name for n in graph.inputs(matmul)] == [f"{NET}/relu-ReLU/ReLU-op2", "fc.bias"]
    assert [n.name for n in graph.consumers(f"{NET}/relu-ReLU/ReLU-op2")] == [matmul]
    assert [n.name for n in graph.consumers("conv.weight")] == [
        f"{NET}/conv-Conv2d/Conv2D-op1",
        "Default/optimizer-Momentum/ApplyMomentum-op6",
    ]
    assert graph.consumers("Default/optimizer-Momentum/ApplyMomentum-op6") == []
    assert graph.inputs("x") == []
    # lookups by UI name work too
    assert graph.consumers(f"{NET}/conv-Conv2d/conv.weight") == graph.consumers("conv.weight")


def test_affected_in_graph_order(graph: Graph) -> None:
    assert [n.short_name for n in graph.affected(f"{NET}/conv-Conv2d/Conv2D-op1")] == [
        "ReLU-op2",
        "MatMul-op3",
        "ReluGrad-op4",
        "ApplyMomentum-op6",
    ]
    assert [n.short_name for n in graph.affected("cst1")] == ["ReLU-op5"]
    assert graph.affected("Default/optimizer-Momentum/ApplyMomentum-op6") == []


def test_digraph(graph: Graph) -> None:
    dg = graph.digraph
    assert isinstance(dg, nx.DiGraph)
    assert set(dg.nodes) == set(graph.nodes)
    assert dg.has_edge("conv.weight", f"{NET}/conv-Conv2d/Conv2D-op1")
    assert not dg.has_node("not-a-node")
    # the duplicated ReLU input is one edge
    assert dg.number_of_edges() == 10
    assert graph.digraph is dg  # built once


def test_cycles_do_not_hang() -> None:
    g = Graph("g", [op("S/A-op1", "A", "S/B-op2"), op("S/B-op2", "B", "S/A-op1")])
    assert [n.name for n in g.affected("S/A-op1")] == ["S/B-op2"]


# ---------------------------------------------------------------- scope tree


def test_children_scopes_first_in_graph_order(graph: Graph) -> None:
    assert [(e.label, e.is_scope) for e in graph.children("")] == [
        ("Default", True),
        ("Gradients", True),
    ]
    entries = graph.children(f"{NET}/relu-ReLU")
    assert [(e.label, e.node) for e in entries] == [("ReLU-op2", f"{NET}/relu-ReLU/ReLU-op2")]
    conv = graph.children(f"{NET}/conv-Conv2d")
    assert [e.label for e in conv] == ["x", "conv.weight", "Conv2D-op1"]
    assert conv[1].path == f"{NET}/conv-Conv2d/conv.weight"
    default = graph.children("Default")
    assert [(e.label, e.child_count) for e in default] == [
        ("network-WithLossCell", 1),
        ("optimizer-Momentum", 2),
    ]
    grad_relu = graph.children(f"Gradients/{NET}/relu-ReLU")
    assert [(e.label, e.is_scope) for e in grad_relu] == [
        ("gradReLU", True),
        ("ReluGrad-op4", False),
    ]
    with pytest.raises(KeyError):
        graph.children("No/Such/Scope")
    assert graph.top_scopes() == ["Default", "Gradients"]


def test_leaf_counts_and_leaves(graph: Graph) -> None:
    assert graph.leaf_count("") == len(graph) == 11
    assert graph.leaf_count("Default") == 8
    assert graph.leaf_count("Gradients") == 3
    assert graph.leaf_count(NET) == 6
    assert graph.leaf_count(f"{NET}/conv-Conv2d") == 3
    assert graph.leaf_count("Default/optimizer-Momentum") == 2
    assert graph.leaf_count("nowhere") == 0
    assert graph.leaf_count(f"{NET}/relu-ReLU/ReLU-op2") == 0  # a node, not a scope
    assert {n.name for n in graph.leaves(f"{NET}/conv-Conv2d")} == {
        "x",
        "conv.weight",
        f"{NET}/conv-Conv2d/Conv2D-op1",
    }
    assert graph.leaves("cst1") == [graph.node("cst1")]
    assert graph.leaves(f"{NET}/conv-Conv2d/conv.weight") == [graph.node("conv.weight")]
    assert len(graph.leaves("")) == 11
    assert graph.is_scope(NET) and not graph.is_scope(f"{NET}/relu-ReLU/ReLU-op2")
    assert not graph.is_scope("nowhere")


_segment = st.sampled_from(["a", "b", "c", "Default", "grad-X"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(_segment, min_size=0, max_size=4), st.booleans()),
        min_size=1,
        max_size=30,
    )
)
def test_tree_counts_agree_with_leaves(specs: list[tuple[list[str], bool]]) -> None:
    """Whatever the scopes, counts from the tree equal a direct scan of UI names."""
    nodes = []
    for i, (scope, is_param) in enumerate(specs):
        if is_param:
            p = param(f"p{i}.weight")
            p.scope = "/".join(scope)
            nodes.append(p)
        else:
            nodes.append(op("/".join([*scope, f"Op-op{i}"]), "Op"))
    g = Graph("g", nodes)
    scopes = [""]
    while scopes:
        path = scopes.pop()
        entries = g.children(path)
        expected = [n for n in g if path == "" or n.ui_name.startswith(path + "/")]
        assert g.leaf_count(path) == len(expected) == len(g.leaves(path))
        assert sum(g.leaf_count(e.path) if e.is_scope else 1 for e in entries) == len(expected)
        scopes.extend(e.path for e in entries if e.is_scope)


# ---------------------------------------------------------------- categories


def test_categories_on_the_graph(graph: Graph) -> None:
    assert {n.name for n in graph.nodes_in(Category.WEIGHT)} == {"conv.weight", "fc.bias"}
    assert {n.name for n in graph.nodes_in(Category.PARAMETER)} == {
        "x",
        "conv.weight",
        "fc.bias",
        "moments.conv.weight",
    }
    # gradient scope wins over the activation op type; constants are never gradients
    assert {n.short_name for n in graph.nodes_in(Category.GRADIENT)} == {
        "ReluGrad-op4",
        "ReLU-op5",
    }
    assert [n.short_name for n in graph.nodes_in(Category.ACTIVATION)] == ["ReLU-op2"]
    assert len(graph.nodes_in(Category.TENSOR)) == len(graph)
    assert Category.GRADIENT not in graph.categories("cst1")
    assert graph.categories(graph.node("x")) == frozenset({Category.TENSOR, Category.PARAMETER})


@pytest.mark.parametrize(
    ("node", "scope", "expected"),
    [
        (param("conv1.weight"), "Default/net", {"parameter", "weight"}),
        (param("fc.BIAS"), "Default/net", {"parameter", "weight"}),
        (param("moments.fc.bias"), "Default/optimizer-Adam", {"parameter"}),
        (param("fc.bias"), "Gradients/x", {"parameter"}),
        (param("learning_rate"), "Default/optimizer-SGD", {"parameter"}),
        (op("Default/a/Sigmoid-op1", "Sigmoid"), "", {"activation"}),
        (op("Default/a/FastGeLU-op1", "FastGeLU"), "", {"activation"}),
        (op("Default/a/ReLU6-op1", "ReLU6"), "", {"activation"}),
        (op("Default/a/MatMul-op1", "MatMul"), "", set()),
        (op("Gradients/a/MatMul-op1", "MatMul"), "", {"gradient"}),
        (op("gradients", "X"), "", {"gradient"}),
        (op("GradientsX/a/MatMul-op1", "MatMul"), "", set()),
    ],
)
def test_node_categories_rules(node: Node, scope: str, expected: set[str]) -> None:
    if node.kind is NodeKind.PARAMETER:
        node.scope = scope
    assert {c.value for c in node_categories(node)} == {"tensor", *expected}


# ---------------------------------------------------------------- small pieces


def test_stack_frame() -> None:
    assert StackFrame("/a.py", 3, "x = 1").group == 0
    assert str(StackFrame("/a.py", 3, "x = 1")) == "/a.py:3 x = 1"
    assert str(StackFrame("/a.py", None, "x = 1")) == "/a.py x = 1"
    assert str(StackFrame("", None, "Corresponding code candidate:", 1)) == (
        "Corresponding code candidate:"
    )


def test_paused_gc_restores_the_collector() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it to the outer one
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_distinct_short_names_add_the_shortest_scope_tail_that_tells_namesakes_apart() -> None:
    fc1, fc2 = f"{NET}/fc1-Dense/MatMul-op0", f"{NET}/fc2-Dense/MatMul-op0"
    add = f"{NET}/fc1-Dense/Add-op1"
    # no namesake: the short name alone; namesakes differing one scope up: that scope
    assert distinct_short_names([fc1, add, "conv1.weight"]) == {
        fc1: "MatMul-op0",
        add: "Add-op1",
        "conv1.weight": "conv1.weight",
    }
    assert distinct_short_names([fc1, fc2, add]) == {
        fc1: "fc1-Dense/MatMul-op0",
        fc2: "fc2-Dense/MatMul-op0",
        add: "Add-op1",
    }
    # several depths in one group: each name takes only as much as it needs
    deep = ["a/b/fc/M", "a/c/fc/M", "a/fc2/M", "x/y/z/b/fc/M"]
    assert distinct_short_names(deep) == {
        "a/b/fc/M": "a/b/fc/M",
        "a/c/fc/M": "c/fc/M",
        "a/fc2/M": "fc2/M",
        "x/y/z/b/fc/M": "z/b/fc/M",
    }
    # a name that is a whole tail of another keeps itself; the other one's tail is longer
    assert distinct_short_names(["M", "s/M"]) == {"M": "M", "s/M": "s/M"}
    # one full name twice (the same node name in two graphs): no tail tells them apart,
    # so it has one label, and it tells it apart from the rest
    twice = distinct_short_names(["A/x", "B/x", "B/x"])
    assert twice == {"A/x": "A/x", "B/x": "B/x"}
    assert distinct_short_names([fc1, fc1]) == {fc1: "MatMul-op0"}
    assert distinct_short_names([]) == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=4), max_size=8))
def test_distinct_short_names_are_distinct_tails(paths: list[list[str]]) -> None:
    names = ["/".join(parts) for parts in paths]
    labels = distinct_short_names(names)
    assert set(labels) == set(names)
    assert len(set(labels.values())) == len(labels)  # distinct names, distinct labels
    for name, label in labels.items():
        assert name == label or name.endswith("/" + label)
        assert label.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1]
        if "/" in label:  # the shortest: one component less is another name's tail too
            shorter = label.split("/", 1)[1]
            others = set(names) - {name}
            assert any(o == shorter or o.endswith("/" + shorter) for o in others)
