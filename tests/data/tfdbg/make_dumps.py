#!/usr/bin/env python3
"""Make the tfdbg fixtures of issue 32 with TensorFlow, and freeze TensorFlow's own answers.

Run in a venv of its own (never tuidebug's):

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/tfdbg/make_dumps.py

For each tensor_debug_mode a `tf.function` runs STEPS times with
`enable_dump_debug_info(DIR, tensor_debug_mode=MODE, circular_buffer_size=-1)`. Its MatMul
output falls by 0.5 a call (1.0, 0.5, 0.0, -0.5, …, exact in binary), so `Log` gives -Inf on
call 2 (0-based) and NaN from call 3 on: the first non-finite op output is Log's, at call 2.

Freezing: `.source_files` holds the full text of every Python file on any stack, most of
them TensorFlow's own (megabytes); every record is kept (stack frames name files by their
index in this file) but the lines of files other than this script are emptied, rewritten in
the same TFRecord framing (fresh CRCs), so a fixture stays small and still holds real
source text. Every other file is TensorFlow's, byte for byte.

TensorFlow's answer (`expected.json` beside each mode): `DebugDataReader`'s graph execution
traces in file order, and the first whose debug tensor value (or, with FULL_TENSOR, whose
values) is non-finite, with its op, graph and call: the call is the count of earlier traces
of the same op, which in this loop-free graph is the function call it ran in.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import debug_event_pb2
from tensorflow.python.debug.lib import debug_events_reader
from tensorflow.python.lib.io import tf_record

HERE = Path(__file__).resolve().parent
MODES = ("NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE", "FULL_TENSOR")
STEPS = 5


def train(dump_dir: str, mode: str) -> None:
    tf.debugging.experimental.enable_dump_debug_info(
        dump_dir, tensor_debug_mode=mode, circular_buffer_size=-1
    )
    w = tf.Variable([[0.5], [0.5]])
    x = tf.constant([[1.0, 1.0]])

    @tf.function
    def step(x: tf.Tensor) -> tf.Tensor:
        y = tf.matmul(x, w)
        z = tf.math.log(y)  # -Inf when y is 0, NaN when y < 0
        w.assign_sub([[0.25], [0.25]])
        return tf.reduce_sum(z)

    for _ in range(STEPS):
        step(x)
    tf.debugging.experimental.disable_dump_debug_info()


def non_finite(reader: Any, trace: Any, mode: str) -> bool | None:
    """Whether a trace's output was non-finite, as its mode tells; None: it cannot tell."""
    if mode == "FULL_TENSOR":
        value = np.asarray(reader.graph_execution_trace_to_tensor_value(trace))
        if value.dtype.kind not in "fc":
            return False
        return bool(not np.all(np.isfinite(value)))
    v = trace.debug_tensor_value
    if mode == "CURT_HEALTH":
        return bool(v[1] > 0)
    if mode == "CONCISE_HEALTH":
        return bool(v[2] + v[3] + v[4] > 0)
    if mode == "FULL_HEALTH":
        return bool(v[5] + v[6] + v[7] > 0)
    return None


def answer(dump_dir: str, mode: str) -> dict[str, Any]:
    with debug_events_reader.DebugDataReader(dump_dir) as reader:
        reader.update()
        traces = reader.graph_execution_traces(digest=False)
        seen: dict[str, int] = {}
        listed = []
        first = None
        for index, trace in enumerate(traces):
            call = seen.get(trace.op_name, 0)
            seen[trace.op_name] = call + 1
            graph = reader.graph_by_id(trace.graph_ids[-1])
            op = graph.get_op_creation_digest(trace.op_name)
            bad = non_finite(reader, trace, mode)
            row = {
                "index": index,
                "op_name": trace.op_name,
                "op_type": op.op_type,
                "output_slot": trace.output_slot,
                "graph_name": graph.name,
                "call": call,
                "non_finite": bad,
            }
            listed.append(row)
            if bad and first is None:
                first = row
        executions = [e.op_type for e in reader.executions()]
    return {
        "tensorflow": tf.__version__,
        "mode": mode,
        "executions": executions,
        "graph_execution_traces": listed,
        "first_non_finite": first,
    }


def slim_source_files(dump_dir: Path) -> None:
    """Empty the text of every file but this script in `.source_files` (see above)."""
    (path,) = dump_dir.glob("*.source_files")
    kept = []
    for record in tf_record.tf_record_iterator(str(path)):
        event = debug_event_pb2.DebugEvent.FromString(record)
        if event.source_file.file_path != str(Path(__file__).resolve()):
            del event.source_file.lines[:]
        kept.append(event.SerializeToString())
    with tf_record.TFRecordWriter(str(path)) as writer:
        for record in kept:
            writer.write(record)


def main() -> int:
    for mode in MODES:
        target = HERE / mode.lower()
        with tempfile.TemporaryDirectory() as tmp:
            train(tmp, mode)
            slim_source_files(Path(tmp))
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for f in sorted(Path(tmp).iterdir()):
                # one fixed name per file kind: the timestamp and host name of a run say
                # nothing a test needs, and fixed names keep the fixture's diff quiet
                kind = f.name.rsplit(".", 1)[1]
                shutil.copyfile(f, target / f"tfdbg_events.1700000000.fixture.{kind}")
        result = answer(str(target), mode)
        (target / "expected.json").write_text(json.dumps(result, indent=1) + "\n")
        first = result["first_non_finite"]
        print(mode, first and (first["op_name"], first["call"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
