"""Hostile CSV files of a dump: `mapping.csv`, `statistic.csv` and the execution-order and
history CSVs, filled with garbage, binary, NUL bytes, fields longer than the csv module
accepts, or made huge (sparse files: no disk used), or replaced by a FIFO.

The rules: each becomes one sentence naming the file (never a traceback, never a hang), the
rest of the dump stays usable, and nothing reads more than a cap into memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.offline.dump_copy import copy_dump
from tuidebug.offline.files.execution_order import (
    MAX_HISTORY_BYTES,
    MAX_ORDER_BYTES,
    OrderFileError,
    read_execution_order,
    read_graph_history,
)
from tuidebug.offline.files.names import parse_mapping_csv
from tuidebug.offline.files.statistic_csv import (
    MAX_STATISTIC_BYTES,
    StatisticCsvError,
    read_statistic_csv,
)
from tuidebug.offline.layout.iteration_folder import MAX_MAPPING_BYTES
from tuidebug.offline.layout.root import DumpLayout

NET = "rank_0/LeNet/0"
LONG_FIELD = b'"' + b"x" * 200_000 + b'"\n'  # over the csv module's 128 KiB field limit
BINARY = bytes(range(256)) * 4  # not UTF-8
FIFO = "is a FIFO (named pipe), not a regular file"


@pytest.fixture
def dump(dump_2_10: Path, tmp_path: Path) -> Path:
    return copy_dump(dump_2_10, tmp_path / "d")


def _sparse(path: Path, size: int) -> None:
    path.write_bytes(b"")
    os.truncate(path, size)


# ------------------------------------------------------------------ mapping.csv
def _mapping_problems(dump: Path, content: bytes | None, size: int | None = None) -> list[str]:
    folder = dump / NET / "2"
    (folder / "12345.npy").touch()  # a file only the mapping names
    path = folder / "mapping.csv"
    if size is not None:
        _sparse(path, size)
    else:
        assert content is not None
        path.write_bytes(content)
    rank = DumpLayout.open(dump).rank(0)
    listing = rank.listing(0, 2)
    assert listing is not None and len(listing.tensor_files) > 100  # the rest is listed
    return listing.problems


@pytest.mark.parametrize(
    ("content", "sentence"),
    [
        (
            LONG_FIELD,
            "mapping.csv is not a valid mapping.csv (field larger than field limit (131072)), "
            "so it was ignored.",
        ),
        (BINARY, "mapping.csv is not UTF-8 text, so it was ignored."),
    ],
    ids=["long-field", "binary"],
)
def test_unusable_mapping_csv(dump: Path, content: bytes, sentence: str) -> None:
    """The long field raised csv.Error, a traceback, from discovery."""
    problems = _mapping_problems(dump, content)
    assert f"{NET}/2/{sentence}" in problems
    assert f"{NET}/2/12345.npy is not a MindSpore tensor file name; it was skipped." in problems
    # the files it would have named may be watched tensors: their folder is "blocked"
    assert DumpLayout.open(dump).rank(0).blockers(0, 2) == [f"{NET}/2/{sentence}"]


def test_garbage_mapping_csv_maps_nothing(dump: Path) -> None:
    problems = _mapping_problems(dump, b"garbage\n,,,\n\n;;;\n12345\n")
    assert problems == [f"{NET}/2/12345.npy is not a MindSpore tensor file name; it was skipped."]


def test_nul_bytes_in_mapping_csv(dump: Path) -> None:
    """A NUL byte is no name on disk, but a mapping may say anything: the name is taken as
    written (it then matches no node) and nothing breaks."""
    content = b"12345,Conv2D\x00.x.0.0.1.output.0.DefaultFormat.npy\n\x00\x00\n"
    assert _mapping_problems(dump, content) == []
    listing = DumpLayout.open(dump).rank(0).listing(0, 2)
    assert listing is not None
    [mapped] = [f for f in listing.tensor_files if f.path.name == "12345.npy"]
    assert mapped.op_type == "Conv2D\x00"


@pytest.mark.timeout(60)
def test_huge_mapping_csv_is_not_read(dump: Path) -> None:
    problems = _mapping_problems(dump, None, size=1 << 30)
    assert (
        f"{NET}/2/mapping.csv is larger than {MAX_MAPPING_BYTES:,} bytes, too large to be a "
        "mapping.csv, so it was ignored."
    ) in problems


def test_mapping_csv_keeps_only_the_folders_own_names() -> None:
    """A mapping of a million rows costs one pass, not a dict of a million entries."""
    text = "".join(f"{i},Conv2D.op{i}.0.0.1.output.0.DefaultFormat.npy\n" for i in range(10**6))
    mapping = parse_mapping_csv(text, {"17.npy", "999999"})
    assert mapping == {
        "17": "Conv2D.op17.0.0.1.output.0.DefaultFormat.npy",
        "999999": "Conv2D.op999999.0.0.1.output.0.DefaultFormat.npy",
    }


# ------------------------------------------------------------------ statistic.csv
def _statistics(dump: Path, content: bytes | None, size: int | None = None) -> list[str]:
    path = dump / NET / "1" / "statistic.csv"
    if size is not None:
        _sparse(path, size)
    else:
        assert content is not None
        path.write_bytes(content)
    rank = DumpLayout.open(dump).rank(0)
    assert rank.statistics(0, 1) is None or content is not None
    return rank.problems


@pytest.mark.parametrize(
    ("content", "sentence"),
    [
        (b"", "statistic.csv is empty: it has no header row."),
        (b"just,some,garbage\n1,2,3\n", "statistic.csv has no 'Op Name' or 'IO' or 'Slot' column"),
        (BINARY, "statistic.csv is not UTF-8 text."),
        (
            b"Op Type,Op Name,IO,Slot\n" + LONG_FIELD,
            "statistic.csv is not a valid CSV file (field larger than field limit (131072)).",
        ),
    ],
    ids=["empty", "garbage", "binary", "long-field"],
)
def test_unusable_statistic_csv(dump: Path, content: bytes, sentence: str) -> None:
    """The long field raised csv.Error, a traceback, from `statistics()`."""
    problems = _statistics(dump, content)
    assert any(p.startswith(f"{NET}/1/{sentence}") for p in problems), problems
    assert DumpLayout.open(dump).rank(0).statistics(0, 1) is None


def test_statistic_csv_with_nul_bytes_and_ragged_rows(dump: Path) -> None:
    content = (
        b"Op Type,Op Name,IO,Slot,Max Value\n"
        b"Conv2D,Conv2D-op\x0012,output,0,1.5\n"
        b"ragged\n"
        b"Conv2D,x,output,not-a-slot,2\n"
    )
    problems = _statistics(dump, content)
    table = DumpLayout.open(dump).rank(0).statistics(0, 1)
    # MindSpore never writes a NUL: the row is damaged, skipped and said (issue 27 §3)
    assert table is not None and table.rows == []
    assert (
        f"{NET}/1/statistic.csv: skipped 2 rows whose column count or slot does not fit the header."
    ) in problems
    assert (
        f"{NET}/1/statistic.csv: skipped 1 row holding NUL bytes, which MindSpore never writes."
    ) in problems


@pytest.mark.timeout(60)
def test_huge_statistic_csv_is_not_read(dump: Path) -> None:
    problems = _statistics(dump, None, size=MAX_STATISTIC_BYTES + 1)
    assert (
        f"{NET}/1/statistic.csv is larger than the {MAX_STATISTIC_BYTES:,}-byte limit for a "
        "statistic.csv, so it was not read."
    ) in problems


# ------------------------------------------------------------------ execution order, history
ORDER = "rank_0/execution_order/ms_execution_order_graph_0.csv"
HISTORY = "rank_0/execution_order/ms_global_execution_order_graph_0.csv"


def test_binary_execution_order_and_history(dump: Path) -> None:
    (dump / ORDER).write_bytes(BINARY)
    (dump / HISTORY).write_bytes(BINARY)
    rank = DumpLayout.open(dump).rank(0)
    assert rank.execution_order(0) == []
    assert f"{ORDER} is not UTF-8 text." in rank.problems
    assert f"{HISTORY} is not UTF-8 text." in rank.problems
    assert rank.step_count == 4  # from the dumped iterations


def test_garbage_and_nul_bytes_in_history(dump: Path) -> None:
    (dump / HISTORY).write_bytes(b"0\n1\x00\nthree\n\x00\n2\n3\n-4\n")
    rank = DumpLayout.open(dump).rank(0)
    assert rank.history_raw[0] == [0, 2, 3]
    assert f"{HISTORY}: skipped 4 lines that are not an iteration number." in rank.problems


def test_nul_bytes_and_long_lines_in_execution_order(dump: Path) -> None:
    (dump / ORDER).write_bytes(b"Default/Conv2D-op\x001\n" + b"y" * 300_000 + b"\n")
    rank = DumpLayout.open(dump).rank(0)
    assert rank.execution_order(0) == ["Default/Conv2D-op\x001", "y" * 300_000]


@pytest.mark.timeout(60)
def test_huge_execution_order_and_history_are_not_read(dump: Path) -> None:
    _sparse(dump / ORDER, MAX_ORDER_BYTES + 1)
    _sparse(dump / HISTORY, MAX_HISTORY_BYTES + 1)
    rank = DumpLayout.open(dump).rank(0)
    assert rank.execution_order(0) == []
    assert (
        f"{ORDER} is larger than the {MAX_ORDER_BYTES:,}-byte limit, so it was not read."
        in rank.problems
    )
    assert (
        f"{HISTORY} is larger than the {MAX_HISTORY_BYTES:,}-byte limit, so it was not read."
        in rank.problems
    )


# ------------------------------------------------------------------ FIFOs, read directly
@pytest.mark.timeout(60)
def test_readers_refuse_a_fifo_at_once(tmp_path: Path) -> None:
    """Each reader on a FIFO, in a child process (before the fix each blocked forever)."""
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    script = textwrap.dedent(
        f"""
        import json
        from pathlib import Path
        from tuidebug.offline.files.execution_order import read_execution_order, read_graph_history
        from tuidebug.offline.files.statistic_csv import read_statistic_csv
        out = []
        for read in (read_statistic_csv, read_execution_order, read_graph_history):
            try:
                read(Path({str(fifo)!r}), "pipe.csv")
                out.append("no error")
            except ValueError as err:
                out.append(str(err))
        print(json.dumps(out))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [f"pipe.csv {FIFO}; it was not read."] * 3


def test_errors_are_one_sentence_with_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "Missing_Case.csv"
    for read, error in (
        (read_statistic_csv, StatisticCsvError),
        (read_execution_order, OrderFileError),
        (read_graph_history, OrderFileError),
    ):
        with pytest.raises(error) as err:
            read(missing, str(missing))  # type: ignore[operator]
        assert str(err.value) == f"cannot read {missing}: no such file or directory."
