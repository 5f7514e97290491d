"""The tensor-file index (offline/layout/tensor_index.py): every file of both real dumps matched to
a graph node or accounted for, MindSpore 2.4+ op numbers (spec §5.2a), the dtype/shape
cross-check, 2.0 constants, newest-wins."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.dump_names import LENET
from tests.offline.dump_copy import copy_dump
from tuidebug.core.graph import Graph, Node, NodeKind, TensorSpec
from tuidebug.core.tensor import DT_FLOAT16, DT_FLOAT32, numpy_dtype
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.files.graphs import load_graph_file
from tuidebug.offline.files.names import parse_tensor_file_name
from tuidebug.offline.files.names_24 import kernel_dump_names
from tuidebug.offline.files.npy import check_expected, load_npy
from tuidebug.offline.layout.root import DumpLayout
from tuidebug.offline.layout.sync_rank import RankLayout
from tuidebug.offline.layout.tensor_index import TensorIndex

RESHAPES = {"Reshape", "Flatten", "ExpandDims", "Squeeze"}  # dumped in their input's shape
GRAD = f"Gradients/{LENET}"
CONV1_FILTER_GRAD = f"{GRAD}/conv1-Conv2d/Grad_Conv2D/Conv2DBackpropFilter-op1"
CONV2_FILTER_GRAD = f"{GRAD}/conv2-Conv2d/Grad_Conv2D/Conv2DBackpropFilter-op1"
CONV2_INPUT_GRAD = f"{GRAD}/conv2-Conv2d/Grad_Conv2D/Conv2DBackpropInput-op1"


def _index(root: Path) -> tuple[DumpLayout, TensorIndex]:
    dump = DumpLayout.open(root)
    rank = dump.rank(0)
    pb = rank.graph_files[0].pb
    assert pb is not None
    return dump, TensorIndex(rank, load_graph_file(pb))


@pytest.fixture(scope="module")
def index_2_10(dump_2_10: Path) -> TensorIndex:
    return _index(dump_2_10)[1]


@pytest.fixture(scope="module")
def index_2_0(dump_2_0: Path) -> TensorIndex:
    return _index(dump_2_0)[1]


def _indexed_files(index: TensorIndex) -> dict[Path, tuple[str, str, int]]:
    """Every file the index hands out, with the key it is filed under."""
    out: dict[Path, tuple[str, str, int]] = {}
    for iteration in index.iterations:
        for key, f in index.files_for(iteration).items():
            assert out.get(f.path, key) == key, f"{f.path} filed under two keys"
            out[f.path] = key
    return out


# ====================================================================== every file
def test_every_2_10_file_matches_a_node(index_2_10: TensorIndex, dump_2_10: Path) -> None:
    on_disk = set(dump_2_10.rglob("*.npy"))
    assert len(on_disk) == 780
    indexed = _indexed_files(index_2_10)
    assert set(indexed) == on_disk
    assert index_2_10.unmatched == []
    assert index_2_10.problems == []
    graph = index_2_10.graph
    for path, (node_name, io, slot) in indexed.items():
        f = parse_tensor_file_name(path.name)
        assert f is not None and (f.io, f.slot) == (io, slot)
        node = graph.node(node_name)
        if f.op_type == "Parameter":
            assert node.kind is NodeKind.PARAMETER
            assert f.op_name == node.name.replace(".", "_")
        else:
            assert node.op_type == f.op_type
            # full scope name with / → _, op number aside (spec §5.2a renumbers)
            assert re.sub(r"-op\d+$", "", f.op_name) == re.sub(
                r"-op\d+$", "", node.name.replace("/", "_")
            )
            assert f.op_name == kernel_dump_names([graph])[graph.name][node_name]


def test_2_10_output_counts(index_2_10: TensorIndex) -> None:
    for iteration in range(4):
        outputs = {k for k in index_2_10.files_for(iteration) if k[1] == "output"}
        assert len(outputs) == 66  # 45 kernels + 21 parameters
        assert {k[0] for k in outputs} >= set(index_2_10.rank.execution_order(0))


def test_every_2_0_file_matches_a_node_or_is_accounted_for(
    index_2_0: TensorIndex, dump_2_0: Path
) -> None:
    on_disk = set(dump_2_0.rglob("*.npy"))
    assert len(on_disk) == 629
    indexed = _indexed_files(index_2_0)
    unmatched = {f.path for f in index_2_0.unmatched}
    assert indexed.keys() | unmatched == on_disk
    assert not indexed.keys() & unmatched
    # constants the graph does not know (CPU kernel shapes): data-5 … data-9; MindInsight
    # shows none of them either, so they are not worth a warning
    assert sorted(f.op_name for f in index_2_0.unmatched) == [f"data-{n}" for n in range(5, 10)]
    assert all(f.path.parent.name == "constants" for f in index_2_0.unmatched)
    assert index_2_0.problems == []
    graph = index_2_0.graph
    for path, (node_name, _io, _slot) in indexed.items():
        f = parse_tensor_file_name(path.name)
        assert f is not None
        node = graph.node(node_name)
        if f.op_type == "Parameter":
            assert node.kind in (NodeKind.PARAMETER, NodeKind.CONSTANT)
        else:
            assert node.short_name == f.op_name and node.op_type == f.op_type


def test_2_0_output_counts(index_2_0: TensorIndex) -> None:
    for iteration in range(4):
        outputs = {k for k in index_2_0.files_for(iteration) if k[1] == "output"}
        assert len(outputs) == 56 + 4  # 37 kernels + 19 parameters, + 4 constants


# ====================================================================== matching rules
def test_2_10_short_names_are_not_unique(index_2_10: TensorIndex) -> None:
    fc1 = index_2_10.lookup(f"{LENET}/fc1-Dense/MatMul-op0", 0, 1)
    fc2 = index_2_10.lookup(f"{LENET}/fc2-Dense/MatMul-op0", 0, 1)
    assert fc1 is not None and fc2 is not None and fc1.path != fc2.path
    assert "_fc1-Dense_MatMul-op0." in fc1.name and "_fc2-Dense_MatMul-op0." in fc2.name


def test_2_10_renumbered_kernels(index_2_10: TensorIndex) -> None:
    """MindSpore 2.10 names the graph's `Conv2DBackpropFilter-op1` files `…-op0` (the only
    kernel of its type in its scope: k = 0, spec §5.2a); nothing about it is a problem."""
    for iteration in range(4):
        f = index_2_10.lookup(CONV1_FILTER_GRAD, 0, iteration)
        assert f is not None
        assert "_conv1-Conv2d_Grad_Conv2D_Conv2DBackpropFilter-op0." in f.name
        assert index_2_10.lookup(CONV1_FILTER_GRAD, 1, iteration, is_output=False) is not None
    assert index_2_10.iterations_with_data(CONV2_INPUT_GRAD) == [0, 1, 2, 3]
    # the execution order names the graph's kernels, renumbered ones included
    order = index_2_10.rank.execution_order(0)
    assert CONV1_FILTER_GRAD in order


def test_parameters(index_2_0: TensorIndex, index_2_10: TensorIndex) -> None:
    old = index_2_0.lookup("moments.fc1.weight", 0, 2)
    new = index_2_10.lookup("moments.fc1.weight", 0, 2)
    assert old is not None and old.name.startswith("Parameter.moments.fc1.weight.0.0.")
    assert new is not None and new.name.startswith("Parameter.moments_fc1_weight.0.0.")
    assert index_2_10.lookup("global_step", 0, 0) is not None
    assert index_2_0.lookup("inputs1", 0, 0) is None  # 2.0 did not dump it
    assert index_2_10.iterations_with_data("fc1.weight") == [0, 1, 2, 3]
    # UI names (scope + parameter) and check-node names (graph name prefix) work too
    ui = index_2_10.graph.node("fc1.weight").ui_name
    assert index_2_10.lookup(index_2_10.graph.node("moments.fc1.weight").ui_name, 0, 2) == new
    assert index_2_10.lookup(ui, 0, 2) == index_2_10.lookup("fc1.weight", 0, 2)
    assert index_2_10.lookup("kernel_graph0/moments.fc1.weight", 0, 2) == new


def test_input_files(index_2_0: TensorIndex) -> None:
    conv = f"{LENET}/conv1-Conv2d/Conv2D-op77"
    weight_in = index_2_0.lookup(conv, 1, 0, is_output=False)
    assert weight_in is not None and weight_in.io == "input" and weight_in.slot == 1
    assert index_2_0.lookup(conv, 2, 0, is_output=False) is None
    assert index_2_0.lookup(conv, 0, 0) is not None
    assert index_2_0.lookup(conv, 1, 0) is None  # one output only
    assert index_2_0.lookup(conv, 0, 4) is None  # iteration not dumped
    assert index_2_0.lookup("no/such/node", 0, 0) is None


def test_2_0_constants(index_2_0: TensorIndex) -> None:
    for iteration in range(4):
        f = index_2_0.lookup("cst2", 0, iteration)  # dump name Default--data-1
        assert f is not None and f.path.parent.name == "constants"
        assert f.op_name == "data-1"
    assert index_2_0.lookup("cst5", 0, 3).op_name == "data-4"  # type: ignore[union-attr]
    assert index_2_0.lookup("cst1", 0, 0) is None  # data-0 (a monad) was not dumped
    assert index_2_0.lookup("cst2", 0, 9) is None  # no such iteration
    assert index_2_0.iterations_with_data("cst2") == [0, 1, 2, 3]
    assert index_2_0.iterations_with_data("cst1") == []
    assert ("cst3", "output", 0) in index_2_0.files_for(2)


def test_old_cst_constants_in_the_iteration_folder(tmp_path: Path, dump_2_0: Path) -> None:
    """MindSpore ≈1.x wrote constants as Parameter.cst{N} into the iteration folder."""
    root = copy_dump(dump_2_0, tmp_path / "d", keep=lambda rel: "constants" not in rel)
    it = root / "rank_0" / "LeNet" / "0" / "1"
    (it / "Parameter.cst3.0.0.1795310823151313.output.0.DefaultFormat.npy").touch()
    _, index = _index(root)
    f = index.lookup("cst3", 0, 1)
    assert f is not None and f.op_name == "cst3"
    assert index.lookup("cst3", 0, 0) is None
    assert index.iterations_with_data("cst3") == [1]
    assert index.unmatched == []


def test_newest_timestamp_wins(tmp_path: Path, dump_2_10: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    it = root / "rank_0" / "LeNet" / "0" / "2"
    [weight] = it.glob("Parameter.fc1_weight.*.npy")
    ts = int(weight.name.split(".")[4])
    newer = it / weight.name.replace(str(ts), str(ts + 1000))
    older = it / weight.name.replace(str(ts), str(ts - 1000))
    newer.touch()
    older.touch()
    [relu] = it.glob("ReLU.*ReLU-op1.*.output.0.*.npy")
    relu_ts = int(relu.name.split(".")[4])
    (it / relu.name.replace(str(relu_ts), str(relu_ts - 5))).touch()
    _, index = _index(root)
    found = index.lookup("fc1.weight", 0, 2)
    assert found is not None and found.path == newer
    relu_found = index.lookup(f"{LENET}/relu-ReLU/ReLU-op1", 0, 2)
    assert relu_found is not None and relu_found.path == relu
    assert index.unmatched == []
    # several tensors with several files (a loop's trips): one sentence for the graph, not
    # one per tensor (issue 28: 58 wrapped warnings on a control-flow dump)
    (sentence,) = index.problems
    assert sentence.startswith("2 tensors of graph ") and "up to 3 each" in sentence
    assert f"the first is {LENET}/relu-ReLU/ReLU-op1 output 0 at iteration 2" in sentence
    # every file of a tensor in its folder, oldest first; the last is the one read
    trips = index.trips("fc1.weight", 0, 2)
    assert [f.path for f in trips] == [older, weight, newer]
    assert index.trips("fc1.weight", 0, 99) == []


def test_equal_timestamps_are_settled_by_name_not_listing_order(
    tmp_path: Path, dump_2_10: Path
) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    it = root / "rank_0" / "LeNet" / "0" / "2"
    [weight] = it.glob("Parameter.fc1_weight.*.npy")
    # the same timestamp, another stream id: the larger name wins whatever the listing says
    other = it / weight.name.replace("fc1_weight.0.0.", "fc1_weight.0.1.")
    other.touch()
    _, index = _index(root)
    found = index.lookup("fc1.weight", 0, 2)
    assert found is not None and found.path == max(weight, other, key=lambda p: p.name)
    assert len(index.problems) == 1 and "so it is ignored" in index.problems[0]


def test_execution_position(index_2_10: TensorIndex, index_2_0: TensorIndex) -> None:
    for index in (index_2_10, index_2_0):
        order = index.rank.execution_order(0)
        assert all(name in index.graph.nodes for name in order)
        assert [index.execution_position(n) for n in order] == list(range(len(order)))
        kernels_end = len(order)
        assert index.execution_position("fc1.weight") >= kernels_end
        everything = sorted(index.graph.nodes, key=index.execution_position)
        assert everything[: len(order)] == order
        assert len({index.execution_position(n) for n in index.graph.nodes}) == len(index.graph)
    assert index_2_10.execution_position(CONV1_FILTER_GRAD) == 39
    assert index_2_10.execution_position("nope") > len(index_2_10.graph)


def test_history_through_the_index(index_2_10: TensorIndex) -> None:
    assert index_2_10.has_history
    assert index_2_10.previous_iteration(0) is None
    assert index_2_10.previous_iteration(3) == 2


def test_missing_history_through_the_index(tmp_path: Path, dump_2_0: Path) -> None:
    root = copy_dump(
        dump_2_0, tmp_path / "d", keep=lambda rel: "ms_global_execution_order" not in rel
    )
    dump, index = _index(root)
    assert not index.has_history
    assert index.previous_iteration(2) is None
    assert len(dump.problems) == 1 and "is missing" in dump.problems[0]
    assert index.lookup("fc1.weight", 0, 2) is not None


def test_statistics_for(tmp_path: Path, dump_2_10: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    (root / "rank_0" / "LeNet" / "0" / "1" / "statistic.csv").write_text(
        "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,"
        "Max Value,Min Value,L2Norm Value\n"
        "MatMul,Default_network-WithLossCell__backbone-LeNet5_fc2-Dense_MatMul-op0,0,0,1,"
        'output,0,1,float32,"(4,84)",1,0,1\n'
        "Conv2DBackpropFilter,Gradients_Default_network-WithLossCell__backbone-LeNet5_conv1-"
        'Conv2d_Grad_Conv2D_Conv2DBackpropFilter-op0,0,0,1,output,0,1,float32,"(6,1,5,5)",2,0,1\n'
        'Parameter,fc1_weight,0,0,1,output,0,1,float32,"(120,400)",3,0,1\n'
        'Add,nobody,0,0,1,output,0,1,float32,"(1)",3,0,1\n'
    )
    _, index = _index(root)
    stats = index.statistics_for(1)
    assert set(stats) == {
        (f"{LENET}/fc2-Dense/MatMul-op0", "output", 0),
        (CONV1_FILTER_GRAD, "output", 0),
        ("fc1.weight", "output", 0),
    }
    assert stats[("fc1.weight", "output", 0)].stats["max"] == 3.0
    assert index.statistics_for(0) == {}


# ====================================================================== hand-made graphs
def _op(name: str, op_type: str) -> Node:
    return Node(name=name, kind=NodeKind.OPERATOR, op_type=op_type, scope=name.rsplit("/", 1)[0])


def _param(name: str) -> Node:
    return Node(name=name, kind=NodeKind.PARAMETER, op_type="Parameter")


def _hand_dump(tmp_path: Path, names: list[str]) -> RankLayout:
    it = tmp_path / "d" / "rank_0" / "Net" / "0" / "0"
    it.mkdir(parents=True)
    (tmp_path / "d" / "rank_0" / "graphs").mkdir()
    (tmp_path / "d" / "rank_0" / "graphs" / "ms_output_trace_code_graph_0.pb").touch()
    for name in names:
        (it / name).touch()
    return DumpLayout.open(tmp_path / "d").rank(0)


def _f(op_type: str, op_name: str, io: str = "output", slot: int = 0, ts: int = 10) -> str:
    return f"{op_type}.{op_name}.0.0.{ts}.{io}.{slot}.DefaultFormat.Float32.npy"


def test_parameter_names_holding_underscores(tmp_path: Path) -> None:
    """Names are encoded from the graph, never decoded from files: `layer_1.weight` and
    `conv_a.bias` both survive the `.` → `_` of 2.10 file names."""
    graph = Graph("kernel_graph_0", [_param("layer_1.weight"), _param("conv_a.bias"), _param("b_")])
    rank = _hand_dump(
        tmp_path,
        [_f("Parameter", "layer_1_weight"), _f("Parameter", "conv_a_bias"), _f("Parameter", "b_")],
    )
    index = TensorIndex(rank, graph)
    assert index.unmatched == []
    assert index.lookup("layer_1.weight", 0, 0).op_name == "layer_1_weight"  # type: ignore[union-attr]
    assert index.lookup("conv_a.bias", 0, 0).op_name == "conv_a_bias"  # type: ignore[union-attr]
    assert index.lookup("b_", 0, 0) is not None


def test_2_4_names_follow_mindspores_numbering(tmp_path: Path) -> None:
    """k = the node's index among the nodes of its scope and type in graph order: the file
    named like a node's own graph name may belong to another node."""
    scope = "Default/blk"
    graph = Graph(
        "kernel_graph_0",
        [
            _op(f"{scope}/Add-op1", "Add"),
            _op(f"{scope}/Mul-op5", "Mul"),
            _op(f"{scope}/Add-op2", "Add"),
            _op("Default/other/Mul-op6", "Mul"),
        ],
    )
    rank = _hand_dump(
        tmp_path,
        [
            _f("Add", "Default_blk_Add-op0"),
            _f("Add", "Default_blk_Add-op1", ts=11),
            _f("Mul", "Default_blk_Mul-op0"),
            _f("Mul", "Default_other_Mul-op0"),
            _f("Add", "Default_blk_Add-op2"),  # a third Add the graph does not have
        ],
    )
    index = TensorIndex(rank, graph)
    assert index.lookup(f"{scope}/Add-op1", 0, 0).op_name == "Default_blk_Add-op0"  # type: ignore[union-attr]
    assert index.lookup(f"{scope}/Add-op2", 0, 0).op_name == "Default_blk_Add-op1"  # type: ignore[union-attr]
    assert index.lookup(f"{scope}/Mul-op5", 0, 0).op_name == "Default_blk_Mul-op0"  # type: ignore[union-attr]
    assert index.lookup("Default/other/Mul-op6", 0, 0).op_name == "Default_other_Mul-op0"  # type: ignore[union-attr]
    assert [f.op_name for f in index.unmatched] == ["Default_blk_Add-op2"]
    assert index.problems == [
        "1 tensor file named Add.Default_blk_Add-op2 under rank_0/Net/0 matches no node of "
        "graph kernel_graph_0, so it is not shown."
    ]


def test_2_4_numbers_run_on_across_the_graphs_of_a_rank() -> None:
    first = Graph("kernel_graph_0", [_op("Default/Add-op3", "Add"), _op("Default/Add-op9", "Add")])
    second = Graph("kernel_graph_1", [_op("Default/Add-op1", "Add"), _op("Default/Sub-op2", "Sub")])
    assert kernel_dump_names([first, second]) == {
        "kernel_graph_0": {
            "Default/Add-op3": "Default_Add-op0",
            "Default/Add-op9": "Default_Add-op1",
        },
        "kernel_graph_1": {
            "Default/Add-op1": "Default_Add-op2",
            "Default/Sub-op2": "Default_Sub-op0",
        },
    }


def test_2_4_dump_keeping_graph_numbers_is_read_by_graph_names(tmp_path: Path) -> None:
    """Should a dump name its files by the graph's own numbers, the index notices (more
    names fit the graph than the rule) and uses them."""
    graph = Graph(
        "kernel_graph_0",
        [
            _op("Default/Add-op4", "Add"),
            _op("Default/Add-op7", "Add"),
            _op("Default/Mul-op1", "Mul"),
        ],
    )
    rank = _hand_dump(
        tmp_path,
        [_f("Add", "Default_Add-op4"), _f("Add", "Default_Add-op7"), _f("Mul", "Default_Mul-op1")],
    )
    index = TensorIndex(rank, graph)
    assert index.lookup("Default/Add-op4", 0, 0).op_name == "Default_Add-op4"  # type: ignore[union-attr]
    assert index.lookup("Default/Add-op7", 0, 0).op_name == "Default_Add-op7"  # type: ignore[union-attr]
    assert index.unmatched == [] and index.problems == []


def _typed_op(name: str, op_type: str, dtype: int, shape: tuple[int, ...]) -> Node:
    node = _op(name, op_type)
    node.outputs = [TensorSpec(0, dtype, shape)]
    return node


def test_a_file_contradicting_its_node_is_not_shown(tmp_path: Path) -> None:
    """The dtype in a 2.4+ name, or the .npy header, against the graph's declared output: a
    file that contradicts its node is never handed out for it, and one sentence names both."""
    graph = Graph(
        "kernel_graph_0",
        [
            _typed_op("Default/Cast-op3", "Cast", DT_FLOAT16, (6, 16)),
            _typed_op("Default/ReLU-op1", "ReLU", DT_FLOAT32, (6, 16)),
            _typed_op("Default/Flatten-op2", "Flatten", DT_FLOAT32, (6, 16)),
        ],
    )
    rank = _hand_dump(
        tmp_path,
        [
            "Cast.Default_Cast-op0.0.0.10.output.0.DefaultFormat.Float32.npy",
            "ReLU.Default_ReLU-op0.0.0.10.output.0.DefaultFormat.Float32.npy",
            "Flatten.Default_Flatten-op0.0.0.10.output.0.DefaultFormat.Float32.npy",
        ],
    )
    it = tmp_path / "d" / "rank_0" / "Net" / "0" / "0"
    np.save(
        it / "Cast.Default_Cast-op0.0.0.10.output.0.DefaultFormat.Float32.npy",
        np.zeros((16, 16), np.float32),
    )
    np.save(
        it / "ReLU.Default_ReLU-op0.0.0.10.output.0.DefaultFormat.Float32.npy",
        np.zeros((16, 16), np.float32),
    )
    # a reshape-type kernel dumps its input's shape: the same element count is accepted
    np.save(
        it / "Flatten.Default_Flatten-op0.0.0.10.output.0.DefaultFormat.Float32.npy",
        np.zeros((6, 4, 4), np.float32),
    )
    index = TensorIndex(rank, graph)
    assert index.problems == [
        "rank_0/Net/0/0/Cast.Default_Cast-op0.0.0.10.output.0.DefaultFormat.Float32.npy is named "
        "as float32 data, but the graph declares Default/Cast-op3 output 0 as float16, so the "
        "file is not shown under that node (nor are other files of it that disagree); a check "
        "reads it as it is."
    ]
    assert index.lookup("Default/Cast-op3", 0, 0) is None
    # the header is read when the iteration is first used
    assert index.lookup("Default/ReLU-op1", 0, 0) is None
    assert index.problems[1] == (
        "rank_0/Net/0/0/ReLU.Default_ReLU-op0.0.0.10.output.0.DefaultFormat.Float32.npy has shape "
        "(16, 16), but the graph declares Default/ReLU-op1 output 0 as (6, 16), so the file is "
        "not shown under that node (nor are other files of it that disagree); a check reads it "
        "as it is."
    )
    assert index.lookup("Default/Flatten-op2", 0, 0) is not None
    assert set(index.files_for(0)) == {("Default/Flatten-op2", "output", 0)}
    assert len(index.problems) == 2


def test_short_names_for_old_grammar_only_when_unique(tmp_path: Path) -> None:
    graph = Graph(
        "kernel_graph_0",
        [
            _op("Default/a/MatMul-op0", "MatMul"),
            _op("Default/b/MatMul-op0", "MatMul"),
            _op("Default/c/ReLU-op3", "ReLU"),
        ],
    )
    rank = _hand_dump(
        tmp_path,
        [
            "MatMul.MatMul-op0.0.0.5.output.0.DefaultFormat.npy",  # ambiguous short name
            "ReLU.ReLU-op3.0.0.5.output.0.DefaultFormat.npy",
            "MatMul.Default_b_MatMul-op0.0.0.5.output.0.DefaultFormat.npy",  # full, no dtype
        ],
    )
    index = TensorIndex(rank, graph)
    assert index.lookup("Default/c/ReLU-op3", 0, 0) is not None
    b = index.lookup("Default/b/MatMul-op0", 0, 0)
    assert b is not None and b.op_name == "Default_b_MatMul-op0"
    assert index.lookup("Default/a/MatMul-op0", 0, 0) is None
    assert [f.op_name for f in index.unmatched] == ["MatMul-op0"]


# ====================================================================== int/bool/float16 dumps
@pytest.fixture(scope="module", params=["ms2_0_0", "ms2_10_0"])
def int_fp16(request: pytest.FixtureRequest, fixtures_dir: Path) -> OfflineDump:
    """The int/bool/float16 network with many same-type kernels per scope (spec §5.2a)."""
    return OfflineDump(fixtures_dir / "mindspore_int_fp16_dump" / request.param)


def test_every_kernel_with_files_agrees_with_the_graph(int_fp16: OfflineDump) -> None:
    """Every execution-order kernel maps to files whose dtype and shape are the graph's, and
    no kernel file is left over or contradicted."""
    (graph,) = int_fp16.graphs(0).values()
    index = int_fp16.index(0, graph.name)
    order = index.rank.execution_order(graph.graph_id)
    assert len(order) > 50
    checked = 0
    for iteration in index.iterations:
        for name in order:
            node = graph.node(name)
            for spec in node.outputs:
                f = index.lookup(name, spec.slot, iteration)
                if f is None:
                    continue
                array = load_npy(f.path)
                assert check_expected(array, spec, f.path) is None or node.op_type in RESHAPES
                checked += 1
    assert checked >= 4 * 50
    assert [f for f in index.unmatched if f.path.parent.name != "constants"] == []
    assert int_fp16.problems == []


def test_the_float16_cast_shows_its_own_tensor(int_fp16: OfflineDump) -> None:
    """The graph's `hidden-Dense/Cast-op3` outputs float16 (6, 16); in 2.10 the file named
    `…Cast-op3…` holds another Cast's float32 (16, 16)."""
    (graph,) = int_fp16.graphs(0).values()
    casts = [
        n.name
        for n in graph.operators
        if n.op_type == "Cast" and "/hidden-Dense/" in n.name and n.name.startswith("Default/")
    ]
    assert len(casts) == 6
    seen = {}
    for name in casts:
        value = int_fp16.value(0, graph.name, name, 0, 1)
        assert value is not None, name
        (spec,) = graph.node(name).outputs
        assert value.dtype == numpy_dtype(spec.dtype) and value.shape == spec.shape, name
        seen[name] = value.dtype
    op3 = "Default/network-NetWithMetrics/net-Classifier/hidden-Dense/Cast-op3"
    if op3 in seen:  # the 2.10 graph's name
        assert seen[op3] == np.float16
