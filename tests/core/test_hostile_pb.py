"""Graph file surface: malformed and hostile `.pb` graph files.

Each case must end in one sentence naming the file (and the node, for a declaration past a
cap), never a traceback, a hang or a memory bomb: truncated and garbage files, a FIFO or a
directory named like a graph, a dangling link, a node whose shape declares millions of
dimensions (it froze the viewer for 30 s at 700 MB), nodes with huge input, attribute or
output lists, and a graph of a million nameless nodes (which `check` blamed on the
watchpoints: "no node matches the watchpoints' targets").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tuidebug._proto import debug_graph_pb2 as pb
from tuidebug.cli import main as cli_main
from tuidebug.core import graph_pb
from tuidebug.core.graph_pb import (
    MAX_GRAPH_INPUTS,
    MAX_NODE_ATTRIBUTES,
    MAX_NODE_INPUTS,
    MAX_NODE_OUTPUTS,
    MAX_SHAPE_DIMS,
    GraphFileError,
    GraphLimitError,
    graph_from_proto,
)
from tuidebug.offline.files.graphs import load_graph_file, stacks_from_ir
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

RELU = "Default/net/ReLU-op0"
DT_TENSOR, DT_TUPLE, DT_FLOAT32 = 14, 31, 11


def _model(dims: int = 2) -> pb.ModelProto:
    """A valid graph: parameter w and a ReLU reading it, both float32 of `dims` dims."""
    m = pb.ModelProto()
    g = m.graph
    g.name = "kernel_graph_0"
    param = g.parameters.add(name="w")
    param.type.data_type = DT_TENSOR
    param.type.tensor_type.elem_type = DT_FLOAT32
    for _ in range(dims):
        param.type.tensor_type.shape.dim.add(size=2)
    node = g.node.add(name="1", op_type="ReLU", full_name=RELU)
    node.input.add(name="w")
    node.output_type.CopyFrom(param.type)
    return m


def _repeated(message: type, one: object, n: int) -> object:
    """`n` copies of `one`'s repeated entries, decoded from repeated bytes (building them one
    by one would take minutes)."""
    out = message()
    out.ParseFromString(one.SerializeToString() * n)  # type: ignore[attr-defined]
    return out


def _dims(n: int) -> pb.TensorShapeProto:
    one = pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dimension(size=1)])
    return _repeated(pb.TensorShapeProto, one, n)  # type: ignore[return-value]


def _write(path: Path, model: pb.ModelProto) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def _sentence(err: BaseException, *words: str) -> str:
    text = str(err)
    assert text.endswith("."), text
    assert "\n" not in text and "Traceback" not in text
    for word in words:
        assert word in text, (word, text)
    return text


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(GraphFileError) as info:
        load_graph_file(path)
    return _sentence(info.value, str(path), *words)


# ------------------------------------------------------------------ damaged files
def test_a_valid_graph_loads(tmp_path: Path) -> None:
    graph = load_graph_file(_write(tmp_path / "g.pb", _model(MAX_SHAPE_DIMS)))
    assert graph.node(RELU).outputs[0].shape == (2,) * MAX_SHAPE_DIMS


@pytest.mark.parametrize("cut", [1, 7, 30, -3])
def test_truncated_graph(tmp_path: Path, cut: int) -> None:
    data = _model().SerializeToString()
    path = tmp_path / "cut.pb"
    path.write_bytes(data[:cut])
    _refused(path)


@pytest.mark.parametrize(
    "content",
    [b"", b"\xff" * 4096, os.urandom(1 << 16), b"\x0a\xff\xff\xff\xff\x0f" + b"\x00" * 64],
    ids=["empty", "ff", "random", "huge-length"],
)
def test_garbage_graph(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "garbage.pb"
    path.write_bytes(content)
    _refused(path)


@pytest.mark.timeout(30)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_named_like_a_graph_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "ms_output_trace_code_graph_0.pb"
    os.mkfifo(fifo)  # no writer: a plain open() would wait forever
    _refused(fifo, "FIFO")
    ir = tmp_path / "g.ir"
    os.mkfifo(ir)
    with pytest.raises(GraphFileError) as info:
        stacks_from_ir(ir)
    _sentence(info.value, str(ir), "FIFO")


def test_a_directory_named_like_a_graph(tmp_path: Path) -> None:
    folder = tmp_path / "ms_output_trace_code_graph_0.pb"
    folder.mkdir()
    _refused(folder, "directory")


def test_a_dangling_link_named_like_a_graph(tmp_path: Path) -> None:
    link = tmp_path / "ms_output_trace_code_graph_0.pb"
    link.symlink_to(tmp_path / "gone.pb")
    _refused(link, "No such file")


# ------------------------------------------------------------------ caps on declarations
def _huge_output_shape(m: pb.ModelProto, n: int) -> None:
    m.graph.node[0].output_type.tensor_type.shape.CopyFrom(_dims(n))


def _huge_param_shape(m: pb.ModelProto, n: int) -> None:
    m.graph.parameters[0].type.tensor_type.shape.CopyFrom(_dims(n))


def _huge_tuple_element_shape(m: pb.ModelProto, n: int) -> None:
    out = m.graph.node[0].output_type
    elem = pb.TypeProto()
    elem.CopyFrom(out)
    elem.tensor_type.shape.CopyFrom(_dims(n))
    out.Clear()
    out.data_type = DT_TUPLE
    out.sequence_type.elem_types.append(elem)


def _huge_constant(m: pb.ModelProto, n: int) -> None:
    cst = m.graph.const_vals.add(key="c0")
    tensor = cst.value.tensor_val
    tensor.data_type = DT_FLOAT32
    one = pb.TensorProto(dims=[1])
    tensor.dims.extend(_repeated(pb.TensorProto, one, n).dims)  # type: ignore[attr-defined]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("declare", "subject"),
    [
        (_huge_output_shape, f"node {RELU}"),
        (_huge_param_shape, "parameter w"),
        (_huge_tuple_element_shape, f"node {RELU}"),
        (_huge_constant, "constant c0"),
    ],
    ids=["output", "parameter", "tuple-element", "constant"],
)
def test_a_shape_of_millions_of_dimensions_is_refused(
    tmp_path: Path, declare: Callable[[pb.ModelProto, int], None], subject: str
) -> None:
    m = _model()
    declare(m, 5_000_000)  # the case: 700 MB and a 30 s freeze
    path = _write(tmp_path / "dims.pb", m)
    text = _refused(path, subject, "5,000,000 dimensions", f"the {MAX_SHAPE_DIMS} ")
    assert text.startswith(f"Graph file {path}: ")


def test_one_dimension_past_the_cap_is_refused(tmp_path: Path) -> None:
    _refused(_write(tmp_path / "g.pb", _model(MAX_SHAPE_DIMS + 1)), f"{MAX_SHAPE_DIMS + 1:,}")


@pytest.mark.timeout(60)
def test_a_node_with_too_many_inputs(tmp_path: Path) -> None:
    m = _model()
    node = m.graph.node[0]
    extra = _repeated(pb.NodeProto, pb.NodeProto(input=[pb.InputProto(name="w")]), MAX_NODE_INPUTS)
    node.MergeFrom(extra)  # type: ignore[arg-type]
    _refused(_write(tmp_path / "g.pb", m), RELU, f"{MAX_NODE_INPUTS + 1:,} inputs")


@pytest.mark.timeout(60)
def test_too_many_inputs_in_all(tmp_path: Path) -> None:
    m = _model()
    per_node = MAX_NODE_INPUTS // 2
    template = pb.NodeProto(op_type="Add", input=[pb.InputProto(name="w")] * per_node)
    nodes = MAX_GRAPH_INPUTS // per_node + 1
    for i in range(nodes):
        node = m.graph.node.add()
        node.CopyFrom(template)
        node.name = str(i + 2)
    _refused(_write(tmp_path / "g.pb", m), "inputs in all", f"{MAX_GRAPH_INPUTS:,}")


@pytest.mark.timeout(60)
def test_a_node_with_too_many_attributes(tmp_path: Path) -> None:
    m = _model()
    one = pb.NodeProto(attribute=[pb.AttributeProto(name="a", value=pb.ValueProto(int_val=1))])
    m.graph.node[0].MergeFrom(_repeated(pb.NodeProto, one, MAX_NODE_ATTRIBUTES + 1))  # type: ignore[arg-type]
    _refused(_write(tmp_path / "g.pb", m), RELU, f"{MAX_NODE_ATTRIBUTES + 1:,} attributes")


@pytest.mark.timeout(60)
def test_a_node_with_too_many_outputs(tmp_path: Path) -> None:
    m = _model()
    out = m.graph.node[0].output_type
    elem = pb.TypeProto()
    elem.CopyFrom(out)
    out.Clear()
    out.data_type = DT_TUPLE
    seq = pb.TypeProto.Sequence(elem_types=[elem])
    out.sequence_type.CopyFrom(_repeated(pb.TypeProto.Sequence, seq, MAX_NODE_OUTPUTS + 1))  # type: ignore[arg-type]
    _refused(_write(tmp_path / "g.pb", m), RELU, f"{MAX_NODE_OUTPUTS + 1:,} outputs")


def test_a_long_node_name_is_cut_in_the_sentence(tmp_path: Path) -> None:
    m = _model(MAX_SHAPE_DIMS + 1)
    m.graph.node[0].full_name = "Default/" + "x" * 100_000
    text = _refused(_write(tmp_path / "g.pb", m), "Default/xxx", "…")
    assert len(text) < 1000


def test_graphs_received_online_are_capped_too() -> None:
    m = _model()
    _huge_output_shape(m, 100_000)
    with pytest.raises(GraphLimitError) as info:
        graph_from_proto(m.graph, limit=None)  # what the online server builds from a peer
    _sentence(info.value, "Graph kernel_graph_0: ", RELU, "100,000 dimensions")


# ------------------------------------------------------------------ nameless nodes
def _nameless(n: int) -> pb.ModelProto:
    m = pb.ModelProto()
    m.graph.CopyFrom(_repeated(pb.GraphProto, pb.GraphProto(node=[pb.NodeProto(op_type="A")]), n))  # type: ignore[arg-type]
    m.graph.name = "kernel_graph_0"
    return m


@pytest.mark.timeout(120)
def test_a_million_nameless_nodes_say_so(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.pb", _nameless(1_000_000))
    _refused(path, "1,000,000 nodes", "none of them has a name")
    one = _write(tmp_path / "one.pb", _nameless(1))
    _refused(one, "1 node but it has no name")


def _dump_with_graph(root: Path, model: pb.ModelProto | None = None) -> Path:
    """A one-iteration dump whose graph file is replaced by `model` (when given)."""
    writer = DumpWriter(root, net_name="Net", start_timestamp=1)
    pb_path = writer.add_graph(
        0, [NodeDef(RELU, "ReLU", ["w"], shape=(4,))], [ParamDef("w", np.float32, (4,))]
    )
    x = np.ones(4, np.float32)
    writer.write_iteration(0, 0, {("w", "output", 0): x, (RELU, "output", 0): x})
    writer.finish()
    if model is not None:
        _write(pb_path, model)
    return root


def _check(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, str]:
    code = cli_main(["check", str(root), "--watch", "TO"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.mark.timeout(120)
def test_check_gives_the_nameless_graph_as_the_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _dump_with_graph(tmp_path / "dump", _nameless(1_000_000))
    code, err = _check(capsys, root)
    assert code == 2
    assert "no node matches the watchpoints' targets" not in err
    assert (
        "Graph file rank_0/graphs/ms_output_trace_code_graph_0.pb declares 1,000,000 nodes "
        "but none of them has a name" in err
    )


@pytest.mark.timeout(120)
def test_check_names_the_node_of_a_huge_shape(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    m = _model()
    _huge_output_shape(m, 5_000_000)
    code, err = _check(capsys, _dump_with_graph(tmp_path / "dump", m))
    assert code == 2
    assert f"node {RELU} declares a shape of 5,000,000 dimensions" in err


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_check_survives_a_fifo_graph_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _dump_with_graph(tmp_path / "dump")
    graph = root / "rank_0/graphs/ms_output_trace_code_graph_0.pb"
    graph.unlink()
    os.mkfifo(graph)
    code, err = _check(capsys, root)
    assert code == 2
    assert err.strip().endswith(".")


def test_caps_are_what_the_module_says() -> None:
    # the sentences quote these; a change must be deliberate (README's Safety section)
    assert (MAX_SHAPE_DIMS, MAX_NODE_ATTRIBUTES) == (64, 10_000)
    assert MAX_NODE_INPUTS == MAX_NODE_OUTPUTS == graph_pb.MAX_GRAPH_NODES
