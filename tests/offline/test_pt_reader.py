"""The `.pt` reader (tuidebug.offline.files.pt): msprobe's real tensor files and torch's own
views read as `torch.load(weights_only=True)` reads them, without torch and without running
the pickle; hostile files (a pickle that calls os.system, zip names that climb out, layouts
past their storage, sizes that lie, a FIFO, a cut file) are each one sentence naming the
file; a seeded fuzz of mutated real files gives an array or that sentence, nothing else.

torch is a test dependency (pyproject's dev extra): it writes the files and is the reference.
"""

from __future__ import annotations

import io
import os
import random
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from tuidebug.offline.files import pt as pt_module
from tuidebug.offline.files.npy import TensorFileError, TensorTooLargeError
from tuidebug.offline.files.pt import PtFileError, PtTooLargeError, load_pt

FOLDERS = ("tensor_mix_fp32", "tensor_mix_bf16")


def _fixture_files(fixtures_dir: Path, folder: str) -> list[Path]:
    files = sorted(
        (fixtures_dir / "msprobe_mlp" / folder).glob("step*/proc*/dump_tensor_data/*.pt")
    )
    assert files, folder
    return files


def _reference(tensor: torch.Tensor) -> np.ndarray:
    """torch's tensor as numpy, bfloat16 as ml_dtypes' (torch's numpy() refuses it)."""
    tensor = tensor.detach().resolve_conj().resolve_neg().contiguous()
    if tensor.dtype == torch.bfloat16:
        import ml_dtypes

        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def _assert_same(array: np.ndarray, tensor: torch.Tensor) -> None:
    expected = _reference(tensor)
    assert array.dtype == expected.dtype
    assert array.shape == expected.shape
    assert np.ascontiguousarray(array).tobytes() == expected.tobytes()


def _saved(tensor: torch.Tensor) -> bytes:
    buf = io.BytesIO()
    torch.save(tensor, buf)
    return buf.getvalue()


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _write(tmp_path: Path, data: bytes, name: str = "t.pt") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _refused(path: Path, *words: str) -> PtFileError:
    """The reader's error for `path`, checked to be one sentence naming the file."""
    with pytest.raises(PtFileError) as info:
        load_pt(path)
    text = str(info.value)
    assert path.name in text
    assert text.endswith(".") and "\n" not in text
    for word in words:
        assert word in text, text
    return info.value


# --- hand-written pickles: protocol 2 opcodes, as torch.save writes them -----------------


def _str(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _int(value: int) -> bytes:
    raw = value.to_bytes((value.bit_length() + 8) // 8 or 1, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw  # LONG1: any size, any sign


def _tuple(items: tuple[int, ...]) -> bytes:
    return b"(" + b"".join(_int(i) for i in items) + b"t"


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _tensor_pickle(
    numel: int,
    offset: int,
    size: tuple[int, ...],
    stride: tuple[int, ...],
    storage: str = "FloatStorage",
    key: str = "0",
) -> bytes:
    return (
        b"\x80\x02"
        + _global("torch._utils", "_rebuild_tensor_v2")
        + b"(("
        + _str("storage")
        + _global("torch", storage)
        + _str(key)
        + _str("cpu")
        + _int(numel)
        + b"tQ"  # the storage record, loaded by persistent_load
        + _int(offset)
        + _tuple(size)
        + _tuple(stride)
        + b"\x89"
        + _global("collections", "OrderedDict")
        + b")R"
        + b"tR."
    )


def _with_pickle(pickled: bytes, data: bytes = b"\x00" * 24) -> bytes:
    """A torch.save zip of six float32 values (`data`) whose data.pkl is `pickled`."""
    members = _members(_saved(torch.zeros(6)))
    members["archive/data.pkl"] = pickled
    members["archive/data/0"] = data
    return _zip(members)


# --- real files and torch's own layouts ---------------------------------------------------


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_msprobe_tensor_reads_as_torch_load(fixtures_dir: Path, folder: str) -> None:
    dtypes = set()
    for path in _fixture_files(fixtures_dir, folder):
        array = load_pt(path)
        _assert_same(array, torch.load(path, weights_only=True))
        assert not array.flags.writeable
        dtypes.add(str(array.dtype))
    assert "float32" in dtypes
    if folder.endswith("bf16"):
        assert "bfloat16" in dtypes


def _views() -> dict[str, torch.Tensor]:
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    return {
        "slice": base[1:3, 2:5],
        "transposed": base.t(),
        "offset": base.flatten()[7:],
        "strided": base[:, ::2],
        "expanded": torch.arange(3.0).expand(4, 3),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0),
        "empty_2d": torch.zeros(3, 0),
        "empty_slice": base[2:2],
        "bfloat16_slice": base.to(torch.bfloat16)[1:, 3:],
        "float16": base.half(),
        "float64": base.double().t(),
        "int64": torch.arange(5),
        "int8": torch.arange(-3, 3, dtype=torch.int8),
        "uint8": torch.arange(5, dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "uint16_v3": torch.tensor([1, 2, 65535], dtype=torch.uint16),
        "complex_conj": torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64).conj(),
        "parameter": torch.nn.Parameter(torch.ones(2, 3)),
        "requires_grad": torch.ones(3, requires_grad=True),
    }


@pytest.mark.parametrize("name", list(_views()))
def test_views_scalars_and_empty_tensors(tmp_path: Path, name: str) -> None:
    tensor = _views()[name]
    path = _write(tmp_path, _saved(tensor))
    _assert_same(load_pt(path), torch.load(path, weights_only=True))


def test_a_hand_written_pickle_reads_like_torchs(tmp_path: Path) -> None:
    # the helper the hostile cases lie with, telling the truth first
    data = np.arange(6, dtype="<f4").tobytes()
    path = _write(tmp_path, _with_pickle(_tensor_pickle(6, 1, (2, 2), (1, 2)), data))
    _assert_same(load_pt(path), torch.load(path, weights_only=True))
    assert load_pt(path).tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_big_endian_storages_are_swapped(tmp_path: Path) -> None:
    for tensor in (torch.arange(6.0), torch.arange(6.0).to(torch.bfloat16), torch.arange(4)):
        members = _members(_saved(tensor))
        itemsize = tensor.element_size()
        raw = np.frombuffer(members["archive/data/0"], f"<u{itemsize}").byteswap()
        members["archive/data/0"] = raw.tobytes()
        members["archive/byteorder"] = b"big"
        path = _write(tmp_path, _zip(members))
        _assert_same(load_pt(path), torch.load(path, weights_only=True))


def test_root_confines_links_and_max_bytes_refuses(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    root.mkdir()
    outside = _write(tmp_path, _saved(torch.ones(4)), "outside.pt")
    (root / "link.pt").symlink_to(outside)
    with pytest.raises(PtFileError, match="outside the dump folder"):
        load_pt(root / "link.pt", root=root)
    inside = _write(root, _saved(torch.ones(4)), "inside.pt")
    assert load_pt(inside, root=root).tolist() == [1.0] * 4
    with pytest.raises(PtTooLargeError) as info:
        load_pt(inside, max_bytes=8)
    assert isinstance(info.value, TensorTooLargeError) and isinstance(info.value, TensorFileError)
    assert info.value.nbytes == 16 and "inside.pt" in str(info.value)


# --- hostile files ----------------------------------------------------------------------


def test_a_pickle_calling_os_system_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    command = f"touch {marker}"
    payloads = {
        "global_reduce": b"\x80\x02" + _global("os", "system") + _str(command) + b"\x85R.",
        "stack_global": b"\x80\x04"
        + _str("os")
        + _str("system")
        + b"\x93"
        + _str(command)
        + b"\x85R.",
        "posix": b"\x80\x02" + _global("posix", "system") + _str(command) + b"\x85R.",
        "subprocess": b"\x80\x02"
        + _global("subprocess", "check_call")
        + b"("
        + _str("touch")
        + _str(str(marker))
        + b"l\x85R.",
        "builtins_eval": b"\x80\x02"
        + _global("builtins", "eval")
        + _str(f"open({str(marker)!r}, 'w')")
        + b"\x85R.",
    }
    for name, pickled in payloads.items():
        path = _write(tmp_path, _with_pickle(pickled), f"{name}.pt")
        _refused(path, "which is not a tensor's")
    # what Python's own pickle writes for an object whose __reduce__ calls os.system
    evil = pickle_of_reduce(os.system, (command,))
    _refused(_write(tmp_path, _with_pickle(evil), "reduce.pt"))
    assert not marker.exists()


def pickle_of_reduce(func: object, args: tuple[object, ...]) -> bytes:
    import pickle

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[object, ...]]:
            return func, args

    return pickle.dumps(Evil(), protocol=2)


@pytest.mark.parametrize(
    ("pickled", "words"),
    [
        # BUILD on the rebuilt tensor (torch's own tensors never carry state this way)
        (_tensor_pickle(6, 0, (6,), (1,))[:-1] + b"}b.", ("BUILD",)),
        (b"\x80\x02(" + _global("os", "system") + _str("true") + b"o.", ("OBJ",)),
        (b"\x80\x02(" + _str("x") + b"ios\nsystem\n.", ("INST",)),
        (b"\x80\x02\x82\x01.", ("EXT1",)),
        (b"\x80\x02N\x94r\x00\x00\x00\xf0.", ("memo index",)),  # LONG_BINPUT 4e9
        # a storage class called (REDUCE of an admitted name that is no function)
        (b"\x80\x02" + _global("torch", "FloatStorage") + b")R.", ("damaged",)),
        # a REDUCE of the rebuild with a string for the storage
        (
            b"\x80\x02"
            + _global("torch._utils", "_rebuild_tensor")
            + b"("
            + _str("x")
            + b"K\x00))tR.",
            ("not rebuilt from a storage",),
        ),
        (b"\x80\x02}q\x00.", ("holds a dict, not a tensor",)),
        (
            b"\x80\x02(" + _str("storage") + b"K\x00" + _str("0") + _str("cpu") + b"K\x06tQ.",
            ("no storage type",),
        ),
        (b"\x80\x02(" + _str("module") + b"tQ.", ("other than a storage",)),
        (b"garbage", ("damaged",)),
        (b"", ("damaged",)),
    ],
)
def test_pickles_that_are_not_a_tensor(tmp_path: Path, pickled: bytes, words: tuple[str]) -> None:
    _refused(_write(tmp_path, _with_pickle(pickled)), *words)


def test_zip_names_that_climb_out_are_refused(tmp_path: Path) -> None:
    members = _members(_saved(torch.ones(2)))
    for bad in ("../evil", "archive/../../evil", "/etc/passwd", "archive\\..\\x", "C:/x"):
        path = _write(tmp_path, _zip({**members, bad: b"x"}))
        _refused(path, "member named")
    _refused(_write(tmp_path, _zip({"x/data.pkl": b"", "y/data.pkl": b""})), "more than one")


def test_layouts_outside_their_storage(tmp_path: Path) -> None:
    cases = {
        "offset_past_end": (_tensor_pickle(6, 6, (1,), (1,)), "reaches element 6"),
        "offset_huge": (_tensor_pickle(6, 1 << 62, (1,), (1,)), "reaches element"),
        "stride_lie": (_tensor_pickle(6, 0, (4, 4), (4, 1)), "reaches element 15"),
        "negative_stride": (_tensor_pickle(6, 5, (6,), (-1,)), "stride holds -1"),
        "negative_size": (_tensor_pickle(6, 0, (-1,), (1,)), "size holds -1"),
        "int64_overflow": (_tensor_pickle(6, 0, (1 << 64,), (1,)), "size holds"),
        "rank_mismatch": (_tensor_pickle(6, 0, (2, 3), (1,)), "2 dimensions but 1 strides"),
        "many_dims": (_tensor_pickle(6, 0, (1,) * 65, (1,) * 65), "at most 64"),
        "missing_storage": (_tensor_pickle(6, 0, (6,), (1,), key="7"), "no data/7 member"),
        "bad_key": (_tensor_pickle(6, 0, (6,), (1,), key="../0"), "is not a name"),
        # the storage says 2 GB; the member holds 24 bytes: refused before anything is read
        "two_gb_storage": (
            _tensor_pickle(500_000_000, 0, (500_000_000,), (1,)),
            "declares 2,000,000,000 bytes but data/0 holds 24",
        ),
        "wrong_dtype_storage": (
            _tensor_pickle(6, 0, (6,), (1,), storage="QInt8Storage"),
            "QInt8Storage",
        ),
    }
    for name, (pickled, words) in cases.items():
        _refused(_write(tmp_path, _with_pickle(pickled), f"{name}.pt"), words)


def _patch_central_sizes(data: bytes, member: str, compressed: int, size: int) -> bytes:
    """`data` with the central directory's sizes of `member` replaced."""
    at = data.find(b"PK\x01\x02")
    out = bytearray(data)
    while at >= 0:
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + name_len] == member.encode():
            struct.pack_into("<LL", out, at + 20, compressed, size)
            return bytes(out)
        at = data.find(b"PK\x01\x02", at + 46)
    raise AssertionError(member)


def test_declared_sizes_of_two_gb_cost_nothing(tmp_path: Path) -> None:
    data = _saved(torch.ones(6))
    two_gb = 2_000_000_000
    cases = {
        "data_member": _patch_central_sizes(data, "archive/data/0", 24, two_gb),
        "both_sizes": _patch_central_sizes(data, "archive/data/0", two_gb, two_gb),
        "pickle_member": _patch_central_sizes(data, "archive/data.pkl", two_gb, two_gb),
    }
    for name, patched in cases.items():
        path = _write(tmp_path, patched, f"{name}.pt")
        tracemalloc.start()
        try:
            _refused(path, "2,000,000,000 bytes")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 << 20, (name, peak)


def test_a_deflated_bomb_is_read_only_as_far_as_it_declares(tmp_path: Path) -> None:
    members = _members(_saved(torch.ones(6)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, raw in members.items():
            zf.writestr(name, raw if name != "archive/data/0" else b"\x00" * (8 << 20))
    # the member declares 8 MiB; the tensor needs 24 bytes: refused from the directory
    _refused(_write(tmp_path, buf.getvalue()), "declares 24 bytes but data/0 holds 8,388,608")


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "t.pt"
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def read() -> None:
        try:
            load_pt(fifo)
        except BaseException as err:
            errors.append(err)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "reading a FIFO blocked"
    assert len(errors) == 1 and isinstance(errors[0], PtFileError)
    assert str(errors[0]) == "t.pt is a FIFO (named pipe), not a regular file."


def test_files_that_are_not_tensor_zips(fixtures_dir: Path, tmp_path: Path) -> None:
    real = _fixture_files(fixtures_dir, "tensor_mix_fp32")[0].read_bytes()
    for cut in (0, 10, 30, len(real) // 2, len(real) - 30, len(real) - 1):
        _refused(_write(tmp_path, real[:cut], f"cut_{cut}.pt"))
    _refused(_write(tmp_path, b"\x93NUMPY" + b"\x00" * 100, "npy.pt"), "not a zip")
    (tmp_path / "folder.pt").mkdir()
    _refused(tmp_path / "folder.pt", "directory")
    _refused(tmp_path / "missing.pt", "does not exist")
    _refused(_write(tmp_path, _zip({"a/b": b"x"}), "no_pickle.pt"), "no archive/data.pkl")


def test_member_and_directory_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    members = _members(_saved(torch.ones(2)))
    many = {**members, **{f"archive/extra/{i}": b"" for i in range(1100)}}
    _refused(_write(tmp_path, _zip(many), "many.pt"), "1,107 members")
    monkeypatch.setattr(pt_module, "MAX_DIRECTORY_BYTES", 200)
    _refused(_write(tmp_path, _zip(members), "dir.pt"), "zip directory takes")
    monkeypatch.setattr(pt_module, "MAX_DIRECTORY_BYTES", 1 << 20)
    monkeypatch.setattr(pt_module, "MAX_PICKLE_OPS", 10)
    _refused(_write(tmp_path, _zip(members), "ops.pt"), "more than 10 opcodes")
    monkeypatch.setattr(pt_module, "MAX_FILE_BYTES", 100)
    _refused(_write(tmp_path, _zip(members), "big.pt"), "more than the 100")


# --- fuzz -------------------------------------------------------------------------------


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0 or not out:  # flip a few bytes
        for _ in range(rng.randint(1, 8)):
            if out:
                out[rng.randrange(len(out))] = rng.randrange(256)
    elif kind == 1:  # cut
        del out[rng.randrange(len(out)) :]
    elif kind == 2:  # insert random bytes
        at = rng.randrange(len(out) + 1)
        out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    elif kind == 3:  # delete a run
        at = rng.randrange(len(out))
        del out[at : at + rng.randint(1, 16)]
    else:  # an integer field set to an extreme
        at = rng.randrange(max(len(out) - 4, 1))
        out[at : at + 4] = rng.choice(
            [b"\xff\xff\xff\xff", b"\x00\x00\x00\x80", b"\x00\x00\x00\x00"]
        )
    return bytes(out)


@pytest.mark.timeout(60)
def test_fuzz_of_mutated_real_files(fixtures_dir: Path, tmp_path: Path) -> None:
    rng = random.Random(29)
    sources = [
        p.read_bytes() for folder in FOLDERS for p in _fixture_files(fixtures_dir, folder)[::97]
    ]
    started = time.monotonic()
    outcomes = {"array": 0, "refused": 0}
    for i in range(400):
        source = rng.choice(sources)
        if i % 2:
            data = _mutate(rng, source)  # the file's bytes: the zip reader first
        else:
            # the pickle's bytes, re-zipped with good checksums: the unpickler itself
            members = _members(source)
            pkl = next(n for n in members if n.endswith("/data.pkl"))
            members[pkl] = _mutate(rng, members[pkl])
            data = _zip(members)
        path = _write(tmp_path, data, f"f{i}.pt")
        try:
            array = load_pt(path)
        except PtFileError as err:
            assert path.name in str(err) and "\n" not in str(err)
            outcomes["refused"] += 1
        else:
            assert isinstance(array, np.ndarray)
            outcomes["array"] += 1
    assert time.monotonic() - started < 20
    assert outcomes["refused"] > 100 and outcomes["array"] > 10, outcomes


def test_importing_the_reader_does_not_import_torch() -> None:
    code = (
        "import sys; import tuidebug.offline.files.pt; "
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


# --- mmap=True: the storage mapped, not copied (tuidebug compare's big dumps) --------------


@pytest.mark.parametrize("folder", FOLDERS)
def test_mapped_equals_read(fixtures_dir: Path, folder: str) -> None:
    for path in _fixture_files(fixtures_dir, folder):
        mapped, read = load_pt(path, mmap=True), load_pt(path)
        assert mapped.dtype == read.dtype and mapped.shape == read.shape
        assert mapped.tobytes() == read.tobytes() and not mapped.flags.writeable


def test_mapped_checks_crc_header_and_extent(tmp_path: Path) -> None:
    tensor = torch.arange(64, dtype=torch.float32)
    data = bytearray(_saved(tensor))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = next(i for i in zf.infolist() if "/data/" in i.filename)
    name_len, extra_len = struct.unpack(
        "<HH", data[info.header_offset + 26 : info.header_offset + 30]
    )
    start = info.header_offset + 30 + name_len + extra_len
    _assert_same(load_pt(_write(tmp_path, bytes(data)), mmap=True), tensor)
    flipped = bytearray(data)
    flipped[start + 5] ^= 0xFF  # one bit of the values: the CRC no longer holds
    with pytest.raises(PtFileError, match="CRC"):
        load_pt(_write(tmp_path, bytes(flipped), "crc.pt"), mmap=True)
    header = bytearray(data)
    header[info.header_offset : info.header_offset + 4] = b"XXXX"
    with pytest.raises(PtFileError, match="local header"):
        load_pt(_write(tmp_path, bytes(header), "header.pt"), mmap=True)
