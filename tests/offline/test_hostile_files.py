"""Hostile file types and links in a dump: FIFOs at every place a dump file is read, dangling
links, link loops, links out of the dump, unreadable files and folders, two files of one
tensor, a dump changed while it is read, a folder of 100,000 entries.

The rules: nothing blocks (a FIFO is never opened for reading: its open waits for a
writer), every refusal is one sentence with its true reason and the path intact, and a check
that could not read watched data exits 2 ("incomplete"), never 0.

Anything that blocked before the fix runs in a child process with a `timeout`, so a
regression fails its test instead of stalling the run (and `@pytest.mark.timeout` bounds
the rest). Tests that need permissions to bite run their child without root's permission
override when run as root (CI containers often are): the child's capability bounding set
loses CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH before it starts. Each also has a twin that
simulates the refusal in-process.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.offline.dump_copy import copy_dump
from tuidebug.cli import main as cli_main
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.files import npy as tensor_store
from tuidebug.offline.files.npy import TensorFileError
from tuidebug.offline.layout import sync_rank as layout_module
from tuidebug.offline.layout.root import DumpLayout

NET = "rank_0/LeNet/0"
FIFO = "is a FIFO (named pipe), not a regular file"
AS_ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False
PR_CAPBSET_DROP = 24
ROOT_OVERRIDES = (1, 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: what lets root read mode 0
CHILD_TIMEOUT = 60  # seconds; each child does one small dump's work (about a second)


@pytest.fixture
def dump(dump_2_10: Path, tmp_path: Path) -> Path:
    """A writable copy of the 2.10 LeNet dump, with its data."""
    return copy_dump(dump_2_10, tmp_path / "d", with_data=True)


def _file(root: Path, iteration: int, pattern: str) -> Path:
    [found] = sorted((root / NET / str(iteration)).glob(pattern))
    return found


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _without_root_overrides() -> None:
    """In the child before exec: drop the capabilities that let root ignore file modes
    (from the bounding set, so the exec'd program cannot get them back)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in ROOT_OVERRIDES:
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) refused")


def check(*argv: str, obey_permissions: bool = False) -> tuple[int, str, list[str]]:
    """`tuidebug check` in a child process: (exit status, stdout, stderr lines).
    `obey_permissions`: the child cannot read a mode-0 file even when we run as root."""
    proc = subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", *argv],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        preexec_fn=_without_root_overrides if obey_permissions and AS_ROOT else None,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    for line in lines:  # one sentence each
        assert line.startswith(("warning: ", "tuidebug check: ")) and line.endswith("."), line
    return proc.returncode, proc.stdout, lines


def in_child(code: str) -> object:
    """Run `code` (which sets `result`) in a child process; return `result` (JSON)."""
    script = textwrap.dedent(code) + "\nimport json\nprint(json.dumps(result))\n"
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=CHILD_TIMEOUT
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def assert_incomplete(code: int, out: str, lines: list[str], *sentences: str) -> None:
    assert code == 2, lines
    assert "0 hits" in out
    for sentence in sentences:
        assert f"warning: {sentence}" in lines, (sentence, lines)
    assert lines[-1].startswith("tuidebug check: watched data could not be read")
    assert lines[-1].endswith("so the check is incomplete.")


# ------------------------------------------------------------------ FIFOs
@pytest.mark.timeout(2 * CHILD_TIMEOUT)
def test_fifo_mapping_csv_check(dump: Path) -> None:
    """Blocked `check` forever; now the FIFO is named and the check is incomplete (watched
    tensors of that folder have no file, and the mapping might have named them)."""
    os.mkfifo(dump / NET / "2" / "mapping.csv")
    code, out, lines = check(str(dump), "--watch", "TO")
    assert_incomplete(code, out, lines, f"{NET}/2/mapping.csv {FIFO}; it was skipped.")
    assert sum(FIFO in line for line in lines) == 1  # said once


@pytest.mark.timeout(2 * CHILD_TIMEOUT)
def test_fifo_mapping_csv_api(dump: Path) -> None:
    """Blocked `DumpAnalyzer` forever; now it opens and warns like for any problem."""
    os.mkfifo(dump / NET / "2" / "mapping.csv")
    result = in_child(
        f"""
        import logging
        from tuidebug.api import DumpAnalyzer, TensorOverflowCondition, Watchpoint
        seen = []
        class Keep(logging.Handler):
            def emit(self, record):
                seen.append(record.getMessage())
        logging.getLogger("tuidebug.api").addHandler(Keep())
        analyzer = DumpAnalyzer({str(dump)!r})
        tensors = analyzer.select_tensors("fc3", iterations=[2])
        hits = analyzer.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
        result = {{"problems": analyzer.problems, "warnings": seen, "hits": len(hits)}}
        """
    )
    assert isinstance(result, dict)
    sentence = f"{NET}/2/mapping.csv {FIFO}; it was skipped."
    assert sentence in result["problems"]
    assert sentence in result["warnings"]
    assert result["hits"] == 0


@pytest.mark.timeout(2 * CHILD_TIMEOUT)
def test_npy_swapped_for_a_fifo_after_indexing(dump: Path) -> None:
    """`value()` opened before checking the type and blocked; now it refuses at once, as do
    the header readers and the checker."""
    result = in_child(
        f"""
        import os
        from tuidebug.offline.dump import OfflineDump
        from tuidebug.offline.check.checker import Checker, Watch
        from tuidebug.offline.files.npy import (
            TensorFileError, load_npy, peek_header, read_header,
        )
        from tuidebug.core.condition_catalogue import CheckRequest
        dump = OfflineDump({str(dump)!r})
        graph = next(iter(dump.graphs(0)))
        path = dump.tensor_file(0, graph, "fc3.bias", 0, 2).path
        os.unlink(path)
        os.mkfifo(path)
        result = {{}}
        for name, call in [
            ("value", lambda: dump.value(0, graph, "fc3.bias", 0, 2)),
            ("load", lambda: load_npy(path, mmap=False)),
            ("header", lambda: read_header(path)),
        ]:
            try:
                call()
                result[name] = "no error"
            except TensorFileError as err:
                result[name] = str(err)
        result["peek"] = peek_header(path) is None
        watch = Watch(0, CheckRequest(0), False, {{(0, graph): [("fc3.bias", 0)]}})
        report = Checker(dump, workers=1).check([watch], [2])
        result["check"] = report.problems
        """
    )
    assert isinstance(result, dict)
    name = _file(dump, 2, "Parameter.fc3_bias.*.npy").name
    assert result["value"] == result["load"] == result["header"] == f"{name} {FIFO}."
    assert result["peek"] is True
    assert result["check"] == [f"{NET}/2/{name} {FIFO}."]


@pytest.mark.timeout(2 * CHILD_TIMEOUT)
def test_fifo_statistic_csv(dump: Path) -> None:
    os.mkfifo(dump / NET / "1" / "statistic.csv")
    (dump / NET / "2" / "statistic.csv").write_text("Op Type,Op Name,Task ID,IO,Slot\n")
    result = in_child(
        f"""
        from pathlib import Path
        from tuidebug.offline.layout.root import DumpLayout
        from tuidebug.offline.files.statistic_csv import StatisticCsvError, read_statistic_csv
        rank = DumpLayout.open({str(dump)!r}).rank(0)
        table = rank.statistics(0, 1)
        try:
            read_statistic_csv(Path({str(dump / NET / "1" / "statistic.csv")!r}), "s.csv")
            direct = "no error"
        except StatisticCsvError as err:
            direct = str(err)
        result = {{"table": table is None, "problems": rank.problems, "direct": direct,
                  "other": rank.statistics(0, 2) is not None}}
        """
    )
    assert isinstance(result, dict)
    assert result["table"] is True and result["other"] is True
    assert f"{NET}/1/statistic.csv {FIFO}; it was skipped." in result["problems"]
    assert result["direct"] == f"s.csv {FIFO}; it was not read."


@pytest.mark.timeout(2 * CHILD_TIMEOUT)
def test_fifo_execution_order_files(dump: Path) -> None:
    folder = dump / "rank_0" / "execution_order"
    for name in ("ms_execution_order_graph_0.csv", "ms_global_execution_order_graph_0.csv"):
        (folder / name).unlink()
        os.mkfifo(folder / name)
    result = in_child(
        f"""
        from pathlib import Path
        from tuidebug.offline.layout.root import DumpLayout
        from tuidebug.offline.files.execution_order import OrderFileError, read_execution_order
        rank = DumpLayout.open({str(dump)!r}).rank(0)
        order = rank.execution_order(0)
        try:
            read_execution_order(Path({str(folder / "ms_execution_order_graph_0.csv")!r}), "e")
            direct = "no error"
        except OrderFileError as err:
            direct = str(err)
        result = {{"order": order, "problems": rank.problems, "direct": direct,
                  "history": rank.has_history(0)}}
        """
    )
    assert isinstance(result, dict)
    assert result["order"] == [] and result["history"] is False
    where = "rank_0/execution_order"
    assert sorted(result["problems"]) == sorted(  # (listing order)
        [
            f"{where}/ms_execution_order_graph_0.csv {FIFO}; it was skipped.",
            f"{where}/ms_global_execution_order_graph_0.csv {FIFO}; it was skipped.",
            f"{where}/ms_global_execution_order_graph_0.csv cannot be read, so iterations of "
            "graph 0 have no previous run for change conditions.",
        ]
    )
    assert result["direct"] == f"e {FIFO}; it was not read."


@pytest.mark.timeout(2 * CHILD_TIMEOUT)
def test_fifo_json_settings(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "d")
    meta = root / "rank_0" / ".dump_metadata"
    (meta / "data_dump.json").unlink()
    os.mkfifo(meta / "data_dump.json")
    result = in_child(
        f"""
        from tuidebug.offline.layout.root import DumpLayout
        dump = DumpLayout.open({str(root)!r})
        result = {{"problems": dump.problems, "version": dump.settings.ms_version}}
        """
    )
    assert isinstance(result, dict)
    assert f"rank_0/.dump_metadata/data_dump.json {FIFO}; it was not read." in result["problems"]
    assert result["version"]  # config.json is still read


def test_folder_kind_json_settings(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "d")
    meta = root / "rank_0" / ".dump_metadata"
    (meta / "config.json").unlink()
    (meta / "config.json").mkdir()
    problems = DumpLayout.open(root).problems
    assert (
        "rank_0/.dump_metadata/config.json is a directory, not a regular file; it was not read."
        in problems
    )


@pytest.mark.timeout(2 * CHILD_TIMEOUT)
def test_fifo_graphs_folder_and_graph_file(dump: Path, tmp_path: Path) -> None:
    """A FIFO where the graphs folder or a `.pb` should be: named as such, never "missing"
    nor "not a MindSpore tensor file name"."""
    other = copy_dump(dump, tmp_path / "other")
    shutil.rmtree(dump / "rank_0" / "graphs")
    os.mkfifo(dump / "rank_0" / "graphs")
    pb = other / "rank_0" / "graphs" / "ms_output_trace_code_graph_0.pb"
    pb.unlink()
    os.mkfifo(pb)
    result = in_child(
        f"""
        from tuidebug.offline.layout.root import DumpLayout
        result = [DumpLayout.open(p).rank(0).problems for p in ({str(dump)!r}, {str(other)!r})]
        """
    )
    assert isinstance(result, list)
    folder, graph_file = result
    assert folder[:2] == [
        f"rank_0/graphs {FIFO}; it was skipped.",
        "rank_0/graphs is not a readable folder, so rank_0 has no graph to show.",
    ]
    assert f"rank_0/graphs/ms_output_trace_code_graph_0.pb {FIFO}; it was skipped." in graph_file


@pytest.mark.timeout(2 * CHILD_TIMEOUT)
def test_fifo_iteration_folder_makes_the_check_incomplete(dump: Path) -> None:
    shutil.rmtree(dump / NET / "3")
    os.mkfifo(dump / NET / "3")
    code, out, lines = check(str(dump), "--watch", "TO")
    assert_incomplete(code, out, lines, f"{NET}/3 {FIFO}; it was skipped.")
    assert "iterations 0-2" in out


# ------------------------------------------------------------------ refused tensor files
def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return FIFO


def _dangling(path: Path) -> str:
    path.symlink_to(path.parent / "gone.npy")
    return f"is a dangling symbolic link (its target {NET}/{path.parent.name}/gone.npy does not"


def _loop(path: Path) -> str:
    path.symlink_to(path.name)  # a link to itself
    return "is a symbolic link loop"


def _outside(path: Path) -> str:
    outside = path.parents[5] / "outside.npy"
    np.save(outside, np.full(10, np.nan, np.float32))  # it would hit: it must not be read
    path.symlink_to(outside)
    return "is a symbolic link to "


REFUSALS = {"fifo": _fifo, "dangling": _dangling, "loop": _loop, "outside": _outside}


@pytest.mark.timeout(2 * CHILD_TIMEOUT)
@pytest.mark.parametrize("kind", list(REFUSALS))
def test_refused_tensor_file(dump: Path, kind: str) -> None:
    """Each refused at discovery with its true reason (not "not a MindSpore tensor file
    name"), the path intact; a check watching it is incomplete (it exited 0); `value()`
    says why instead of "no value"."""
    target = _file(dump, 2, "Parameter.fc3_bias.*.npy")
    target.unlink()
    words = REFUSALS[kind](target)
    rel = _rel(dump, target)
    code, out, lines = check(str(dump), "--watch", "TO")
    assert code == 2 and "0 hits" in out, lines
    naming = [line for line in lines if rel in line]
    assert naming and all(f"warning: {rel} {words}" in line for line in naming), naming
    assert not any("not a MindSpore tensor file name" in line for line in lines)
    assert lines[-1].endswith("so the check is incomplete.")
    # the API and the TUI read values through OfflineDump.value
    dump_model = OfflineDump(dump)
    graph = next(iter(dump_model.graphs(0)))
    with pytest.raises(TensorFileError) as err:
        dump_model.value(0, graph, "fc3.bias", 0, 2)
    assert str(err.value).startswith(f"{rel} {words}")
    assert dump_model.value(0, graph, "fc3.bias", 0, 1) is not None  # the rest is fine


def test_link_to_a_fifo_inside_the_dump(dump: Path) -> None:
    os.mkfifo(dump / "pipe")
    target = _file(dump, 2, "Parameter.fc3_bias.*.npy")
    target.unlink()
    target.symlink_to(dump / "pipe")
    problems = DumpLayout.open(dump).rank(0).listing(0, 2).problems  # type: ignore[union-attr]
    assert problems == [
        f"{_rel(dump, target)} is a symbolic link to a FIFO (named pipe), not a regular file; "
        "it was skipped."
    ]


def test_loop_and_dangling_folders(dump: Path) -> None:
    """Graph and iteration folders that are link loops or dangling links: their reason, and
    the check of that graph counts them as unread."""
    (dump / NET / "9").symlink_to("9")
    (dump / NET / "8").symlink_to("missing")
    dump_model = OfflineDump(dump)
    problems = dump_model.problems
    assert f"{NET}/9 is a symbolic link loop; it was skipped." in problems
    assert (
        f"{NET}/8 is a dangling symbolic link (its target {NET}/missing does not exist); it "
        "was skipped."
    ) in problems
    graph = next(iter(dump_model.graphs(0)))
    assert len(dump_model.graph_blockers(0, graph)) == 2


def test_many_refused_entries_are_named_up_to_a_bound(dump: Path) -> None:
    folder = dump / NET / "1"
    for i in range(25):
        os.mkfifo(folder / f"pipe{i:02d}")
    problems = DumpLayout.open(dump).rank(0).listing(0, 1).problems  # type: ignore[union-attr]
    named = [p for p in problems if FIFO in p]
    assert len(named) == 20
    assert f"{NET}/1: 5 more entries that are not regular files or folders were skipped." in (
        problems
    )


# ------------------------------------------------------------------ permissions
def _deny_open(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Refuse opening `denied` as a non-root user would (root ignores chmod)."""
    real_os_open = os.open

    def os_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.fspath(path) == os.fspath(denied):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)

    def builtin_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.fspath(path) == os.fspath(denied):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(tensor_store, "open", builtin_open, raising=False)


def test_permission_denied_file_keeps_its_path(
    capsys: pytest.CaptureFixture[str], dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reason was lower-cased together with the path and cut at 120 characters
    (`…/lenet/…/parameter…outpu.`)."""
    target = _file(dump, 2, "Parameter.fc3_bias.*.npy")
    _deny_open(monkeypatch, target)
    code = cli_main(["check", str(dump), "--watch", "TO", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"warning: {_rel(dump, target)} cannot be read: permission denied.\n" in err


def test_permission_denied_file_for_real(dump: Path) -> None:
    target = _file(dump, 2, "Parameter.fc3_bias.*.npy")
    target.chmod(0)
    code, out, lines = check(str(dump), "--watch", "TO", obey_permissions=True)
    assert_incomplete(code, out, lines, f"{_rel(dump, target)} cannot be read: permission denied.")


def test_unreadable_iteration_folder_makes_the_check_incomplete(
    capsys: pytest.CaptureFixture[str], dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It exited 0 with "0 hits; 198 tensors checked"."""
    blocked = os.path.realpath(dump / NET / "3")
    real_scandir = os.scandir

    def scandir(path):  # type: ignore[no-untyped-def]
        if os.fspath(path) == blocked:  # chmod 0 would not stop root
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(layout_module.os, "scandir", scandir)
    code = cli_main(["check", str(dump), "--watch", "TO", "--workers", "1"])
    captured = capsys.readouterr()
    assert code == 2 and "0 hits" in captured.out
    lines = captured.err.splitlines()
    assert lines.count(f"warning: cannot read the folder {NET}/3: permission denied.") == 1
    assert lines[-1].endswith("so the check is incomplete.")
    # a check of the other iterations is complete
    assert cli_main(["check", str(dump), "--watch", "TO", "--iteration", "0-2"]) == 0


def test_unreadable_iteration_folder_for_real(dump: Path) -> None:
    folder = dump / NET / "3"
    folder.chmod(0)
    try:
        code, out, lines = check(str(dump), "--watch", "TO", obey_permissions=True)
    finally:
        folder.chmod(0o755)
    assert_incomplete(code, out, lines, f"cannot read the folder {NET}/3: permission denied.")


# ------------------------------------------------------------------ duplicates
def test_two_files_of_one_tensor(dump: Path) -> None:
    """The newest (largest timestamp in the name, as MindSpore) is read, and that is said
    once, naming the file ignored — on check's stderr, in the API's problems, in a Notice."""
    newest = _file(dump, 2, "Parameter.fc3_bias.*.npy")
    ts = newest.name.split(".")[4]
    older = newest.with_name(newest.name.replace(ts, str(int(ts) - 10)))
    np.save(older, np.full(10, np.nan, np.float32))  # would hit TO if it were read
    sentence = (
        f"{_rel(dump, older)} holds the same tensor (fc3.bias output 0, iteration 2) as the "
        f"newer {newest.name}, so it is ignored by the checks (a loop trip? `pt "
        "NAME:SLOT@ITERATION#TRIP` and ( / ) in the tensor view show earlier trips)."
    )
    code, out, lines = check(str(dump), "--watch", "TO")
    assert code == 0 and "0 hits" in out
    assert lines == [f"warning: {sentence}"]

    from tuidebug.api import DumpAnalyzer

    analyzer = DumpAnalyzer(dump)
    [tensor] = analyzer.select_tensors(r"^fc3\.bias$", use_regex=True, iterations=[2])
    assert not np.isnan(np.asarray(tensor.value())).any()
    assert analyzer.problems.count(sentence) == 1

    from tuidebug.core.session import Notice
    from tuidebug.offline.session import OfflineSession

    session = OfflineSession(dump)
    seen: list[str] = []
    session.subscribe(lambda e: seen.append(e.message) if isinstance(e, Notice) else None)
    try:
        session.start()
        assert seen.count(sentence) == 1
    finally:
        session.close()


# ------------------------------------------------------------------ a dump changed while read
def test_dump_changed_after_it_was_indexed(dump: Path) -> None:
    """Files removed, cut short or replaced after the index was built: each watched tensor
    not read is one sentence, and the check is incomplete."""
    dump_model = OfflineDump(dump)
    graph = next(iter(dump_model.graphs(0)))
    dump_model.index(0, graph).files_for(1)  # iteration 1 listed and header-checked
    gone = _file(dump, 1, "Parameter.fc3_bias.*.npy")
    gone.unlink()
    cut = _file(dump, 1, "Parameter.fc2_bias.*.npy")
    os.truncate(cut, cut.stat().st_size - 8)
    folder = _file(dump, 1, "Parameter.fc1_bias.*.npy")
    folder.unlink()
    folder.mkdir()

    from tuidebug.core.condition_catalogue import CheckRequest
    from tuidebug.offline.check.checker import Checker, Watch

    pairs = [("fc3.bias", 0), ("fc2.bias", 0), ("fc1.bias", 0), ("fc1.weight", 0)]
    report = Checker(dump_model, workers=1).check(
        [Watch(0, CheckRequest(0), False, {(0, graph): pairs})], [1]
    )
    assert report.tensors_checked == 1
    assert sorted(report.problems) == sorted(
        [
            f"{_rel(dump, gone)} does not exist.",
            f"{_rel(dump, cut)} is truncated: its header declares 336 bytes of data but the "
            "file holds 328.",
            f"{_rel(dump, folder)} is a directory, not a regular file.",
        ]
    )


def test_iteration_folder_removed_after_discovery(dump: Path) -> None:
    dump_model = OfflineDump(dump)
    graph = next(iter(dump_model.graphs(0)))
    shutil.rmtree(dump / NET / "3")
    assert dump_model.value(0, graph, "fc3.bias", 0, 3) is None
    assert f"{NET}/3 disappeared while the dump was being read." in dump_model.problems
    assert dump_model.blockers(0, graph, 3) == [
        f"{NET}/3 disappeared while the dump was being read."
    ]


# ------------------------------------------------------------------ many entries
@pytest.mark.timeout(120)
def test_an_iteration_folder_of_100k_entries(dump: Path) -> None:
    """Listed once, no entry opened or stat'ed beyond what its type needs, garbage and
    refusals named up to a bound: problems stay a handful of sentences."""
    folder = dump / NET / "1"
    for i in range(90_000):
        (folder / f"junk{i}").touch()
    for i in range(10_000):
        os.mkfifo(folder / f"pipe{i}")
    rank = DumpLayout.open(dump).rank(0)
    assert len(rank.tensor_files(0, 1)) > 0
    problems = rank.listing(0, 1).problems  # type: ignore[union-attr]
    assert len(problems) == 42
    assert f"{NET}/1: 89980 more files that are not MindSpore tensor file names were skipped." in (
        problems
    )
    assert f"{NET}/1: 9980 more entries that are not regular files or folders were skipped." in (
        problems
    )


# ------------------------------------------------------------------ the TUI
# method="thread": a worker blocked in open() would also block the app's shutdown, so the
# timeout ends the whole run (with every thread's stack) rather than wait behind it
@pytest.mark.timeout(120, method="thread")
async def test_tui_opens_a_dump_with_a_fifo_mapping_csv(dump: Path) -> None:
    """`tuidebug offline` stuck on "Indexing… 0/1"; now it finishes indexing (the
    recommended-watchpoint offer comes) and shows the FIFO in a notice."""
    from tests.tui.support import wait_for_notice, wait_for_screen
    from tuidebug.offline.session import OfflineSession
    from tuidebug.tui.app import DebuggerApp
    from tuidebug.tui.kit.dialogs import ConfirmScreen

    os.mkfifo(dump / NET / "0" / "mapping.csv")
    app = DebuggerApp(OfflineSession(dump), start_session=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        notice = await wait_for_notice(pilot, "mapping.csv")
        assert "is a FIFO (named pipe), not a regular file" in notice
