"""Ascend `.bin` dump files (issue 16 item 3): header, buffers, device formats, bad files."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO
from tests.constructed import bin_dump as constructed
from tuidebug._proto import dump_data_pb2 as pb
from tuidebug.offline.files import bin as bin_dump
from tuidebug.offline.files.bin import (
    BinFileName,
    parse_bin_file_name,
    read_bin_header,
    read_bin_tensor,
)
from tuidebug.offline.files.npy import (
    TensorFileError,
    TensorHeaderError,
    TensorMissingError,
    TensorNotRegularError,
    TensorTooLargeError,
    TensorTruncatedError,
)

COMMITTED = REPO / "tests" / "data" / "constructed" / constructed.FOLDER


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return constructed.write(tmp_path_factory.mktemp("constructed"))


def _one_sentence(err: BaseException, name: str) -> None:
    text = str(err)
    assert name in text
    assert text.endswith(".") and "\n" not in text
    assert "Traceback" not in text


def _write(path: Path, message: pb.DumpData, segment: bytes = b"") -> Path:
    header = message.SerializeToString()
    path.write_bytes(len(header).to_bytes(8, "little") + header + segment)
    return path


# ---------------------------------------------------------------------------- round trip

CASES = [(name, key) for name, tensors in constructed.expected().items() for key in tensors]


@pytest.mark.parametrize(
    ("name", "key"), CASES, ids=[f"{n.split('.')[0]}-{k[0]}{k[1]}" for n, k in CASES]
)
def test_round_trip(folder: Path, name: str, key: tuple[str, int]) -> None:
    expected = constructed.expected()[name][key]
    dump = read_bin_header(folder / name)
    got = read_bin_tensor(folder / name, dump, key[0], key[1])  # type: ignore[arg-type]
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_committed_fixture_is_what_the_writer_writes(folder: Path) -> None:
    written = sorted(p.name for p in folder.iterdir())
    assert written == sorted(p.name for p in COMMITTED.iterdir())
    for name in written:
        assert (folder / name).read_bytes() == (COMMITTED / name).read_bytes(), name


def test_header_describes_every_tensor(folder: Path) -> None:
    dump = read_bin_header(folder / constructed.CONV)
    assert dump.op_type == "Conv2D"
    assert dump.op_name == "Default/network-Net/conv1-Conv2d/Conv2D-op2"
    assert dump.timestamp == 1700000000000002
    assert dump.dump_time == constructed.DUMP_TIME + 2
    x, w = dump.inputs
    (y,) = dump.outputs
    assert (x.format_name, x.data_type_name, x.shape, x.original_shape) == (
        "NC1HWC0",
        "DT_FLOAT16",
        (1, 1, 4, 4, 16),
        (1, 3, 4, 4),
    )
    assert (w.format_name, w.shape, w.host_shape) == ("FRACTAL_Z", (4, 1, 16, 16), (5, 3, 2, 2))
    assert x.converted and w.converted and y.converted
    # buffers follow the header: inputs in order, then outputs
    assert x.offset == 8 + dump.header_bytes
    assert w.offset == x.offset + x.size
    assert y.offset == w.offset + w.size
    assert y.offset + y.size == dump.file_size


def test_unknown_formats_come_back_raw_and_flagged(folder: Path) -> None:
    dump = read_bin_header(folder / constructed.TRANS)
    (c1hwncoc0,) = dump.inputs
    (numbered,) = dump.outputs
    assert not c1hwncoc0.converted and "C1HWNCoC0" in c1hwncoc0.reason
    assert not numbered.converted and numbered.format_name == "format 200"
    assert "200" in numbered.reason
    raw = read_bin_tensor(folder / constructed.TRANS, dump, "input", 0)
    assert raw.shape == c1hwncoc0.shape  # its device shape, not the original (2, 16, 1, 1)


def _nc1hwc0_message(original: tuple[int, ...] | None) -> tuple[pb.DumpData, bytes]:
    data = np.arange(32, dtype="<f2").reshape(1, 2, 1, 1, 16)
    message = pb.DumpData(op_name="x")
    tensor = message.output.add(data_type=pb.DT_FLOAT16, format=pb.FORMAT_NC1HWC0)
    tensor.shape.dim.extend(data.shape)
    if original is not None:
        tensor.original_shape.dim.extend(original)
    tensor.size = data.nbytes
    return message, data.tobytes()


def test_missing_original_shape_is_not_guessed(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.bin", *_nc1hwc0_message(None))
    dump = read_bin_header(path)
    (out,) = dump.outputs
    assert not out.converted and "original shape" in out.reason
    assert read_bin_tensor(path, dump, "output", 0).shape == (1, 2, 1, 1, 16)


def test_original_shape_that_does_not_fit_is_not_guessed(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.bin", *_nc1hwc0_message((1, 40, 1, 1)))  # C1 would be 3
    (out,) = read_bin_header(path).outputs
    assert not out.converted and "does not fit" in out.reason


def test_lower_rank_original_of_nc1hwc0(tmp_path: Path) -> None:
    path = _write(tmp_path / "f.bin", *_nc1hwc0_message((20,)))  # a bias: (1, C, 1, 1)
    dump = read_bin_header(path)
    got = read_bin_tensor(path, dump, "output", 0)
    np.testing.assert_array_equal(got, np.arange(20, dtype=np.float16))


def test_bytes_inside_the_header_are_used(tmp_path: Path) -> None:
    data = np.array([1.0, 2.0, 3.0], "<f4")
    message = pb.DumpData(op_name="x")
    tensor = message.input.add(data_type=pb.DT_FLOAT, format=pb.FORMAT_ND, data=data.tobytes())
    tensor.shape.dim.append(3)
    tensor.size = data.nbytes
    after = np.array([7], "<i4")
    out = message.output.add(data_type=pb.DT_INT32, format=pb.FORMAT_ND, size=4)
    out.shape.dim.append(1)
    path = _write(tmp_path / "f.bin", message, after.tobytes())
    dump = read_bin_header(path)
    assert dump.inputs[0].offset is None
    np.testing.assert_array_equal(read_bin_tensor(path, dump, "input", 0), data)
    np.testing.assert_array_equal(read_bin_tensor(path, dump, "output", 0), after)


# ---------------------------------------------------------------------------- names


def test_parse_bin_file_name() -> None:
    assert parse_bin_file_name(constructed.ADD) == BinFileName(
        "Add", "Default_network-Net_Add-op1", 2, 7, 1700000000000001
    )
    assert parse_bin_file_name("Add.a.b.65535.65535.12") == BinFileName(
        "Add", "a.b", 65535, 65535, 12
    )
    assert parse_bin_file_name("net_Add-op1.Add.2.7.12", op_name_first=True) == BinFileName(
        "Add", "net_Add-op1", 2, 7, 12
    )
    for name in ("1700000001", "Add.op.2.7", "Add.op.x.7.12", "Add.op.2.7.12.npy", ".op.2.7.1"):
        assert parse_bin_file_name(name) is None, name


# ---------------------------------------------------------------------------- bad files


def test_truncated_before_the_length(tmp_path: Path) -> None:
    path = tmp_path / "Add.op.1.2.3"
    path.write_bytes(b"\x01\x02\x03")
    with pytest.raises(TensorHeaderError) as err:
        read_bin_header(path)
    _one_sentence(err.value, path.name)


def test_truncated_header(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / constructed.ADD
    path.write_bytes((folder / constructed.ADD).read_bytes()[:40])
    with pytest.raises(TensorHeaderError) as err:
        read_bin_header(path)
    _one_sentence(err.value, path.name)


@pytest.mark.timeout(10)
def test_lying_length_prefix_allocates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes((1 << 62).to_bytes(8, "little") + b"\x00" * 64)
    tracemalloc.start()
    try:
        with pytest.raises(TensorHeaderError) as err:
            read_bin_header(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    _one_sentence(err.value, "f")


def test_header_over_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bin_dump, "MAX_HEADER_BYTES", 16)
    path = tmp_path / "f"
    path.write_bytes((32).to_bytes(8, "little") + b"\x00" * 32)
    with pytest.raises(TensorHeaderError, match="refused") as err:
        read_bin_header(path)
    _one_sentence(err.value, "f")


def test_header_that_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes((4).to_bytes(8, "little") + b"\xff\xff\xff\xff")
    with pytest.raises(TensorHeaderError, match="does not parse") as err:
        read_bin_header(path)
    _one_sentence(err.value, "f")


def test_buffer_past_the_end(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / constructed.CONV
    path.write_bytes((folder / constructed.CONV).read_bytes()[:-10])
    dump = read_bin_header(path)  # the header is fine; the others stay readable
    np.testing.assert_array_equal(
        read_bin_tensor(path, dump, "input", 1),
        constructed.expected()[constructed.CONV][("input", 1)],
    )
    with pytest.raises(TensorTruncatedError) as err:
        read_bin_tensor(path, dump, "output", 0)
    _one_sentence(err.value, path.name)


@pytest.mark.timeout(10)
def test_huge_claimed_size_never_allocates(tmp_path: Path) -> None:
    message = pb.DumpData(op_name="x")
    tensor = message.output.add(data_type=pb.DT_FLOAT, format=pb.FORMAT_ND, size=1 << 60)
    tensor.shape.dim.extend([1 << 29, 1 << 29])
    path = _write(tmp_path / "f", message, b"\x00" * 16)
    dump = read_bin_header(path)
    assert dump.outputs[0].converted  # shape and size agree: only the file is short
    tracemalloc.start()
    try:
        with pytest.raises(TensorTruncatedError) as err:
            read_bin_tensor(path, dump, "output", 0)
        with pytest.raises(TensorTooLargeError) as too_large:
            read_bin_tensor(path, dump, "output", 0, max_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    _one_sentence(err.value, "f")
    _one_sentence(too_large.value, "f")


def test_size_disagreeing_with_shape_is_raw(tmp_path: Path) -> None:
    message = pb.DumpData(op_name="x")
    tensor = message.output.add(data_type=pb.DT_FLOAT, format=pb.FORMAT_ND, size=8)
    tensor.shape.dim.extend([3])
    path = _write(tmp_path / "f", message, np.array([1, 2], "<f4").tobytes())
    dump = read_bin_header(path)
    assert not dump.outputs[0].converted and "does not match" in dump.outputs[0].reason
    np.testing.assert_array_equal(read_bin_tensor(path, dump, "output", 0), [1, 2])


def test_a_shape_no_array_can_have_is_one_sentence(tmp_path: Path) -> None:
    """Dims are uint64: (0, 2**63) holds 0 bytes, so its size agrees, yet numpy's reshape
    raised ValueError (no file error) and aborted the whole check."""
    message = pb.DumpData(op_name="x")
    huge = message.output.add(data_type=pb.DT_FLOAT, format=pb.FORMAT_ND, size=0)
    huge.shape.dim.extend([0, 1 << 63])
    bytes_ = message.output.add(data_type=pb.DT_FLOAT, format=pb.FORMAT_ND, size=0)
    bytes_.shape.dim.extend([0, 1 << 61, 4])  # each dim fits intp, their bytes do not
    deep = message.output.add(data_type=pb.DT_FLOAT, format=pb.FORMAT_ND, size=4)
    deep.shape.dim.extend([1] * 65)  # more dimensions than numpy has
    # FRACTAL_NZ of an empty batch: the device shape is fine, the original is not
    nz = message.output.add(data_type=pb.DT_FLOAT16, format=pb.FORMAT_FRACTAL_NZ, size=0)
    nz.shape.dim.extend([0, 1, 1, 16, 16])
    nz.original_shape.dim.extend([0, 1 << 63, 3, 5])
    fine = message.output.add(data_type=pb.DT_FLOAT, format=pb.FORMAT_ND, size=8)
    fine.shape.dim.extend([2])
    path = _write(tmp_path / "f", message, b"\x00" * 4 + np.array([1, 2], "<f4").tobytes())
    dump = read_bin_header(path)
    for slot in (0, 1):
        t = dump.outputs[slot]
        assert not t.converted and "is too large for an array" in t.reason, t.reason
        with pytest.raises(TensorHeaderError, match="no array can have") as err:
            read_bin_tensor(path, dump, "output", slot)
        _one_sentence(err.value, "f")
    with pytest.raises(TensorHeaderError, match="no array can have") as deep_err:
        read_bin_tensor(path, dump, "output", 2)
    _one_sentence(deep_err.value, "f")
    assert not dump.outputs[3].converted and "original shape" in dump.outputs[3].reason
    assert read_bin_tensor(path, dump, "output", 3).shape == (0, 1, 1, 16, 16)  # raw
    np.testing.assert_array_equal(read_bin_tensor(path, dump, "output", 4), [1, 2])


@pytest.mark.timeout(10)
def test_a_header_of_too_many_slots_is_refused_before_building_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty OpOutput is 2 bytes: 2 MiB of header made 1M tensors of the dump's index."""
    built: list[int] = []
    real = bin_dump._tensor

    def counted(*args: object) -> bin_dump.BinTensor:
        built.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(bin_dump, "_tensor", counted)
    header = b"\x1a\x00" * (1 << 20)  # field 3 (output), length 0: a million outputs
    path = tmp_path / "Add.op.1.2.3"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(TensorHeaderError, match="refused") as err:
        read_bin_header(path)
    _one_sentence(err.value, path.name)
    assert "1,048,576 inputs and outputs" in str(err.value)
    assert built == []
    # at the cap, inputs and outputs together, it is read
    message = pb.DumpData(op_name="x")
    for _ in range(bin_dump.MAX_SLOTS // 2):
        message.input.add()
        message.output.add()
    assert len(read_bin_header(_write(tmp_path / "g", message)).outputs) == bin_dump.MAX_SLOTS // 2
    message.output.add()
    with pytest.raises(TensorHeaderError, match="refused"):
        read_bin_header(_write(tmp_path / "g", message))


@pytest.mark.timeout(10)
def test_a_header_past_the_real_cap_is_not_parsed(tmp_path: Path) -> None:
    """Parsing 64 MiB of empty entries built 33M messages (2.6 GiB); the cap is a few MiB."""
    header = b"\x1a\x00" * ((bin_dump.MAX_HEADER_BYTES >> 1) + 1)
    path = tmp_path / "Add.op.1.2.3"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(TensorHeaderError, match="larger than") as err:
        read_bin_header(path)
    _one_sentence(err.value, path.name)
    assert bin_dump.MAX_HEADER_BYTES <= 8 << 20


@pytest.mark.timeout(10)
def test_fifo_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "Add.op.1.2.3"
    os.mkfifo(path)
    with pytest.raises(TensorNotRegularError) as err:
        read_bin_header(path)
    _one_sentence(err.value, path.name)


@pytest.mark.timeout(10)
def test_file_swapped_for_a_fifo_after_indexing(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / constructed.ADD
    path.write_bytes((folder / constructed.ADD).read_bytes())
    dump = read_bin_header(path)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(TensorNotRegularError) as err:
        read_bin_tensor(path, dump, "input", 0)
    _one_sentence(err.value, path.name)


def test_missing_file_and_missing_slot(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(TensorMissingError) as err:
        read_bin_header(tmp_path / "gone")
    _one_sentence(err.value, "gone")
    dump = read_bin_header(folder / constructed.ADD)
    with pytest.raises(TensorFileError) as slot_err:
        read_bin_tensor(folder / constructed.ADD, dump, "output", 3)
    _one_sentence(slot_err.value, constructed.ADD)
