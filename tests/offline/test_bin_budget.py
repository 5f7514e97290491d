"""Work a dump can make unbounded is bounded per dump, not per file (issue 27 §4): the
`.bin` headers of an iteration folder and of a dump share a budget of tensors and header
bytes (tuidebug/offline/files/budget.py); what it leaves unread is named in one sentence and
the check is incomplete. Long things a header says are quoted short."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.cli.support import check, sentences
from tests.constructed import async_bin
from tuidebug._proto import dump_data_pb2 as pb
from tuidebug.core.text import shape_text, shortened
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.files import budget
from tuidebug.offline.files.bin import MAX_SLOTS

GRAPH_ID = 1


def _flood(folder: Path, files: int, slots: int = MAX_SLOTS, first: int = 0) -> None:
    """`files` `.bin` files of `slots` empty outputs each (2 header bytes an output)."""
    for i in range(first, first + files):
        message = pb.DumpData(version="2.0", dump_time=1, op_name=f"Default/Flood-op{i}")
        for _ in range(slots):
            message.output.add()
        header = message.SerializeToString()
        name = f"Flood.Default_Flood-op{i}.{i}.7.{1700000000100000 + i}"
        (folder / name).write_bytes(len(header).to_bytes(8, "little") + header)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return async_bin.write(tmp_path)


@pytest.mark.timeout(120)
def test_an_iteration_of_too_many_bin_tensors_is_cut_at_its_budget(copy: Path) -> None:
    """30 files of 4,096 empty outputs (250 KB, each within its own caps) in one iteration:
    122,880 tensors; the iteration indexes at most its budget, says which files it did not
    read, as a blocker of that iteration's checks."""
    folder = async_bin.folder(copy, 0)
    _flood(folder, 30)
    started = time.monotonic()
    dump = OfflineDump(copy)
    files = dump.rank_layout(0).tensor_files(GRAPH_ID, 0)
    assert len(files) <= budget.MAX_TENSORS_PER_ITERATION
    said = [p for p in dump.problems if "were not read" in p]
    assert len(said) == 1, said
    assert said[0].startswith("20240101120000/0/kernel_graph1/1/0: ")
    assert "of the 100,000 an iteration may index" in said[0]
    assert len(said[0]) < 1000
    assert time.monotonic() - started < 60  # before the budget: all 122,880, ~3 GB a 300


def test_files_left_unread_make_the_check_incomplete(
    copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with a small budget (the check of 100,000 tensors takes its own time)."""
    monkeypatch.setattr(budget, "MAX_TENSORS_PER_ITERATION", 1000)
    _flood(async_bin.folder(copy, 0), 5, 512)
    code, out, err = check(capsys, str(copy), "--watch", "TO", "--iteration", "0")
    assert code == 2, out  # nothing hit, and the files left unread make it incomplete
    lines = [line for line in sentences(err, "check") if "not read" in line]
    assert len(lines) == 1 and "of the 1,000 an iteration may index" in lines[0], lines


@pytest.mark.timeout(60)
def test_the_dump_budget_spans_its_iterations(
    copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each iteration within its own budget, together over the dump's: the iteration
    listed after the dump's budget ran out names its unread files, the check is incomplete."""
    monkeypatch.setattr(budget, "MAX_TENSORS_PER_ITERATION", 3000)
    monkeypatch.setattr(budget, "MAX_TENSORS_PER_DUMP", 4000)
    for it in (0, 1):
        _flood(async_bin.folder(copy, it), 5, 512, first=10 * it)  # 2,560 each
    dump = OfflineDump(copy)
    layout = dump.rank_layout(0)
    indexed = len(layout.tensor_files(GRAPH_ID, 0)) + len(layout.tensor_files(GRAPH_ID, 1))
    assert indexed <= 4000
    said = [p for p in dump.problems if "were not read" in p or "was not read" in p]
    assert len(said) == 1 and "of the 4,000 a dump may index" in said[0], said
    code, _out, err = check(capsys, str(copy), "--watch", "TO")
    assert code in (1, 2)
    assert any("a dump may index" in line for line in sentences(err, "check"))


def test_the_header_bytes_budget(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "MAX_HEADER_BYTES_PER_ITERATION", 3000)
    _flood(async_bin.folder(copy, 0), 4, 1000)  # ~2 KB of header each
    dump = OfflineDump(copy)
    assert len(dump.rank_layout(0).tensor_files(GRAPH_ID, 0)) < 2000
    said = [p for p in dump.problems if "not read" in p]
    assert len(said) == 1 and "3,000 an iteration may have" in said[0], said


def test_a_shape_of_a_million_dimensions_is_quoted_short(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A header's shape of 1,000,000 dimensions made one warning of megabytes."""
    path = next(async_bin.folder(copy, 1).glob("TransData.*"))
    raw = path.read_bytes()
    length = int.from_bytes(raw[:8], "little")
    message = pb.DumpData.FromString(raw[8 : 8 + length])
    message.output[0].shape.dim.extend([1] * 1_000_000)
    header = message.SerializeToString()
    path.write_bytes(len(header).to_bytes(8, "little") + header + raw[8 + length :])
    _code, _out, err = check(capsys, str(copy), "--watch", "TO")
    lines = sentences(err, "check")
    about = [line for line in lines if "1,000,00" in line and "dimensions in all" in line]
    assert about, [line[:300] for line in lines]
    assert max(len(line) for line in lines) < 2000


def test_shortening_helpers() -> None:
    assert shape_text((2, 3)) == "(2, 3)" and shape_text((4,)) == "(4,)"
    assert shape_text(()) == "()"
    long = shape_text((1,) * 100)
    assert long.endswith("… 100 dimensions in all)") and len(long) < 80
    assert shortened("abc") == "abc"
    text = "a" * 50 + "b" * 1000 + "c" * 50
    short = shortened(text, 100)
    assert short.startswith("a" * 50) and short.endswith("c" * 50)
    assert "[1,000 more characters]" in short
