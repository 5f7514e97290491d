"""TensorFlow Debugger V2 dumps through the foreign-dump seam (issue 32): `exec`, the API,
the session's checks and origin trace on the fixtures of tests/data/tfdbg (TensorFlow 2.21's
own dumps and DebugDataReader's answers), and hypothesis fuzz of the source."""

from __future__ import annotations

import json
import math
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from tuidebug.cli import main as cli_main
from tuidebug.core.origins import trace_in_session
from tuidebug.core.session import Notice
from tuidebug.offline.files.npy import TensorFileError
from tuidebug.offline.files.tfdbg import masked_crc32c
from tuidebug.offline.foreign.dump import ForeignDump, open_dump
from tuidebug.offline.foreign.tfdbg import TfdbgSource
from tuidebug.offline.layout.errors import DumpError
from tuidebug.offline.session import OfflineSession

DATA = REPO / "tests" / "data" / "tfdbg"
PREFIX = "tfdbg_events.1700000000.fixture"


def _expected(mode: str) -> dict[str, Any]:
    return json.loads((DATA / mode / "expected.json").read_text())


def _non_finite_by_step(mode: str) -> list[tuple[str, int]]:
    return [
        (r["op_name"], r["call"])
        for r in _expected(mode)["graph_execution_traces"]
        if r["non_finite"]
    ]


@pytest.mark.parametrize("mode", ["concise_health", "full_health", "full_tensor"])
def test_api_check_equals_tensorflows_non_finite_outputs(mode: str) -> None:
    from tuidebug.api import DumpAnalyzer, TensorOverflowCondition, Watchpoint

    analyzer = DumpAnalyzer(str(DATA / mode))
    assert analyzer.get_ranks() == [0] and analyzer.get_iterations() == [0, 1, 2, 3, 4]
    tensors = analyzer.select_tensors("", iterations=analyzer.get_iterations())
    hits = analyzer.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
    got = sorted((h.tensor.node.name, h.tensor.iteration) for h in hits)
    assert got == sorted(_non_finite_by_step(mode))


def test_full_tensor_values_decide_thresholds_in_the_session() -> None:
    """FULL_TENSOR's values give max/min/mean, so TL is decided (not refused) here too."""
    rows = _expected("full_tensor")["graph_execution_traces"]
    session = OfflineSession(DATA / "full_tensor")
    session.start()
    session.create_watchpoint("TL", {"max_gt": 0.4})
    session.step(1)  # TUI step 1 shows iteration 0 (the weight is 0.5, MatMul's 1.0)
    want = {r["op_name"] for r in rows if r["call"] == 0 and r.get("max", -1) > 0.4}
    assert {h.tensor.node for h in session.hits} == want and want


def test_keras_fit_steps_and_origin_trace_in_the_session() -> None:
    """The train function's first non-finite op is at iteration 3 (the NaN batch), as in
    TensorFlow's reading; the origin trace from it goes back to the batch's way in."""
    want = _expected("keras_fit")
    in_fn = want["first_non_finite_in_train_function"]
    dump = open_dump(DATA / "keras_fit")
    assert isinstance(dump, ForeignDump) and dump.iterations() == list(range(6))
    session = OfflineSession(DATA / "keras_fit")
    session.start()
    session.create_watchpoint("TO", {})
    graph = session.graphs[in_fn["graph_name"]]
    assert in_fn["op_name"] in graph.nodes
    while session.metadata.step < in_fn["call"] + 1:  # a step with hits stops the run
        session.step(1)
    in_model = [h.tensor for h in session.hits if h.tensor.graph == in_fn["graph_name"]]
    assert in_model and {t.iteration for t in in_model} == {in_fn["call"]} == {3}
    assert in_fn["op_name"] in {t.node for t in in_model}
    trace = trace_in_session(session, graph, in_fn["op_name"], iteration=in_fn["call"])
    assert trace.origins and all(o.node in graph.nodes for o in trace.origins)
    # eager ops with values are the `eager` graph, checked like the others
    assert "eager" in dump.graphs(0) and not any("eager op" in p for p in dump.problems)


def test_eager_ops_are_checked_as_tensorflow_reads_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The eager outputs TO hits over every step are the ones DebugDataReader finds
    non-finite (keras_fit: the NaN batch's OptionalGetValue, the metrics read after fit)."""
    want = sorted(
        e["op_type"] for e in _expected("keras_fit")["eager_executions"] if any(e["non_finite"])
    )
    session = OfflineSession(DATA / "keras_fit")
    session.start()
    session.create_watchpoint("TO", {})
    got = []
    for step in range(1, (session.metadata.max_step or 0) + 1):
        session.reset_step(step)
        session.recheck()
        got += [h.tensor.node for h in session.hits if h.tensor.graph == "eager"]
    graph = session.graphs["eager"]
    assert sorted(graph.nodes[n].op_type for n in got) == want and want
    # exec names them too, with the stack from the dump's own source text
    assert cli_main(["exec", str(DATA / "keras_fit"), "ni -t eager/DivNoNan"]) == 0
    out = capsys.readouterr().out
    assert "graph: eager" in out and "model.fit(data.batch(BATCH)" in out


def test_exec_lists_a_step_and_shows_a_stack_from_the_dumps_own_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = cli_main(["exec", str(DATA / "full_health"), "lt -i 2", "ni -t Log"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Log:0" in out and "MatMul:0" in out
    # the frame's line is the dump's own text of make_dumps.py, not a local file read
    assert "z = tf.math.log(y)" in out
    dump = open_dump(DATA / "full_health")
    dump.iterations()
    assert any(p.startswith("Steps are derived") for p in dump.problems)  # said once


def test_curt_health_decides_to_from_its_flag_and_refuses_thresholds_in_one_sentence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """CURT_HEALTH's one flag is "any NaN/±Inf": TO is decided from it (TensorFlow's
    non-finite outputs, as `tuidebug check` finds them); a threshold is one sentence."""
    from tuidebug.api import DumpAnalyzer, TensorOverflowCondition, Watchpoint

    analyzer = DumpAnalyzer(str(DATA / "curt_health"))
    tensors = analyzer.select_tensors("", iterations=analyzer.get_iterations())
    hits = analyzer.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
    got = sorted((h.tensor.node.name, h.tensor.iteration) for h in hits)
    assert got == sorted(_non_finite_by_step("curt_health")) and got
    assert cli_main(["check", str(DATA / "curt_health"), "--watch", "TO"]) == 1
    capsys.readouterr()
    session = OfflineSession(DATA / "curt_health")
    notes: list[str] = []
    session.subscribe(lambda e: notes.append(e.message) if isinstance(e, Notice) else None)
    session.start()
    session.create_watchpoint("TL", {"max_gt": 0.4})
    session.step(1)
    assert not session.hits
    refusals = [n for n in notes if "cannot be checked" in n]
    assert len(refusals) == 1 and "CURT_HEALTH" in refusals[0], notes


def _tf_values() -> list[dict[str, Any]]:
    rows = json.loads((DATA / "full_tensor" / "tf_values.json").read_text())
    return list(rows["graph_execution_traces"])


def _array(row: dict[str, Any]) -> np.ndarray:
    return np.asarray(row["value"], dtype=np.float64)  # "inf"/"nan" strings parse as such


def test_full_tensor_values_equal_tensorflows_reading() -> None:
    """Every recorded value the dump model returns (what `pt`, the tensor view and `L`
    read) equals DebugDataReader's, dtype and shape included (tf_values.py)."""
    dump = open_dump(DATA / "full_tensor")
    rows = _tf_values()
    assert rows
    for row in rows:
        got = dump.value(0, "step", row["op_name"], row["output_slot"], row["call"])
        assert got is not None, row
        assert str(got.dtype) == row["dtype"] and list(got.shape) == row["shape"], row
        np.testing.assert_array_equal(got.astype(np.float64), _array(row))


def test_full_tensor_pt_in_exec_prints_the_recorded_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = cli_main(["exec", str(DATA / "full_tensor"), "pt Log:0@2", "pt Log:0@3", "pt Sum:0@0"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "-inf" in out and "nan" in out and "shape [1,1]" in out


def test_full_tensor_value_over_the_budget_is_one_sentence() -> None:
    dump = open_dump(DATA / "full_tensor", mem_limit=8)
    with pytest.raises(TensorFileError, match="more than the 8 allowed"):
        dump.value(0, "step", "MatMul/ReadVariableOp", 0, 0)


def test_full_tensor_value_and_change_conditions_equal_tuidebug_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """TZ on the values equals TensorFlow's zero fraction; the change condition (the
    variable's update ratio) hits the steps `tuidebug check` reports, on the API."""
    from tuidebug.api import (
        DumpAnalyzer,
        TensorAllZeroCondition,
        TensorChangeAboveThresholdCondition,
        Watchpoint,
    )

    analyzer = DumpAnalyzer(str(DATA / "full_tensor"))
    its = analyzer.get_iterations()
    tensors = analyzer.select_tensors("", iterations=its)
    hits = analyzer.check_watchpoints([Watchpoint(tensors, TensorAllZeroCondition(100))])
    got = sorted((h.tensor.node.name, h.tensor.iteration) for h in hits if not h.error_code)
    want = _expected("full_tensor")["graph_execution_traces"]
    assert got == sorted((r["op_name"], r["call"]) for r in want if r.get("zero_fraction") == 1)
    weights = analyzer.select_tensors("MatMul/ReadVariableOp", iterations=its)
    change = TensorChangeAboveThresholdCondition(abs_mean_update_ratio_gt=0.1)
    hits = analyzer.check_watchpoints([Watchpoint(weights, change)])
    steps = sorted(h.tensor.iteration or 0 for h in hits if not h.error_code)
    code = cli_main(
        ["check", str(DATA / "full_tensor"), "--watch", "WCL:abs_mean_update_ratio_gt=0.1"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert steps == [int(line.split()[1]) for line in out.splitlines() if line.startswith("step ")]
    assert steps == [1, 2, 3, 4]


def test_two_runs_in_one_folder_are_one_sentence(tmp_path: Path) -> None:
    folder = tmp_path / "two"
    shutil.copytree(DATA / "full_health", folder)
    (folder / "tfdbg_events.1.other.metadata").write_bytes(b"")
    with pytest.raises(DumpError, match="2 tfdbg runs"):
        open_dump(folder)


def _framed(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return (
        head
        + struct.pack("<I", masked_crc32c(head))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["graphs", "stack_frames", "graph_execution_traces", "execution"]),
    payloads=st.lists(st.binary(max_size=120), min_size=1, max_size=4),
)
def test_source_fuzz(tmp_path: Path, kind: str, payloads: list[bytes]) -> None:
    """Records of any bytes appended to a real dump's file: the dump model opens, builds
    its graphs and reads every step without an exception."""
    folder = tmp_path / "d"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(DATA / "full_health", folder)
    path = folder / f"{PREFIX}.{kind}"
    path.write_bytes(path.read_bytes() + b"".join(_framed(p) for p in payloads))
    dump = open_dump(folder)
    for name in dump.graphs(0):
        for it in dump.iterations(0):
            dump.index(0, name).statistics_for(it)
            dump.index(0, name).blockers(it)
    assert all(isinstance(p, str) for p in dump.problems)


def test_escapes_in_op_types_and_source_text_reach_no_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuidebug._proto import tfdbg_event_pb2 as pb
    from tuidebug.offline.files.tfdbg import read_records

    folder = tmp_path / "d"
    shutil.copytree(DATA / "full_health", folder)
    for kind in ("graphs", "source_files"):
        path = folder / f"{PREFIX}.{kind}"
        framed = b""
        for data in read_records(path)[0]:
            event = pb.DebugEvent.FromString(data)
            if event.HasField("graph_op_creation") and event.graph_op_creation.op_name == "Log":
                event.graph_op_creation.op_type = "Log\x1b]0;pwned\x07"
            if event.HasField("source_file"):
                lines = event.source_file.lines
                for i in range(len(lines)):
                    lines[i] = lines[i] + "\x1b[2J"
            framed += _framed(event.SerializeToString())
        path.write_bytes(framed)
    dump = open_dump(folder)
    assert isinstance(dump, ForeignDump) and isinstance(dump.source, TfdbgSource)
    script = next(p for p in dump.source.dump.source_paths if p.endswith("make_dumps.py"))
    code = cli_main(["exec", str(folder), "ni -t Log", "lt -i 2", f"ps {script} -b 68 -n 3"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "tf.math.log" in out and "\x1b" not in out + err
    assert "(the dump's own copy)" in out  # ps: the whole file from the dump, escaped


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tail=st.text(max_size=40),
    payload=st.binary(max_size=200),
    slot=st.integers(-2, 3),
    limit=st.one_of(st.none(), st.integers(0, 400)),
)
def test_value_references_fuzz(
    tmp_path: Path, tail: str, payload: bytes, slot: int, limit: int | None
) -> None:
    """A value reference of any text, or one naming a record of any bytes (a hostile
    trace file): the value or one `TensorFileError` sentence, nothing else."""
    from tuidebug.offline.files.tfdbg_values import read_value_ref, value_ref

    path = tmp_path / "t.graph_execution_traces"
    path.write_bytes(_framed(payload) + _framed(b"\x09" + bytes(8)))
    refs = [
        f"{path}#tfdbg@{tail}",
        value_ref(str(path), [(12, len(payload), slot)]),
        value_ref(str(path), [(12, len(payload), slot), (12 + len(payload) + 16, 9, 0)]),
    ]
    for ref in refs:
        try:
            value = read_value_ref(ref, limit)
        except TensorFileError as err:
            assert str(err) and "\n" not in str(err)
        else:
            assert isinstance(value, np.ndarray)


@pytest.mark.parametrize("mode", ["full_tensor", "full_health"])
def test_compare_two_tfdbg_runs_diverges_where_tensorflows_values_differ(
    mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tuidebug compare` on two TensorFlow runs of one function (the target's variable
    starts 0.1 off, tests/data/tfdbg/make_compare.py): pairs matched by graph, op, output
    slot and derived step; the diverged ones are those whose values (FULL_TENSOR) or
    NaN/Inf presence (FULL_HEALTH) differ in DebugDataReader's reading, the first one too."""
    from tuidebug.compare.run import compare_dumps

    folder = DATA / "compare"
    want = json.loads((folder / "expected.json").read_text())[mode]
    target, golden = folder / f"{mode}_target", folder / f"{mode}_golden"
    result = compare_dumps(target, golden)
    assert result.complete and result.summary["unmatched"] == 0
    got = {(r.name, r.step) for r in result.rows if r.status == "diverged"}
    name = "step/{op_name}:output.{output_slot}"
    assert got == {(name.format(**r), r["call"]) for r in want["traces"] if r["differs"]}
    assert len(result.rows) == len(want["traces"])
    first, expected = result.first_divergence, want["first_difference"]
    assert first is not None and (first.name, first.step) == (
        name.format(**expected),
        expected["call"],
    )
    assert cli_main(["compare", str(target), str(golden)]) == 1
    out, err = capsys.readouterr()
    assert "Steps are derived" in err and "incomplete" not in err
    if mode == "full_health":
        assert "NaN/±Inf counts only" in out + err


def test_eager_full_tensor_values_steps_and_checks_equal_tensorflows() -> None:
    """Eager ops' recorded values (FULL_TENSOR, tests/data/tfdbg/make_eager.py): each at its
    derived step as DebugDataReader reads it; TO hits the non-finite ones, and a change
    condition compares a step's Mul with the step before's."""
    from tuidebug.api import (
        DumpAnalyzer,
        TensorChangeAboveThresholdCondition,
        TensorOverflowCondition,
        Watchpoint,
    )

    folder = DATA / "eager_full_tensor"
    want = _expected("eager_full_tensor")
    dump = open_dump(folder)
    assert dump.iterations() == list(range(want["function_calls"]))
    seen: dict[tuple[str, int], int] = {}
    values: dict[tuple[str, int], np.ndarray] = {}
    for row in want["eager_executions"]:
        k = seen.get((row["op_type"], row["step"]), 0)
        seen[(row["op_type"], row["step"])] = k + 1
        node = f"eager/{row['op_type']}" + (f"_{k}" if k else "")
        got = dump.value(0, "eager", node, 0, row["step"])
        assert got is not None, row
        np.testing.assert_array_equal(got.astype(np.float64), _array({"value": row["values"][0]}))
        values[(node, row["step"])] = got.astype(np.float64)
    analyzer = DumpAnalyzer(str(folder))
    its = analyzer.get_iterations()
    tensors = analyzer.select_tensors("eager/", iterations=its)
    hits = analyzer.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
    got_bad = sorted((h.tensor.node.name, h.tensor.iteration) for h in hits)
    assert got_bad == sorted(k for k, v in values.items() if not np.isfinite(v).all())
    mul = analyzer.select_tensors("eager/Mul", iterations=its)
    change = TensorChangeAboveThresholdCondition(abs_mean_update_ratio_gt=0.6)
    hits = analyzer.check_watchpoints([Watchpoint(mul, change)])
    steps = sorted(h.tensor.iteration or 0 for h in hits if not h.error_code)

    def ratio(step: int) -> float:  # MindSpore's abs_mean_update_ratio, epsilon 1e-9
        now, before = values[("eager/Mul", step)], values[("eager/Mul", step - 1)]
        return float(np.mean(np.abs(now - before)) / (np.mean(np.abs(before)) + 1e-9))

    assert steps == [s for s in its[1:] if ratio(s) > 0.6] and steps


def test_compare_of_unrecorded_values_is_skipped_and_curt_flags_compare() -> None:
    """NO_TENSOR records nothing to compare: every pair is skipped (an incomplete compare,
    never a pass); CURT_HEALTH's flag is compared as NaN/Inf presence, so against a run whose
    counts agree nothing diverges, and against a finite run its non-finite outputs do."""
    from tuidebug.compare.run import compare_dumps

    nothing = compare_dumps(DATA / "no_tensor", DATA / "no_tensor")
    assert not nothing.complete and nothing.summary["skipped"] == len(nothing.rows) > 0
    same = compare_dumps(DATA / "curt_health", DATA / "full_health")
    assert same.complete and same.summary["diverged"] == 0
    finite = DATA / "compare" / "full_health_target"  # non-finite only from call 3 on
    against = compare_dumps(DATA / "curt_health", finite)
    want = _expected("curt_health")["graph_execution_traces"]
    assert {
        (r.name.split("/", 1)[1].split(":")[0], r.step)
        for r in against.rows
        if r.status == "diverged"
    } == {(r["op_name"], r["call"]) for r in want if r["non_finite"] and r["call"] == 2}


def test_full_tensor_values_of_a_dump_whose_folder_name_holds_the_mark(tmp_path: Path) -> None:
    """A folder named like a value reference does not confuse where the record is."""
    folder = tmp_path / "run#tfdbg@1:2:3"
    shutil.copytree(DATA / "full_tensor", folder)
    row = next(r for r in _tf_values() if r["op_name"] == "Log" and r["call"] == 2)
    got = open_dump(folder).value(0, "step", "Log", 0, 2)
    assert got is not None
    np.testing.assert_array_equal(got.astype(np.float64), _array(row))


def test_full_tensor_listing_has_dtype_shape_and_size() -> None:
    """`lt` on FULL_TENSOR: each value's dtype, shape and size from its record's tensor
    proto (no value read), as TensorFlow recorded them."""
    session = OfflineSession(DATA / "full_tensor")
    session.start()
    entries = session.tensor_entries(0)
    assert entries
    for e in entries:
        assert e.dtype and e.shape is not None, e
        assert e.nbytes == math.prod(e.shape) * np.dtype(e.dtype).itemsize
    by_node = {e.node: e for e in entries}
    assert (by_node["MatMul/ReadVariableOp"].dtype, by_node["MatMul/ReadVariableOp"].shape) == (
        "float32",
        (2, 1),
    )


def test_curt_health_flag_is_the_listings_health() -> None:
    """`L` on CURT_HEALTH: its one flag is health F (NaN or ±Inf, not told apart) exactly
    on TensorFlow's non-finite outputs, and a clean flag says no NaN and no Inf."""
    from tuidebug.core.tensor import TensorRef
    from tuidebug.core.tensor_health import Health, summary_from_statistics

    session = OfflineSession(DATA / "curt_health")
    session.start()
    try:
        health: dict[tuple[str, int], set[Health]] = {}
        for iteration in session.dump.iterations(0):
            for entry in session.tensor_entries(iteration):
                ref = TensorRef(entry.node, entry.slot, iteration, 0, entry.graph)
                stats = session.dumped_statistics(ref)
                summary = summary_from_statistics(stats) if stats else None
                if summary is not None:
                    health.setdefault((entry.node, iteration), set()).add(summary.health)
                    if summary.health is Health.NORMAL:
                        assert (summary.nan, summary.inf, summary.presence) == (0, 0, True)
    finally:
        session.close()
    flagged = {key for key, found in health.items() if Health.NONFINITE in found}
    assert flagged == set(_non_finite_by_step("curt_health")) and flagged
    assert set().union(*health.values()) == {Health.NONFINITE, Health.NORMAL}
