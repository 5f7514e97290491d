#!/usr/bin/env python3
"""Make the tfdbg pairs `tuidebug compare` is tested on (issue 32), with TensorFlow, and
freeze TensorFlow's own answer.

Run in the TensorFlow venv (never tuidebug's):

    /tmp/tfvenv/bin/python tests/data/tfdbg/make_compare.py

`compare/<mode>_golden` and `compare/<mode>_target` (mode FULL_TENSOR and FULL_HEALTH): the
same `tf.function` as make_dumps.py (MatMul by a variable, Log, the variable lowered by 0.25
a call, STEPS calls), the golden with the variable at [0.5, 0.5], the target at [0.5, 0.6]:
MatMul's output differs from the first call on, and Log goes -Inf at the golden's call 2
but NaN only at the target's call 3. `.source_files` is slimmed as make_dumps.py does.

TensorFlow's answer (`compare/expected.json`): from DebugDataReader's traces of both runs,
in file order, per (op, slot, call) whether the values differ (FULL_TENSOR: exactly; any
NaN in the same places counts as equal) and whether NaN/Inf presence differs
(FULL_HEALTH's counts), and the first trace that differs in each mode.
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
from tensorflow.python.debug.lib import debug_events_reader

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_dumps import slim_source_files  # noqa: E402

STEPS = 5
WEIGHTS = {"golden": [[0.5], [0.5]], "target": [[0.5], [0.6]]}


def train(dump_dir: str, mode: str, weights: list[list[float]]) -> None:
    tf.debugging.experimental.enable_dump_debug_info(
        dump_dir, tensor_debug_mode=mode, circular_buffer_size=-1
    )
    w = tf.Variable(weights)
    x = tf.constant([[1.0, 1.0]])

    @tf.function
    def step(x: tf.Tensor) -> tf.Tensor:
        y = tf.matmul(x, w)
        z = tf.math.log(y)
        w.assign_sub([[0.25], [0.25]])
        return tf.reduce_sum(z)

    for _ in range(STEPS):
        step(x)
    tf.debugging.experimental.disable_dump_debug_info()


def traces(folder: Path, mode: str) -> dict[tuple[str, int, int], Any]:
    out: dict[tuple[str, int, int], Any] = {}
    with debug_events_reader.DebugDataReader(str(folder)) as reader:
        reader.update()
        seen: dict[str, int] = {}
        for trace in reader.graph_execution_traces(digest=False):
            call = seen.get(trace.op_name, 0)
            seen[trace.op_name] = call + 1
            if mode == "FULL_TENSOR":
                value = np.asarray(reader.graph_execution_trace_to_tensor_value(trace))
            else:
                value = np.asarray(trace.debug_tensor_value)
            out[(trace.op_name, trace.output_slot, call)] = value
    return out


def differs(a: Any, b: Any, mode: str) -> bool:
    if mode == "FULL_TENSOR":
        if a.shape != b.shape:
            return True
        return not np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    # FULL_HEALTH: slots 5-7 are the -Inf, +Inf and NaN counts
    return bool((a[5:8] > 0).any() != (b[5:8] > 0).any())


def main() -> int:
    out = HERE / "compare"
    answer: dict[str, Any] = {"tensorflow": tf.__version__}
    for mode in ("FULL_TENSOR", "FULL_HEALTH"):
        runs = {}
        for side, weights in WEIGHTS.items():
            target = out / f"{mode.lower()}_{side}"
            with tempfile.TemporaryDirectory() as tmp:
                train(tmp, mode, weights)
                slim_source_files(Path(tmp))
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir(parents=True)
                for f in sorted(Path(tmp).iterdir()):  # fixed names, as make_dumps.py
                    kind = f.name.rsplit(".", 1)[1]
                    shutil.copyfile(f, target / f"tfdbg_events.1700000000.fixture.{kind}")
            runs[side] = traces(target, mode)
        rows = [
            {
                "op_name": k[0],
                "output_slot": k[1],
                "call": k[2],
                "differs": differs(runs["target"][k], runs["golden"][k], mode),
            }
            for k in runs["golden"]
        ]
        answer[mode.lower()] = {
            "traces": rows,
            "first_difference": next((r for r in rows if r["differs"]), None),
        }
    (out / "expected.json").write_text(json.dumps(answer, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
