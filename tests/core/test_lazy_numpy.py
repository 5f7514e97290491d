"""numpy and ml_dtypes load on first use, not at the start (issue 28's cold start).

`tuidebug offline DUMP` imports the CLI, the dump layout and the sessions before its first
frame, and nothing there computes on a tensor: numpy, ml_dtypes and the ctypes they pull
in cost ~75 ms of the start. core/tensor.py builds its dtype tables (and `BFLOAT16`) on
first use; the other modules import numpy inside the functions that compute. These tests
run a fresh interpreter, since this one has numpy loaded long ago.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO
from tuidebug.core import tensor

TIMEOUT = 120  # seconds: a fresh interpreter reading a small dump, on a busy machine

# what `tuidebug offline` imports before its first frame, less the TUI (tui/app.py's own
# test is tests/tui/test_cold_start.py), and the session's base module
START_IMPORTS = """
import json, sys
import tuidebug.cli, tuidebug.cli.offline, tuidebug.cli.launch
import tuidebug.offline.layout.root, tuidebug.offline.session, tuidebug.core.session
print(json.dumps(sorted(sys.modules)))
"""

# the start's imports, then a real read: the tables built lazily must serve it as before
READ_AFTER_START = """
import json, sys
import tuidebug.cli, tuidebug.cli.offline, tuidebug.cli.launch
import tuidebug.offline.layout.root, tuidebug.offline.session, tuidebug.core.session
assert "numpy" not in sys.modules and "ml_dtypes" not in sys.modules
from tuidebug.core.tensor import TensorRef, dtype_label, tensor_statistics
from tuidebug.offline.session import OfflineSession

session = OfflineSession(sys.argv[1])
session.start()
node = "Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/Conv2D-op0"
array = session.tensor(TensorRef(node, 0, iteration=3, graph="kernel_graph0"))
stats = tensor_statistics(array)
from tuidebug.core.tensor import BFLOAT16, dtype_from_dump_name
import ml_dtypes, numpy as np
session.close()
print(json.dumps({
    "label": dtype_label(array.dtype),
    "shape": list(array.shape),
    "min": stats.min,
    "max": stats.max,
    "sum": float(np.asarray(array, dtype=np.float64).sum()),
    "bfloat16": BFLOAT16 == np.dtype(ml_dtypes.bfloat16),
    "dump_name": str(dtype_from_dump_name("BFloat16")),
}))
"""


def _run(code: str, *args: str, tmp_path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def test_the_start_imports_load_neither_numpy_nor_ml_dtypes(tmp_path: Path) -> None:
    loaded = set(json.loads(_run(START_IMPORTS, tmp_path=tmp_path)))
    assert "tuidebug.offline.session" in loaded
    assert sorted(loaded & {"numpy", "ml_dtypes"}) == []


def test_a_tensor_reads_the_same_after_a_numpy_free_start(tmp_path: Path, dump_2_10: Path) -> None:
    """The 2.10 dump names its files' dtypes (`Float32`): the lazily built name table reads
    them, and the tensor is the file's, number for number."""
    answer = json.loads(_run(READ_AFTER_START, str(dump_2_10), tmp_path=tmp_path))
    [path] = (dump_2_10 / "rank_0" / "LeNet" / "0" / "3").glob(
        "Conv2D.Default_network-WithLossCell__backbone-LeNet5_conv1-Conv2d_Conv2D-op0.*"
        ".output.0.*.npy"
    )
    expected = np.load(path, allow_pickle=False)
    assert answer["label"] == "float32"
    assert answer["shape"] == list(expected.shape)
    assert answer["min"] == float(expected.min())
    assert answer["max"] == float(expected.max())
    assert answer["sum"] == float(expected.astype(np.float64).sum())
    assert answer["bfloat16"] is True
    assert answer["dump_name"] == "bfloat16"


@pytest.mark.parametrize("number", [*range(48), tensor.DT_BFLOAT16_TUIDEBUG, 77])
def test_a_data_type_number_is_labelled_without_numpy_as_through_its_dtype(number: int) -> None:
    """`dtype_label(11)` answers from the name table (no numpy); it must be the label of
    the dtype `numpy_dtype` gives, or the number's DataType name when there is none."""
    try:
        through_numpy = tensor.dtype_label(tensor.numpy_dtype(number))
    except tensor.UnsupportedDataTypeError:
        through_numpy = tensor.data_type_name(number)
    assert tensor.dtype_label(number) == through_numpy
    assert tensor.is_numeric_data_type(number) == (through_numpy.islower())


def test_the_lazy_tables_are_the_dtypes_they_name() -> None:
    assert tensor.BFLOAT16 is tensor.bfloat16_dtype()
    assert tensor.numpy_dtype(tensor.DT_BASE_FLOAT) == np.float32
    assert tensor.data_type_of(np.dtype(">i8")) == tensor.DT_INT64
    assert tensor.dump_name_of(tensor.BFLOAT16) == "BFloat16"
    assert tensor.dtype_from_dump_name("int4") == np.int8
    with pytest.raises(AttributeError):
        _ = tensor.NOT_A_NAME  # type: ignore[attr-defined]
