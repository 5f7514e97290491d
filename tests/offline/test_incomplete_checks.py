"""Refused, skipped or ignored watched data makes a check incomplete (issue 27 §3): each dump
below hides its only NaN where a reader used to drop it silently ("0 hits", exit 0). Now the
CLI exits 2 (or warns beside its hits), the API logs the sentence, and the TUI session shows
it as a Notice: one sentence naming the file or tree and why.

A file whose dtype or shape contradicts its node is checked as it is (a NaN is a NaN
whatever the shape), with its sentence: the hit is reported, also by a later check of the
same process, which used to find the file gone from the index."""

from __future__ import annotations

import csv
import io
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.cli.support import check, sentences
from tests.offline.dump_copy import copy_dump
from tuidebug.core.session import Notice
from tuidebug.offline.session import OfflineSession

CONSTRUCTED = Path(__file__).resolve().parents[1] / "data" / "constructed"
RELU = "ReLU.*relu-ReLU_ReLU-op1.*.output.0.*.npy"
INCOMPLETE = "so the check is incomplete."


@dataclass(frozen=True)
class Case:
    root: Path
    said: str  # a fragment of the one sentence naming the file or tree and why
    hits: bool = False  # the NaN is still found (checked as it is)
    iteration: int | None = None  # the one iteration to check (None: all)


# ------------------------------------------------------------------ statistic-only dumps
def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


def _write(path: Path, rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue())


def _statistic(tmp: Path, damage: Callable[[Path], None]) -> Path:
    """The constructed statistic-only dump with iteration 0 clean and the only NaN (Log's)
    in iteration 1's statistic.csv, which `damage` then spoils."""
    root = tmp / "stat"
    shutil.copytree(CONSTRUCTED / "statistic_old", root)
    first = root / "rank_0/StatNet/0/0/statistic.csv"
    rows = _rows(first)
    for row in rows[1:]:
        row[16] = row[17] = row[18] = "0"  # no NaN, no Inf
    _write(first, rows)
    damage(root / "rank_0/StatNet/0/1/statistic.csv")
    return root


def _log_row(change: Callable[[list[str]], None]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        rows = _rows(path)
        for row in rows[1:]:
            if row[0] == "Log":
                change(row)
        _write(path, rows)

    return damage


def _over_cap(path: Path) -> None:
    with open(path, "ab") as f:
        f.truncate((256 << 20) + 1)  # sparse: no disk used


STATISTIC: dict[str, tuple[Callable[[Path], None], str]] = {
    "over its size cap": (_over_cap, "is larger than the 268,435,456-byte limit"),
    "a field over the CSV limit": (
        _log_row(lambda r: r.__setitem__(9, "(" + "1," * 100_000 + "1)")),
        "field larger than field limit",
    ),
    "NUL bytes": (_log_row(lambda r: r.__setitem__(1, "Log-op0\0")), "holding NUL bytes"),
    "more columns than the header": (
        _log_row(lambda r: r.append("extra")),
        "column count or slot does not fit the header",
    ),
    "a non-numeric slot": (
        _log_row(lambda r: r.__setitem__(6, "zero")),
        "column count or slot does not fit the header",
    ),
    "a non-numeric NaN count": (
        _log_row(lambda r: r.__setitem__(16, "one")),
        "needs the 'NaN Count' column",
    ),
}


# ------------------------------------------------------------------ tensor files
def _relu_file(tmp: Path, lenet: Path, value: np.ndarray) -> Path:
    root = copy_dump(lenet, tmp / "d", with_data=True)
    (relu,) = (root / "rank_0/LeNet/0/1").glob(RELU)
    relu.unlink()
    np.save(relu, value)
    return root


def _async_beside(tmp: Path, lenet: Path) -> Path:
    """A clean synchronous dump with an Ascend asynchronous tree (a NaN in it) beside."""
    root = copy_dump(lenet, tmp / "d", with_data=True)
    tree = root / "0"
    shutil.copytree(CONSTRUCTED / "async_acl" / "0", tree)
    (add,) = tree.rglob("Add.*.npy")
    add.unlink()
    np.save(add, np.full((2, 2), np.nan, np.float32))
    return root


def _bad_bin(tmp: Path) -> Path:
    """An async `.bin` dump (no graph file) whose Conv2D file at iteration 0 is truncated:
    its operator is unknown to the graph built from the readable names."""
    root = tmp / "bin"
    shutil.copytree(CONSTRUCTED / "async_bin", root)
    (conv,) = (root / "20240101120000/0/kernel_graph1/1/0").glob("Conv2D.*")
    conv.write_bytes(conv.read_bytes()[:20])
    return root


def _unparsable_mapping(tmp: Path, lenet: Path) -> Path:
    """A NaN ReLU output saved as `123.npy`, which mapping.csv names by a name that is no
    tensor file name."""
    root = copy_dump(lenet, tmp / "d", with_data=True)
    it = root / "rank_0/LeNet/0/1"
    (relu,) = it.glob(RELU)
    relu.unlink()
    np.save(it / "123.npy", np.full((4, 16, 10, 10), np.nan, np.float32))
    (it / "mapping.csv").write_text(f"123,{relu.name.replace('.output.', '.outptu.')}\n")
    return root


CASES = [
    *(f"statistic.csv with {name}" for name in STATISTIC),
    "a 0-d NaN file",
    "a complex64 NaN file",
    "an async tree beside rank_0",
    "an unreadable .bin",
    "an unparsable mapping.csv name",
]


@pytest.fixture(params=CASES)
def case(request: pytest.FixtureRequest, tmp_path: Path, dump_2_10: Path) -> Case:
    name: str = request.param
    if name.startswith("statistic.csv with "):
        damage, said = STATISTIC[name.removeprefix("statistic.csv with ")]
        return Case(_statistic(tmp_path, damage), said)
    if name == "a 0-d NaN file":
        root = _relu_file(tmp_path, dump_2_10, np.array(np.nan, np.float32))
        return Case(root, "has shape (), but the graph declares", hits=True)
    if name == "a complex64 NaN file":
        root = _relu_file(tmp_path, dump_2_10, np.full((3, 3), np.nan, np.complex64))
        return Case(root, "holds complex64 data, but the graph declares", hits=True)
    if name == "an async tree beside rank_0":
        return Case(_async_beside(tmp_path, dump_2_10), "The folder 0 holds an Ascend asynchronous")
    if name == "an unreadable .bin":
        # iteration 1 has a NaN of its own (a readable ReLU)
        return Case(_bad_bin(tmp_path), "so the tensors of Default_network", iteration=0)
    return Case(_unparsable_mapping(tmp_path, dump_2_10), "by mapping.csv, which is not")


# ------------------------------------------------------------------ the three front ends
def test_cli(capsys: pytest.CaptureFixture[str], case: Case) -> None:
    only = () if case.iteration is None else ("--iteration", str(case.iteration))
    code, out, err = check(capsys, str(case.root), "--watch", "TO", *only)
    said = [s for s in sentences(err) if case.said in s]
    assert len(said) == 1, err
    if case.hits:
        assert code == 1 and "contains NaN" in out
    else:
        assert code == 2 and "0 hits" in out
        assert sentences(err)[-1].endswith(INCOMPLETE)


def test_api(case: Case, caplog: pytest.LogCaptureFixture) -> None:
    from tuidebug.api import DumpAnalyzer, TensorOverflowCondition
    from tuidebug.api import Watchpoint as ApiWatchpoint

    with caplog.at_level(logging.WARNING, logger="tuidebug.api"):
        analyzer = DumpAnalyzer(str(case.root))
        tensors = analyzer.select_tensors(".*", use_regex=True, iterations=case.iteration)
        hits = analyzer.check_watchpoints([ApiWatchpoint(tensors, TensorOverflowCondition())])
    warned = [r.getMessage() for r in caplog.records]
    assert any(case.said in w for w in warned), warned
    assert bool(hits) == case.hits


def test_session(case: Case) -> None:
    session = OfflineSession(case.root)
    notices: list[str] = []
    session.subscribe(lambda e: notices.append(e.message) if isinstance(e, Notice) else None)
    session.start()
    try:
        session.create_watchpoint("TO", {})
        session.recheck()
        while session.metadata.step < (session.metadata.max_step or 0):  # every step
            session.step()
    finally:
        session.close()
    assert any(case.said in n for n in notices), notices


def test_a_contradicting_file_is_checked_again_by_a_later_check(
    tmp_path: Path, dump_2_10: Path
) -> None:
    """The first check (or a header pass) drops the file from the index: a second check
    used to find nothing there and report the tensor clean."""
    from tuidebug.core.watchpoints import Watchpoint
    from tuidebug.offline.check.checker import Checker, Watch
    from tuidebug.offline.dump import OfflineDump

    root = _relu_file(tmp_path, dump_2_10, np.array(np.nan, np.float32))
    dump = OfflineDump(root)
    ((graph, _),) = dump.graphs(0).items()
    node = "Default/network-WithLossCell/_backbone-LeNet5/relu-ReLU/ReLU-op1"
    watches = [Watch(1, Watchpoint(1, "TO", {}).request(), False, {(0, graph): [(node, 0)]})]
    with Checker(dump) as checker:
        for _ in range(2):
            report = checker.check(watches, [1])
            assert [(o.key.node, o.result.hit) for o in report.outcomes] == [(node, True)]
            assert any("has shape ()" in p for p in report.problems)


# ------------------------------------------------------------------ §7: the right reason
def test_a_folder_named_like_a_tensor_file_is_said_to_be_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, dump_2_10: Path
) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d", with_data=True)
    it = root / "rank_0/LeNet/0/1"
    (relu,) = it.glob(RELU)
    folder = it / relu.name.replace(".1795310821212439.", ".1795310821212440.")
    folder.mkdir()
    _, _, err = check(capsys, str(root), "--watch", "TO", "--iteration", "1")
    assert (
        f"warning: rank_0/LeNet/0/1/{folder.name} is a folder, where MindSpore writes only "
        "files; it was skipped." in sentences(err)
    )


def test_an_inproc_cluster_address_is_one_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    code, _, err = check(
        capsys, str(CONSTRUCTED / "statistic_old"), "--watch", "TO", "--cluster", "inproc://x"
    )
    assert code == 2
    assert sentences(err) == [
        "tuidebug check: --cluster 'inproc://x' names no Dask scheduler of this process "
        "(inproc:// addresses work only there); give a scheduler's tcp://host:port or local[:N]."
    ]


def test_an_unreadable_bin_is_counted_without_the_notes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The count of problems is of lost data: a tensor checked raw is a note, not counted;
    the unreadable file's sentence names the operator whose tensors were lost."""
    code, _, err = check(capsys, str(_bad_bin(tmp_path)), "--watch", "TO", "--iteration", "0")
    assert code == 2
    lines = sentences(err)
    assert any("used raw" in line for line in lines)  # said, as a note
    (lost,) = [line for line in lines if "is not a valid Ascend dump" in line]
    assert lost.endswith(
        "so the tensors of Default_network-WithLossCell__backbone-LeNet5_conv1-Conv2d_Conv2D-op5 "
        "were not read."
    )
    assert lines[-1] == (
        "tuidebug check: watched data could not be read (1 problem above), so the check is "
        "incomplete."
    )
