"""offline/files/npy.py: safe .npy loading and the graph dtype/shape check."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tuidebug.core.graph import TensorSpec
from tuidebug.core.tensor import DT_BFLOAT16_TUIDEBUG, DT_FLOAT32, DT_INT32, DT_STRING
from tuidebug.offline.files.npy import (
    TensorDtypeError,
    TensorFileError,
    TensorHeaderError,
    TensorMissingError,
    TensorOutsideRootError,
    TensorPickleError,
    TensorTooLargeError,
    TensorTruncatedError,
    check_expected,
    load_npy,
    read_header,
)


def _one_sentence(err: TensorFileError, name: str) -> None:
    message = str(err)
    assert name in message
    assert message.endswith(".") and "\n" not in message


# ------------------------------------------------------------------ real dumps


def test_every_fixture_file_loads(lenet_dump: Path) -> None:
    files = sorted(lenet_dump.rglob("*.npy"))
    assert len(files) > 600
    for path in files:
        mapped = load_npy(path, root=lenet_dump)
        plain = np.load(path, allow_pickle=False)
        assert mapped.dtype == plain.dtype and mapped.shape == plain.shape
        assert np.array_equal(mapped, plain, equal_nan=True)
        assert not mapped.flags.writeable or mapped.size == 0


def test_fixture_in_memory_copy(dump_2_10: Path) -> None:
    path = next(dump_2_10.rglob("Conv2D.*output.0.*.npy"))
    array = load_npy(path, mmap=False)
    assert not isinstance(array, np.memmap)
    assert array.shape == (4, 6, 28, 28) and array.dtype == np.float32


def test_fixture_parameters_match_the_graph(dump_2_10: Path) -> None:
    # graph shapes/dtypes of LeNet's parameters, as the .pb declares them
    specs = {
        "conv1_weight": ((6, 1, 5, 5), DT_FLOAT32),
        "fc1_weight": ((120, 400), DT_FLOAT32),
        "fc3_bias": ((10,), DT_FLOAT32),
        "global_step": ((1,), DT_INT32),
        "learning_rate": ((), DT_FLOAT32),
        "inputs1": ((4,), DT_INT32),
    }
    iteration = dump_2_10 / "rank_0" / "LeNet" / "0" / "0"
    for name, (shape, dtype) in specs.items():
        path = next(iteration.glob(f"Parameter.{name}.0.0.*.npy"))
        array = load_npy(path)
        assert check_expected(array, TensorSpec(0, dtype, shape), path) is None, name


# ------------------------------------------------------------------ small arrays


@pytest.mark.parametrize(
    "array",
    [
        np.float32(2.5),
        np.zeros((0,), np.float32),
        np.zeros((3, 0, 2), np.int64),
        np.array([True, False]),
        np.arange(12, dtype=np.uint16).reshape(3, 4),
        np.asfortranarray(np.arange(12.0).reshape(3, 4)),
        np.arange(5, dtype=">f4"),
    ],
)
@pytest.mark.parametrize("mmap", [True, False])
def test_round_trip(tmp_path: Path, array: np.ndarray, mmap: bool) -> None:
    path = tmp_path / "t.npy"
    np.save(path, array)
    loaded = load_npy(path, root=tmp_path, mmap=mmap)
    assert loaded.shape == np.shape(array) and loaded.dtype == np.asarray(array).dtype
    assert np.array_equal(loaded, array)


def test_version_2_header(tmp_path: Path) -> None:
    path = tmp_path / "v2.npy"
    with open(path, "wb") as fp:
        np.lib.format.write_array(fp, np.arange(4, dtype=np.int32), version=(2, 0))
    assert load_npy(path).tolist() == [0, 1, 2, 3]
    assert read_header(path).shape == (4,)


# -------------------------------------------------------------------- refusals


def test_object_dtype_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.npy"
    np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(TensorPickleError) as err:
        load_npy(path)
    _one_sentence(err.value, "evil.npy")
    assert "holds Python objects (pickle) and is refused." in str(err.value)


def test_string_and_record_dtypes_are_refused(tmp_path: Path) -> None:
    for i, array in enumerate([np.array(["ab"]), np.zeros(2, dtype=[("x", "<f4")])]):
        path = tmp_path / f"odd{i}.npy"
        np.save(path, array)
        with pytest.raises(TensorDtypeError) as err:
            load_npy(path)
        _one_sentence(err.value, path.name)


def test_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "cut.npy"
    np.save(path, np.arange(1000, dtype=np.float64))
    size = path.stat().st_size
    os.truncate(path, size - 17)
    with pytest.raises(TensorTruncatedError) as err:
        load_npy(path)
    _one_sentence(err.value, "cut.npy")
    assert "8000 bytes" in str(err.value)
    with pytest.raises(TensorTruncatedError):
        read_header(path)


def _npy(header: bytes, version: bytes = b"\x01\x00") -> bytes:
    """An npy file with a hand-written header dict, padded as numpy pads it."""
    padded = header + b" " * (127 - 10 - len(header)) + b"\n"
    return b"\x93NUMPY" + version + len(padded).to_bytes(2, "little") + padded


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "corrupt.npy is empty."),
        (b"\x93NUM", "ends inside its header"),
        (b"not a numpy file at all", "magic string"),
        (b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'", "ends inside its header"),
        (_npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,) + }"), "cannot be parsed"),
        (_npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"), "negative"),
        (_npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': __import__('os'), }"), "parsed"),
        (_npy(b"{'descr': '<f4', 'shape': (2,), }"), "cannot be parsed"),
        (_npy(b"{'descr': 'zz', 'fortran_order': False, 'shape': (2,), }"), "cannot be parsed"),
        (_npy(b"{}", version=b"\x09\x00"), "version 9.0"),
    ],
)
def test_corrupt_header(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "corrupt.npy"
    path.write_bytes(content)
    with pytest.raises(TensorHeaderError) as err:
        load_npy(path)
    _one_sentence(err.value, "corrupt.npy")
    assert fragment in str(err.value)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(TensorMissingError) as err:
        load_npy(tmp_path / "gone.npy")
    _one_sentence(err.value, "gone.npy")
    with pytest.raises(TensorMissingError):
        load_npy(tmp_path / "gone.npy", root=tmp_path)
    (tmp_path / "dir.npy").mkdir()
    with pytest.raises(TensorHeaderError):
        load_npy(tmp_path / "dir.npy")


def test_symlink_outside_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    root = tmp_path / "dump"
    outside.mkdir()
    root.mkdir()
    secret = outside / "secret.npy"
    np.save(secret, np.arange(3))
    link = root / "Parameter.w.0.0.1.output.0.DefaultFormat.npy"
    link.symlink_to(secret)
    with pytest.raises(TensorOutsideRootError) as err:
        load_npy(link, root=root)
    _one_sentence(err.value, link.name)
    # without a root, or with a root that contains the target, the same link is fine
    assert load_npy(link).tolist() == [0, 1, 2]
    assert load_npy(link, root=tmp_path).tolist() == [0, 1, 2]
    # a link inside the root to a file inside the root is fine too
    inner = root / "inner.npy"
    np.save(inner, np.ones(2))
    (root / "alias.npy").symlink_to(inner)
    assert load_npy(root / "alias.npy", root=root).tolist() == [1.0, 1.0]
    # `..` in the path is resolved before the check
    with pytest.raises(TensorOutsideRootError):
        load_npy(root / ".." / "outside" / "secret.npy", root=root)


def test_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.npy"
    np.save(path, np.zeros((64, 64), np.float32))  # 16 KiB of data
    with pytest.raises(TensorTooLargeError) as err:
        load_npy(path, max_bytes=16 * 1024 - 1)
    _one_sentence(err.value, "big.npy")
    assert err.value.nbytes == 16 * 1024 and err.value.limit == 16 * 1024 - 1
    assert isinstance(err.value, TensorFileError)
    assert load_npy(path, max_bytes=16 * 1024).shape == (64, 64)


def test_errors_keep_the_path(tmp_path: Path) -> None:
    path = tmp_path / "x.npy"
    path.write_bytes(b"junk")
    with pytest.raises(TensorFileError) as err:
        load_npy(path)
    assert err.value.path == path


# --------------------------------------------------------------- check_expected


def test_check_expected() -> None:
    a = np.zeros((2, 3), np.float32)
    assert check_expected(a, None, "a.npy") is None
    assert check_expected(a, TensorSpec(0, DT_FLOAT32, (2, 3)), "a.npy") is None
    assert check_expected(a, TensorSpec(0, DT_FLOAT32, (-1, 3)), "a.npy") is None
    assert check_expected(a, TensorSpec(0, None, None), "a.npy") is None
    # 2.4+ stores bfloat16 tensors as float32
    assert check_expected(a, TensorSpec(0, DT_BFLOAT16_TUIDEBUG, (2, 3)), "a.npy") is None
    # a DataType with no numpy equivalent says nothing about the file
    assert check_expected(a, TensorSpec(0, DT_STRING, (2, 3)), "a.npy") is None
    warning = check_expected(a, TensorSpec(0, DT_INT32, (2, 3)), "dir/a.npy")
    assert warning == "a.npy holds float32 data but the graph says int32."
    warning = check_expected(a, TensorSpec(0, DT_FLOAT32, (3, 2)), "a.npy")
    assert warning == "a.npy has shape (2, 3) but the graph says (3, 2)."
    assert check_expected(a, TensorSpec(0, DT_FLOAT32, (2, 3, 1)), "a.npy") is not None


def test_check_expected_scalars() -> None:
    one = np.zeros((1,), np.float32)
    scalar = np.zeros((), np.float32)
    assert check_expected(one, TensorSpec(0, DT_FLOAT32, ()), "p.npy") is None
    assert check_expected(scalar, TensorSpec(0, DT_FLOAT32, (1,)), "p.npy") is None
    assert check_expected(np.zeros(2, np.float32), TensorSpec(0, DT_FLOAT32, ()), "p") is not None
