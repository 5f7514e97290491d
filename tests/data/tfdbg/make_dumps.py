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
of the same op, which in this loop-free graph is the function call it ran in. Per trace
also what the values decide beyond NaN/Inf: the zero fraction (FULL_HEALTH's zero and
element counts, FULL_TENSOR's values) and the maximum (FULL_TENSOR). The origin: with the
reader's traces and eager executions merged by wall time, the first op output that is
non-finite while no input the reader has a value for was non-finite just before (a graph
op's inputs by its op digest's `input_names`, an eager op's by its input tensor ids).

`keras_fit` (FULL_HEALTH): a Keras `fit` of a small model on a `tf.data` pipeline with a
`map` function, one NaN in the input batch of step NAN_STEP: the pipeline's graph runs
beside the model's train function and their traces interleave. Its answer adds the first
non-finite trace inside the train function (and its call, the count of earlier traces of
that op) and the known step.
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
KERAS_STEPS = 6
NAN_STEP = 3
BATCH = 4


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


def train_keras(dump_dir: str) -> None:
    import keras

    tf.debugging.experimental.enable_dump_debug_info(
        dump_dir, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
    )
    keras.utils.set_random_seed(32)
    x = np.ones((KERAS_STEPS * BATCH, 4), np.float32)
    x[NAN_STEP * BATCH + 1, 2] = np.nan  # one value of step NAN_STEP's batch
    y = np.zeros((KERAS_STEPS * BATCH, 1), np.float32)
    data = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 0.5, b))
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse", jit_compile=False)
    model.fit(data.batch(BATCH), epochs=1, verbose=0, shuffle=False)
    tf.debugging.experimental.disable_dump_debug_info()


def health_extras(reader: Any, trace: Any, mode: str) -> dict[str, Any]:
    """What the values decide beyond NaN/Inf (module docstring); {} where nothing."""
    if mode == "FULL_HEALTH":
        v = trace.debug_tensor_value
        return {"zero_fraction": v[9] / v[4] if v[4] else None}
    if mode == "FULL_TENSOR":
        value = np.asarray(reader.graph_execution_trace_to_tensor_value(trace))
        if value.dtype.kind not in "fiub" or value.size == 0:
            return {}
        out: dict[str, Any] = {"zero_fraction": float(np.mean(value == 0))}
        if value.dtype.kind != "f" or np.all(np.isfinite(value)):
            out["max"] = float(np.max(value))
        return out
    return {}


def eager_non_finite(reader: Any, execution: Any, mode: str) -> list[bool | None]:
    """Per output of an eager op, as `non_finite` per trace."""
    if mode == "FULL_TENSOR":
        out = []
        for value in reader.execution_to_tensor_values(execution):
            v = np.asarray(value)
            out.append(bool(v.dtype.kind in "fc" and not np.all(np.isfinite(v))))
        return out
    slots = {"CURT_HEALTH": [1], "CONCISE_HEALTH": [2, 3, 4], "FULL_HEALTH": [5, 6, 7]}
    if mode not in slots:
        return []
    return [  # None: an output the mode does not summarize (not a float)
        None if v is None else bool(sum(v[i] for i in slots[mode]) > 0)
        for v in (execution.debug_tensor_values or [])
    ]


def origin(reader: Any, traces: list[Any], mode: str) -> dict[str, Any] | None:
    """The origin as the module docstring says, from the reader's own objects."""
    events: list[tuple[float, int, int, Any]] = [
        (t.wall_time, 1, i, t) for i, t in enumerate(traces)
    ]
    for i, e in enumerate(reader.executions(digest=False)):
        if not e.graph_id:
            events.append((e.wall_time, 0, i, e))
    events.sort(key=lambda x: (x[0], x[1], x[2]))
    graph_bad: dict[tuple[str, str, int], bool] = {}
    eager_bad: dict[int, bool] = {}
    for _w, kind, index, item in events:
        if kind == 0:
            flags = eager_non_finite(reader, item, mode)
            for slot, bad in enumerate(flags):
                if bad and not any(eager_bad.get(t) for t in item.input_tensor_ids):
                    return {"eager": True, "index": index, "op_type": item.op_type, "slot": slot}
                if slot < len(item.output_tensor_ids):
                    eager_bad[item.output_tensor_ids[slot]] = bad
            continue
        graph_id = item.graph_ids[-1]
        bad = non_finite(reader, item, mode)
        if bad is None:
            continue
        if bad:
            op = reader.graph_by_id(graph_id).get_op_creation_digest(item.op_name)
            inputs = []
            for name in op.input_names:
                if name.startswith("^"):
                    continue
                op_name, _sep, slot = name.rpartition(":")
                if not _sep or not slot.isdigit():
                    op_name, slot = name, "0"
                inputs.append(graph_bad.get((graph_id, op_name, int(slot))))
            if not any(inputs):
                return {
                    "eager": False,
                    "index": index,
                    "op_name": item.op_name,
                    "op_type": op.op_type,
                    "slot": item.output_slot,
                    "graph_name": reader.graph_by_id(graph_id).name,
                }
        graph_bad[(graph_id, item.op_name, item.output_slot)] = bad
    return None


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
        seen: dict[tuple[str, str], int] = {}
        listed = []
        first = None
        for index, trace in enumerate(traces):
            call = seen.get((trace.graph_ids[-1], trace.op_name), 0)
            seen[(trace.graph_ids[-1], trace.op_name)] = call + 1
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
                **health_extras(reader, trace, mode),
            }
            listed.append(row)
            if bad and first is None:
                first = row
        executions = [e.op_type for e in reader.executions()]
        eager = [
            {"index": i, "op_type": e.op_type, "non_finite": eager_non_finite(reader, e, mode)}
            for i, e in enumerate(reader.executions(digest=False))
            if not e.graph_id
        ]
        found = origin(reader, traces, mode)
    return {
        "tensorflow": tf.__version__,
        "mode": mode,
        "executions": executions,
        "eager_executions": eager,
        "graph_execution_traces": listed,
        "first_non_finite": first,
        "origin": found,
    }


def keras_answer(dump_dir: str) -> dict[str, Any]:
    """`answer` on the Keras run, kept short: the traces' count, the first non-finite trace
    overall and inside the train function (the graph of the function `.execution` records
    calls of), with its call (earlier traces of that op), and the origin."""
    full = answer(dump_dir, "FULL_HEALTH")
    with debug_events_reader.DebugDataReader(dump_dir) as reader:
        reader.update()
        called = {e.graph_id for e in reader.executions() if e.graph_id}
        traces = reader.graph_execution_traces(digest=False)
        in_function = None
        for index, trace in enumerate(traces):
            # graph_ids: the enclosing graphs, outermost (the eager context) first
            function = [g for g in trace.graph_ids if g in called]
            if function and non_finite(reader, trace, "FULL_HEALTH"):
                in_function = full["graph_execution_traces"][index]
                in_function["called_graph_name"] = reader.graph_by_id(function[0]).name
                break
        graphs = sorted({reader.graph_by_id(t.graph_ids[-1]).name for t in traces})
    return {
        "tensorflow": full["tensorflow"],
        "mode": "FULL_HEALTH",
        "nan_step": NAN_STEP,
        "steps": KERAS_STEPS,
        "trace_count": len(full["graph_execution_traces"]),
        "traced_graph_names": graphs,
        "function_calls": sum(1 for e in full["executions"] if e.startswith("__inference")),
        "first_non_finite": full["first_non_finite"],
        "first_non_finite_in_train_function": in_function,
        "origin": full["origin"],
        # the eager ops' outputs as the reader reads them: True/False per summarized output
        "eager_executions": [e for e in full["eager_executions"] if e["non_finite"]],
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
    only = set(sys.argv[1:])  # e.g. `keras_fit`: remake some fixtures only
    for mode in (*MODES, "KERAS_FIT"):
        if only and mode.lower() not in only:
            continue
        target = HERE / mode.lower()
        with tempfile.TemporaryDirectory() as tmp:
            if mode == "KERAS_FIT":
                train_keras(tmp)
            else:
                train(tmp, mode)
            slim_source_files(Path(tmp))
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for f in sorted(Path(tmp).iterdir()):
                # one fixed name per file kind: the timestamp and host name of a run say
                # nothing a test needs, and fixed names keep the fixture's diff quiet
                kind = f.name.rsplit(".", 1)[1]
                shutil.copyfile(f, target / f"tfdbg_events.1700000000.fixture.{kind}")
        result = keras_answer(str(target)) if mode == "KERAS_FIT" else answer(str(target), mode)
        (target / "expected.json").write_text(json.dumps(result, indent=1) + "\n")
        first = result["first_non_finite"]
        print(mode, first and (first["op_name"], first["call"]), result["origin"], file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
