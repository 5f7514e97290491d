"""The checker's fast read (`tensor_store.read_dump_tensor`) and the small-file path of
`load_npy`: a small file in one read (open, fstat, read, close), headers parsed once per
distinct header, nothing resolved unless the file is a symbolic link.

Each read must give what `load_npy` gave before (same array, dtype, shape, layout, read-only)
and refuse what it refused, with the same sentence; the hostile-input guarantees (FIFOs never
block, links out of the dump refused, size limits) hold on the fast path too.
"""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from tuidebug.core.tensor import BFLOAT16
from tuidebug.offline.files import npy as tensor_store
from tuidebug.offline.files.names import parse_tensor_file_name
from tuidebug.offline.files.npy import (
    SMALL_READ_BYTES,
    TensorFileError,
    TensorMissingError,
    TensorNotRegularError,
    TensorOutsideRootError,
    TensorTooLargeError,
    TensorTruncatedError,
    load_npy,
    peek_header,
    read_dump_tensor,
)

DTYPES = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
    np.complex128,
    ">f4",
    ">i8",
]
SHAPES = [(), (0,), (0, 3), (1,), (5,), (2, 3), (3, 1, 2)]


def _save(path: Path, array: np.ndarray) -> Path:
    np.save(path, array, allow_pickle=False)
    return path


def _values(dtype: object, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape)) if shape else 1
    return (np.arange(count) % 3).astype(dtype).reshape(shape)


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.flags.f_contiguous == b.flags.f_contiguous
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_dtype_and_shape_reads_as_numpy_wrote_it(
    tmp_path: Path, dtype: object, shape: tuple[int, ...]
) -> None:
    expected = _values(dtype, shape)
    path = _save(tmp_path / "t.npy", expected)
    fast = read_dump_tensor(str(path), str(tmp_path))  # root as a string too
    _same(fast, expected)
    assert not fast.flags.writeable  # like the read-only map it stands for
    mapped = load_npy(path, root=tmp_path, mmap=True)
    _same(mapped, expected)
    assert not mapped.flags.writeable
    copy = load_npy(path, mmap=False)
    _same(copy, expected)
    assert copy.flags.writeable
    copy[...] = 0  # a real copy: the file is untouched
    _same(read_dump_tensor(str(path), tmp_path), expected)


def test_fortran_order_and_large_files(tmp_path: Path) -> None:
    f_order = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    _same(read_dump_tensor(str(_save(tmp_path / "f.npy", f_order)), tmp_path), f_order)
    big = np.arange(SMALL_READ_BYTES // 4 + 100, dtype=np.float32)  # mapped, not read
    _same(read_dump_tensor(str(_save(tmp_path / "big.npy", big)), tmp_path), big)
    _same(load_npy(tmp_path / "big.npy", mmap=False), big)


def test_bfloat16_file_gives_what_load_npy_gives(tmp_path: Path) -> None:
    """numpy writes bfloat16 as raw 2-byte records (`<V2`); whatever `load_npy` makes of
    them, the fast read makes the same."""
    path = _save(tmp_path / "bf16.npy", np.arange(6, dtype=BFLOAT16).reshape(2, 3))
    try:
        expected = load_npy(path, mmap=True)
    except TensorFileError as err:
        with pytest.raises(type(err)) as fast_err:
            read_dump_tensor(str(path), tmp_path)
        assert str(fast_err.value) == str(err)
    else:
        _same(read_dump_tensor(str(path), tmp_path), expected)


def test_odd_header_length_gives_an_aligned_array(tmp_path: Path) -> None:
    """A header not padded to a multiple of 16 (hand-written files): float64 data read into
    a bytes object at an odd offset is copied to aligned memory."""
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\n"
    data = np.array([1.5, -2.0, 3.25]).tobytes()
    path = tmp_path / "odd.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data)
    array = read_dump_tensor(str(path), tmp_path)
    assert array.flags.aligned and not array.flags.writeable
    np.testing.assert_array_equal(array, [1.5, -2.0, 3.25])


# ------------------------------------------------------------------ refusals
def _same_refusal(path: Path, root: Path, kind: type[TensorFileError]) -> str:
    with pytest.raises(kind) as slow:
        load_npy(path, root=root, mmap=True)
    with pytest.raises(kind) as fast:
        read_dump_tensor(str(path), root)
    assert str(fast.value) == str(slow.value)
    return str(fast.value)


def test_truncated_small_file_is_refused(tmp_path: Path) -> None:
    path = _save(tmp_path / "cut.npy", np.arange(10, dtype=np.float32))
    path.write_bytes(path.read_bytes()[:-8])
    text = _same_refusal(path, tmp_path, TensorTruncatedError)
    assert "declares 40 bytes of data but the file holds 32" in text


def test_empty_and_garbage_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.npy").write_bytes(b"")
    assert "is empty" in _same_refusal(tmp_path / "empty.npy", tmp_path, TensorFileError)
    (tmp_path / "junk.npy").write_bytes(b"not a numpy file at all")
    _same_refusal(tmp_path / "junk.npy", tmp_path, TensorFileError)


def test_memory_limit_refuses_before_reading(tmp_path: Path) -> None:
    path = _save(tmp_path / "t.npy", np.zeros(100, np.float32))
    with pytest.raises(TensorTooLargeError) as err:
        read_dump_tensor(str(path), tmp_path, max_bytes=100)
    assert err.value.nbytes == 400 and err.value.limit == 100
    assert read_dump_tensor(str(path), tmp_path, max_bytes=400).size == 100


def test_missing_file_and_folder(tmp_path: Path) -> None:
    _same_refusal(tmp_path / "gone.npy", tmp_path, TensorMissingError)
    (tmp_path / "dir.npy").mkdir()
    _same_refusal(tmp_path / "dir.npy", tmp_path, TensorNotRegularError)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_dump_tensor(str(fifo), tmp_path)
        except BaseException as err:  # handed to the test thread
            outcome.append(err)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], TensorNotRegularError)
    assert "FIFO" in str(outcome[0])
    assert peek_header(fifo) is None


def test_links_are_resolved_and_confined(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    root.mkdir()
    outside = _save(tmp_path / "secret.npy", np.ones(3, np.float32))
    inside = _save(root / "real.npy", np.arange(3, dtype=np.float32))
    (root / "in.npy").symlink_to(inside)
    (root / "out.npy").symlink_to(outside)
    (root / "dangling.npy").symlink_to(root / "nothing.npy")
    (root / "loop.npy").symlink_to(root / "loop.npy")
    np.testing.assert_array_equal(read_dump_tensor(str(root / "in.npy"), root), [0, 1, 2])
    assert "outside the dump" in _same_refusal(root / "out.npy", root, TensorOutsideRootError)
    _same_refusal(root / "dangling.npy", root, TensorMissingError)
    assert "loop" in _same_refusal(root / "loop.npy", root, TensorNotRegularError)


def test_a_regular_file_is_read_without_resolving_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No realpath, no lstat per file: only a file that is a link is resolved."""
    path = _save(tmp_path / "t.npy", np.arange(4, dtype=np.float32))

    def no_resolve(*args: object, **kwargs: object) -> None:
        raise AssertionError("the path was resolved")

    monkeypatch.setattr(tensor_store, "_check_inside", no_resolve)
    monkeypatch.setattr(os.path, "islink", no_resolve)
    np.testing.assert_array_equal(read_dump_tensor(str(path), tmp_path), [0, 1, 2, 3])


# ------------------------------------------------------------------ header cache
def test_headers_are_parsed_once_and_shared(tmp_path: Path) -> None:
    a = _save(tmp_path / "a.npy", np.zeros((2, 3), np.float32))
    b = _save(tmp_path / "b.npy", np.ones((2, 3), np.float32))
    c = _save(tmp_path / "c.npy", np.ones((3, 2), np.float32))
    assert peek_header(a) is peek_header(b)
    assert peek_header(a) is not peek_header(c)
    np.testing.assert_array_equal(read_dump_tensor(str(b), tmp_path), np.ones((2, 3)))


def test_header_cache_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tensor_store, "_HEADERS", {})
    monkeypatch.setattr(tensor_store, "_MAX_CACHED_HEADERS", 3)
    for n in range(1, 10):
        path = _save(tmp_path / f"t{n}.npy", np.arange(n, dtype=np.int32))
        np.testing.assert_array_equal(read_dump_tensor(str(path), tmp_path), np.arange(n))
        assert len(tensor_store._HEADERS) <= 3


def test_long_header_read_past_the_first_bytes(tmp_path: Path) -> None:
    """A header longer than the first read of a big file is read with one more pread."""
    shape = (1,) * 60 + (SMALL_READ_BYTES // 4 + 1,)
    array = np.zeros(shape, np.float32)
    buf = io.BytesIO()
    np.save(buf, array)
    path = tmp_path / "long.npy"
    path.write_bytes(buf.getvalue())
    assert read_dump_tensor(str(path), tmp_path).shape == shape


# ------------------------------------------------------------------ the index's file records
def test_tensor_files_share_their_folder_and_repeated_name_parts() -> None:
    folder = "/d/rank_0/Net/0/3"
    name = "Add.Default_net_Add-op1.0.0.1795310821150037.output.0.DefaultFormat.Float32.npy"
    a = parse_tensor_file_name(name, folder)
    b = parse_tensor_file_name(name.replace("0037", "0074"), folder)
    assert a is not None and b is not None
    assert a.path == Path(folder, name) and a.fspath == os.path.join(folder, name)
    assert a.folder is b.folder
    assert a.op_name is b.op_name and a.dtype is b.dtype and a.format is b.format
    assert parse_tensor_file_name(name, Path(folder)) == a
