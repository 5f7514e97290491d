"""TensorFlow Debugger V2 dumps (issue 32): the reader on real dumps of each mode made by
TensorFlow 2.21 (tests/data/tfdbg/make_dumps.py), TensorFlow's own answer frozen beside
them, hostile inputs and a seeded fuzz of the framing."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tuidebug._proto import tfdbg_event_pb2 as pb
from tuidebug.offline.files.tfdbg import (
    MAX_RECORD_BYTES,
    TfdbgDump,
    TfdbgError,
    crc32c,
    masked_crc32c,
    read_records,
)

DATA = REPO / "tests" / "data" / "tfdbg"
MODES = ("no_tensor", "curt_health", "concise_health", "full_health", "shape", "full_tensor")
DECIDING = ("curt_health", "concise_health", "full_health", "full_tensor")
PREFIX = "tfdbg_events.1700000000.fixture"


def _expected(mode: str) -> dict[str, Any]:
    return json.loads((DATA / mode / "expected.json").read_text())


def _record(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return (
        head
        + struct.pack("<I", masked_crc32c(head))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def _copy(mode: str, tmp_path: Path) -> Path:
    target = tmp_path / mode
    shutil.copytree(DATA / mode, target)
    return target


def _check(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", str(folder), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


def test_crc32c_known_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


@pytest.mark.parametrize("mode", MODES)
def test_reader_reads_each_mode(mode: str) -> None:
    dump = TfdbgDump(DATA / mode)
    expected = _expected(mode)
    assert dump.tensorflow_version == expected["tensorflow"]
    assert [e.op_type for e in dump.executions] == expected["executions"]
    traces = [t for t, _w in dump.traces()]
    assert [(t.op_name, t.output_slot) for t in traces] == [
        (r["op_name"], r["output_slot"]) for r in expected["graph_execution_traces"]
    ]
    assert {dump.ops[(t.tfdbg_context_id, t.op_name)].op_type for t in traces} >= {"Log"}
    assert dump.problems == [] and dump.notes == []
    script = [p for p in dump.source_paths if p.endswith("make_dumps.py")]
    assert script and "tf.math.log" in "".join(dump.source_lines(script[0]) or [])
    # stack frames name files by their index in .source_files
    assert any(
        dump.source_order[i].endswith("make_dumps.py") for i, _l, _f in dump.stack_frames.values()
    )


@pytest.mark.parametrize("mode", DECIDING)
def test_first_hit_is_tensorflows_first_non_finite_op(mode: str) -> None:
    first = _expected(mode)["first_non_finite"]
    run = _check(DATA / mode, "--watch", "TO", "--json")
    assert run.returncode == 1, run.stderr
    hits = json.loads(run.stdout)
    assert (hits[0]["op"], hits[0]["op_type"], hits[0]["graph"], hits[0]["trace_index"]) == (
        first["op_name"],
        first["op_type"],
        first["graph_name"],
        first["index"],
    )
    # the derived step is the call TensorFlow's trace order gives (a loop-free graph)
    assert hits[0]["step"] == first["call"] == 2
    bad = [r["index"] for r in _expected(mode)["graph_execution_traces"] if r["non_finite"]]
    assert [h["trace_index"] for h in hits] == bad


@pytest.mark.parametrize("mode", ["no_tensor", "shape"])
def test_modes_without_values_refuse_to_in_one_sentence(mode: str) -> None:
    run = _check(DATA / mode, "--watch", "TO")
    assert run.returncode == 2
    assert f"tensor_debug_mode={mode.upper()}, which records no values" in run.stderr


def test_other_conditions_are_refused_per_watchpoint() -> None:
    run = _check(DATA / "full_health", "--watch", "TL:max_gt=1", "--watch", "TO")
    assert run.returncode == 1
    assert run.stderr.count("cannot be checked on this tfdbg dump: it needs the maximum") == 1


def test_check_exit_codes_and_usage() -> None:
    assert _check(DATA / "full_health", "--watch", "TO", "--rank", "1").returncode == 2
    assert _check(DATA / "full_health", "--watch", "TO", "--node", "^Sum$").returncode == 1
    assert _check(DATA / "full_health", "--watch", "TO", "--node", "^MatMul$").returncode == 0


# ------------------------------------------------------------------ hostile inputs


def test_truncated_last_record_is_a_note(tmp_path: Path) -> None:
    folder = _copy("full_health", tmp_path)
    path = folder / f"{PREFIX}.graph_execution_traces"
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    dump = TfdbgDump(folder)
    assert len(list(dump.traces())) == len(_expected("full_health")["graph_execution_traces"]) - 1
    assert len(dump.notes) == 1 and "cut short" in dump.notes[0]
    assert dump.problems == []


def test_bad_data_crc_skips_one_record(tmp_path: Path) -> None:
    path = tmp_path / "x.execution"
    good = pb.DebugEvent(wall_time=1.0).SerializeToString()
    bad = bytearray(_record(good))
    bad[12] ^= 0xFF
    path.write_bytes(bytes(bad) + _record(good))
    records, problems, _notes = read_records(path)
    assert records == [good] and len(problems) == 1 and "CRC does not match" in problems[0]


def test_lying_length_stops_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.execution"
    good = _record(b"\x09" + b"\0" * 8)
    lie = struct.pack("<QI", 1 << 60, 0) + b"\0" * 16
    path.write_bytes(good + lie + good)
    records, problems, _n = read_records(path)
    assert len(records) == 1 and "corrupt length" in problems[0]


def test_huge_record_is_skipped_unread(tmp_path: Path) -> None:
    path = tmp_path / "x.execution"
    head = struct.pack("<Q", MAX_RECORD_BYTES + 1)
    with path.open("wb") as f:
        f.write(head + struct.pack("<I", masked_crc32c(head)))
        f.truncate(12 + MAX_RECORD_BYTES + 1 + 4)  # sparse: nothing of it is read
    with path.open("ab") as f:
        f.write(_record(b""))
    records, problems, _n = read_records(path)
    assert records == [b""] and "more than the" in problems[0]


def test_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    folder = _copy("full_health", tmp_path)
    path = folder / f"{PREFIX}.execution"
    path.unlink()
    os.mkfifo(path)
    start = time.monotonic()
    dump = TfdbgDump(folder)
    assert dump.executions == []  # read on first use
    assert time.monotonic() - start < 5
    assert any("FIFO" in p for p in dump.problems)
    assert _check(folder, "--watch", "TO").returncode == 1  # the traces are still checked


def test_deep_and_odd_protos_are_one_sentence_each(tmp_path: Path) -> None:
    folder = _copy("full_health", tmp_path)
    deep = b"\x5b" * 5000 + b"\x5c" * 5000  # groups nested far past protobuf's depth limit
    odd = b"\x4a\xff\xff\xff\xff\x0f"  # execution, a length past the record
    (folder / f"{PREFIX}.execution").write_bytes(_record(deep) + _record(odd))
    dump = TfdbgDump(folder)
    assert dump.executions == []
    assert sum("is no DebugEvent" in p for p in dump.problems) == 2


def test_two_runs_in_one_folder_are_refused(tmp_path: Path) -> None:
    folder = _copy("full_health", tmp_path)
    (folder / "tfdbg_events.1.other.metadata").write_bytes(b"")
    with pytest.raises(TfdbgError, match="2 tfdbg runs"):
        TfdbgDump(folder)
    assert _check(folder, "--watch", "TO").returncode == 2


def test_escapes_in_op_names_are_printed_escaped(tmp_path: Path) -> None:
    folder = _copy("full_health", tmp_path)
    path = folder / f"{PREFIX}.graph_execution_traces"
    out = b""
    for data in read_records(path)[0]:
        event = pb.DebugEvent.FromString(data)
        event.graph_execution_trace.op_name = (
            "\x1b]0;pwned\x07" + event.graph_execution_trace.op_name
        )
        out += _record(event.SerializeToString())
    path.write_bytes(out)
    run = _check(folder, "--watch", "TO")
    assert run.returncode == 1 and "\x1b" not in run.stdout


def test_seeded_fuzz_of_fixture_bytes(tmp_path: Path) -> None:
    """Mutated bytes of every file kind: each dump opens and checks without an exception."""
    from tuidebug.core.condition_catalogue import CheckRequest, ConditionType
    from tuidebug.core.graph import Category
    from tuidebug.offline.check.tfdbg import check_tfdbg

    rng = random.Random(32)
    source = _copy("full_tensor", tmp_path)
    originals = {p.name: p.read_bytes() for p in source.iterdir() if p.name.startswith(PREFIX)}
    names = sorted(originals)
    watch = [(CheckRequest(ConditionType.GENERAL_OVERFLOW, ()), Category.TENSOR)]
    start = time.monotonic()
    for _round in range(300):
        name = rng.choice(names)
        data = bytearray(originals[name])
        for _ in range(rng.randint(1, 8)):
            kind = rng.random()
            at = rng.randrange(len(data)) if data else 0
            if kind < 0.6 and data:
                data[at] = rng.randrange(256)
            elif kind < 0.8:
                del data[at : at + rng.randint(1, 64)]
            else:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        (source / name).write_bytes(bytes(data))
        dump = TfdbgDump(source)
        check_tfdbg(dump, watch)
        for path in dump.source_paths[:2]:
            dump.source_lines(path)
        (source / name).write_bytes(originals[name])
    assert time.monotonic() - start < 20


def test_generated_module_is_not_stale(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    spec = importlib.util.spec_from_file_location("gen_proto", REPO / "scripts" / "gen_proto.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.generate(tmp_path)

    def descriptor(path: Path) -> bytes:
        match = re.search(rb"AddSerializedFile\((b'.*?')\)\n", path.read_bytes())
        assert match
        return match.group(1)

    name = "tfdbg_event_pb2.py"
    assert descriptor(tmp_path / name) == descriptor(REPO / "tuidebug" / "_proto" / name)


@pytest.mark.parametrize("mode", ["curt_health", "concise_health", "full_health"])
def test_non_finite_health_counts_are_one_problem(mode: str, tmp_path: Path) -> None:
    # a count slot that is NaN or Inf (a hostile or damaged summary) is no count
    folder = _copy(mode, tmp_path)
    path = folder / f"{PREFIX}.graph_execution_traces"
    out = b""
    for data in read_records(path)[0]:
        event = pb.DebugEvent.FromString(data)
        tp = event.graph_execution_trace.tensor_proto
        if event.HasField("graph_execution_trace") and tp.tensor_content:
            values = bytearray(tp.tensor_content)
            slots, flag = {"curt_health": (2, 1), "concise_health": (5, 2)}.get(mode, (11, 5))
            width = len(values) // slots
            at = flag * width
            nan = struct.pack("<f", float("nan")) if width == 4 else struct.pack("<d", float("nan"))
            values[at : at + width] = nan
            tp.tensor_content = bytes(values)
        out += _record(event.SerializeToString())
    path.write_bytes(out)
    run = _check(folder, "--watch", "TO")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "cannot be read" in run.stderr


def _with_eager(tmp_path: Path, *protos: pb.TensorProto) -> Path:
    """The FULL_HEALTH fixture with one eager `Exp` appended, its outputs `protos`."""
    folder = _copy("full_health", tmp_path)
    path = folder / f"{PREFIX}.execution"
    eager = pb.DebugEvent(wall_time=1e12)  # after every trace
    eager.execution.op_type = "Exp"
    eager.execution.tensor_debug_mode = pb.FULL_HEALTH
    eager.execution.tensor_protos.extend(protos)
    path.write_bytes(path.read_bytes() + _record(eager.SerializeToString()))
    return folder


def _summary(*values: float) -> pb.TensorProto:
    tp = pb.TensorProto(dtype=2, tensor_content=struct.pack(f"<{len(values)}d", *values))
    tp.tensor_shape.dim.add().size = len(values)
    return tp


def test_eager_ops_are_checked(tmp_path: Path) -> None:
    """Eager ops carry their values in `.execution`: checked like traces (they were left
    unchecked), an output TensorFlow did not summarize (an empty proto) skipped."""
    nan = _summary(-1, 0, 1, 1, 4, 0, 0, 2, 0, 0, 2)  # 4 elements, 2 NaN
    folder = _with_eager(tmp_path, pb.TensorProto(), nan)
    run = _check(folder, "--watch", "TO", "--node", "MatMul|Exp", "--json")
    assert run.returncode == 1, run.stdout + run.stderr
    (hit,) = json.loads(run.stdout)
    assert (hit["op"], hit["output_slot"], hit["eager"], hit["nan"]) == ("Exp", 1, True, 2)
    assert hit["execution_index"] == len(_expected("full_health")["executions"])


def test_an_unreadable_eager_summary_is_one_problem(tmp_path: Path) -> None:
    folder = _with_eager(tmp_path, _summary(1, 2))  # 2 slots, not FULL_HEALTH's 11
    run = _check(folder, "--watch", "TO", "--node", "MatMul|Exp")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "'Exp':0 (eager) cannot be read: a FULL_HEALTH summary of 2 values, not 11" in (
        run.stderr
    )


def test_iteration_selects_derived_steps() -> None:
    """--iteration picks the derived steps (the calls), as TensorFlow's call counts give
    them; a step the run does not have is a usage error, not a clean run."""
    want = [
        (r["op_name"], r["call"])
        for r in _expected("full_health")["graph_execution_traces"]
        if r["non_finite"] and r["call"] in (2, 3)
    ]
    run = _check(DATA / "full_health", "--watch", "TO", "--iteration", "2-3", "--json")
    assert run.returncode == 1, run.stderr
    assert [(h["op"], h["step"]) for h in json.loads(run.stdout)] == want
    assert _check(DATA / "full_health", "--watch", "TO", "--iteration", "0-1").returncode == 0
    run = _check(DATA / "full_health", "--watch", "TO", "--iteration", "40")
    assert run.returncode == 2 and "names no step of this tfdbg dump" in run.stderr
