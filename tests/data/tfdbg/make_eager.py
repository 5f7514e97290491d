#!/usr/bin/env python3
"""Make the tfdbg fixture of eager ops with recorded values (issue 32), with TensorFlow, and
freeze TensorFlow's own reading of them.

Run in the TensorFlow venv (never tuidebug's):

    /tmp/tfvenv/bin/python tests/data/tfdbg/make_eager.py

`eager_full_tensor` (FULL_TENSOR): STEPS times, eager ops outside any `tf.function` (a Mul
scaling the input by 1 - 0.5·i, a Log of it: -Inf at i = 2, NaN from i = 3) and then one
call of a `tf.function`. `.source_files` is slimmed as make_dumps.py does.

TensorFlow's answer (`eager_full_tensor/expected.json`): DebugDataReader's executions in
order; for each eager one with values its op type, its derived step (the count of function
calls recorded before it: the call that returns next after it) and its output values
(`execution_to_tensor_values`, ±Inf and NaN as strings).
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.debug.lib import debug_events_reader

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_dumps import slim_source_files  # noqa: E402

STEPS = 5


def train(dump_dir: str) -> None:
    tf.debugging.experimental.enable_dump_debug_info(
        dump_dir, tensor_debug_mode="FULL_TENSOR", circular_buffer_size=-1
    )
    w = tf.Variable([[0.5], [0.5]])
    ones = tf.constant([[1.0, 1.0]])

    @tf.function
    def step(x: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(tf.matmul(x, w))

    for i in range(STEPS):
        x = ones * (1.0 - 0.5 * i)  # eager Mul
        tf.math.log(x)  # eager Log: -Inf at i = 2, NaN from i = 3
        step(x)
    tf.debugging.experimental.disable_dump_debug_info()


def _plain(value: Any) -> Any:
    v = np.asarray(value)
    if v.dtype.kind not in "fiub":
        return None

    def fix(x: Any) -> Any:
        if isinstance(x, list):
            return [fix(y) for y in x]
        return x if math.isfinite(x) else str(x)

    return fix(v.astype(np.float64).tolist())


def answer(folder: Path) -> dict[str, Any]:
    with debug_events_reader.DebugDataReader(str(folder)) as reader:
        reader.update()
        calls = 0
        eager = []
        for i, e in enumerate(reader.executions(digest=False)):
            if e.graph_id:
                calls += 1
                continue
            values = [_plain(v) for v in reader.execution_to_tensor_values(e)]
            if values:
                eager.append({"index": i, "op_type": e.op_type, "step": calls, "values": values})
    return {"tensorflow": tf.__version__, "function_calls": calls, "eager_executions": eager}


def main() -> int:
    target = HERE / "eager_full_tensor"
    with tempfile.TemporaryDirectory() as tmp:
        train(tmp)
        slim_source_files(Path(tmp))
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for f in sorted(Path(tmp).iterdir()):  # fixed names, as make_dumps.py
            kind = f.name.rsplit(".", 1)[1]
            shutil.copyfile(f, target / f"tfdbg_events.1700000000.fixture.{kind}")
    (target / "expected.json").write_text(json.dumps(answer(target), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
