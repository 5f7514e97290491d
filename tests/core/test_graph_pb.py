"""core/graph_pb.py and offline/files/graphs.py: real LeNet graphs, hand-built protos, stacks, `.ir` fallback, bad files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.dump_names import LENET
from tuidebug._proto import debug_graph_pb2 as pb
from tuidebug.core import graph_pb
from tuidebug.core.graph import Category, Graph, NodeKind, StackFrame, TensorSpec
from tuidebug.core.graph_pb import (
    GraphFileError,
    GraphTooLargeError,
    graph_from_proto,
    parse_ir_stacks,
    parse_location,
    parse_source_address,
    render_value,
)
from tuidebug.offline.files import graphs as graph_files
from tuidebug.offline.files.graphs import load_graph_file, stacks_from_ir

GRAPH_STEM = "rank_0/graphs/ms_output_trace_code_graph_0"
WEIGHTS = {
    "conv1.weight",
    "conv2.weight",
    "fc1.weight",
    "fc1.bias",
    "fc2.weight",
    "fc2.bias",
    "fc3.weight",
    "fc3.bias",
}

# Per dump: (graph name, operators, parameters, constants, conv1 op id, conv1 stack lines)
EXPECTED = {
    "ms2_0_0": ("kernel_graph_0", 68, 20, 5, 77, (313, 30)),
    "ms2_10_0": ("kernel_graph0", 77, 21, 9, 0, (373, 372)),
}


@pytest.fixture(scope="module")
def graphs(dump_2_0: Path, dump_2_10: Path) -> dict[str, Graph]:
    return {
        "ms2_0_0": load_graph_file(dump_2_0 / f"{GRAPH_STEM}.pb"),
        "ms2_10_0": load_graph_file(dump_2_10 / f"{GRAPH_STEM}.pb"),
    }


@pytest.fixture(params=["ms2_0_0", "ms2_10_0"])
def lenet(request: pytest.FixtureRequest, graphs: dict[str, Graph]) -> tuple[str, Graph]:
    return request.param, graphs[request.param]


def _conv1(version: str) -> str:
    return f"{LENET}/conv1-Conv2d/Conv2D-op{EXPECTED[version][4]}"


# ============================================================== the real LeNet graphs


def test_fixture_graphs_load_with_every_node(lenet: tuple[str, Graph]) -> None:
    version, graph = lenet
    name, n_ops, n_params, n_consts, _, _ = EXPECTED[version]
    assert graph.name == name
    assert graph.graph_id == 0 and graph.root_graph_id == 0
    assert len(graph.operators) == n_ops
    assert len(graph.parameters) == n_params
    assert len(graph.constants) == n_consts
    assert len(graph) == n_ops + n_params + n_consts
    assert all(n.graph_name == name for n in graph)


def test_known_kernel(lenet: tuple[str, Graph]) -> None:
    version, graph = lenet
    conv = graph.node(_conv1(version))
    assert conv.kind is NodeKind.OPERATOR
    assert conv.op_type == "Conv2D"
    assert conv.scope == f"{LENET}/conv1-Conv2d"
    assert conv.index == "2"
    assert conv.op_id == EXPECTED[version][4]
    load = graph.inputs(conv.name)[1]
    assert [n.name for n in graph.inputs(conv.name)] == ["inputs0", load.name]
    assert load.op_type == "Load"
    assert [n.name for n in graph.inputs(load.name)] == ["conv1.weight", "cst1"]
    assert conv.outputs == [TensorSpec(0, pb.DT_FLOAT32, (4, 6, 28, 28))]
    assert conv.attributes["kernel_size"] == "(5, 5)"
    assert conv.attributes["pad_mode"] == "valid"
    assert conv.attributes["input_names"] == "[x, w]"
    assert conv.attributes["out_channel"] == "6"
    assert conv.attributes["IsFeatureMapOutput"] == "true"


def test_consumers_and_affected(lenet: tuple[str, Graph]) -> None:
    version, graph = lenet
    conv = _conv1(version)
    consumers = graph.consumers(conv)
    assert [n.op_type for n in consumers] == ["ReLU", "UpdateState"]
    # conv1.weight is read by its Load and updated by its ApplyMomentum
    assert [n.op_type for n in graph.consumers("conv1.weight")] == ["Load", "ApplyMomentum"]
    affected = graph.affected(conv)
    ops = {n.op_type for n in affected}
    assert {"ReLU", "MaxPool", "SparseSoftmaxCrossEntropyWithLogits", "ApplyMomentum"} <= ops
    assert any(n.name.startswith("Gradients/") for n in affected)
    assert conv not in {n.name for n in affected}
    # graph order: the direct consumer ReLU comes first
    assert affected[0].op_type == "ReLU"
    assert graph.digraph.has_edge("conv1.weight", graph.inputs(conv)[1].name)


def test_parameters_and_weights(lenet: tuple[str, Graph]) -> None:
    _, graph = lenet
    assert {n.name for n in graph.nodes_in(Category.WEIGHT)} == WEIGHTS
    weight = graph.node("conv1.weight")
    assert weight.kind is NodeKind.PARAMETER and weight.op_type == "Parameter"
    assert weight.outputs == [TensorSpec(0, pb.DT_FLOAT32, (6, 1, 5, 5))]
    assert weight.ui_name == f"{LENET}/conv1.weight"
    assert graph.node(weight.ui_name) is weight
    moments = [n for n in graph.parameters if n.name.startswith("moments.")]
    assert len(moments) == 8
    for m in moments:
        cats = graph.categories(m)
        assert Category.PARAMETER in cats and Category.WEIGHT not in cats
        assert m.ui_name.startswith("Default/optimizer-Momentum/")
    assert Category.WEIGHT not in graph.categories("learning_rate")
    assert graph.node("inputs0").outputs[0].shape == (4, 1, 32, 32)


def test_activations_and_gradients(lenet: tuple[str, Graph]) -> None:
    version, graph = lenet
    activations = graph.nodes_in(Category.ACTIVATION)
    assert activations and all(n.op_type == "ReLU" for n in activations)
    # 2.0.0 fused two of the four ReLUs into MatMulBiasAddReluFusion on CPU
    assert len(activations) == (2 if version == "ms2_0_0" else 4)
    gradients = graph.nodes_in(Category.GRADIENT)
    assert gradients
    assert {n.name for n in gradients} == {
        n.name for n in graph.operators if n.name.startswith("Gradients/")
    }
    relu_grads = [n for n in gradients if n.op_type == "ReluGrad"]
    assert len(relu_grads) == 4
    assert all(Category.ACTIVATION not in graph.categories(n) for n in gradients)


def test_constants(lenet: tuple[str, Graph]) -> None:
    version, graph = lenet
    csts = {c.name: c for c in graph.constants}
    assert all(c.kind is NodeKind.CONSTANT and c.op_type == "Const" for c in csts.values())
    if version == "ms2_0_0":
        assert csts["cst4"].dump_name == "Default--data-3"
        assert csts["cst5"].value is True
        assert csts["cst5"].outputs == [TensorSpec(0, pb.DT_BOOL, ())]
        # tensor constants carry no value in the graph (their data is in constants/)
        assert csts["cst1"].value is None
    else:
        assert csts["cst4"].dump_name == "Default_data-3"
        assert csts["cst4"].value == 0
        assert csts["cst4"].outputs == [TensorSpec(0, pb.DT_INT64, ())]
        assert csts["cst2"].value is False


def test_scope_tree(lenet: tuple[str, Graph]) -> None:
    _, graph = lenet
    top = graph.children("")
    assert [(e.label, e.is_scope) for e in top] == [("Default", True), ("Gradients", True)]
    assert graph.leaf_count("") == len(graph)
    assert graph.leaf_count("Default") + graph.leaf_count("Gradients") == len(graph)
    default = graph.children("Default")
    assert [e.label for e in default[:2]] == ["network-WithLossCell", "optimizer-Momentum"]
    assert all(e.is_scope for e in default[:2]) and not any(e.is_scope for e in default[2:])
    optimizer = "Default/optimizer-Momentum"
    # 8 ApplyMomentum + their moments, learning rate, momentum …, all leaves of the scope
    assert graph.leaf_count(optimizer) == len(graph.leaves(optimizer))
    assert sum(1 for n in graph.leaves(optimizer) if n.op_type == "ApplyMomentum") == 8
    backbone = graph.children(LENET)
    labels = {e.label for e in backbone}
    assert {"conv1-Conv2d", "conv1.weight", "fc3-Dense"} <= labels
    for entry in backbone:
        if entry.is_scope:
            assert entry.child_count == len(graph.children(entry.path))
            assert graph.leaf_count(entry.path) == len(graph.leaves(entry.path)) > 0


def test_stacks_from_source_address(lenet: tuple[str, Graph]) -> None:
    version, graph = lenet
    conv = graph.node(_conv1(version))
    first, second = conv.stack[:2]
    assert first.file_path.endswith("mindspore/nn/layer/conv.py")
    assert first.line_no == EXPECTED[version][5][0]
    assert first.code_line == "output = self.conv2d(x, self.weight)"
    assert second.line_no == EXPECTED[version][5][1]
    assert all(f.group == 0 for f in conv.stack)
    assert conv.stack[-1].file_path.endswith("cell_wrapper.py")
    lenet_frames = [f for f in conv.stack if f.file_path.endswith("train_lenet.py")]
    assert lenet_frames and lenet_frames[0].line_no == 30
    # every operator with a source_address has a parsed stack with locations
    with_stack = [n for n in graph.operators if n.stack]
    assert len(with_stack) == (46 if version == "ms2_0_0" else 57)
    assert all(any(f.line_no for f in n.stack) for n in with_stack)


def test_candidate_sub_stacks(graphs: dict[str, Graph]) -> None:
    # 2.0.0: "Corresponding code candidate:" then three ` - ` marked sub-stacks
    fused = graphs["ms2_0_0"].node(f"{LENET}/relu-ReLU/MatMulBiasAddReluFusion-op84")
    assert fused.stack[0] == StackFrame("", None, "Corresponding code candidate:", 1)
    assert sorted({f.group for f in fused.stack}) == [1, 2, 3]
    starts = [f for f in fused.stack if f.group == 2]
    assert starts[0].file_path.endswith("nn/layer/basic.py") and starts[0].line_no == 595
    # 2.10.0: gradient kernels name their forward node candidate
    grads = [n for n in graphs["ms2_10_0"].operators if n.name.startswith("Gradients/")]
    headers = [
        f for n in grads for f in n.stack if f.code_line == "Corresponding forward node candidate:"
    ]
    assert headers and all(f.file_path == "" and f.group >= 1 for f in headers)


def test_ir_stacks_match_source_address(lenet_dump: Path) -> None:
    ir = stacks_from_ir(lenet_dump / f"{GRAPH_STEM}.ir")
    model = pb.ModelProto.FromString((lenet_dump / f"{GRAPH_STEM}.pb").read_bytes())
    with_src = [n for n in model.graph.node if n.source_address]
    assert set(ir) == {n.full_name for n in with_src}
    same = [n for n in with_src if parse_source_address(n.source_address) == ir[n.full_name]]
    # The .ir lists outermost-first and is reversed; a few stacks differ in inlined frames.
    assert len(same) >= 0.6 * len(with_src)
    conv = next(n for n in with_src if n.op_type == "Conv2D")
    assert ir[conv.full_name] == parse_source_address(conv.source_address)


def test_ir_fallback_fills_missing_stacks(dump_2_10: Path, tmp_path: Path) -> None:
    src = dump_2_10 / f"{GRAPH_STEM}.pb"
    model = pb.ModelProto.FromString(src.read_bytes())
    originals = {n.full_name: parse_source_address(n.source_address) for n in model.graph.node}
    for node in model.graph.node:
        node.source_address = ""
    pb_file = tmp_path / "g.pb"
    pb_file.write_bytes(model.SerializeToString())
    shutil.copy(dump_2_10 / f"{GRAPH_STEM}.ir", tmp_path / "g.ir")

    graph = load_graph_file(pb_file)
    conv = graph.node(_conv1("ms2_10_0"))
    assert conv.stack == originals[conv.name]
    assert sum(1 for n in graph.operators if n.stack) == 57
    assert not any(n.stack for n in load_graph_file(pb_file, use_ir=False).operators)
    # an explicit .ir path, and a damaged .ir that only costs the fallback
    moved = tmp_path / "other.ir"
    (tmp_path / "g.ir").rename(moved)
    assert not any(n.stack for n in load_graph_file(pb_file).operators)
    assert load_graph_file(pb_file, ir_path=moved).node(conv.name).stack == conv.stack
    (tmp_path / "g.ir").write_bytes(b"\xff\xfe garbage \x00" * 100)
    assert not any(n.stack for n in load_graph_file(pb_file).operators)


# ============================================================== bad and huge files


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xff" * 64,
        b"this is not a protobuf at all \x00\x01\x02",
        b"\x22\xff\xff\xff\xff\x0f",  # graph field claiming a 4 GiB length
    ],
    ids=["empty", "ff", "text", "huge-length"],
)
def test_garbage_file_is_one_sentence(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.pb"
    bad.write_bytes(content)
    with pytest.raises(GraphFileError) as info:
        load_graph_file(bad)
    message = str(info.value)
    assert str(bad) in message
    assert message.endswith(".") and "\n" not in message


def test_truncated_file(dump_2_0: Path, tmp_path: Path) -> None:
    data = (dump_2_0 / f"{GRAPH_STEM}.pb").read_bytes()
    for cut in (len(data) // 2, len(data) - 3, 7):
        bad = tmp_path / f"cut{cut}.pb"
        bad.write_bytes(data[:cut])
        with pytest.raises(GraphFileError, match="cut"):
            load_graph_file(bad)


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(GraphFileError, match=re.escape("missing.pb")):
        load_graph_file(tmp_path / "missing.pb")
    with pytest.raises(GraphFileError, match=re.escape(str(tmp_path))):
        load_graph_file(tmp_path)  # a directory
    with pytest.raises(GraphFileError, match=re.escape("nothere.ir")):
        stacks_from_ir(tmp_path / "nothere.ir")


def test_size_cap(dump_2_0: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_files, "MAX_GRAPH_FILE_BYTES", 1024)
    with pytest.raises(GraphFileError, match="limit"):
        load_graph_file(dump_2_0 / f"{GRAPH_STEM}.pb")


def test_too_many_nodes(dump_2_0: Path) -> None:
    path = dump_2_0 / f"{GRAPH_STEM}.pb"
    with pytest.raises(GraphTooLargeError) as info:
        load_graph_file(path, limit=92)
    assert info.value.node_count == 93 and info.value.limit == 92
    assert str(path) in str(info.value)
    assert len(load_graph_file(path, limit=93)) == 93
    model = pb.ModelProto.FromString(path.read_bytes())
    with pytest.raises(GraphTooLargeError, match="kernel_graph_0"):
        graph_from_proto(model.graph, limit=10)
    assert len(graph_from_proto(model.graph, limit=None)) == 93


def test_default_limit_is_mindinsights() -> None:
    graph = pb.GraphProto(name="kernel_graph_1")
    for i in range(graph_pb.MAX_GRAPH_NODES + 1):
        graph.parameters.add(name=f"p{i}")
    with pytest.raises(GraphTooLargeError):
        graph_from_proto(graph)
    assert graph_pb.MAX_GRAPH_NODES == 100_000


# ============================================================== hand-built protos


def _tensor(type_proto: pb.TypeProto, dtype: int, dims: tuple[int, ...] | None) -> None:
    type_proto.data_type = pb.DT_TENSOR
    type_proto.tensor_type.elem_type = dtype  # type: ignore[assignment]
    if dims is not None:
        type_proto.tensor_type.shape.SetInParent()
        for d in dims:
            type_proto.tensor_type.shape.dim.add(size=d)


def _small_graph() -> pb.GraphProto:
    g = pb.GraphProto(name="kernel_graph_2", root_name="1")
    g.parameters.add(name="w")
    _tensor(g.parameters[0].type, pb.DT_FLOAT16, (3, 3))
    c = g.const_vals.add(key="cst1", full_name="Default--data-0")
    c.value.dtype = pb.DT_FLOAT32
    c.value.float_val = 0.5
    a = g.node.add(
        name="1", op_type="MatMul", scope="Default/net", full_name="Default/net/MatMul-op1"
    )
    a.input.add(name="w")
    a.input.add(name="cst1")
    _tensor(a.output_type, pb.DT_FLOAT32, (3, 3))
    b = g.node.add(name="2", op_type="Load", scope="Default/net")  # no full name
    b.input.add(name="1")
    b.input.add(name="nowhere")
    g.node.add(name="", op_type="Ghost")  # unnamed: not an operator
    d = g.node.add(name="3", op_type="Relu", full_name="Gradients/Default/ReluGrad-op3")
    d.input.add(name="2")
    return g


def test_graph_from_proto_without_files() -> None:
    graph = graph_from_proto(_small_graph())
    assert graph.name == "kernel_graph_2" and graph.graph_id == 2 and graph.root_graph_id == 1
    assert [n.name for n in graph] == [
        "w",
        "cst1",
        "Default/net/MatMul-op1",
        "Default/net/Load-op2",
        "Gradients/Default/ReluGrad-op3",
    ]
    load = graph.node("Default/net/Load-op2")
    # unknown references stay as written and make no edge
    assert load.inputs == ["Default/net/MatMul-op1", "nowhere"]
    assert [n.name for n in graph.inputs(load.name)] == ["Default/net/MatMul-op1"]
    relu = graph.node("Gradients/Default/ReluGrad-op3")
    assert relu.scope == "Gradients/Default"  # dirname of full_name when scope is empty
    assert relu.inputs == ["Default/net/Load-op2"]
    assert graph.node("cst1").value == pytest.approx(0.5)
    assert graph.node("cst1").outputs == [TensorSpec(0, pb.DT_FLOAT32, ())]
    assert graph.node("w").outputs == [TensorSpec(0, pb.DT_FLOAT16, (3, 3))]
    assert graph.node("w").ui_name == "Default/net/w"
    assert load.outputs == [TensorSpec(0)]  # no output_type
    assert load.stack == []


def test_input_resolution_order() -> None:
    """spec §5.6: a name is a constant first, then a parameter, then a node index."""
    g = pb.GraphProto(name="kernel_graph_0")
    g.const_vals.add(key="7")
    g.parameters.add(name="1")
    first = g.node.add(name="1", op_type="A", full_name="S/A-op1")
    g.node.add(name="2", op_type="B", full_name="S/B-op2").input.add(name="1")
    g.node.add(name="3", op_type="C", full_name="S/C-op3").input.add(name="7")
    first.input.add(name="2")  # a forward reference still resolves
    graph = graph_from_proto(g)
    assert graph.node("S/B-op2").inputs == ["1"]  # the parameter, not node index "1"
    assert graph.node("S/C-op3").inputs == ["7"]
    assert graph.node("7").kind is NodeKind.CONSTANT
    assert graph.node("S/A-op1").inputs == ["S/B-op2"]


def test_duplicate_names_keep_every_node() -> None:
    g = pb.GraphProto(name="kernel_graph_0")
    g.parameters.add(name="x")
    for i in (1, 2):
        n = g.node.add(name=str(i), op_type="Add", full_name="S/Add-op1")
        n.input.add(name="x")
    g.node.add(name="3", op_type="Mul", full_name="S/Mul-op3").input.add(name="2")
    graph = graph_from_proto(g)
    assert len(graph.operators) == 3
    assert graph.node("S/Mul-op3").inputs == ["S/Add-op1#2"]
    assert [n.name for n in graph.consumers("x")] == ["S/Add-op1", "S/Add-op1#2"]


def test_output_slots() -> None:
    g = pb.GraphProto(name="kernel_graph_0")
    tup = g.node.add(name="1", op_type="MakeTuple", full_name="S/MakeTuple-op1")
    tup.output_type.data_type = pb.DT_TUPLE
    seq = tup.output_type.sequence_type
    _tensor(seq.elem_types.add(), pb.DT_FLOAT32, (2,))
    seq.elem_types.add(data_type=pb.DT_UMONAD)  # no tensor: no slot, positions kept
    _tensor(seq.elem_types.add(), pb.DT_INT32, None)
    seq.elem_types.add(data_type=pb.DT_BOOL)
    g.node.add(name="2", op_type="X", full_name="S/X-op2").output_type.data_type = pb.DT_BOOL
    g.node.add(name="3", op_type="Y", full_name="S/Y-op3").output_type.data_type = pb.DT_NONE
    g.node.add(name="4", op_type="Z", full_name="S/Z-op4").output_type.data_type = pb.DT_UNDEFINED
    scalar = g.node.add(name="5", op_type="S", full_name="S/S-op5")
    _tensor(scalar.output_type, pb.DT_FLOAT64, ())
    graph = graph_from_proto(g)
    assert graph.node("S/MakeTuple-op1").outputs == [
        TensorSpec(0, pb.DT_FLOAT32, (2,)),
        TensorSpec(2, pb.DT_INT32, None),
        TensorSpec(3, pb.DT_BOOL, ()),
    ]
    for name in ("S/X-op2", "S/Y-op3", "S/Z-op4"):
        assert graph.node(name).outputs == [TensorSpec(0)]
    assert graph.node("S/S-op5").outputs == [TensorSpec(0, pb.DT_FLOAT64, ())]


def test_unknown_dtype_numbers_survive() -> None:
    """DT_BFLOAT16/DT_INT4 numbers are unknown to the schema (spec §9); keep the raw int."""
    node = pb.NodeProto(name="1", op_type="Cast", full_name="S/Cast-op1")
    # TypeProto{data_type: DT_TENSOR, tensor_type{elem_type: 45}} written by hand
    node.output_type.MergeFromString(b"\x08\x0e\x12\x02\x08\x2d")
    assert node.output_type.tensor_type.elem_type == 0  # what the generated getter says
    graph = graph_from_proto(pb.GraphProto(name="g", node=[node]))
    assert graph.node("S/Cast-op1").outputs == [TensorSpec(0, 45, None)]


def test_attribute_rendering() -> None:
    def value(**kw: object) -> pb.ValueProto:
        return pb.ValueProto(**kw)  # type: ignore[arg-type]

    assert render_value(value(dtype=pb.DT_INT64, int_val=-3)) == "-3"
    assert render_value(value(bool_val=False)) == "false"
    assert render_value(value(float_val=0.1)) == "0.1"
    assert render_value(value(double_val=2.5)) == "2.5"
    assert render_value(value(str_val="NCHW")) == "NCHW"
    tup = value(dtype=pb.DT_TUPLE, values=[value(int_val=1), value(int_val=2)])
    assert render_value(tup) == "(1, 2)"
    lst = value(dtype=pb.DT_LIST, values=[value(str_val="x"), value(str_val="w")])
    assert render_value(lst) == "[x, w]"
    assert render_value(value(dtype=pb.DT_TUPLE)) == "()"
    assert render_value(value(dtype=pb.DT_NONE)) == "None"
    assert render_value(value(int_vals=[1, 2, 3])) == "(1, 2, 3)"
    tensor = value(tensor_val=pb.TensorProto(dims=[2, 3], data_type=pb.DT_FLOAT32))
    assert render_value(tensor) == "Tensor[Float32](2, 3)"
    d = value(dict_val=[pb.NamedValueProto(key="k", value=value(int_val=1))])
    assert render_value(d) == "{k: 1}"
    typed = value(type_val=pb.TypeProto(data_type=pb.DT_TENSOR))
    typed.type_val.tensor_type.elem_type = pb.DT_INT8
    assert render_value(typed) == "Tensor[Int8]"
    big = value(str_val="x" * 2000)
    assert render_value(big).startswith("<") and "hidden" in render_value(big)
    assert len(render_value(big)) < 40


def test_attributes_identical_across_nodes_are_independent() -> None:
    g = pb.GraphProto(name="g")
    for i in (1, 2):
        n = g.node.add(name=str(i), op_type="A", full_name=f"S/A-op{i}")
        n.attribute.add(name="format").value.str_val = "NCHW"
    graph = graph_from_proto(g)
    a, b = graph.operators
    assert a.attributes == b.attributes == {"format": "NCHW"}
    a.attributes["format"] = "changed"
    assert b.attributes["format"] == "NCHW"


# ============================================================== stack parsing


@pytest.mark.parametrize(
    ("text", "frame"),
    [
        # very old form
        ("In file /a/b.py(12)/    x = f(y)/", ("/a/b.py", 12, "x = f(y)")),
        ("In file /a/b.py(12)", ("/a/b.py", 12, "")),
        # 1.x–2.1 form
        ("In file /a/b.py:12/    x = f(y)/", ("/a/b.py", 12, "x = f(y)")),
        # newer form with line and column ranges
        ("In file /a/b.py:12~14, 4~20/    def f(x):/", ("/a/b.py", 12, "def f(x):")),
        ("In file /a/b.py:7, 17~44/  out = self.conv(x)/", ("/a/b.py", 7, "out = self.conv(x)")),
        # code holding ':' and '/', a Windows path, a '(1)' directory
        ("In file /a/b.py:3/    y = d[1:2] / 3/", ("/a/b.py", 3, "y = d[1:2] / 3")),
        ("In file C:\\work\\net.py:7/z = 1/", ("C:\\work\\net.py", 7, "z = 1")),
        ("In file /tmp/run(1)/net.py:5/z/", ("/tmp/run(1)/net.py", 5, "z")),
        # unparseable: kept as a code-only frame
        ("something else entirely", ("", None, "something else entirely")),
    ],
)
def test_parse_location(text: str, frame: tuple[str, int | None, str]) -> None:
    got = parse_location(text)
    assert (got.file_path, got.line_no, got.code_line) == frame


def test_parse_source_address_markers() -> None:
    text = (
        "      # In file /m/cell.py:10/        y = self.op(x)/\n"
        "      # In file /m/net.py:20~22, 4~9/    def construct(self, x):/\n"
        "      # Corresponding code candidate:\n"
        "      #  - In file /m/a.py:1/a()/\n"
        "      #    In file /m/b.py:2/b()/\n"
        "      #  - In file /m/c.py:3/c()/\n"
        "      # Corresponding forward node candidate:\n"
        "      #  - In file /m/d.py(4)/d()/\n"
        "      #    In file /m/e.py:5, 1~2/e()/\n"
        "      # junk that is no location\n"
        "\n"
    )
    frames = parse_source_address(text)
    assert [(f.file_path, f.line_no, f.group) for f in frames] == [
        ("/m/cell.py", 10, 0),
        ("/m/net.py", 20, 0),
        ("", None, 1),
        ("/m/a.py", 1, 1),
        ("/m/b.py", 2, 1),
        ("/m/c.py", 3, 2),
        ("", None, 3),
        ("/m/d.py", 4, 3),
        ("/m/e.py", 5, 3),
        ("", None, 3),
    ]
    assert frames[2].code_line == "Corresponding code candidate:"
    assert frames[-1].code_line == "junk that is no location"
    assert str(frames[0]) == "/m/cell.py:10 y = self.op(x)"
    # the ` - ` marked located frames open a sub-stack (MindInsight's has_substack)
    assert [f.has_substack for f in frames] == [
        False,
        False,
        False,
        True,
        False,
        True,
        False,
        True,
        False,
        False,
    ]
    assert parse_source_address("") == []


@pytest.mark.parametrize(
    ("text", "frames"),
    [
        # a header with no `In file` line after it names no code: an empty stack
        ("      # Corresponding code candidate:\n", []),
        ("      # Corresponding forward node candidate:", []),
        # a dangling header after a stack, or before another header, is dropped
        (
            "      # In file /m/a.py:1/a()/\n      # Corresponding code candidate:\n",
            [("/m/a.py", 1, "a()", 0, False)],
        ),
        (
            "      # Corresponding code candidate:\n"
            "      # Corresponding forward node candidate:\n"
            "      #  - In file /m/b.py:2/b()/\n",
            [
                ("", None, "Corresponding forward node candidate:", 1, False),
                ("/m/b.py", 2, "b()", 1, True),
            ],
        ),
        # a marked line that names no location opens no sub-stack frame
        ("      #  - something else\n", [("", None, "something else", 1, False)]),
    ],
)
def test_parse_source_address_headers_without_frames(
    text: str, frames: list[tuple[str, int | None, str, int, bool]]
) -> None:
    got = parse_source_address(text)
    assert [(f.file_path, f.line_no, f.code_line, f.group, f.has_substack) for f in got] == frames


def test_parse_ir_stacks_literal() -> None:
    lines = [
        "  %1(x) = Conv2D(%0, %para1_w) {instance name: conv2d}\n",
        "      : (<Tensor[Float32], (1, 1)>) -> (<Tensor[Float32], (1, 1)>)\n",
        "      # Fullname with scope: (Default/net/Conv2D-op1)\n",
        "      # In file /m/wrap.py:391/        loss = self.network(*inputs)/\n",
        "      # inlined:In file /m/net.py:30/        x = self.conv1(x)/\n",
        "      # inlined:In file /m/conv.py:313/        output = self.conv2d(x)/\n",
        "  %2(y) = ReLU(%1)\n",
        "      # Fullname with scope: (Default/net/ReLU-op2)\n",
        "  %3(z) = ReluGrad(%2)\n",
        "      : full_name_with_scope: (Gradients/Default/net/ReluGrad-op3)\n",
        "      # In file /old/net.py(8)/y = relu(x)/\n",
        "      # Corresponding forward node candidate:\n",
        "      # In file /m/outer.py:1/outer()/\n",
        "      # In file /m/inner.py:2/inner()/\n",
        "}\n",
        "# Order:\n",
    ]
    stacks = parse_ir_stacks(lines)
    assert set(stacks) == {"Default/net/Conv2D-op1", "Gradients/Default/net/ReluGrad-op3"}
    conv = stacks["Default/net/Conv2D-op1"]
    assert [(f.file_path, f.line_no) for f in conv] == [
        ("/m/conv.py", 313),
        ("/m/net.py", 30),
        ("/m/wrap.py", 391),
    ]
    grad = stacks["Gradients/Default/net/ReluGrad-op3"]
    assert [(f.file_path, f.line_no, f.group) for f in grad] == [
        ("/old/net.py", 8, 0),
        ("", None, 1),
        ("/m/inner.py", 2, 1),
        ("/m/outer.py", 1, 1),
    ]
    # the innermost frame opens the sub-stack, as the ` - ` marked line of a `.pb` does
    assert [f.has_substack for f in grad] == [False, False, True, False]


def test_parse_ir_stacks_drop_headers_without_frames() -> None:
    lines = [
        "      # Fullname with scope: (Default/net/Cast-op1)\n",
        "      # Corresponding code candidate:\n",
        "      # Fullname with scope: (Default/net/Cast-op2)\n",
        "      # In file /m/a.py:1/a()/\n",
        "      # Corresponding code candidate:\n",
        "      # Corresponding forward node candidate:\n",
        "      # In file /m/b.py:2/b()/\n",
        "      # Corresponding code candidate:\n",
        "}\n",
    ]
    stacks = parse_ir_stacks(lines)
    assert "Default/net/Cast-op1" not in stacks  # a lone header is no stack
    assert [
        (f.file_path, f.code_line, f.group, f.has_substack) for f in stacks["Default/net/Cast-op2"]
    ] == [
        ("/m/a.py", "a()", 0, False),
        ("", "Corresponding forward node candidate:", 1, False),
        ("/m/b.py", "b()", 1, True),
    ]


# ============================================================== damaged but decodable


def test_invalid_utf8_strings_are_decoded_with_replacement() -> None:
    # NodeProto{name: "1", op_type: "Op", full_name: b"S/\xff", source_address: b"\xfe"}
    node = b"\x12\x011" + b"\x1a\x02Op" + b"\x42\x03S/\xff" + b"\x4a\x01\xfe"
    graph_proto = pb.GraphProto.FromString(b"\x0a" + bytes([len(node)]) + node)
    graph = graph_from_proto(graph_proto)
    (only,) = graph.operators
    assert only.name == "S/\ufffd" and only.scope == "S"
    assert only.stack == [StackFrame("", None, "\ufffd")]


@pytest.mark.parametrize("version", ["ms2_0_0", "ms2_10_0"])
def test_mutated_files_never_escape_as_tracebacks(
    version: str, dump_2_0: Path, dump_2_10: Path
) -> None:
    """Random byte damage either decodes into some graph or gives GraphFileError."""
    import random

    root = dump_2_0 if version == "ms2_0_0" else dump_2_10
    data = (root / f"{GRAPH_STEM}.pb").read_bytes()
    rng = random.Random(version)
    outcomes = {"graph": 0, "error": 0}
    for _ in range(150):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            model = graph_pb.parse_model_proto(bytes(damaged), "damaged.pb")
        except GraphFileError as exc:
            assert "damaged.pb" in str(exc)
            outcomes["error"] += 1
            continue
        graph = graph_from_proto(model.graph)
        graph.children("")
        assert graph.digraph.number_of_nodes() == len(graph)
        outcomes["graph"] += 1
    assert outcomes["graph"] and outcomes["error"]


def test_control_edges_are_kept_apart() -> None:
    """InputProto.type CONTROL_EDGE: the input stays an input (origin traces follow every
    edge) and is named in `control_inputs` (what `li -c` marks); data edges are not."""
    proto = pb.GraphProto(name="g")
    for name, inputs in (("a", []), ("b", []), ("c", [("a", 0), ("b", 1)])):
        node = proto.node.add(name=name, op_type="Op", full_name=f"Default/{name}-op1")
        for src, kind in inputs:
            node.input.add(name=src, type=kind)
    graph = graph_pb.graph_from_proto(proto)
    c = graph.node("Default/c-op1")
    assert c.inputs == ["Default/a-op1", "Default/b-op1"]
    assert c.control_inputs == ("Default/b-op1",)
    assert graph.node("Default/a-op1").control_inputs == ()
