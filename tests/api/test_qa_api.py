"""QA regressions for the DumpAnalyzer-compatible API (spec §6), used as a MindInsight user
would: the documented examples with only the import line changed, the documented `str()`
forms, and one-sentence exceptions for arguments that used to be taken silently (and gave
wrong answers) or crashed."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tuidebug.api import (
    ConditionBase,
    DebuggerParamTypeError,
    DebuggerParamValueError,
    DumpAnalyzer,
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

CONV1_2_0 = "Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/Conv2D-op77"
DEMO_FC2_MATMUL = "Default/network-WithLossCell/_backbone-MLP/fc2-Dense/MatMul-op0"


@pytest.fixture(scope="module")
def a20(dump_2_0: Path) -> DumpAnalyzer:
    return DumpAnalyzer(str(dump_2_0))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DumpAnalyzer:
    from tuidebug.offline.demo import write_demo_dump

    return DumpAnalyzer(str(write_demo_dump(tmp_path_factory.mktemp("demo"))))


def one_sentence(err: BaseException) -> str:
    text = str(err)
    assert text and "\n" not in text and text.endswith("."), text
    return text


# ------------------------------------------------------------------ MindInsight's own examples
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


def test_code_stack_query_in_the_documented_file_line_form(a20: DumpAnalyzer) -> None:
    """MindInsight's docs select by "lenet.py:49"; the frame text is `path:line code`."""
    nodes = a20.select_nodes(query_string="train_lenet.py:30", select_by="code_stack")
    assert CONV1_2_0 in {n.name for n in nodes}
    tensors = a20.select_tensors(
        query_string=r"train_lenet\.py:30\b", use_regex=True, select_by="code_stack"
    )
    assert tensors and all(t.node in nodes for t in tensors)


# ------------------------------------------------------------------ hits
def test_demo_overflow_through_the_api(demo: DumpAnalyzer) -> None:
    tensors = demo.select_tensors("", iterations=[2, 3])
    hits = demo.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
    assert {h.tensor.iteration for h in hits} == {3}
    first = hits[0]
    assert (first.tensor.node.name, first.tensor.slot) == (DEMO_FC2_MATMUL, 0)
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


# ------------------------------------------------------------------ argument checking
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


def test_empty_dump_dir_is_one_sentence() -> None:
    with pytest.raises(DebuggerParamValueError) as info:
        DumpAnalyzer("")
    assert one_sentence(info.value) == (
        "the dump folder path is empty; give the folder holding rank_0/."
    )


# ------------------------------------------------------------------ found in files not ours
def test_watchpoint_params_validate_twice() -> None:
    from tuidebug.core.watchpoints import Watchpoint as CoreWatchpoint
    from tuidebug.core.watchpoints import parse_watch_spec

    cond, params = parse_watch_spec("WNC:equal_nan=true")
    CoreWatchpoint(0, cond, params)


def test_mean_of_huge_finite_values_is_finite() -> None:
    from tuidebug.core.tensor import TensorRef
    from tuidebug.core.watchpoints import Watchpoint as CoreWatchpoint
    from tuidebug.core.watchpoints import check_watchpoints

    wp = CoreWatchpoint(0, "TL", {"mean_gt": 0.0, "abs_mean_gt": 0.0})
    (hit,) = check_watchpoints([wp], np.array([1e308, 1e308]), None, TensorRef("n", 0, 0, 0, "g"))
    actual = {p.name: p.actual for p in hit.params if not p.disabled}
    assert actual == {"abs_mean_gt": 1e308, "mean_gt": 1e308}


def test_a_dump_without_any_readable_graph_is_refused(dump_2_10: Path, tmp_path: Path) -> None:
    """Every selection would be empty and every check would come back without a hit."""
    from tests.offline.damaged_dumps import DAMAGES, damaged_copy

    damage = next(d for d in DAMAGES if d.name == "garbage-pb")
    root, _ = damaged_copy(dump_2_10, tmp_path / "d", damage)
    with pytest.raises(DebuggerParamValueError) as info:
        DumpAnalyzer(str(root))
    text = one_sentence(info.value)
    assert "has a readable graph" in text and "ms_output_trace_code_graph_0.pb" in text
