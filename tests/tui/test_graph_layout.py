"""The neighbourhood graph's layout (no Textual): which nodes, which layers, boxes that do
not overlap, and every edge drawn so that following its lines leads to its consumer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.tui.support import CONV, RELU, synthetic_graph
from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.tui.neighbours.graph_layout import (
    GAP,
    Picture,
    box_names,
    label_text,
    layout,
    scope_label,
    step,
    tensor_label,
)
from tuidebug.tui.neighbours.neighbourhood import (
    MAX_BOXES,
    is_scope_box,
    neighbourhood,
    scope_ancestors,
)

FIXTURE = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
LENET = FIXTURE / "mindspore_lenet_dump" / "ms2_0_0"

# the directions each line glyph joins (a crossing is drawn as the vertical line)
U, D, L, R = (-1, 0), (1, 0), (0, -1), (0, 1)
JOINS = {
    "│": {U, D},
    "─": {L, R},
    "┌": {D, R},
    "┐": {D, L},
    "└": {U, R},
    "┘": {U, L},
    "├": {U, D, R},
    "┤": {U, D, L},
    "┬": {D, L, R},
    "┴": {U, L, R},
    "┼": {U, D, L, R},
}


def op(name: str, *inputs: str, op_type: str = "Add") -> Node:
    return Node(name=name, kind=NodeKind.OPERATOR, op_type=op_type, inputs=list(inputs))


def chain(length: int) -> Graph:
    return Graph("g", [op(f"n{i}", *([f"n{i - 1}"] if i else [])) for i in range(length)])


def random_dag(seed: int, size: int = 60) -> Graph:
    rng = random.Random(seed)
    nodes = []
    for i in range(size):
        count = rng.choice([0, 1, 1, 2, 2, 3]) if i else 0
        inputs = {f"n{rng.randrange(max(0, i - 8), i)}" for _ in range(count)} if i else set()
        nodes.append(op(f"n{i}", *sorted(inputs)))
    return Graph("g", nodes)


def followed_edges(picture: Picture) -> set[tuple[str, str]]:
    """Read the picture as a user does: from each box's exit (the junction in its bottom
    border) follow the lines, going straight over crossings, to the arrows they reach."""
    lines = picture.lines
    found: set[tuple[str, str]] = set()
    for box in picture.boxes.values():
        bottom = lines[box.y + box.height - 1][box.x : box.x + box.width]
        exits = [box.x + i for i, c in enumerate(bottom) if c in "┬╤"]
        if not exits:
            continue
        assert len(exits) == 1, f"{box.name} leaves at {exits}"
        todo = [(box.y + box.height, exits[0], D)]
        seen: set[tuple[int, int, tuple[int, int]]] = set()
        while todo:
            y, x, moving = todo.pop()
            if (y, x, moving) in seen:
                continue
            seen.add((y, x, moving))
            glyph = lines[y][x]
            if glyph == "▼":
                target = picture.box_at(x, y + 1)
                assert target is not None, f"an arrow at {y},{x} points at no box"
                found.add((box.name, target))
                continue
            if glyph == "│" and moving in (L, R):  # a crossing: the bus passes under
                todo.append((y + moving[0], x + moving[1], moving))
                continue
            joins = JOINS.get(glyph)
            assert joins is not None, f"the line from {box.name} ends in {glyph!r} at {y},{x}"
            came_from = (-moving[0], -moving[1])
            assert came_from in joins, f"{glyph!r} at {y},{x} does not join {came_from}"
            for way in joins - {came_from}:
                todo.append((y + way[0], x + way[1], way))
    return found


def assert_boxes_apart(picture: Picture) -> None:
    boxes = list(picture.boxes.values())
    for i, a in enumerate(boxes):
        assert a.x >= 0 and a.x + a.width <= picture.width
        assert a.y >= 0 and a.y + a.height <= picture.height
        for b in boxes[i + 1 :]:
            apart_x = a.x + a.width + GAP <= b.x or b.x + b.width + GAP <= a.x
            apart_y = a.y + a.height <= b.y or b.y + b.height <= a.y
            assert apart_x or apart_y, f"{a} overlaps {b}"


def test_layers_are_the_distance_from_the_centre() -> None:
    graph = chain(9)
    hood = neighbourhood(graph, "n4", 2)
    assert set(hood.nodes) == {"n2", "n3", "n4", "n5", "n6"}
    assert hood.nodes[0] == "n4" and hood.deeper and not hood.cut
    assert dict(hood.distance) == {"n2": -2, "n3": -1, "n4": 0, "n5": 1, "n6": 2}
    picture = layout(hood, graph)
    assert dict(picture.layers) == {-2: ("n2",), -1: ("n3",), 0: ("n4",), 1: ("n5",), 2: ("n6",)}
    ys = [picture.boxes[f"n{i}"].y for i in range(2, 7)]
    assert ys == sorted(ys)  # inputs above, consumers below
    assert (
        followed_edges(picture)
        == set(hood.edges)
        == {
            ("n2", "n3"),
            ("n3", "n4"),
            ("n4", "n5"),
            ("n5", "n6"),
        }
    )
    # a chain is a straight line: every arrow is right under its source's exit
    for src, dst in hood.edges:
        top, bottom = picture.boxes[src], picture.boxes[dst]
        bottom_border = picture.lines[top.y + top.height - 1]
        exit_x = next(x for x, c in enumerate(bottom_border) if c in "┬╤")
        assert picture.lines[bottom.y - 1][exit_x] == "▼"


def test_depth_zero_and_one() -> None:
    graph = chain(5)
    assert neighbourhood(graph, "n2", 0).nodes == ("n2",)
    hood = neighbourhood(graph, "n2", 1)
    assert set(hood.nodes) == {"n1", "n2", "n3"} and hood.deeper
    assert not neighbourhood(graph, "n0", 4).deeper


def test_an_edge_skipping_layers_passes_through_them() -> None:
    # a → b → c → d, and a → d: a long edge through the layers of b and c
    graph = Graph("g", [op("a"), op("b", "a"), op("c", "b"), op("d", "c", "a")])
    hood = neighbourhood(graph, "b", 2)
    picture = layout(hood, graph)
    assert picture.boxes["d"].layer == 2 and picture.boxes["a"].layer == -1
    assert followed_edges(picture) == set(hood.edges)
    assert ("a", "d") in hood.edges


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_draw_every_edge_without_overlaps(seed: int) -> None:
    graph = random_dag(seed)
    centre = f"n{random.Random(seed).randrange(20, 40)}"
    for depth in (1, 2, 3):
        hood = neighbourhood(graph, centre, depth)
        picture = layout(hood, graph)
        assert_boxes_apart(picture)
        assert set(picture.boxes) == set(hood.nodes)
        assert set(picture.edges) == set(hood.edges)
        assert followed_edges(picture) == set(hood.edges)
        assert all(len(line) == picture.width for line in picture.lines)


def test_the_cap_cuts_and_says_how_many_were_left_out() -> None:
    inputs = [op(f"in{i}") for i in range(100)]
    graph = Graph("g", [*inputs, op("concat", *(n.name for n in inputs)), op("out", "concat")])
    hood = neighbourhood(graph, "concat", 2)
    assert len(hood.nodes) == MAX_BOXES
    assert hood.cut and hood.left_out == 100 + 1 - (MAX_BOXES - 1)
    assert "out" in hood.nodes  # inputs and consumers alternate, so both sides are kept
    picture = layout(hood, graph)
    assert len(picture.boxes) == MAX_BOXES
    assert_boxes_apart(picture)
    assert followed_edges(picture) == set(hood.edges)
    small = neighbourhood(graph, "concat", 2, cap=5)
    assert len(small.nodes) == 5 and small.left_out == 102 - 5 + 1 - 1


def test_hits_are_marked_and_the_centre_is_double() -> None:
    graph = synthetic_graph()
    hood = neighbourhood(graph, CONV, 2)
    picture = layout(hood, graph, hits={RELU})
    relu = picture.boxes[RELU]
    assert picture.lines[relu.y][relu.x : relu.x + 2] == "┌!"
    conv = picture.boxes[CONV]
    assert picture.lines[conv.y][conv.x] == "╔"
    assert "!" not in picture.lines[conv.y]


def test_ascii_draws_the_same_picture_in_ascii() -> None:
    graph = random_dag(3)
    hood = neighbourhood(graph, "n30", 2)
    fancy = layout(hood, graph)
    plain = layout(hood, graph, ascii=True)
    assert all(line.isascii() for line in plain.lines)
    assert plain.boxes == fancy.boxes
    for a, b in zip(fancy.lines, plain.lines, strict=True):
        assert [c == " " for c in a] == [c == " " for c in b]
    assert "v" in "".join(plain.lines) and "#" in "".join(plain.lines)


def test_labels_are_escaped_one_cell_each_and_shortened() -> None:
    assert label_text("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert label_text("卷积") == "??"
    assert label_text("x" * 40, limit=10) == "x" * 9 + "…"
    long = "SparseSoftmaxCrossEntropyWithLogits-op12"
    assert label_text(long, middle=True) == "SparseSoftm…ogits-op12"  # the op number kept
    graph = Graph("g", [op("evil\x1b]0;title\x07"), op("b", "evil\x1b]0;title\x07")])
    picture = layout(neighbourhood(graph, "b", 1), graph)
    assert all(c.isprintable() for line in picture.lines for c in line)


def test_arrow_keys_follow_edges_then_layers() -> None:
    graph = synthetic_graph()
    hood = neighbourhood(graph, CONV, 2)
    picture = layout(hood, graph)
    assert step(picture, CONV, "down") == RELU
    assert step(picture, RELU, "up") == CONV
    assert step(picture, CONV, "up") == "layer0.weight"
    assert step(picture, "layer0.weight", "up") is None
    assert step(picture, CONV, "left") is None and step(picture, CONV, "right") is None
    wide = Graph("g", [op("a"), op("b"), op("c", "a", "b")])
    picture = layout(neighbourhood(wide, "c", 1), wide)
    left, right = picture.layers[-1]
    assert step(picture, left, "right") == right and step(picture, right, "left") == left
    assert step(picture, right, "right") is None


@pytest.mark.skipif(not LENET.is_dir(), reason="the shared LeNet fixture is absent")
def test_lenet_neighbourhoods() -> None:
    from tuidebug.offline.session import OfflineSession

    session = OfflineSession(LENET)
    session.start()
    try:
        graph = next(iter(session.graphs.values()))
        for node in list(graph)[::7]:
            for depth in (1, 2, 3):
                hood = neighbourhood(graph, node.name, depth)
                picture = layout(hood, graph)
                assert_boxes_apart(picture)
                assert followed_edges(picture) == set(hood.edges)
    finally:
        session.close()


def scoped(name: str, *inputs: str) -> Node:
    node = op(name, *inputs)
    node.scope = name.rpartition("/")[0]
    node.outputs = [TensorSpec(0, 11, (32, 10))]  # float32
    return node


def test_a_closed_scope_is_one_box_and_opens() -> None:
    """MindInsight's hierarchical graph: the centre's scopes are open, another scope of
    several nodes is one box whose edges are its nodes' edges; opened, its nodes appear."""
    graph = Graph(
        "g",
        [
            scoped("net/fc1/a"),
            scoped("net/fc1/b", "net/fc1/a"),
            scoped("net/fc2/c", "net/fc1/b"),
            scoped("net/fc2/d", "net/fc2/c"),
            scoped("net/solo/e", "net/fc2/d"),  # a scope of one node: drawn as the node
        ],
    )
    hood = neighbourhood(graph, "net/fc2/c", 2, expanded=set())
    assert hood.nodes == ("net/fc2/c", "net/fc1/", "net/fc2/d", "net/solo/e")
    assert hood.scopes == {"net/fc1/": ("net/fc1/a", "net/fc1/b")}
    assert ("net/fc1/", "net/fc2/c") in hood.edges
    assert hood.producers[("net/fc1/", "net/fc2/c")] == ("net/fc1/b",)
    assert is_scope_box("net/fc1/") and not is_scope_box("net/fc1/a")
    picture = layout(hood, graph)
    box = picture.boxes["net/fc1/"]
    assert picture.lines[box.y][box.x] == "╭"
    assert "(2 nodes)" in picture.lines[box.y + 2]
    assert followed_edges(picture) == set(hood.edges)
    opened = neighbourhood(graph, "net/fc2/c", 2, expanded={"net/fc1"})
    assert not opened.scopes and {"net/fc1/a", "net/fc1/b"} <= set(opened.nodes)
    assert neighbourhood(graph, "net/fc2/c", 2).nodes == opened.nodes  # None: all open
    assert scope_ancestors(graph, "net/fc2/c") == ["net", "net/fc2"]
    assert scope_label("Default/network-WithLossCell/_backbone/conv1-Conv2d") == "…/conv1-Conv2d"


def box_name(picture: Picture, name: str) -> str:
    """The name line of a box, without its borders."""
    box = picture.boxes[name]
    return picture.lines[box.y + 1][box.x + 1 : box.x + box.width - 1].strip()


def test_namesakes_in_one_picture_show_their_scope_tail() -> None:
    """MindSpore numbers ops per scope: fc1's and fc2's `MatMul-op0` are two boxes of one
    picture, told apart by the scope that differs; a name no other box shares stays short."""
    net = "Default/network-WithLossCell/_backbone-Net"
    fc1, fc2 = f"{net}/fc1-Dense/MatMul-op0", f"{net}/fc2-Dense/MatMul-op0"
    relu = f"{net}/relu-ReLU/ReLU-op0"
    graph = Graph("g", [scoped(fc1), scoped(relu, fc1), scoped(fc2, relu)])
    hood = neighbourhood(graph, relu, 1)
    picture = layout(hood, graph)
    assert box_name(picture, fc1) == "fc1-Dense/MatMul-op0"
    assert box_name(picture, fc2) == "fc2-Dense/MatMul-op0"
    assert box_name(picture, relu) == "ReLU-op0"
    assert box_names(hood) == {
        relu: "ReLU-op0",
        fc1: "fc1-Dense/MatMul-op0",
        fc2: "fc2-Dense/MatMul-op0",
    }
    alone = layout(neighbourhood(graph, fc1, 1), graph)  # fc2 is not drawn: no namesake
    assert box_name(alone, fc1) == "MatMul-op0"


def test_edges_say_the_producers_tensor() -> None:
    graph = Graph("g", [scoped("s/a"), scoped("s/b", "s/a")])
    picture = layout(neighbourhood(graph, "s/b", 1), graph)
    box = picture.boxes["s/a"]
    stub = picture.lines[box.y + box.height]
    assert "│ f32[32,10]" in stub
    assert followed_edges(picture) == {("s/a", "s/b")}
    bare = layout(neighbourhood(graph, "s/b", 1), graph, tensors=False)
    assert "f32" not in "".join(bare.lines)
    several = Node("m", NodeKind.OPERATOR, "Split", outputs=[TensorSpec(0, 10, ()), TensorSpec(1)])
    assert tensor_label(several) == "f16[]+1"
    assert tensor_label(Node("x", NodeKind.OPERATOR, "X")) == ""
    assert tensor_label(scoped("s/long")) == "f32[32,10]"
    huge = Node("h", NodeKind.OPERATOR, "X", outputs=[TensorSpec(0, 11, (1,) * 40)])
    assert tensor_label(huge) == ""  # too long to write: left out, never cut


def test_marks_name_nan_and_inf() -> None:
    graph = synthetic_graph()
    picture = layout(neighbourhood(graph, CONV, 2), graph, marks={RELU: "!NaN"}, hits={CONV})
    relu = picture.boxes[RELU]
    assert picture.lines[relu.y][relu.x : relu.x + 5] == "┌!NaN"


def test_a_redraw_does_not_walk_the_graph_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph view asks on every key: the second picture of the same state reads no
    edge (a closed scope's box can hold most of a 100,000-node graph), and a scope's nodes
    are found by its name, not by a pass over the graph."""
    nodes = [op(f"Default/a/n{k}", *([f"Default/a/n{k - 1}"] if k else [])) for k in range(50)]
    nodes.append(op("Default/b/x", "Default/a/n49"))
    nodes.append(op("Default/b/y", "Default/b/x"))
    graph = Graph("g", nodes)
    first = neighbourhood(graph, "Default/b/y", 2, expanded=())
    assert first.scopes == {"Default/a/": tuple(f"Default/a/n{k}" for k in range(50))}
    calls: list[str] = []
    original = Graph.inputs

    def counted(self: Graph, name: str) -> list[Node]:
        calls.append(name)
        return original(self, name)

    monkeypatch.setattr(Graph, "inputs", counted)
    again = neighbourhood(graph, "Default/b/y", 2, expanded=())
    assert again == first and calls == []
