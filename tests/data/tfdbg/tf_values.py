#!/usr/bin/env python3
"""Freeze TensorFlow's own reading of the FULL_TENSOR fixture's recorded values (issue 32):
what `pt`, the tensor view and the checks of tuidebug must show for each trace.

Run in the TensorFlow venv (never tuidebug's), after make_dumps.py:

    /tmp/tfvenv/bin/python tests/data/tfdbg/tf_values.py

Writes `full_tensor/tf_values.json`: per graph execution trace in file order its op, output
slot, call (earlier traces of the same op: the step in this loop-free graph) and the value
`DebugDataReader.graph_execution_trace_to_tensor_value` gives (as a nested list, ±Inf and
NaN as strings), and per eager execution its op type and output values
(`execution_to_tensor_values`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from tensorflow.python.debug.lib import debug_events_reader

HERE = Path(__file__).resolve().parent


def _plain(value: Any) -> Any:
    v = np.asarray(value)
    if v.dtype.kind not in "fiub":
        return None
    out = v.astype(np.float64).tolist()

    def fix(x: Any) -> Any:
        if isinstance(x, list):
            return [fix(y) for y in x]
        return x if math.isfinite(x) else str(x)

    return fix(out)


def main() -> int:
    folder = HERE / "full_tensor"
    with debug_events_reader.DebugDataReader(str(folder)) as reader:
        reader.update()
        seen: dict[tuple[str, str], int] = {}
        traces = []
        for index, trace in enumerate(reader.graph_execution_traces(digest=False)):
            key = (trace.graph_ids[-1], trace.op_name)
            call = seen.get(key, 0)
            seen[key] = call + 1
            value = reader.graph_execution_trace_to_tensor_value(trace)
            traces.append(
                {
                    "index": index,
                    "op_name": trace.op_name,
                    "output_slot": trace.output_slot,
                    "call": call,
                    "dtype": str(np.asarray(value).dtype),
                    "shape": list(np.asarray(value).shape),
                    "value": _plain(value),
                }
            )
        eager = [
            {
                "index": i,
                "op_type": e.op_type,
                "values": [_plain(v) for v in reader.execution_to_tensor_values(e)],
            }
            for i, e in enumerate(reader.executions(digest=False))
            if not e.graph_id
        ]
    text = json.dumps({"graph_execution_traces": traces, "eager_executions": eager}, indent=1)
    (folder / "tf_values.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
