"""Constructed Ascend asynchronous dumps (issue 16 item 2), written from MindSpore's dump
documentation (docs/mindspore/source_en/model_train/debug/dump.md, r2.3–2.5, Ascend O2 /
asynchronous dump: "Introduction to Data Object Directory and Data File"), not by MindSpore.

`write(root)` writes `root/async_o2/` (GE O2 layout `{time}/{device_id}/{model_name}/
{model_id}/{iteration_id}/`, .npy files in the sync grammar, a `mapping.csv` long name, a
65535 task/stream id) and `root/async_acl/` (ACL layout with `{step_id}/` on top: aclop and
aclnn operators at the `{device_id}` level, a communication operator in the model folders).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

# full scoped kernel names with "/" written as "_" (dump.md: ".", "/", "\\", spaces → "_")
CONV = "Default_network-WithLossCell__backbone-LeNet5_conv1-Conv2d_Conv2D-op5"
RELU = "Default_network-WithLossCell__backbone-LeNet5_relu-ReLU_ReLU-op6"
LONG = (
    "Default_network-WithLossCell__backbone-LeNet5_" + "very_long_scope-Cell_" * 12 + "MatMul-op9"
)


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _put(folder: Path, name: str, array: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(_npy(array))


def _o2(root: Path) -> None:
    for it in (0, 1):
        d = root / "20240101120000" / "0" / "kernel_graph1" / "1" / str(it)
        x = np.arange(4, dtype=np.float32).reshape(2, 2) - 1 + it
        ts = 1700000000000000 + it * 1000
        _put(d, f"Conv2D.{CONV}.2.7.{ts}.input.0.NCHW.npy", x)
        _put(d, f"Conv2D.{CONV}.2.7.{ts}.output.0.NCHW.npy", x * 2)
        _put(d, f"ReLU.{RELU}.3.7.{ts + 1}.output.0.NCHW.npy", np.maximum(x * 2, 0))
        _put(d, f"Parameter.conv1.weight.0.0.{ts + 2}.output.0.DefaultFormat.npy", x)
        # a name too long for the file system: a number on disk, mapping.csv gives the name
        _put(d, "1700000001.npy", x.T)
        (d / "mapping.csv").write_text(
            f"1700000001,MatMul.{LONG}.4.7.{ts + 3}.output.0.ND.npy\n", encoding="utf-8"
        )
        # ids MindSpore could not get are written as 65535
        _put(
            d, f"Cast.Default_Cast-op11.65535.65535.{ts + 4}.output.0.ND.npy", x.astype(np.float16)
        )
    # a second device, one iteration: rank 1
    d1 = root / "20240101120000" / "1" / "kernel_graph1" / "1" / "0"
    _put(d1, f"Conv2D.{CONV}.2.7.1700000000000500.output.0.NCHW.npy", np.ones((2, 2), np.float32))


def _acl(root: Path) -> None:
    for step in (0, 1):
        dev = root / str(step) / "20240101120000" / "0"
        ts = 1700000000000000 + step * 1000
        x = np.full((3,), step + 1.0, dtype=np.float32)
        # aclop: {op_type}.{op_name}…
        _put(dev, f"Add.Default_network_Add-op1.3.2.{ts}.output.0.ND.npy", x + 1)
        # aclnn: {op_name}.{op_type}…
        _put(dev, f"Default_network_Mul-op2.Mul.65535.65535.{ts + 1}.output.0.ND.npy", x * 2)
        # a communication operator in {model_name}/{model_id}/{iteration_id}/
        model = dev / "kernel_graph0" / "0" / "0"
        _put(model, f"AllReduce.Default_AllReduce-op3.5.2.{ts + 2}.output.0.ND.npy", x * 8)


def write(root: Path) -> Path:
    """Write `root/async_o2/` and `root/async_acl/`; return `root`."""
    _o2(root / "async_o2")
    _acl(root / "async_acl")
    return root
