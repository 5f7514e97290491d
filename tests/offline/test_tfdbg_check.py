"""tfdbg checks beyond TO (issue 32): each mode's decisions against TensorFlow's own reading
of the same dumps (tests/data/tfdbg/*/expected.json, made by make_dumps.py with TF 2.21),
the derived steps of a Keras `fit`, the origin trace, and hypothesis fuzz of the parsers."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from tuidebug._proto import tfdbg_event_pb2 as pb
from tuidebug.core.graph import Category
from tuidebug.core.watchpoints import Watchpoint, parse_watch_spec
from tuidebug.offline.check.tfdbg import categories, check_tfdbg, mode_refusal
from tuidebug.offline.files.tfdbg import (
    TfdbgDump,
    crc32c,
    crc32c_python,
    masked_crc32c,
    read_records,
)

DATA = REPO / "tests" / "data" / "tfdbg"
DECIDING = ("curt_health", "concise_health", "full_health", "full_tensor")


def _expected(mode: str) -> dict[str, Any]:
    return json.loads((DATA / mode / "expected.json").read_text())


def _watch(spec: str) -> tuple[Any, Category]:
    condition, params = parse_watch_spec(spec)
    return Watchpoint(0, condition, params).request(), condition.target


def _hits(mode: str, *specs: str) -> tuple[list[Any], Any]:
    report = check_tfdbg(TfdbgDump(DATA / mode), [_watch(s) for s in specs])
    return report.hits, report


# ------------------------------------------------------------------ decisions vs TF


@pytest.mark.parametrize("mode", ["full_health", "full_tensor"])
def test_tz_is_tensorflows_zero_fraction(mode: str) -> None:
    """TZ from FULL_HEALTH's zero and element counts, or FULL_TENSOR's values: a hit where
    TF's own reading has half or more zeros, and (MindSpore's rule) an error-coded result
    where the output is NaN/Inf, as thresholds are not evaluated there."""
    rows = _expected(mode)["graph_execution_traces"]
    hits, report = _hits(mode, "TZ:zero_percentage_ge=50")
    want = [
        r["index"]
        for r in rows
        if r["non_finite"] or (r.get("zero_fraction") is not None and r["zero_fraction"] >= 0.5)
    ]
    assert [h.index for h in hits] == want and want
    assert all(h.result.error_code for h in hits if rows[h.index]["non_finite"])
    assert report.refusals == {} and report.problems == []


def test_thresholds_from_full_tensor_values() -> None:
    rows = _expected("full_tensor")["graph_execution_traces"]
    hits, _r = _hits("full_tensor", "TL:max_gt=0.4")
    want = [r["index"] for r in rows if r["non_finite"] or r.get("max", -1) > 0.4]
    assert [h.index for h in hits] == want
    assert any(h.result.hit for h in hits)  # some hit the threshold itself, not an error


def test_change_conditions_compare_with_the_previous_execution() -> None:
    """The weight (a ReadVariableOp output) goes 0.5, 0.25, 0, -0.25, -0.5 over the calls:
    its update ratio |Δ|/|previous| is 0.5, 1, 0.25/1e-9, 1, so only call 3 is above 2."""
    hits, report = _hits("full_tensor", "WCL:abs_mean_update_ratio_gt=2")
    assert [(h.step, h.op_type) for h in hits] == [(3, "ReadVariableOp")]
    assert report.refusals == {}


@pytest.mark.parametrize(
    ("mode", "spec", "needs"),
    [
        ("curt_health", "TZ:zero_percentage_ge=50", "the count of zeros"),
        ("concise_health", "TZ:zero_percentage_ge=50", "the count of zeros"),
        ("full_health", "TL:max_gt=1", "the maximum (max_gt)"),
        ("full_health", "WCL:abs_mean_update_ratio_gt=2", "the previous execution's values"),
        ("full_health", "TS:abs_mean_lt=1", "the mean of absolute values"),
    ],
)
def test_what_a_mode_cannot_decide_is_refused_in_one_sentence(
    mode: str, spec: str, needs: str
) -> None:
    hits, report = _hits(mode, spec, "TO")
    (sentence,) = report.refusals.values()
    assert f"it needs {needs}" in sentence and mode.upper() in sentence
    assert list(report.refusals) == [0] and hits  # TO still decided beside it


def test_operator_overflow_is_refused_on_any_mode() -> None:
    request, _c = _watch("OO")
    assert "Ascend's overflow records" in (mode_refusal(request, pb.FULL_TENSOR) or "")


def test_categories_by_tensorflows_conventions() -> None:
    assert Category.WEIGHT in categories("dense/MatMul/ReadVariableOp", "ReadVariableOp")
    assert Category.GRADIENT in categories("gradient_tape/dense/MatMul/MatMul", "MatMul")
    assert Category.GRADIENT not in categories("gradient_tape", "MatMul")
    assert Category.ACTIVATION in categories("dense/Relu", "Relu")
    assert categories("dense/MatMul", "MatMul") == {Category.TENSOR}


# ------------------------------------------------------------------ the origin


@pytest.mark.parametrize("mode", DECIDING)
def test_origin_is_tensorflows(mode: str) -> None:
    want = _expected(mode)["origin"]
    _h, report = _hits(mode, "TO")
    o = report.origin
    assert o is not None and not o.eager
    assert (o.index, o.op_name, o.op_type, o.output_slot, o.graph) == (
        want["index"],
        want["op_name"],
        want["op_type"],
        want["slot"],
        want["graph_name"],
    )
    assert o.step == 2 and o.inputs == ("MatMul:0",)


@pytest.mark.parametrize("mode", ["no_tensor", "shape"])
def test_no_origin_without_values(mode: str) -> None:
    assert _expected(mode)["origin"] is None
    assert _hits(mode, "TO")[1].origin is None


# ------------------------------------------------------------------ Keras fit


def test_keras_fit_steps_eager_ops_and_origin() -> None:
    """A Keras fit of 6 steps with one NaN in step 3's batch, its tf.data `map` graph
    running beside the train function: the steps are derived from the train function's
    calls, the map graph (no recorded call contains it) has none, eager ops are checked as
    TensorFlow's reader reads them, and the origin is TensorFlow's."""
    want = _expected("keras_fit")
    dump = TfdbgDump(DATA / "keras_fit")
    assert dump.problems == [] and dump.notes == []
    hits, report = _hits("keras_fit", "TO")
    graph_hits = [h for h in hits if not h.eager]
    first = want["first_non_finite"]
    assert (graph_hits[0].index, graph_hits[0].op_name, graph_hits[0].graph) == (
        first["index"],
        first["op_name"],
        first["graph_name"],
    )
    assert graph_hits[0].step is None  # the dataset pipeline's graph
    in_fn = want["first_non_finite_in_train_function"]
    first_in_fn = next(h for h in graph_hits if h.step is not None)
    assert (first_in_fn.index, first_in_fn.op_name, first_in_fn.graph) == (
        in_fn["index"],
        in_fn["op_name"],
        in_fn["graph_name"],
    )
    assert first_in_fn.step == in_fn["call"] == want["nan_step"] == 3
    assert min(h.step for h in graph_hits if h.step is not None) == 3
    o, w = report.origin, want["origin"]
    assert o is not None and (o.index, o.op_name, o.graph) == (
        w["index"],
        w["op_name"],
        w["graph_name"],
    )
    eager_want = [(e["index"], s) for e in want["eager_executions"] for s in _true(e)]
    assert [(h.index, h.output_slot) for h in hits if h.eager] == eager_want


def _true(row: dict[str, Any]) -> list[int]:
    return [slot for slot, bad in enumerate(row["non_finite"]) if bad]


def test_keras_fit_check_says_how_steps_were_derived(tmp_path: Path) -> None:
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", str(DATA / "keras_fit"), "--watch", "TO"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 1
    assert "steps are the calls of the function that ran each op" in run.stderr
    assert "origin: step ?  Dataset_map_lambda  mul:0 (Mul)" in run.stderr


# ------------------------------------------------------------------ CRC and fuzz


def test_crc_fallback_matches_the_library() -> None:
    for data in (b"", b"123456789", os.urandom(1000)):
        assert crc32c(data) == crc32c_python(data)
    assert crc32c_python(b"123456789") == 0xE3069283


def _framed(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return (
        head
        + struct.pack("<I", masked_crc32c(head))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(
    records=st.lists(st.binary(max_size=64), max_size=6),
    noise=st.binary(max_size=40),
    cut=st.integers(min_value=0, max_value=400),
)
def test_framing_fuzz(tmp_path: Path, records: list[bytes], noise: bytes, cut: int) -> None:
    """Any bytes after intact records (noise, a cut) cost at most the rest of the file,
    never an exception; the intact records before them are all read."""
    path = tmp_path / "x.execution"
    good = b"".join(_framed(r) for r in records)
    data = (good + noise)[: len(good) + cut]
    path.write_bytes(data)
    out, problems, notes = read_records(path)
    assert out[: len(records)] == records[: len(out)]
    if len(data) >= len(good):
        assert out[: len(records)] == records
    assert all(isinstance(p, str) for p in [*problems, *notes])


@_SETTINGS
@given(
    payload=st.binary(max_size=200),
    kind=st.sampled_from(
        [
            "execution",
            "graphs",
            "stack_frames",
            "graph_execution_traces",
            "source_files",
            "metadata",
        ]
    ),
)
def test_event_fuzz(tmp_path: Path, payload: bytes, kind: str) -> None:
    """A validly framed record of any bytes in any file: the dump opens, checks and reads
    its sources without an exception (a bad record is a problem sentence)."""
    folder = tmp_path / "dump"
    folder.mkdir(exist_ok=True)
    for k in (
        "metadata",
        "source_files",
        "stack_frames",
        "graphs",
        "execution",
        "graph_execution_traces",
    ):
        (folder / f"tfdbg_events.1.h.{k}").write_bytes(_framed(payload) if k == kind else b"")
    dump = TfdbgDump(folder)
    check_tfdbg(dump, [_watch("TO"), _watch("TZ:zero_percentage_ge=50"), _watch("WNC")])
    for p in dump.source_paths:
        dump.source_lines(p)


@_SETTINGS
@given(
    content=st.binary(max_size=120),
    dtype=st.sampled_from([0, 1, 2, 3, 7, 14, 19, 20, 99]),
    mode=st.sampled_from([2, 3, 4, 7]),
    dims=st.lists(st.integers(min_value=-2, max_value=40), max_size=3),
)
def test_trace_tensor_fuzz(
    tmp_path: Path, content: bytes, dtype: int, mode: int, dims: list[int]
) -> None:
    """A trace's tensor of any dtype, shape and content: decided or one problem sentence."""
    folder = tmp_path / "dump"
    folder.mkdir(exist_ok=True)
    event = pb.DebugEvent(wall_time=1.0)
    t = event.graph_execution_trace
    t.op_name, t.tensor_debug_mode = "op\x1b[31m", mode  # type: ignore[assignment]
    t.tensor_proto.dtype, t.tensor_proto.tensor_content = dtype, content
    for d in dims:
        t.tensor_proto.tensor_shape.dim.add().size = d
    for k in ("metadata", "source_files", "stack_frames", "graphs", "execution"):
        (folder / f"tfdbg_events.1.h.{k}").write_bytes(b"")
    (folder / "tfdbg_events.1.h.graph_execution_traces").write_bytes(
        _framed(event.SerializeToString())
    )
    report = check_tfdbg(
        TfdbgDump(folder), [_watch("TO"), _watch("TL:max_gt=1"), _watch("TZ:zero_percentage_ge=1")]
    )
    assert report.checked <= 1 and len(report.problems) <= 1
