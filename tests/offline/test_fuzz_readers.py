"""Structure-aware fuzzing of every reader of untrusted dump bytes (issue 27 §2).

Each reader gets a few hundred mutations of real or constructed files (truncated, bytes
flipped, tokens spliced in, lengths, shapes and dtypes that lie) from a seeded
`random.Random`, so a run is reproducible: the only outcomes allowed are success or the
reader's own error type with a one-line sentence. Each campaign runs in a child process
whose address space is capped (RLIMIT_AS), so a reader that allocated what a header merely
declares fails with a MemoryError instead of swapping the machine, and under a timeout.
The whole module takes a few seconds per reader on two cores.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONSTRUCTED = REPO / "tests" / "data" / "constructed"
CHILD_MEMORY = 2 << 30  # bytes of address space per campaign: far below what a bomb asks
CHILD_TIMEOUT = 120  # seconds; a campaign takes a few
SEED = 27  # the number: any fixed seed makes the run reproducible
TOKENS = [
    b"{", b"}", b"(", b")", b",", b"'", b'"', b":", b"\n", b"\\", b"\x00", b"\xff", b"-1",
    b"99999999999999999999", b"9" * 5000, b"(" * 300, b"True", b"None", b"[", b"]", b"|O",
    b"<f8", b"lambda", b"1j", b"4L", b"\r", b"#",
]  # fmt: skip
# varint-sized values a length, a size or a dimension may lie with
LIES = [0, 1, 3, 16, 2**31 - 1, 2**32 - 1, 2**62, 2**63 - 1, 2**64 - 1, 10**6]


def _splice(rng: random.Random, data: bytes, within: int | None = None) -> bytes:
    """1–4 byte-level mutations, mostly in the first `within` bytes (the header)."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        span = max(1, min(len(out), within or len(out)))
        op = rng.randrange(5)
        if op == 0:
            del out[rng.randrange(len(out) + 1) :]  # truncated anywhere
        elif op == 1 and out:
            out[rng.randrange(span)] = rng.randrange(256)  # a byte flipped
        elif op == 2:
            at = rng.randrange(span + 1)
            out[at:at] = rng.choice(TOKENS)  # a token spliced in
        elif op == 3 and len(out) > 2:
            at = rng.randrange(span)
            del out[at : at + rng.randrange(1, 16)]  # a piece cut out
        elif op == 4 and out:
            at = rng.randrange(span)
            out[at:at] = out[rng.randrange(len(out)) :][:32]  # a piece of itself repeated
    return bytes(out)


# ------------------------------------------------------------------ .npy
def _npy_seeds() -> list[bytes]:
    files = sorted((CONSTRUCTED / "async_o2").rglob("*.npy"))
    files += sorted((CONSTRUCTED / "overflow").rglob("*.npy"))
    seeds = [f.read_bytes() for f in files if f.stat().st_size < 1 << 16]
    import numpy as np

    from tests.offline.test_reader_escapes import _npy

    seeds.append(_npy(b"{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), }", b"\0" * 48))
    seeds.append(_npy(b"{'descr': '<i2', 'fortran_order': False, 'shape': (), }", b"\0\0", b"\2\0"))
    seeds.append(np.lib.format.magic(1, 0) + b"\x10\x00{'descr': '<u1',")
    return seeds


def _npy_mutant(rng: random.Random, seed: bytes) -> bytes:
    if rng.random() < 0.4:
        # a header that lies: its shape, dtype or length replaced
        end = seed.find(b"\n", 10)
        header = seed[10:end] if end > 0 else seed[10:]
        choice = rng.randrange(3)
        if choice == 0:
            dims = ",".join(str(rng.choice([*LIES, -1, 0, 2])) for _ in range(rng.randint(0, 70)))
            header = header.replace(header[header.find(b"(") :], f"({dims},), }}".encode())
        elif choice == 1:
            descr = rng.choice(["<f4", "|O", "V99999999999", "S0", "<M8[Y]", "[('a','<f4')]", "u9"])
            header = header.replace(b"<f4", descr.encode()).replace(b"<f2", descr.encode())
        else:
            return seed[:8] + rng.choice(LIES).to_bytes(8, "little")[:2] + seed[10:]
        return seed[:8] + len(header).to_bytes(2, "little") + header + seed[end:]
    return _splice(rng, seed, within=140)


def _npy_readers(path: Path) -> list[tuple[str, Callable[[], object]]]:
    from tuidebug.offline.files import npy

    return [
        ("load_npy mapped", lambda: npy.load_npy(path)),
        ("load_npy copied", lambda: npy.load_npy(path, mmap=False)),
        ("read_header", lambda: npy.read_header(path)),
        ("read_dump_tensor", lambda: npy.read_dump_tensor(str(path), path.parent, 1 << 24)),
        ("peek_header", lambda: npy.peek_header(path)),
    ]


# ------------------------------------------------------------------ Ascend .bin
def _bin_seeds() -> list[bytes]:
    return [f.read_bytes() for f in sorted((CONSTRUCTED / "bin").iterdir()) if f.suffix != ".md"]


def _bin_mutant(rng: random.Random, seed: bytes) -> bytes:
    from tuidebug._proto import dump_data_pb2 as pb

    if rng.random() < 0.4:
        out = bytearray(seed)
        if rng.random() < 0.5:  # the length prefix lies
            out[:8] = rng.choice([*LIES[:-1], len(seed) - 8, len(seed)]).to_bytes(8, "little")
        return _splice(rng, bytes(out), within=400)
    length = int.from_bytes(seed[:8], "little")
    message = pb.DumpData()
    message.ParseFromString(seed[8 : 8 + length])
    tensors = [*message.input, *message.output]
    for _ in range(rng.randint(1, 3)):
        t = rng.choice(tensors)
        op = rng.randrange(6)
        if op == 0:
            t.size = rng.choice(LIES)
        elif op == 1:
            del t.shape.dim[:]
            t.shape.dim.extend(rng.choice(LIES) for _ in range(rng.choice([0, 1, 4, 5, 70])))
        elif op == 2:
            del t.original_shape.dim[:]
            t.original_shape.dim.extend(rng.choice(LIES) for _ in range(rng.randint(0, 5)))
        elif op == 3:
            t.format = rng.choice([0, 1, 2, 3, 4, 29, 35, 1000, 2**31 - 1])
        elif op == 4:
            t.data_type = rng.choice([0, 1, 2, 3, 27, 28, 100, 2**31 - 1])
        else:
            t.sub_format = rng.choice([0, 1, 2, 2**31 - 1])
            t.data = rng.randbytes(rng.choice([0, 1, 4, 16]))
    header = message.SerializeToString()
    return len(header).to_bytes(8, "little") + header + seed[8 + length :]


def _bin_readers(path: Path) -> list[tuple[str, Callable[[], object]]]:
    from tuidebug.offline.files import bin as bin_file

    def header_and_slots() -> None:
        dump = bin_file.read_bin_header(path)
        for tensor in (*dump.inputs, *dump.outputs):
            try:
                bin_file.read_bin_slot(path, tensor, max_bytes=1 << 24)
            except bin_file.TensorFileError as err:
                _one_sentence(err)

    return [("read_bin_header and read_bin_slot", header_and_slots)]


# ------------------------------------------------------------------ statistic.csv
def _csv_seeds() -> list[bytes]:
    return [f.read_bytes() for f in sorted(CONSTRUCTED.glob("statistic_*/**/statistic.csv"))]


CSV_TOKENS = [b",", b'"', b"\n", b"\r", b"\x00", b"\xff\xfe", b"nan", b"-inf", b"1e999",
              b"9" * 5000, b"(1,2", b"[]", b"()", b"\xef\xbb\xbf", b" ", b"x" * 200_000]  # fmt: skip


def _csv_mutant(rng: random.Random, seed: bytes) -> bytes:
    out = bytearray(seed)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(out) + 1)
        if rng.random() < 0.5:
            out[at:at] = rng.choice(CSV_TOKENS)
        else:
            del out[at : at + rng.randrange(1, 40)]
    return bytes(out)


def _csv_readers(path: Path) -> list[tuple[str, Callable[[], object]]]:
    from tuidebug.offline.files.statistic_csv import read_statistic_csv

    return [("read_statistic_csv", lambda: read_statistic_csv(path))]


# ------------------------------------------------------------------ graphs (.pb and .ir)
def _graph_seeds() -> list[bytes]:
    from tests.conftest import SHARED_FIXTURES

    return [f.read_bytes() for f in sorted(SHARED_FIXTURES.rglob("ms_output_*.pb"))[:2]]


def _graph_mutant(rng: random.Random, seed: bytes) -> bytes:
    from tuidebug._proto import debug_graph_pb2 as pb

    if rng.random() < 0.4:
        return _splice(rng, seed)
    model = pb.ModelProto()
    model.ParseFromString(seed)
    nodes = list(model.graph.node)
    for _ in range(rng.randint(1, 4)):
        node = rng.choice(nodes)
        op = rng.randrange(6)
        if op == 0:
            node.full_name = rng.choice([nodes[0].full_name, "", "a/b"])
            node.name = rng.choice(["", "1", nodes[0].name])
        elif op == 1 and node.HasField("output_type") and node.output_type.HasField("tensor_type"):
            shape = node.output_type.tensor_type.shape
            del shape.dim[:]
            for _ in range(rng.choice([0, 1, 3, 65])):
                shape.dim.add().size = rng.choice([-1, 0, 2**63 - 1, -(2**63)])
        elif op == 2:
            node.source_address = rng.choice(
                ["", "In file a.py:" + "9" * 5000 + "/x/", "# In file b(3)\n - In file c:1~2, 3~4/z/",
                 "Corresponding forward node candidate:\n\x1b[2J"]
            )  # fmt: skip
        elif op == 3 and node.input:
            node.input[0].name = rng.choice(["", "x", nodes[-1].name])
        elif op == 4 and node.attribute:
            value = rng.choice(node.attribute).value
            value.values.add().values.add().str_val = "x"
            value.int_vals.extend([2**62] * 50)
        else:
            model.graph.name = rng.choice(["", "g", "x" * 300])
    data = model.SerializeToString()
    at = data.find(b"Default")
    if at >= 0 and rng.random() < 0.3:  # a name that is not UTF-8
        data = data[:at] + b"\xff" + data[at + 1 :]
    return data


def _graph_readers(path: Path) -> list[tuple[str, Callable[[], object]]]:
    from tuidebug.offline.files.graphs import load_graph_file

    return [("load_graph_file", lambda: load_graph_file(path))]


# ------------------------------------------------------------------ orders, names, mapping
def _order_seeds() -> list[bytes]:
    files = sorted(CONSTRUCTED.glob("statistic_*/rank_0/execution_order/*.csv"))
    return [f.read_bytes() for f in files] + [
        f.read_bytes() for f in sorted(CONSTRUCTED.rglob("mapping.csv"))
    ]


def _order_readers(path: Path) -> list[tuple[str, Callable[[], object]]]:
    from tuidebug.offline.files import bin as bin_file
    from tuidebug.offline.files import names
    from tuidebug.offline.files.execution_order import read_execution_order, read_graph_history

    def mapping_names() -> None:
        # the names a mapping.csv gives are parsed as file names: never an exception
        try:
            text = path.read_bytes().decode("utf-8", "replace")
            mapping = names.parse_mapping_csv(text)
        except ValueError:
            return  # its documented error: the csv module's reason, which the caller words
        for name in (*mapping, *mapping.values()):
            names.parse_tensor_file_name(name)
            names.classify_file_name(name)
            bin_file.parse_bin_file_name(name)

    return [
        ("read_execution_order", lambda: read_execution_order(path)),
        ("read_graph_history", lambda: read_graph_history(path)),
        ("mapping names", mapping_names),
    ]


def _errors() -> dict[str, tuple[type[BaseException], ...]]:
    """Each campaign's allowed error types: the reader's own."""
    from tuidebug.core.graph_pb import GraphFileError, GraphTooLargeError
    from tuidebug.offline.files.execution_order import OrderFileError
    from tuidebug.offline.files.npy import TensorFileError
    from tuidebug.offline.files.statistic_csv import StatisticCsvError

    return {
        "npy": (TensorFileError,),
        "bin": (TensorFileError,),
        "statistic_csv": (StatisticCsvError,),
        "graph": (GraphFileError, GraphTooLargeError),
        "order": (OrderFileError,),
    }


CAMPAIGNS: dict[str, tuple[Callable[[], list[bytes]], Callable[..., bytes], Callable[..., object], int, str]] = {
    # name: (seeds, mutant, readers, mutations, file name)
    "npy": (_npy_seeds, _npy_mutant, _npy_readers, 400, "x.npy"),
    "bin": (_bin_seeds, _bin_mutant, _bin_readers, 400, "Conv2D.op.2.7.17"),
    "statistic_csv": (_csv_seeds, _csv_mutant, _csv_readers, 300, "statistic.csv"),
    "graph": (_graph_seeds, _graph_mutant, _graph_readers, 200, "g.pb"),
    "order": (_order_seeds, _csv_mutant, _order_readers, 300, "order.csv"),
}  # fmt: skip


def _one_sentence(err: BaseException) -> None:
    text = str(err)
    if not text or "\n" in text or not text.endswith("."):
        raise AssertionError(f"not one sentence: {text[:300]!r}")


def run_campaign(name: str, folder: str) -> list[dict[str, str]]:
    """Run one campaign in this process; the escapes found (reader, exception, input)."""
    seeds_of, mutant_of, readers_of, count, file_name = CAMPAIGNS[name]
    allowed = _errors()[name]
    rng = random.Random(f"{SEED}:{name}")
    seeds = seeds_of()
    path = Path(folder) / file_name
    escapes: list[dict[str, str]] = []
    warnings.simplefilter("error")  # a warning would be a stray line on stderr
    for _ in range(count):
        data = mutant_of(rng, rng.choice(seeds))
        path.write_bytes(data)
        for reader, call in readers_of(path):
            try:
                call()
            except allowed as err:
                try:
                    _one_sentence(err)
                except AssertionError as bad:
                    escapes.append({"reader": reader, "error": str(bad), "input": data[:300].hex()})
            except Exception as err:  # the escapes this test exists to find
                escapes.append(
                    {
                        "reader": reader,
                        "error": f"{type(err).__name__}: {str(err)[:200]}",
                        "input": data[:300].hex(),
                    }
                )
    return escapes


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS")
@pytest.mark.parametrize("name", sorted(CAMPAIGNS))
def test_reader_survives_mutations(name: str, tmp_path: Path, fixtures_dir: Path) -> None:
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from tests.offline.test_fuzz_readers import run_campaign\n"
        f"print(json.dumps(run_campaign({name!r}, {str(tmp_path)!r})))\n"
    )
    env = {
        **os.environ,
        "OPENBLAS_NUM_THREADS": "1",  # BLAS threads reserve address space of their own
        "OMP_NUM_THREADS": "1",
        "TUIDEBUG_FIXTURES": str(fixtures_dir),
    }
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        preexec_fn=_limit_memory,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    escapes = json.loads(proc.stdout.splitlines()[-1])
    assert escapes == [], escapes[:5]
