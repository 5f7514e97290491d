"""A constructed Ascend overflow dump (issue 16 item 4; `op_debug_mode` 3), written from
MindSpore's dump documentation (dump.md r2.3–2.5, Ascend O2 section: overflow records
`Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}`, and with `file_format: "npy"`
`….output.0.json`) and spec §5.2, not by MindSpore.

`write(root)` writes `root/overflow/`: a GE O2 layout whose iteration 0 holds a bin-form record
for Conv2D's (task 2, stream 7), iteration 1 a json-form record for ReLU's (task 3, stream 7)
and a record with the unknown ids 65535.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.constructed.async_dump import CONV, RELU, _put

OVERFLOW_JSON = {"AI Core": {"status": 1, "task_id": 3, "stream_id": 7}}


def write(root: Path) -> Path:
    """Write `root/overflow/`; return it."""
    out = root / "overflow"
    for it in (0, 1):
        d = out / "20240101120000" / "0" / "kernel_graph1" / "1" / str(it)
        ts = 1700000000000000 + it * 1000
        x = np.array([60000.0, 1.0], dtype=np.float16)
        _put(d, f"Conv2D.{CONV}.2.7.{ts}.output.0.NCHW.npy", x)
        _put(d, f"ReLU.{RELU}.3.7.{ts + 1}.output.0.NCHW.npy", x)
    it0 = out / "20240101120000" / "0" / "kernel_graph1" / "1" / "0"
    # the record's content (a DumpData protobuf) is not read: its name says task and stream
    (it0 / "Opdebug.Node_OpDebug.2.7.1700000000000009").write_bytes(b"\x00" * 16)
    it1 = out / "20240101120000" / "0" / "kernel_graph1" / "1" / "1"
    (it1 / "Opdebug.Node_OpDebug.3.7.1700000000001009.output.0.json").write_text(
        json.dumps(OVERFLOW_JSON), encoding="utf-8"
    )
    (it1 / "Opdebug.Node_OpDebug.65535.65535.1700000000001010.output.0.json").write_text(
        "{}", encoding="utf-8"
    )
    return out
