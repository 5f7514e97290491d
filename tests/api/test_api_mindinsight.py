"""The DumpAnalyzer drop-in, detail by detail: what MindInsight 2.0.0 answered on the real
2.0 dumps, frozen here (stack frames as `Source` objects with attribute and item access,
candidate headers, `node_type`, code-stack selection on MindInsight's frame strings), and
the answers tuidebug gives differently on purpose."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from tests.api.mindinsight_script import PROJECT_DUMPS
from tests.dump_names import CONV1_2_0, LENET
from tests.offline.dump_copy import copy_dump
from tuidebug import api
from tuidebug._proto import debug_graph_pb2 as pb
from tuidebug.api import DumpAnalyzer, NodeType, Source
from tuidebug.offline.dump import OfflineDump
from tuidebug.tui.panes.stack_list import index_source_lines

FUSED = f"{LENET}/relu-ReLU/MatMulBiasAddReluFusion-op84"
RELU_GRAD = f"Gradients/{LENET}/relu-ReLU/gradReLU-expand/ReluGrad-op93"
GRAPH_PB = Path("rank_0") / "graphs" / "ms_output_trace_code_graph_0.pb"

# where the LeNet 2.0 dump was written
MS = "/home/dev/ws/mi-venv/lib/python3.9/site-packages/mindspore/nn"
TRAIN_LENET_PY = "/home/dev/ws/gen/lenet/train_lenet.py"

# Node.stack as MindInsight 2.0.0 gave it: (file_path, line_no, code_line, has_substack)
MINDINSIGHT_STACKS: dict[str, list[tuple[str, int, str, bool]]] = {
    CONV1_2_0: [
        (f"{MS}/layer/conv.py", 313, "output = self.conv2d(x, self.weight)", False),
        (TRAIN_LENET_PY, 30, "x = self.max_pool2d(self.relu(self.conv1(x)))", False),
        (f"{MS}/wrap/cell_wrapper.py", 119, "out = self._backbone(data)", False),
        (f"{MS}/wrap/cell_wrapper.py", 391, "loss = self.network(*inputs)", False),
    ],
    FUSED: [
        ("", 0, "# Corresponding code candidate:", False),
        (f"{MS}/layer/activation.py", 406, "return self.relu(x)", True),
        (TRAIN_LENET_PY, 33, "x = self.relu(self.fc1(x))", False),
        (f"{MS}/wrap/cell_wrapper.py", 119, "out = self._backbone(data)", False),
        (f"{MS}/wrap/cell_wrapper.py", 391, "loss = self.network(*inputs)", False),
        (f"{MS}/layer/basic.py", 595, "x = self.matmul(x, self.weight)", True),
        (TRAIN_LENET_PY, 35, "x = self.fc3(x)", False),
        (f"{MS}/wrap/cell_wrapper.py", 391, "loss = self.network(*inputs)", False),
        (f"{MS}/layer/basic.py", 597, "x = self.bias_add(x, self.bias)", True),
        (f"{MS}/layer/basic.py", 596, "if self.has_bias:", False),
        (TRAIN_LENET_PY, 35, "x = self.fc3(x)", False),
        (f"{MS}/wrap/cell_wrapper.py", 391, "loss = self.network(*inputs)", False),
    ],
    RELU_GRAD: [
        ("", 0, "# Corresponding forward node candidate:", False),
        (f"{MS}/layer/activation.py", 406, "return self.relu(x)", True),
        (TRAIN_LENET_PY, 34, "x = self.relu(self.fc2(x))", False),
        (f"{MS}/wrap/cell_wrapper.py", 119, "out = self._backbone(data)", False),
        (f"{MS}/wrap/cell_wrapper.py", 391, "loss = self.network(*inputs)", False),
    ],
}

# select_nodes(query, select_by="code_stack") counts MindInsight 2.0.0 gave: it matches
# str(frame), `# - path:line  code` (two spaces) or the bare header line
MINDINSIGHT_CODE_STACK_COUNTS: dict[str, dict[tuple[str, bool], int]] = {
    "lenet": {
        ("# - ", False): 20,
        ("#   ", False): 46,
        (r"\.py:\d+  \S", True): 46,
        ("Corresponding code candidate", False): 3,
        ("Corresponding forward", False): 17,
        ("conv.py:313  output", False): 2,
        ("313 output", False): 0,
    },
    "int_fp16": {
        ("# - ", False): 24,
        ("#   ", False): 52,
        ("Corresponding code candidate", False): 8,
        ("Corresponding forward", False): 16,
    },
}


@pytest.fixture(scope="module")
def int20(fixtures_dir: Path) -> DumpAnalyzer:
    return DumpAnalyzer(str(fixtures_dir / "mindspore_int_fp16_dump" / "ms2_0_0"))


def one(analyzer: DumpAnalyzer, name: str) -> api.Node:
    found = [n for n in analyzer.select_nodes(name) if n.name == name]
    assert len(found) == 1, name
    return found[0]


# ------------------------------------------------------------------ frames
def test_frames_have_attribute_and_item_access(a20: DumpAnalyzer) -> None:
    frame = one(a20, CONV1_2_0).stack[0]
    # MindInsight returns `Source` objects and documents dicts: a frame is both
    assert type(frame).__name__ == "Source" and isinstance(frame, dict)
    assert frame.file_path == frame["file_path"] == frame.get("file_path") == f"{MS}/layer/conv.py"
    assert frame.line_no == frame["line_no"] == 313
    assert frame.code_line == frame["code_line"] == "output = self.conv2d(x, self.weight)"
    assert frame.has_substack is frame["has_substack"] is False
    assert list(frame.keys()) == ["file_path", "line_no", "code_line", "has_substack"]
    plain = {
        "file_path": f"{MS}/layer/conv.py",
        "line_no": 313,
        "code_line": "output = self.conv2d(x, self.weight)",
        "has_substack": False,
    }
    assert frame == plain and frame.to_dict() == plain and type(frame.to_dict()) is dict
    # MindInsight's repr (its dict) and str (the code-stack search text)
    assert repr(frame) == repr(plain)
    assert str(frame) == f"#   {MS}/layer/conv.py:313  output = self.conv2d(x, self.weight)"
    assert json.loads(json.dumps(frame)) == plain
    assert pickle.loads(pickle.dumps(frame)) == frame
    assert copy.deepcopy(frame) == frame and type(copy.copy(frame)) is Source
    assert hash(frame) == hash(Source(**plain))


def test_frames_are_read_only(a20: DumpAnalyzer) -> None:
    node = one(a20, CONV1_2_0)
    frame = node.stack[0]
    with pytest.raises(TypeError):
        frame["line_no"] = 1
    with pytest.raises(TypeError):
        del frame["code_line"]
    with pytest.raises(TypeError):
        frame.update(line_no=1)
    with pytest.raises(TypeError):
        frame.pop("file_path")
    with pytest.raises(AttributeError):
        frame.line_no = 1  # type: ignore[misc]
    node.stack.clear()  # the caller's list, not the node's
    assert node.stack[0] == frame


def test_header_and_sub_stack_frames(a20: DumpAnalyzer) -> None:
    header, first = one(a20, FUSED).stack[:2]
    assert (header.file_path, header.line_no, header.has_substack) == ("", 0, False)
    assert header.code_line == str(header) == "# Corresponding code candidate:"
    assert first.has_substack
    assert str(first) == f"# - {MS}/layer/activation.py:406  return self.relu(x)"


@pytest.mark.parametrize("name", sorted(MINDINSIGHT_STACKS))
def test_stacks_as_mindinsight_gave_them(a20: DumpAnalyzer, name: str) -> None:
    got = [(f.file_path, f.line_no, f.code_line, f.has_substack) for f in one(a20, name).stack]
    assert got == MINDINSIGHT_STACKS[name]


def test_parameters_and_constants_have_no_stack(a20: DumpAnalyzer) -> None:
    assert one(a20, "conv1.weight").stack == []
    assert one(a20, "cst1").stack == []


@pytest.mark.parametrize("dump", sorted(MINDINSIGHT_CODE_STACK_COUNTS))
def test_code_stack_selection_matches_mindinsight_frame_strings(
    a20: DumpAnalyzer, int20: DumpAnalyzer, dump: str
) -> None:
    analyzer = a20 if dump == "lenet" else int20
    for (query, regex), count in MINDINSIGHT_CODE_STACK_COUNTS[dump].items():
        got = analyzer.select_nodes(query, use_regex=regex, select_by="code_stack")
        assert len(got) == count, query


# ------------------------------------------------------------------ header-only stacks
def _with_source_address(src: Path, dst: Path, node_suffix: str, text: str) -> Path:
    """A copy of the dump whose node named `…node_suffix` has `source_address` `text`."""
    root = copy_dump(src, dst)
    model = pb.ModelProto.FromString((root / GRAPH_PB).read_bytes())
    (node,) = [n for n in model.graph.node if n.full_name.endswith(node_suffix)]
    node.source_address = text
    (root / GRAPH_PB).write_bytes(model.SerializeToString())
    return root


def test_header_only_source_address_is_an_empty_stack(dump_2_0: Path, tmp_path: Path) -> None:
    # MindSpore's header with no `In file` line after it names no code
    root = _with_source_address(
        dump_2_0, tmp_path / "dump", "Conv2D-op77", "      # Corresponding code candidate:\n"
    )
    analyzer = DumpAnalyzer(str(root))
    assert one(analyzer, CONV1_2_0).stack == []
    by_header = analyzer.select_nodes("Corresponding code", select_by="code_stack")
    assert CONV1_2_0 not in {n.name for n in by_header}
    # every consumer reads the same graph: the TUI's stack pane lists no header line
    graph = OfflineDump(root).graphs(0)["kernel_graph_0"]
    assert graph.node(CONV1_2_0).stack == []
    assert all(line.file_path for line in index_source_lines(graph))


# ------------------------------------------------------------------ node types
def test_node_type_values_per_kind(a20: DumpAnalyzer) -> None:
    assert [t.value for t in NodeType] == ["operator", "parameter", "constant"]
    assert one(a20, CONV1_2_0).node_type is NodeType.OPERATOR
    assert one(a20, "conv1.weight").node_type is NodeType.PARAMETER
    assert one(a20, "inputs0").node_type is NodeType.PARAMETER
    assert one(a20, "cst1").node_type is NodeType.CONSTANT
    assert str(NodeType.PARAMETER) == "NodeType.PARAMETER"
    # how scripts filter parameters
    params = [n for n in a20.select_nodes("") if n.node_type == NodeType.PARAMETER]
    assert {"conv1.weight", "fc3.bias", "moments.fc1.weight"} <= {n.name for n in params}
    assert all(n.stack == [] for n in params)
    assert "NodeType" in api.__all__ and "Source" in api.__all__


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("mindspore_lenet_dump", "lenet_ms2_0_0.mindinsight.json"),
        ("mindspore_int_fp16_dump", "int_fp16_ms2_0_0.mindinsight.json"),
    ],
)
def test_node_type_counts_as_mindinsight(fixtures_dir: Path, folder: str, expected: str) -> None:
    want: dict[str, Any] = json.loads((fixtures_dir / "expected" / expected).read_text())
    analyzer = DumpAnalyzer(str(fixtures_dir / folder / "ms2_0_0"))
    counts: dict[str, int] = {}
    for node in analyzer.select_nodes(""):
        counts[str(node.node_type)] = counts.get(str(node.node_type), 0) + 1
    assert counts == want["node_types"]
    assert sum(counts.values()) == want["n_nodes"]


# ------------------------------------------------------------------ deliberate differences
def test_assign_keeps_its_parameter_input(int20: DumpAnalyzer) -> None:
    # MindInsight drops the first input of a three-input `Assign` only (op type exactly
    # "Assign"); tuidebug keeps the graph's edges. AssignAdd keeps it in both.
    add = one(int20, "Default/network-NetWithMetrics/AssignAdd-op103")
    assert "n_correct" in {n.name for n in int20.get_input_nodes(add)}
    assert add.name in {n.name for n in int20.get_output_nodes(one(int20, "n_correct"))}


def test_a_producer_feeding_two_inputs(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "dump")
    model = pb.ModelProto.FromString((root / GRAPH_PB).read_bytes())
    (conv,) = [n for n in model.graph.node if n.full_name == CONV1_2_0]
    first = conv.input[0]
    conv.input.insert(0, pb.InputProto(name=first.name, type=first.type))  # (x, x, w)
    (root / GRAPH_PB).write_bytes(model.SerializeToString())
    analyzer = DumpAnalyzer(str(root))
    node = one(analyzer, CONV1_2_0)
    load = f"{LENET}/Load-op1"
    # listed once (MindInsight: inputs0 twice, and Conv2D twice among inputs0's outputs)
    assert [n.name for n in analyzer.get_input_nodes(node)] == ["inputs0", load]
    outputs = [n.name for n in analyzer.get_output_nodes(one(analyzer, "inputs0"))]
    assert outputs.count(CONV1_2_0) == 1

    # input slots are numbered per input as MindInsight numbers them; tensors come once
    def names(slots: list[int] | None) -> list[tuple[str, int]]:
        got = node.get_input_tensors(iterations=[0], slots=slots)
        return [(t.node.name, t.slot) for t in got]

    assert names(None) == [("inputs0", 0), (load, 0)]
    assert names([0]) == names([1]) == [("inputs0", 0)]
    assert names([2]) == [(load, 0)]
    assert names([0, 1]) == [("inputs0", 0)]


# ------------------------------------------------------------------ iterations of a node
WHILE_FWD = PROJECT_DUMPS / "while_loop_fwd" / "ms2_0_0"


@pytest.fixture(scope="module")
def fwd20() -> DumpAnalyzer:
    # a while loop compiled to ten kernel graphs: graph 7 dumped iteration 1 only; graphs
    # 4 and 5 have no folder, graph 8 only `constants/` (no iteration folder)
    return DumpAnalyzer(str(WHILE_FWD))


def in_graph(analyzer: DumpAnalyzer, graph: str, name: str) -> api.Node:
    (node,) = [n for n in analyzer.select_nodes(name) if (n.graph_name, n.name) == (graph, name)]
    return node


def its(tensors: list[api.DebuggerTensor]) -> list[int | None]:
    return [t.iteration for t in tensors]


def test_iterations_of_a_graph_without_a_dumped_folder(fwd20: DumpAnalyzer) -> None:
    # MindInsight's `_get_iterable_iterations`: the node's root graph's dumped iterations
    # by default, and an empty set filters nothing (`if expected_range and …`)
    assert fwd20.get_iterations() == [0, 1, 2]
    for graph, name in [("kernel_graph_4", "[Parameter]52"), ("kernel_graph_8", "h")]:
        node = in_graph(fwd20, graph, name)
        assert node.root_graph_id == int(graph.rsplit("_", 1)[1])
        assert node.get_output_tensors() == []
        assert its(node.get_output_tensors(iterations=[2, 0])) == [2, 0]
        assert its(node.get_output_tensors(iterations=5)) == [5]
        tensors = [t for t in fwd20.select_tensors(name) if t.node == node]
        assert its(tensors) == [0, 1, 2]
        assert not any(t.has_value() or t.value() is not None for t in tensors)
    # a graph that dumped iteration 1 only keeps it only
    h7 = in_graph(fwd20, "kernel_graph_7", "h")
    assert its(h7.get_output_tensors()) == its(h7.get_output_tensors(iterations=[0, 1, 2])) == [1]
    assert its(h7.get_output_tensors(iterations=[0, 2])) == []
    # input tensors: narrowed by the consumer's root graph, then by each producer's
    depend = in_graph(fwd20, "kernel_graph_8", "Default/Depend-op52")
    assert depend.get_input_tensors() == []
    got = depend.get_input_tensors(iterations=[2])
    assert sorted((t.node.name, t.slot, t.iteration) for t in got) == [("cst1", 0, 2), ("h", 0, 2)]
    # and select_tensors counts what MindInsight 2.0.0 counted
    assert len(fwd20.select_tensors("")) == 222
    assert len(fwd20.select_tensors("Parameter")) == 24
    assert len(fwd20.select_tensors("", iterations=[2], ranks=[0])) == 72


def test_tuple_output_slots_as_mindinsight_counts_them(fwd20: DumpAnalyzer) -> None:
    # one slot per tuple element of a type MindInsight's schema knows: not a monad
    slots = {
        ("kernel_graph_4", "Default/MakeTuple-op39"): 0,  # (UMonad,)
        ("kernel_graph_0", "Default/MakeTuple-op17"): 1,  # (UMonad, Tensor)
        ("kernel_graph_3", "Default/MakeTuple-op36"): 4,  # (Tensor × 4, UMonad)
        ("kernel_graph_5", "Default/UpdateState-op41"): 1,  # not a tuple
        ("kernel_graph_4", "[Parameter]52"): 1,
    }
    for (graph, name), size in slots.items():
        node = in_graph(fwd20, graph, name)
        assert node.output_slot_size == size, name
        assert len(node.get_output_tensors(iterations=[0])) == size, name
    # a tuple of a tuple counts the inner tuple (two_graphs' MakeTuple-op162)
    two = DumpAnalyzer(str(WHILE_FWD.parent.parent / "two_graphs" / "ms2_0_0"))
    assert in_graph(two, "kernel_graph_1", "Default/MakeTuple-op162").output_slot_size == 1


def test_has_value_is_the_tensors_own_file(fwd20: DumpAnalyzer) -> None:
    # MindInsight 2.0.0 said has_value True (value None) for `u`: its has_value searches
    # every graph folder of the iteration for `u.*.output.0.*.npy`, which
    # `ReduceSum.ReduceSum-op28….output.0….npy` matches; tuidebug looks for u's own file
    (u,) = in_graph(fwd20, "kernel_graph_3", "u").get_output_tensors(iterations=[0])
    assert not u.has_value() and u.value() is None
    (hit,) = fwd20.check_watchpoints(
        [api.Watchpoint([u], api.TensorOverflowCondition())], error_on_no_value=True
    )
    assert hit.error_code == 32
