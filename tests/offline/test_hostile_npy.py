"""Hostile `.npy` tensor files: headers that lie, memory bombs, pickles, odd types, files cut
short or of the wrong kind.

tests/offline/test_tensor_store.py covers the ordinary refusals (object and record dtypes, a
truncated file, garbage and unparsable headers, a negative dimension, an expression in the
header, an unknown version, a missing file, a folder, a link out of the dump, the memory
limit). This module adds what a hostile dump would try: every refusal is a `TensorFileError`
whose message is one sentence naming the file, nothing is allocated for what the header
merely declares, and no pickle is ever loaded.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tuidebug.offline.files import npy as tensor_store
from tuidebug.offline.files.npy import (
    TensorDtypeError,
    TensorFileError,
    TensorHeaderError,
    TensorPickleError,
    TensorTooLargeError,
    TensorTruncatedError,
    load_npy,
    peek_header,
    read_header,
)


def _npy(header: bytes, data: bytes = b"", version: bytes = b"\x01\x00") -> bytes:
    """An npy file with a hand-written header dict, padded to 64 bytes as numpy pads it."""
    size = 2 if version[0] == 1 else 4
    padded = header + b" " * ((64 - (8 + size + len(header) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY" + version + len(padded).to_bytes(size, "little") + padded + data


def _write(tmp_path: Path, content: bytes, name: str = "hostile.npy") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def _refused(path: Path, kind: type[TensorFileError] = TensorFileError) -> str:
    """The sentence each reader gives (in memory, mapped, header only): one, naming the file."""
    messages = set()
    for read in (
        lambda: load_npy(path, mmap=True),
        lambda: load_npy(path, mmap=False),
        lambda: read_header(path),
    ):
        with pytest.raises(kind) as err:
            read()
        text = str(err.value)
        assert text.startswith(path.name) and text.endswith(".") and "\n" not in text, text
        messages.add(text)
    return min(messages)


def _header(shape: str, descr: str = "<f4") -> bytes:
    return f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()


# ------------------------------------------------------------------ lying headers
def test_header_declares_more_data_than_the_file_holds(tmp_path: Path) -> None:
    path = _write(tmp_path, _npy(_header("(100,)"), b"\0" * 40))
    text = _refused(path, TensorTruncatedError)
    assert "declares 400 bytes of data but the file holds 40" in text


def test_header_declares_less_data_than_the_file_holds(tmp_path: Path) -> None:
    """Trailing bytes are not data: only what the header declares is read."""
    data = np.arange(4, dtype=np.float32).tobytes() + b"trailing garbage"
    path = _write(tmp_path, _npy(_header("(4,)"), data))
    for mmap in (True, False):
        assert load_npy(path, mmap=mmap).tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("shape", ["(1099511627776, 1099511627776)", "(9" + "9" * 40 + ",)"])
def test_huge_declared_shape_is_refused_before_any_allocation(tmp_path: Path, shape: str) -> None:
    """A memory bomb: a few hundred bytes declaring yottabytes. Refused from the header and
    the file size alone (an allocation of the declared size would fail or swap)."""
    path = _write(tmp_path, _npy(_header(shape)))
    assert "is truncated: its header declares" in _refused(path, TensorTruncatedError)


@pytest.mark.timeout(60)
def test_huge_sparse_tensor_is_mapped_not_read(tmp_path: Path) -> None:
    """A real 1 TiB file (sparse: no disk used) with an honest header: mapping costs nothing,
    the memory limit refuses it, and reading it into memory fails with a sentence."""
    path = tmp_path / "huge.npy"
    nbytes = 1 << 40
    header = _npy(_header(f"({nbytes // 4},)"))
    path.write_bytes(header)
    try:
        os.truncate(path, len(header) + nbytes)
    except OSError:
        pytest.skip("this file system has no sparse files of 1 TiB")
    mapped = load_npy(path, mmap=True)
    assert mapped.shape == (nbytes // 4,)
    with pytest.raises(TensorTooLargeError) as err:
        load_npy(path, max_bytes=1 << 30)
    assert str(err.value) == "huge.npy holds 1024.0 GiB, more than the memory limit of 1.0 GiB."


def test_no_memory_for_an_in_memory_read_is_a_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.npy"
    np.save(path, np.zeros(1 << 17, np.float32))  # above the small-read size

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(tensor_store.np, "empty", no_memory)
    monkeypatch.setattr(tensor_store.np, "fromfile", no_memory)
    with pytest.raises(TensorFileError) as err:
        load_npy(path, mmap=False)
    assert str(err.value) == "big.npy holds 512.0 KiB, more than there is memory to read."


def test_header_length_field_lies(tmp_path: Path) -> None:
    """A version 2 header that says it is 4 GiB long is never read that far."""
    path = _write(tmp_path, b"\x93NUMPY\x02\x00" + (2**32 - 1).to_bytes(4, "little") + b"{")
    assert "not a valid .npy file" in _refused(path, TensorHeaderError)


def test_header_over_the_header_limit(tmp_path: Path) -> None:
    header = _header("(2,)")[:-1] + b"'pad': '" + b"x" * 20_000 + b"'}"
    path = _write(tmp_path, _npy(header, b"\0" * 8, version=b"\x02\x00"))
    assert "not a valid .npy file" in _refused(path, TensorHeaderError)


def test_too_many_dimensions(tmp_path: Path) -> None:
    path = _write(tmp_path, _npy(_header("(" + "1," * 3000 + ")"), b"\0" * 4))
    with pytest.raises(TensorFileError) as err:
        load_npy(path)
    assert str(err.value).startswith("hostile.npy cannot be read: maximum supported dimension")


def test_nested_header_values(tmp_path: Path) -> None:
    path = _write(
        tmp_path, _npy(_header("(2,)")[:-1] + b"'x': " + b"[" * 1000 + b"]" * 1000 + b"}")
    )
    assert "not a valid .npy file" in _refused(path, TensorHeaderError)


# ------------------------------------------------------------------ pickles and odd types
class _Payload:
    """Unpickling this runs a command that creates a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_is_never_loaded(tmp_path: Path) -> None:
    """An object array whose unpickling would run a command: refused from the header, in
    every reader, and the command never runs (it would create the marker)."""
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.npy"
    array = np.empty(1, dtype=object)
    array[0] = _Payload(marker)
    with open(path, "wb") as fh:
        np.save(fh, array, allow_pickle=True)
    assert b"system" in path.read_bytes()  # the payload is there
    text = _refused(path, TensorPickleError)
    assert text == "evil.npy holds Python objects (pickle) and is refused."
    assert peek_header(path) is None  # the fast header reader does not accept it either
    assert not marker.exists()


def test_a_pickle_inside_a_record_type_is_never_loaded(tmp_path: Path) -> None:
    header = b"{'descr': [('a', '|O')], 'fortran_order': False, 'shape': (2,), }"
    path = _write(tmp_path, _npy(header, b"\0" * 16))
    assert "holds Python objects (pickle)" in _refused(path, TensorPickleError)


def test_a_raw_pickle_named_npy(tmp_path: Path) -> None:
    """`np.load(allow_pickle=True)` would unpickle a file that is not an npy at all."""
    marker = tmp_path / "pwned"
    path = _write(tmp_path, pickle.dumps(_Payload(marker)))
    assert "does not start with the npy magic string" in _refused(path, TensorHeaderError)
    assert not marker.exists()


@pytest.mark.parametrize("descr", ["|V8", "<M8[s]", "<m8[s]", "<U99999999", "|S4"])
def test_types_the_debugger_cannot_read(tmp_path: Path, descr: str) -> None:
    path = _write(tmp_path, _npy(_header("(2,)", descr=descr), b"\0" * 16))
    assert "which the debugger cannot read" in _refused(path, TensorDtypeError)


def test_a_sub_array_type_with_a_huge_count(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        _npy(b"{'descr': ('<f4', (1000000000,)), 'fortran_order': False, 'shape': (1,), }"),
    )
    _refused(path, TensorHeaderError)


# ------------------------------------------------------------------ cut short, wrong kind
@pytest.mark.parametrize("keep", [0, 3, 6, 9, 20, 70])
def test_truncated_anywhere_in_the_header(tmp_path: Path, keep: int) -> None:
    whole = _npy(_header("(4,)"), b"\0" * 16)
    path = _write(tmp_path, whole[:keep])
    _refused(path, TensorHeaderError)


@pytest.mark.timeout(60)
def test_a_fifo_named_npy_never_blocks(tmp_path: Path) -> None:
    """Run in a child process: before the fix `load_npy` opened it and waited forever."""
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    script = textwrap.dedent(
        f"""
        from tuidebug.offline.files.npy import TensorFileError, load_npy, read_header
        for call in (lambda: load_npy({str(fifo)!r}), lambda: load_npy({str(fifo)!r}, mmap=False),
                     lambda: read_header({str(fifo)!r})):
            try:
                call()
            except TensorFileError as err:
                print(err)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["pipe.npy is a FIFO (named pipe), not a regular file."] * 3


def test_a_link_loop_named_npy(tmp_path: Path) -> None:
    loop = tmp_path / "loop.npy"
    loop.symlink_to("loop.npy")
    assert _refused(loop) == "loop.npy is a symbolic link loop."
    with pytest.raises(TensorFileError) as err:
        load_npy(loop, root=tmp_path)
    assert str(err.value) == "loop.npy is a symbolic link loop."


def test_a_folder_named_npy(tmp_path: Path) -> None:
    (tmp_path / "dir.npy").mkdir()
    assert _refused(tmp_path / "dir.npy") == "dir.npy is a directory, not a regular file."


def test_permission_denied_keeps_the_name_and_its_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reason was lower-cased with the whole `[Errno 13] … '/path'` text and cut at 120
    characters; now it is the name as written, then the reason."""
    path = tmp_path / "Parameter.FC1_Weight.0.0.1.output.0.DefaultFormat.Float32.npy"
    np.save(path, np.ones(3, np.float32))
    real_open = os.open

    def denied(target, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.fspath(target) == os.fspath(path):
            raise PermissionError(13, "Permission denied", os.fspath(target))
        return real_open(target, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)

    def builtin_open(target, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.fspath(target) == os.fspath(path):
            raise PermissionError(13, "Permission denied", os.fspath(target))
        return open(target, *args, **kwargs)

    monkeypatch.setattr(tensor_store, "open", builtin_open, raising=False)
    assert _refused(path) == f"{path.name} cannot be read: permission denied."
