"""The DumpAnalyzer-compatible API (spec §6), used as a MindInsight user would: every method
on the real LeNet dumps and the demo dump, the `str()` forms, node selection by name and code
stack, MindInsight's documented examples with only the import line changed, and a one-sentence
exception for every argument it refuses (also those once taken silently, giving wrong answers)."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.dump_names import CONV1_2_0, DEMO_FIRST_INF, LENET, LOSS_2_0
from tests.offline.dump_copy import copy_dump
from tuidebug import api
from tuidebug.api import (
    ConditionBase,
    DebuggerParamTypeError,
    DebuggerParamValueError,
    DumpAnalyzer,
    DumpAnalyzerError,
    TensorAllZeroCondition,
    TensorChangeAboveThresholdCondition,
    TensorChangeBelowThresholdCondition,
    TensorOverflowCondition,
    TensorRangeCondition,
    TensorTooLargeCondition,
    TensorTooSmallCondition,
    TensorUnchangedCondition,
    Watchpoint,
)


def one_sentence(err: BaseException) -> str:
    text = str(err)
    assert text and "\n" not in text and text.endswith("."), text
    return text


# ------------------------------------------------------------------ construction
def test_exports_and_top_level_reexport() -> None:
    import tuidebug

    for name in [
        "DumpAnalyzer",
        "Node",
        "DebuggerTensor",
        "Watchpoint",
        "WatchpointHit",
        "ConditionBase",
        "TensorTooLargeCondition",
        "TensorTooSmallCondition",
        "TensorRangeCondition",
        "TensorOverflowCondition",
        "OperatorOverflowCondition",
        "TensorAllZeroCondition",
        "TensorUnchangedCondition",
        "TensorChangeBelowThresholdCondition",
        "TensorChangeAboveThresholdCondition",
    ]:
        assert getattr(tuidebug, name) is getattr(api, name)
    assert all(hasattr(api, name) for name in api.__all__)
    with pytest.raises(AttributeError):
        _ = tuidebug.NoSuchThing  # type: ignore[attr-defined]


def test_import_tuidebug_stays_light_and_api_has_no_textual() -> None:
    code = (
        "import sys, tuidebug; light = 'numpy' not in sys.modules; "
        "import tuidebug.api; print(light, 'textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.parametrize(
    ("args", "kind", "words"),
    [
        (("/nonexistent/dump",), DebuggerParamValueError, "does not exist"),
        ((None,), DebuggerParamTypeError, "dump_dir"),
    ],
)
def test_bad_dump_dir(args: tuple, kind: type, words: str) -> None:
    with pytest.raises(kind) as info:
        DumpAnalyzer(*args)
    assert words in one_sentence(info.value)
    assert isinstance(info.value, DumpAnalyzerError)


def test_dump_dir_errors_for_files_and_empty_folders(tmp_path: Path) -> None:
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    with pytest.raises(DebuggerParamValueError) as info:
        DumpAnalyzer(str(afile))
    assert "not a folder" in one_sentence(info.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DebuggerParamValueError) as info:
        DumpAnalyzer(str(empty))
    assert "rank_<N>" in one_sentence(info.value)


@pytest.mark.parametrize(
    ("mem_limit", "kind"),
    [(100, DebuggerParamValueError), (2**31, DebuggerParamValueError), ("4096", TypeError)],
)
def test_mem_limit_validation(dump_2_10: Path, mem_limit: object, kind: type) -> None:
    with pytest.raises(kind) as info:
        DumpAnalyzer(str(dump_2_10), mem_limit=mem_limit)  # type: ignore[arg-type]
    one_sentence(info.value)


def test_mem_limit_accepted(dump_2_10: Path) -> None:
    assert DumpAnalyzer(str(dump_2_10), mem_limit=2048).get_ranks() == [0]


def test_empty_dump_dir_is_one_sentence() -> None:
    with pytest.raises(DebuggerParamValueError) as info:
        DumpAnalyzer("")
    assert one_sentence(info.value) == (
        "the dump folder path is empty; give the folder holding rank_0/."
    )


def test_a_dump_without_any_readable_graph_is_refused(dump_2_10: Path, tmp_path: Path) -> None:
    """Every selection would be empty and every check would come back without a hit."""
    from tests.offline.damaged_dumps import DAMAGES, damaged_copy

    damage = next(d for d in DAMAGES if d.name == "garbage-pb")
    root, _ = damaged_copy(dump_2_10, tmp_path / "d", damage)
    with pytest.raises(DebuggerParamValueError) as info:
        DumpAnalyzer(str(root))
    text = one_sentence(info.value)
    assert "has a readable graph" in text and "ms_output_trace_code_graph_0.pb" in text


# ------------------------------------------------------------------ ranks and iterations
def test_ranks_and_iterations(a20: DumpAnalyzer) -> None:
    assert a20.get_ranks() == [0]
    assert a20.get_iterations() == [0, 1, 2, 3]
    assert a20.get_iterations(ranks=0) == [0, 1, 2, 3]
    assert a20.get_iterations(ranks=[0]) == [0, 1, 2, 3]
    with pytest.raises(DebuggerParamValueError) as info:
        a20.get_iterations(ranks=[3])
    one_sentence(info.value)
    with pytest.raises(DebuggerParamTypeError):
        a20.get_iterations(ranks="0")  # type: ignore[arg-type]


# ------------------------------------------------------------------ select_nodes
def test_select_nodes_by_name(a20: DumpAnalyzer) -> None:
    everything = a20.select_nodes("")
    assert len(everything) == 93  # MindInsight's n_nodes for this dump
    assert [n.name for n in a20.select_nodes("Conv2D-op77")] == [CONV1_2_0]
    assert a20.select_nodes("CONV2D-OP77") == []
    assert [n.name for n in a20.select_nodes("CONV2D-OP77", case_sensitive=False)] == [CONV1_2_0]
    weights = a20.select_nodes(r"^(conv\d|fc\d)\.(weight|bias)$", use_regex=True)
    assert len(weights) == 8
    assert a20.select_nodes(r"^CONV\d\.WEIGHT$", use_regex=True) == []
    assert len(a20.select_nodes(r"^CONV\d\.WEIGHT$", use_regex=True, case_sensitive=False)) == 2
    assert a20.select_nodes("fc1", ranks=0) == a20.select_nodes("fc1", ranks=[0])


def test_select_nodes_by_code_stack(a20: DumpAnalyzer, a210: DumpAnalyzer) -> None:
    # The LeNet script's own frames: every forward kernel points into train_lenet.py.
    by_script = a20.select_nodes("train_lenet.py", select_by="code_stack")
    assert CONV1_2_0 in {n.name for n in by_script}
    assert all(any("train_lenet.py" in f["file_path"] for f in n.stack) for n in by_script)
    # a frame's code line and "path:line" are both searchable
    conv_line = a20.select_nodes("self.conv2d(x, self.weight)", select_by="code_stack")
    assert {n.name for n in conv_line} >= {CONV1_2_0}
    by_line = a20.select_nodes(r"conv\.py:\d+", select_by="code_stack", use_regex=True)
    assert CONV1_2_0 in {n.name for n in by_line}
    assert a20.select_nodes("TRAIN_LENET", select_by="code_stack") == []
    assert a20.select_nodes("TRAIN_LENET", select_by="code_stack", case_sensitive=False)
    # 2.10's newer location form `path:line, col~col` parses too
    assert a210.select_nodes("conv.py", select_by="code_stack")
    # parameters and constants have no stack
    assert a20.select_nodes("conv1.weight")[0].stack == []


@pytest.mark.parametrize(
    ("kwargs", "kind"),
    [
        ({"query_string": 3}, DebuggerParamTypeError),
        ({"query_string": "x", "use_regex": "yes"}, DebuggerParamTypeError),
        ({"query_string": "x", "case_sensitive": 1}, DebuggerParamTypeError),
        ({"query_string": "x", "select_by": "op_type"}, DebuggerParamValueError),
        ({"query_string": "(", "use_regex": True}, DebuggerParamValueError),
        ({"query_string": "x", "ranks": 7}, DebuggerParamValueError),
    ],
)
def test_select_nodes_bad_arguments(a20: DumpAnalyzer, kwargs: dict, kind: type) -> None:
    with pytest.raises(kind) as info:
        a20.select_nodes(**kwargs)
    one_sentence(info.value)


def test_code_stack_query_in_the_documented_file_line_form(a20: DumpAnalyzer) -> None:
    """MindInsight's docs select by "lenet.py:49"; the frame text is `path:line code`."""
    nodes = a20.select_nodes(query_string="train_lenet.py:30", select_by="code_stack")
    assert CONV1_2_0 in {n.name for n in nodes}
    tensors = a20.select_tensors(
        query_string=r"train_lenet\.py:30\b", use_regex=True, select_by="code_stack"
    )
    assert tensors and all(t.node in nodes for t in tensors)


# ------------------------------------------------------------------ select_tensors
def test_select_tensors(a20: DumpAnalyzer) -> None:
    assert len(a20.select_tensors("")) == 428  # MindInsight's n_tensors
    tensors = a20.select_tensors("Conv2D-op77")
    assert [(t.slot, t.iteration) for t in tensors] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert [t.iteration for t in a20.select_tensors("Conv2D-op77", iterations=2)] == [2]
    assert [t.iteration for t in a20.select_tensors("Conv2D-op77", iterations=[1, 3])] == [1, 3]
    assert a20.select_tensors("Conv2D-op77", slots=[1]) == []
    assert len(a20.select_tensors("Conv2D-op77", slots=[0], ranks=[0])) == 4
    by_stack = a20.select_tensors("train_lenet.py", select_by="code_stack", iterations=[0])
    assert {t.iteration for t in by_stack} == {0}
    assert CONV1_2_0 in {t.node.name for t in by_stack}


@pytest.mark.parametrize(
    ("kwargs", "kind"),
    [
        ({"iterations": [9]}, DebuggerParamValueError),
        ({"iterations": "1"}, DebuggerParamTypeError),
        ({"slots": 0}, DebuggerParamTypeError),
        ({"slots": ["0"]}, DebuggerParamTypeError),
        ({"ranks": [0, 2]}, DebuggerParamValueError),
    ],
)
def test_select_tensors_bad_arguments(a20: DumpAnalyzer, kwargs: dict, kind: type) -> None:
    with pytest.raises(kind) as info:
        a20.select_tensors("Conv2D", **kwargs)
    one_sentence(info.value)


# ------------------------------------------------------------------ Node
def test_node_properties_and_str(a20: DumpAnalyzer) -> None:
    node = a20.select_nodes("Conv2D-op77")[0]
    assert node.rank == 0
    assert node.graph_name == "kernel_graph_0"
    assert node.root_graph_id == 0
    assert str(node) == f"rank: 0\ngraph_name: kernel_graph_0\nnode_name: {CONV1_2_0}"
    frame = node.stack[0]
    assert set(frame) == {"file_path", "line_no", "code_line", "has_substack"}
    assert isinstance(frame["line_no"], int) and frame.line_no == frame["line_no"]
    assert node.node_type is api.NodeType.OPERATOR
    # MindInsight's display name for Load nodes: {scope}/Load-op{proto index}
    loads = a20.select_nodes("/Load-op", use_regex=False)
    assert f"{LENET}/Load-op1" in {n.name for n in loads}


def test_node_tensors(a20: DumpAnalyzer) -> None:
    node = a20.select_nodes("Conv2D-op77")[0]
    outs = node.get_output_tensors(iterations=[1, 7])  # 7 is not dumped: silently left out
    assert [(t.slot, t.iteration) for t in outs] == [(0, 1)]
    ins = node.get_input_tensors(iterations=[0])
    assert [t.node.name for t in ins] == [
        "inputs0",
        f"{LENET}/Load-op1",
    ]
    only_second = node.get_input_tensors(iterations=[0], slots=[1])
    assert [t.node.name for t in only_second] == [ins[1].node.name]
    with pytest.raises(DebuggerParamTypeError):
        node.get_output_tensors(slots=(0, "1"))  # type: ignore[arg-type]


def test_graph_neighbours(a20: DumpAnalyzer) -> None:
    conv = a20.select_nodes("Conv2D-op77")[0]
    inputs = a20.get_input_nodes(conv)
    assert [n.name for n in inputs] == [
        "inputs0",
        f"{LENET}/Load-op1",
    ]
    outputs = a20.get_output_nodes(conv)
    assert f"{LENET}/relu-ReLU/ReLU-op78" in {n.name for n in outputs}
    tensor = conv.get_output_tensors(iterations=[0])[0]
    assert a20.list_affected_nodes(tensor) == outputs
    with pytest.raises(DebuggerParamTypeError):
        a20.get_input_nodes("Conv2D-op77")  # type: ignore[arg-type]
    with pytest.raises(DebuggerParamTypeError):
        a20.list_affected_nodes(conv)  # type: ignore[arg-type]


def test_nodes_of_another_analyzer_are_refused(a20: DumpAnalyzer, a210: DumpAnalyzer) -> None:
    foreign = a210.select_nodes("conv1.weight")[0]
    with pytest.raises(DebuggerParamValueError) as info:
        a20.get_output_nodes(foreign)
    one_sentence(info.value)


# ------------------------------------------------------------------ DebuggerTensor
def test_tensor_value_and_str(a20: DumpAnalyzer, dump_2_0: Path) -> None:
    tensor = a20.select_tensors("Conv2D-op77", iterations=[1])[0]
    assert str(tensor) == (
        f"rank: 0\ngraph_name: kernel_graph_0\nnode_name: {CONV1_2_0}\nslot: 0\niteration: 1"
    )
    assert tensor.rank == 0 and tensor.slot == 0 and tensor.iteration == 1
    assert tensor.has_value()
    files = list((dump_2_0 / "rank_0/LeNet/0/1").glob("Conv2D.Conv2D-op77.*.output.0.*.npy"))
    assert len(files) == 1
    np.testing.assert_array_equal(tensor.value(), np.load(files[0]))
    # no file (MakeTuple carries no tensor) → None; constants with a graph value → that value
    make_tuple = a20.select_tensors("MakeTuple-op125", iterations=[0])[0]
    assert make_tuple.value() is None and not make_tuple.has_value()
    cst5 = a20.select_tensors("cst5")[0]
    assert bool(cst5.value()) is True


def test_tensor_value_of_a_damaged_file(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d", with_data=True)
    victim = next((root / "rank_0/LeNet/0/2").glob("Parameter.fc1_bias.*.npy"))
    victim.write_bytes(victim.read_bytes()[:100])
    analyzer = DumpAnalyzer(str(root))
    tensor = analyzer.select_tensors("fc1.bias", iterations=[2])[0]
    with pytest.raises(api.TensorValueError) as info:
        tensor.value()
    assert victim.name in one_sentence(info.value)


# ------------------------------------------------------------------ conditions
def test_condition_names_ids_and_params() -> None:
    cases = [
        (TensorTooLargeCondition(abs_mean_gt=1), "TensorTooLarge", 15, {"abs_mean_gt": 1.0}),
        (TensorTooSmallCondition(max_lt=-2), "TensorTooSmall", 16, {"max_lt": -2.0}),
        (
            TensorRangeCondition(max_min_gt=3),
            "TensorRange",
            21,
            {"max_min_gt": 3.0},
        ),
        (TensorOverflowCondition(), "TensorOverflow", 13, {}),
        (api.OperatorOverflowCondition(), "OperatorOverflow", 2, {}),
        (TensorAllZeroCondition(50), "TensorAllZero", 17, {"zero_percentage_ge": 50.0}),
        (TensorUnchangedCondition(), "TensorUnchanged", 20, {"rtol": 1e-5, "atol": 1e-8}),
        (
            TensorChangeBelowThresholdCondition(1e-4),
            "TensorChangeBelowThreshold",
            19,
            {"abs_mean_update_ratio_lt": 1e-4, "epsilon": 1e-9},
        ),
        (
            TensorChangeAboveThresholdCondition(0.5),
            "TensorChangeAboveThreshold",
            18,
            {"abs_mean_update_ratio_gt": 0.5, "epsilon": 1e-9},
        ),
    ]
    for cond, name, cid, params in cases:
        assert (cond.name, cond.condition_id, cond.param_dict) == (name, cid, params)
        assert str(cond) == str(params)
        assert all(isinstance(v, float) for v in cond.param_dict.values())
    assert TensorUnchangedCondition().param_names == ["rtol", "atol", "equal_nan"]
    assert TensorRangeCondition(max_min_lt=1).param_names[:2] == [
        "range_start_inclusive",
        "range_end_inclusive",
    ]


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda: TensorTooLargeCondition(), DebuggerParamValueError),
        (lambda: TensorTooSmallCondition(mean_lt="1"), DebuggerParamTypeError),
        (lambda: TensorRangeCondition(range_start_inclusive=0), DebuggerParamValueError),
        (lambda: TensorRangeCondition(range_percentage_lt=5), DebuggerParamValueError),
        (lambda: TensorAllZeroCondition(True), DebuggerParamTypeError),
        (lambda: TensorUnchangedCondition(rtol=None), DebuggerParamTypeError),
        (lambda: TensorChangeAboveThresholdCondition("x"), DebuggerParamTypeError),
    ],
)
def test_condition_validation(make, kind: type) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(kind) as info:
        make()
    one_sentence(info.value)


def test_watchpoint_validation(a20: DumpAnalyzer) -> None:
    tensors = a20.select_tensors("Conv2D-op77")
    wp = Watchpoint(tensors, TensorOverflowCondition())
    assert wp.tensors is tensors and wp.condition.name == "TensorOverflow"
    for bad in [
        (tuple(tensors), TensorOverflowCondition()),
        ([1], TensorOverflowCondition()),
        (tensors, "TO"),
    ]:
        with pytest.raises(DebuggerParamTypeError) as info:
            Watchpoint(*bad)  # type: ignore[arg-type]
        one_sentence(info.value)
    with pytest.raises(DebuggerParamTypeError):
        a20.check_watchpoints([wp, "x"])  # type: ignore[list-item]
    with pytest.raises(DebuggerParamTypeError):
        a20.check_watchpoints([wp], error_on_no_value="yes")  # type: ignore[arg-type]


def test_numpy_scalars_are_numbers(a20: DumpAnalyzer) -> None:
    """Values that come out of numpy (np.unique, argmax…) are ints and floats to a user."""
    assert a20.get_iterations(ranks=np.int64(0)) == [0, 1, 2, 3]
    tensors = a20.select_tensors(
        "Conv2D-op77", iterations=[np.int32(1)], ranks=[np.int64(0)], slots=[np.int8(0)]
    )
    assert [(t.iteration, t.slot) for t in tensors] == [(1, 0)]
    assert isinstance(tensors[0].iteration, int)
    assert TensorTooLargeCondition(abs_mean_gt=np.float32(0.5)).param_dict == {"abs_mean_gt": 0.5}
    with pytest.raises(DebuggerParamTypeError):
        TensorTooLargeCondition(abs_mean_gt=np.bool_(True))
    with pytest.raises(DebuggerParamTypeError):
        a20.get_iterations(ranks=[np.bool_(False)])


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: TensorTooLargeCondition(abs_mean_gt=math.nan), "abs_mean_gt must satisfy"),
        (lambda: TensorTooLargeCondition(max_gt=math.inf), "max_gt must satisfy"),
        (lambda: TensorTooSmallCondition(abs_mean_lt=-1), "abs_mean_lt must satisfy"),
        (lambda: TensorAllZeroCondition(101), "zero_percentage_ge must satisfy 0 <= value <= 100"),
        (
            lambda: TensorRangeCondition(
                range_start_inclusive=1, range_end_inclusive=0, range_percentage_lt=50
            ),
            "must not exceed range_end_inclusive",
        ),
        (
            lambda: TensorRangeCondition(
                range_start_inclusive=0, range_end_inclusive=1, range_percentage_gt=150
            ),
            "range_percentage_gt must satisfy",
        ),
        (lambda: TensorRangeCondition(max_min_lt=0), "max_min_lt must satisfy 0 < value"),
        (lambda: TensorUnchangedCondition(rtol=-1e-5), "rtol must satisfy"),
        (lambda: TensorUnchangedCondition(atol=math.nan), "atol"),
        (lambda: TensorChangeAboveThresholdCondition(math.nan), "abs_mean_update_ratio_gt"),
        (lambda: TensorChangeBelowThresholdCondition(-1), "abs_mean_update_ratio_lt"),
    ],
)
def test_thresholds_that_could_never_be_right_are_refused(make, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DebuggerParamValueError) as info:
        make()
    assert words in one_sentence(info.value)


def test_the_documented_edge_values_stay_allowed() -> None:
    # MindInsight's own example thresholds and the spec's inclusive bounds
    TensorTooLargeCondition(abs_mean_gt=0.0, max_gt=0.0)
    TensorAllZeroCondition(zero_percentage_ge=0)
    TensorAllZeroCondition(zero_percentage_ge=100)
    TensorRangeCondition(range_start_inclusive=-1, range_end_inclusive=-1, range_percentage_lt=100)
    TensorRangeCondition(max_min_gt=0)
    TensorChangeBelowThresholdCondition(abs_mean_update_ratio_lt=0, epsilon=-1)


def test_a_watchpoint_needs_a_real_condition(a20: DumpAnalyzer) -> None:
    tensors = a20.select_tensors("Conv2D-op77", iterations=[0])
    with pytest.raises(DebuggerParamValueError) as info:
        Watchpoint(tensors, ConditionBase())  # used to check nothing and report no hit
    assert "no condition to check" in one_sentence(info.value)
    hit = a20.check_watchpoints([Watchpoint(tensors, TensorTooLargeCondition(max_gt=0))])[0]
    detail = hit.get_hit_detail()
    assert detail is not None
    with pytest.raises(DebuggerParamValueError) as info:
        Watchpoint(tensors, detail)  # its param_dict is a list: thresholds would be lost
    assert "get_threshold()" in one_sentence(info.value)
    Watchpoint(tensors, hit.get_threshold())  # what the message recommends works


# ------------------------------------------------------------------ check_watchpoints and hits
def test_hit_forms(a20: DumpAnalyzer) -> None:
    loss = a20.select_tensors(LOSS_2_0, iterations=[0])
    weights = a20.select_tensors(r"^fc1\.bias$", use_regex=True, iterations=[0])
    hits = a20.check_watchpoints(
        [
            Watchpoint(loss, TensorTooLargeCondition(abs_mean_gt=1.0, max_gt=1e9)),
            Watchpoint(weights, TensorUnchangedCondition()),
        ]
    )
    value_hit, error_hit = hits  # iteration 0: the kernel runs before the parameter is dumped
    assert value_hit.watchpoint_id == 0 and error_hit.watchpoint_id == 1
    assert value_hit.error_code == 0 and value_hit.error_msg == []
    detail = value_hit.get_hit_detail()
    assert detail is not None and detail.name == "TensorTooLarge"
    assert str(value_hit) == (
        "Watchpoint TensorTooLarge triggered on tensor:\n"
        f"rank: 0\ngraph_name: kernel_graph_0\nnode_name: {LOSS_2_0}\nslot: 0\niteration: 0\n"
        "Threshold: {'abs_mean_gt': 1.0, 'max_gt': 1000000000.0}\n"
        "Hit detail: The setting for watchpoint is abs_mean_gt = 1.0. "
        "The actual value of the tensor is abs_mean_gt = 2.3025426864624023."
    )
    params = {p.name: p for p in detail.param_dict}
    assert params["max_gt"].hit is False and params["mean_gt"].disabled is True
    assert value_hit.get_threshold().param_dict == {"abs_mean_gt": 1.0, "max_gt": 1e9}
    assert error_hit.error_code == 4
    assert error_hit.get_hit_detail() is None
    assert error_hit.error_msg == ["The previous step value cannot be found."]
    assert str(error_hit).startswith("Watchpoint TensorUnchanged check failed on tensor:\n")
    assert str(error_hit).endswith("Error detail: ['The previous step value cannot be found.']")
    # TensorUnchanged hit details never show actual values (an all-close test has none)
    unchanged = a20.check_watchpoints(
        [Watchpoint(a20.select_tensors("learning_rate"), TensorUnchangedCondition())]
    )
    value_hits = [h for h in unchanged if h.error_code == 0]
    assert value_hits and str(value_hits[0].get_hit_detail()) == "None."


def test_check_order_and_skipped_iterations(a20: DumpAnalyzer) -> None:
    tensors = a20.select_tensors("") + a20.select_tensors("")[:0]
    wps = [
        Watchpoint(tensors, TensorTooLargeCondition(abs_mean_gt=1.0)),
        Watchpoint(a20.select_tensors("fc"), TensorChangeBelowThresholdCondition(1e-3)),
    ]
    hits = a20.check_watchpoints(wps)
    iterations = [h.tensor.iteration for h in hits]
    assert iterations == sorted(iterations)
    # within an iteration: the kernel (execution order) before the parameters
    first = [h for h in hits if h.tensor.iteration == 1]
    assert first[0].tensor.node.name == LOSS_2_0
    # a tensor with no iteration is never checked
    orphan = api.DebuggerTensor(tensors[0].node, 0, None)
    assert a20.check_watchpoints([Watchpoint([orphan], TensorOverflowCondition())]) == []


def test_check_in_a_process_pool_matches_in_process(
    a20: DumpAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wps = [
        Watchpoint(a20.select_tensors(""), TensorTooLargeCondition(abs_mean_gt=1.0)),
        Watchpoint(a20.select_tensors("weight"), TensorChangeBelowThresholdCondition(1e-3)),
    ]
    inproc = a20.check_watchpoints(wps)
    from tuidebug.offline.check import checker

    monkeypatch.setattr(checker, "THREADED_MIN_BYTES", 0)  # LeNet is small: force threads
    seen: list[tuple[int, int]] = []
    pooled = a20.check_watchpoints(wps, workers=2, progress=lambda d, t: seen.append((d, t)))
    assert [str(h) for h in pooled] == [str(h) for h in inproc]
    assert seen and seen[-1][0] == seen[-1][1]


def test_demo_overflow_through_the_api(demo: DumpAnalyzer) -> None:
    tensors = demo.select_tensors("", iterations=[2, 3])
    hits = demo.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
    assert {h.tensor.iteration for h in hits} == {3}
    first = hits[0]
    assert (first.tensor.node.name, first.tensor.slot) == (DEMO_FIRST_INF, 0)
    value = first.tensor.value()
    assert value is not None and np.isinf(value).any()
    assert not value.flags.writeable  # a view of the dump, never a copy to change


def test_hit_detail_repr_and_error_hits(demo: DumpAnalyzer) -> None:
    tensors = demo.select_tensors("fc2-Dense/MatMul-op0", iterations=[2, 3])
    hits = demo.check_watchpoints([Watchpoint(tensors, TensorAllZeroCondition(100))])
    errors = [h for h in hits if h.error_code]
    assert errors and errors[0].tensor.iteration == 3
    assert errors[0].error_msg == ["Tensor contains NaN.", "A tensor contains +/-INF."]
    assert errors[0].get_hit_detail() is None
    assert "check failed on tensor:" in str(errors[0])
    # repr() of a hit detail used to raise AttributeError (its param_dict is a list)
    tl = demo.check_watchpoints(
        [
            Watchpoint(
                demo.select_tensors("inputs1", iterations=[0]), TensorTooLargeCondition(max_gt=1)
            )
        ]
    )
    detail = tl[0].get_hit_detail()
    assert detail is not None
    assert repr(detail).startswith("HitDetail(TensorTooLarge, [HitParameter(name='abs_mean_gt'")


# ------------------------------------------------------------------ statistics and export
STAT_HEADER = (
    "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,"
    "Min Value,Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,"
    "Negative Inf Count,Positive Inf Count,Zero Count\n"
)


def test_tensor_statistics_and_summary(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    rows = {
        1: [
            'ReLU,ReLU-op0,0,0,1,output,0,64,float32,"(4,4)",70000,0,1,16,0,3,0,0,0,13',
            'MatMul,MatMul-op0,0,0,2,output,0,64,float32,"(4,4)",1,-1,0,16,3,3,2,0,1,10',
        ],
        2: ['ReLU,ReLU-op0,0,0,3,output,0,64,float32,"(4,4)",5,0,1,16,0,3,0,0,0,13'],
    }
    for iteration, lines in rows.items():
        (root / f"rank_0/LeNet/0/{iteration}/statistic.csv").write_text(
            STAT_HEADER + "\n".join(lines) + "\n"
        )
    analyzer = DumpAnalyzer(str(root))
    stats = analyzer.select_tensor_statistics()
    assert set(stats) == {0} and set(stats[0]) == {0, 1, 2, 3}
    assert stats[0][0] == {}
    assert set(stats[0][1]) == {"ReLU-op0:output:0", "MatMul-op0:output:0"}
    assert stats[0][1]["ReLU-op0:output:0"][0]["Max Value"] == "70000"
    only = analyzer.select_tensor_statistics(iterations=[2], ranks=0)
    assert list(only[0]) == [2]
    with pytest.raises(DebuggerParamValueError):
        analyzer.select_tensor_statistics(iterations=[8])

    out = tmp_path / "out"
    assert analyzer.summary_statistics(stats, out_path=str(out)) is None
    with open(out / "statistics_summary.csv", newline="") as fh:
        table = {r["tensor_name"]: r for r in csv.DictReader(fh)}
    relu = table["ReLU-op0:output:0"]
    assert (relu["out_of_range_number"], relu["total_number"], relu["none_overflow_number"]) == (
        "1",
        "2",
        "1",
    )
    assert relu["total_iterations"] == "2"
    matmul = table["MatMul-op0:output:0"]
    assert (matmul["inf_number"], matmul["nan_number"], matmul["none_overflow_number"]) == (
        "1",
        "1",
        "0",
    )
    with pytest.raises(DebuggerParamTypeError):
        analyzer.summary_statistics([1, 2])  # type: ignore[arg-type]
    with pytest.raises(DebuggerParamTypeError):
        analyzer.summary_statistics(stats, overflow_value="big")  # type: ignore[arg-type]


def test_export_graphs(a20: DumpAnalyzer, tmp_path: Path) -> None:
    path = Path(a20.export_graphs(str(tmp_path / "export")))
    assert path.name.startswith("dump_") and path.suffix == ".csv"
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 93
    conv = next(r for r in rows if r["node_name"] == CONV1_2_0)
    assert conv["op_type"] == "Conv2D" and "train_lenet.py" in conv["stack"]
    assert conv["input_nodes"].splitlines()[0] == "inputs0"
    with pytest.raises(DebuggerParamTypeError):
        a20.export_graphs(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "statistics",
    [{0: {0: [1]}}, {0: {0: {"Conv2D-op1:output:0": {"Max Value": "1"}}}}, {0: {0: {"x": "row"}}}],
)
def test_summary_statistics_of_a_malformed_dict(
    a20: DumpAnalyzer, tmp_path: Path, statistics: object
) -> None:
    with pytest.raises(DebuggerParamTypeError) as info:
        a20.summary_statistics(statistics, out_path=str(tmp_path))  # type: ignore[arg-type]
    one_sentence(info.value)


# ------------------------------------------------------------------ a MindInsight script
def test_a_script_without_a_main_guard_can_use_the_pool(dump_2_10: Path, tmp_path: Path) -> None:
    """Unlike MindInsight, no ``if __name__ == "__main__"`` is needed: the checker works in
    threads of the script's own process, so nothing re-runs the user's script."""
    script = tmp_path / "no_guard.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from tuidebug.offline.check import checker
            checker.THREADED_MIN_BYTES = 0
            from tuidebug.api import DumpAnalyzer, Watchpoint, TensorTooLargeCondition
            run = DumpAnalyzer({str(dump_2_10)!r})
            wp = Watchpoint(run.select_tensors(""), TensorTooLargeCondition(abs_mean_gt=1.0))
            print("hits", len(run.check_watchpoints([wp], workers=2)))
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["hits 14"]


def test_a_mindinsight_script_runs_with_only_the_import_changed(
    dump_2_0: Path, tmp_path: Path
) -> None:
    """The documented MindInsight examples, verbatim except for the import line."""
    script = tmp_path / "user_script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from tuidebug.api import DumpAnalyzer
            from tuidebug.api import (TensorTooLargeCondition, Watchpoint,
                                      TensorChangeAboveThresholdCondition)

            def test_watchpoints():
                my_run = DumpAnalyzer(dump_dir={str(dump_2_0)!r})
                tensors = my_run.select_tensors(
                    query_string="SparseSoftmaxCrossEntropyWithLogits-op87",
                    use_regex=True,
                    iterations=[0],
                    ranks=[0],
                    slots=[0],
                )
                watchpoint = Watchpoint(tensors=tensors,
                                        condition=TensorTooLargeCondition(abs_mean_gt=0.0))
                hit = list(my_run.check_watchpoints(watchpoints=[watchpoint]))[0]
                print(str(hit))
                print(hit.error_code)
                print(hit.tensor.node.name)
                print(hit.get_hit_detail())
                nodes = my_run.select_nodes("Conv2D-op77")
                print(len(my_run.get_input_nodes(nodes[0])), len(my_run.get_output_nodes(nodes[0])))
                print(list(my_run.get_iterations()), list(my_run.get_ranks()))
                cond = TensorChangeAboveThresholdCondition(abs_mean_update_ratio_gt=0.0)
                print(cond.name)

            if __name__ == "__main__":
                test_watchpoints()
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Watchpoint TensorTooLarge triggered on tensor:"
    assert "Hit detail: The setting for watchpoint is abs_mean_gt = 0.0." in out.stdout
    assert lines[-1] == "TensorChangeAboveThreshold"
    assert "[0, 1, 2, 3] [0]" in lines


def test_the_documented_examples_run_with_only_the_import_changed(
    dump_2_0: Path, tmp_path: Path
) -> None:
    """MindInsight's ConditionBase / WatchpointHit docstring examples, verbatim but for the
    import line and the dump path; the printed forms follow the documented ones."""
    script = tmp_path / "mi_example.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from tuidebug.api import DumpAnalyzer
            from tuidebug.api import (TensorTooLargeCondition,
                                      Watchpoint)

            def test_condition_base():
                my_run = DumpAnalyzer(dump_dir={str(dump_2_0)!r})
                tensors = my_run.select_tensors(query_string="Conv2D-op77")
                watchpoint = Watchpoint(tensors=tensors,
                                        condition=TensorTooLargeCondition(abs_mean_gt=0.0, max_gt=0.0))
                hit = list(my_run.check_watchpoints(watchpoints=[watchpoint]))[0]
                print(hit.get_hit_detail())
                watchpoint = Watchpoint(tensors=tensors,
                                        condition=TensorTooLargeCondition(abs_mean_gt=0.0, max_gt=1.0))
                hit = list(my_run.check_watchpoints(watchpoints=[watchpoint]))[0]
                print(hit.get_hit_detail())

            def test_watch_point_hit():
                my_run = DumpAnalyzer(dump_dir={str(dump_2_0)!r})
                tensor_list = my_run.select_tensors(
                                                    query_string="Conv",
                                                    use_regex=True,
                                                    iterations=[0],
                                                    ranks=[0],
                                                    slots=[0]
                                                    )
                watchpoint = Watchpoint(tensors=tensor_list,
                                        condition=TensorTooLargeCondition(abs_mean_gt=0.0))
                hits = my_run.check_watchpoints(watchpoints=[watchpoint])
                hit = list(hits)[0]
                print(str(hit))
                print(hit.error_code)
                print(hit.tensor)

            if __name__ == "__main__":
                test_condition_base()
                test_watch_point_hit()
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("The setting for watchpoint is abs_mean_gt = 0.0, max_gt = 0.0. ")
    assert "The actual value of the tensor is abs_mean_gt = " in out[0]
    assert out[1].startswith("The setting for watchpoint is abs_mean_gt = 0.0. ")
    assert out[2] == "Watchpoint TensorTooLarge triggered on tensor:"
    assert out[3:8] == [
        "rank: 0",
        "graph_name: kernel_graph_0",
        f"node_name: {CONV1_2_0}",
        "slot: 0",
        "iteration: 0",
    ]
    assert out[8] == "Threshold: {'abs_mean_gt': 0.0}"
    assert out[9].startswith("Hit detail: The setting for watchpoint is abs_mean_gt = 0.0.")
    assert out[10] == "0"
    assert out[11:16] == out[3:8]
