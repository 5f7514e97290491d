"""offline/check/cluster.py: a check run on a Dask cluster gives exactly the hits, order, problems
and exit status of the same check run here — on the real fixtures, on a many-rank dump, with
a worker killed mid-check — and a dump the workers cannot see is one sentence, exit 2.

One `LocalCluster` of two single-threaded worker processes on loopback serves the module.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster, WorkerPlugin

from tests.cli.support import check, sentences
from tests.offline.many_ranks import write_ranks
from tuidebug import __version__ as _VERSION
from tuidebug.api import DumpAnalyzer
from tuidebug.api import Watchpoint as ApiWatchpoint
from tuidebug.core.session import EventLog, Progress, SessionError
from tuidebug.offline import session as session_mod
from tuidebug.offline.check import cluster as cluster_mod
from tuidebug.offline.check.checker import Checker, CheckReport, Watch
from tuidebug.offline.check.cluster import ClusterProgress, ClusterRunner
from tuidebug.offline.check.cluster_connect import connect, open_runner, parse_cluster
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.session import OfflineSession

pytestmark = pytest.mark.timeout(60)

WATCHES = [
    "--watch",
    "TO",
    "--watch",
    "TL:abs_mean_gt=0.1",
    "--watch",
    "TZ:zero_percentage_ge=10",
    "--watch",
    "WCL:abs_mean_update_ratio_gt=0.0001",
    "--watch",
    "WNC",
    "--watch",
    "GL:max_gt=0.01",
    "--watch",
    "TR:range_start_inclusive=-0.5,range_end_inclusive=0.5,range_percentage_lt=90",
]


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    cluster = LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=":0",  # never the shared default 8787
        silence_logs=logging.CRITICAL,
    )
    with Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def many_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 ranks x 3 iterations of a small net; rank 2 overflows at iteration 1, and its weight
    changes 1000 times more than the others'."""
    root = tmp_path_factory.mktemp("ranks") / "dump"
    write_ranks(root, ranks=4, iterations=3)
    return root


def _both(capsys: pytest.CaptureFixture[str], address: str, *argv: str) -> None:
    """`tuidebug check ARGV` here and on the cluster: same exit status, stdout, warnings."""
    local = check(capsys, *argv)
    remote = check(capsys, *argv, "--cluster", address)
    assert remote[0] == local[0]
    # the table's summary ends with the seconds the check took: all else is the same
    assert re.sub(r"[\d.]+ s\.$", "", remote[1]) == re.sub(r"[\d.]+ s\.$", "", local[1])
    assert sentences(remote[2], "check") == sentences(local[2], "check")


# ------------------------------------------------------------------ same answers
@pytest.mark.parametrize(
    "dump",
    [
        "mindspore_lenet_dump/ms2_0_0",
        "mindspore_lenet_dump/ms2_10_0",
        "mindspore_int_fp16_dump/ms2_0_0",
        "mindspore_int_fp16_dump/ms2_10_0",
    ],
)
def test_cli_answers_as_a_local_check(
    capsys: pytest.CaptureFixture[str], client: Client, fixtures_dir: Path, dump: str
) -> None:
    root = str(fixtures_dir / dump)
    address = client.scheduler.address
    _both(capsys, address, root, *WATCHES, "--json")
    _both(capsys, address, root, "--recommended", "--json")
    _both(capsys, address, root, "--watch", "TO", "--error-on-no-value", "--json")
    _both(capsys, address, root, "--watch", "TO", "--watch", "WNC", "--iteration", "1-2")


def _watches(dump: OfflineDump) -> list[Watch]:
    """Every tensor watched by an overflow, a range and both change conditions."""
    from tuidebug.cli.check import _plan
    from tuidebug.cli.watch_options import parse_watch_option

    specs = ["TO", "TL:abs_mean_gt=0.3", "WCL:abs_mean_update_ratio_gt=0.001", "WNC"]
    return _plan(dump, dump.ranks, [parse_watch_option(spec) for spec in specs], None)


def _compare(root: Path, runner: ClusterRunner) -> tuple[CheckReport, CheckReport]:
    local_dump, remote_dump = OfflineDump(root), OfflineDump(root)
    local = Checker(local_dump).check(_watches(local_dump), local_dump.iterations())
    remote = Checker(remote_dump, runner=runner).check(
        _watches(remote_dump), remote_dump.iterations()
    )
    assert remote.outcomes == local.outcomes
    assert remote.problems == local.problems
    assert (remote.tensors_checked, remote.bytes_read) == (local.tensors_checked, local.bytes_read)
    assert not remote.cancelled
    return local, remote


def test_many_ranks_in_many_batches(client: Client, many_ranks: Path) -> None:
    seen: list[ClusterProgress] = []
    runner = ClusterRunner(client, on_progress=seen.append, batch_tensors=3)
    local, _ = _compare(many_ranks, runner)
    assert len(runner.batches) > 8  # several per (rank, graph): the merge puts them in order
    assert {o.key.rank for o in local.outcomes if o.result.hit} >= {2}
    assert {o.watchpoint_id for o in local.outcomes} >= {0, 2, 3}  # TO, WCL and WNC (error 4)
    assert seen[-1].done == seen[-1].total == len(runner.batches)
    assert seen[-1].tensors == local.tensors_checked
    assert seen[0].slowest_rank is not None and seen[-1].slowest_rank is None


def test_api_cluster_gives_the_local_hits(client: Client, dump_2_10: Path) -> None:
    from tuidebug.api.conditions import (
        TensorChangeAboveThresholdCondition,
        TensorTooLargeCondition,
        TensorUnchangedCondition,
    )

    analyzer = DumpAnalyzer(str(dump_2_10))
    tensors = analyzer.select_tensors(".*", use_regex=True)
    weights = [t for t in tensors if "weight" in t.node.name]
    wps = [
        ApiWatchpoint(tensors, TensorTooLargeCondition(abs_mean_gt=0.1)),
        ApiWatchpoint(weights, TensorChangeAboveThresholdCondition(abs_mean_update_ratio_gt=1e-4)),
        ApiWatchpoint(weights, TensorUnchangedCondition()),
    ]

    def shown(hits: list[Any]) -> list[tuple[Any, ...]]:
        return [
            (h.tensor.node.name, h.tensor.slot, h.tensor.iteration, h.error_code, h.watchpoint_id)
            for h in hits
        ]

    local = analyzer.check_watchpoints(wps)
    remote = analyzer.check_watchpoints(wps, cluster=client)
    assert shown(remote) == shown(local) and local
    # the scheduler's address, as --cluster takes it: connected for the call, then closed
    by_address = analyzer.check_watchpoints(wps, cluster=client.scheduler.address)
    assert shown(by_address) == shown(local)
    assert client.status == "running"  # the caller's client is not the one closed
    with pytest.raises(TypeError, match=r"distributed\.Client or an address"):
        analyzer.check_watchpoints(wps, cluster=8786)
    with pytest.raises(ValueError, match=r"^cannot reach tcp://no-such-host\.invalid:1: unknown"):
        analyzer.check_watchpoints(wps, cluster="tcp://no-such-host.invalid:1")


# ------------------------------------------------------------------ failures
def test_a_worker_killed_mid_check_loses_nothing(
    client: Client, many_ranks: Path, tmp_path: Path
) -> None:
    """The first worker to start a batch dies in it (once): Dask runs the batch again on a
    worker that lives, and the report is the local one, nothing lost or counted twice."""
    marker = str(tmp_path / "killed")

    class KillOnce(WorkerPlugin):  # defined here: pickled by value to the workers
        name = "tuidebug-kill-once"

        def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
            if finish != "executing" or "tuidebug-check" not in str(key):
                return
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
            os._exit(1)

    before = set(client.scheduler_info()["workers"])
    client.register_plugin(KillOnce())
    try:
        _compare(many_ranks, ClusterRunner(client, batch_tensors=5))
    finally:
        client.unregister_worker_plugin(KillOnce.name)
    assert os.path.exists(marker)  # a worker did die mid-batch
    client.wait_for_workers(2, timeout=30)  # the nanny restarted it for the next tests
    assert set(client.scheduler_info()["workers"]) != before


def test_a_batch_that_keeps_failing_names_its_rank_and_iterations() -> None:
    """A failed future (after its retries) becomes unread tensors with one sentence."""

    class Failed:
        status = "error"

        def exception(self) -> BaseException:
            return RuntimeError("boom.")

    batch = cluster_mod.Batch(3, "kernel_graph_0", 2, 4, (7, 8), 0)
    runner = object.__new__(ClusterRunner)
    results = runner._collect(Failed(), batch)
    assert [r.tid for r in results] == [7, 8]
    assert not any(r.readable for r in results)
    (sentence,) = set(results[0].problems)
    assert sentence == (
        "rank_3 graph kernel_graph_0 iterations 2-4 could not be checked on the cluster "
        "(boom), so its 2 tensors were not checked."
    )


def _hide_after_planning(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """The dump moves away between planning (here) and the workers' reading: what a
    worker sees when the path is not on its file system."""
    original = ClusterRunner.__call__

    def moved(self: ClusterRunner, *args: Any, **kwargs: Any) -> Any:
        shutil.move(root, root.with_name("elsewhere"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ClusterRunner, "__call__", moved)


def test_a_dump_the_workers_cannot_see(
    capsys: pytest.CaptureFixture[str],
    client: Client,
    many_ranks: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "dump"
    shutil.copytree(many_ranks, root)
    _hide_after_planning(monkeypatch, root)
    code, out, err = check(
        capsys, str(root), "--watch", "TO", "--cluster", client.scheduler.address
    )
    assert code == 2 and out == ""
    (line,) = sentences(err, "check")
    assert line == (
        f"tuidebug check: 2 of the cluster's 2 workers (e.g. {min(client.scheduler_info()['workers'])}) "
        f"cannot see the dump at {root}: put it on a file system they share, at the same path."
    )


def test_api_dump_the_workers_cannot_see(
    client: Client, many_ranks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuidebug.api import DebuggerParamValueError
    from tuidebug.api.conditions import TensorOverflowCondition

    root = tmp_path / "dump"
    shutil.copytree(many_ranks, root)
    analyzer = DumpAnalyzer(str(root))
    wps = [ApiWatchpoint(analyzer.select_tensors(".*", use_regex=True), TensorOverflowCondition())]
    _hide_after_planning(monkeypatch, root)
    with pytest.raises(DebuggerParamValueError, match="cannot see the dump"):
        analyzer.check_watchpoints(wps, cluster=client)


def test_workers_of_another_tuidebug_version_are_refused(
    capsys: pytest.CaptureFixture[str],
    client: Client,
    many_ranks: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The workers run their own tuidebug (worker processes: the real import): another
    version than this one's would check with other code, so the check does not start."""
    import tuidebug

    theirs = tuidebug.__version__
    monkeypatch.setattr(tuidebug, "__version__", "0.0.1")
    code, out, err = check(
        capsys, str(many_ranks), "--watch", "TO", "--cluster", client.scheduler.address
    )
    assert code == 2 and out == ""
    (line,) = sentences(err, "check")
    assert line == (
        f"tuidebug check: 2 of the cluster's 2 workers (e.g. "
        f"{min(client.scheduler_info()['workers'])}) run tuidebug {theirs}, not 0.0.1: install "
        f"the same version on every worker."
    )


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (
            ModuleNotFoundError("No module named 'tuidebug'"),
            f"cannot import tuidebug: install tuidebug {_VERSION} on every worker "
            f"(pip install 'tuidebug[cluster]=={_VERSION}').",
        ),
        (  # tuidebug there, a dependency not (seen on a real worker, as the exception's repr)
            Exception("ModuleNotFoundError(\"No module named 'ml_dtypes'\")"),
            f"cannot import what tuidebug needs (no module ml_dtypes): install tuidebug "
            f"{_VERSION} with pip on every worker (it brings its dependencies).",
        ),
        (  # a worker started before tuidebug was upgraded (seen on a real `dask worker`)
            AttributeError(
                "Can't get attribute 'worker_view' on <module 'tuidebug.offline.check.cluster'>"
            ),
            f"run another tuidebug version: install tuidebug {_VERSION} on every worker and "
            f"restart them.",
        ),
        (
            RuntimeError("disk quota exceeded\nmore"),
            "failed when asked about the dump (disk quota exceeded): see their logs.",
        ),
    ],
)
def test_a_worker_that_cannot_answer_is_named_with_its_fix(
    client: Client,
    many_ranks: Path,
    monkeypatch: pytest.MonkeyPatch,
    failure: Exception,
    said: str,
) -> None:
    """What `Client.run(on_error="return")` hands back for a worker that fails the question
    before a check (each case seen on a real worker): one sentence with the fix."""
    answers = {"tcp://10.0.0.7:40001": failure, "tcp://10.0.0.8:40001": (_VERSION, True)}
    monkeypatch.setattr(Client, "run", lambda self, *a, **k: answers)
    with pytest.raises(cluster_mod.ClusterError) as err:
        ClusterRunner(client).check_workers(str(many_ranks))
    assert str(err.value) == f"1 of the cluster's 2 workers (e.g. tcp://10.0.0.7:40001) {said}"


# ------------------------------------------------------------------ the command line
def test_local_cluster_from_the_command_line(
    capsys: pytest.CaptureFixture[str], many_ranks: Path
) -> None:
    _both(capsys, "local:1", str(many_ranks), *WATCHES)


def test_workers_with_a_cluster_is_said_to_be_ignored(
    capsys: pytest.CaptureFixture[str], client: Client, many_ranks: Path
) -> None:
    code, _, err = check(
        capsys, str(many_ranks), "--watch", "TO", "--workers", "4",
        "--cluster", client.scheduler.address,
    )  # fmt: skip
    assert code == 1
    assert sentences(err, "check") == [
        "warning: --workers sets this machine's checker threads; with --cluster the "
        "cluster's workers check, so it was ignored."
    ]


@pytest.mark.parametrize("text", ["local:0", "local:x", "local:999", " "])
def test_bad_cluster_arguments(
    capsys: pytest.CaptureFixture[str], dump_2_10: Path, text: str
) -> None:
    code, out, err = check(capsys, str(dump_2_10), "--watch", "TO", "--cluster", text)
    assert code == 2 and out == ""
    (line,) = sentences(err, "check")
    assert "--cluster" in line


def test_unreachable_scheduler_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tuidebug.offline.check.cluster_connect.CONNECT_SECONDS", 2)
    with (
        pytest.raises(cluster_mod.ClusterError, match=r"^cannot reach tcp://127\.0\.0\.1:9: "),
        connect("tcp://127.0.0.1:9"),
    ):
        pass


# ------------------------------------------------------------------ tuidebug offline --cluster
def _session_run(
    root: Path, runner: ClusterRunner | None
) -> tuple[list[tuple[int, tuple[Any, ...]]], list[Progress]]:
    """The many-rank dump shown at rank 2, every rank checked: continue to the overflow,
    then step on with a weight change watchpoint; (step, hits) after each, and the
    Progress events."""
    session = OfflineSession(root, rank=2, runner=runner, all_ranks=True)
    log = EventLog()
    session.subscribe(log)
    try:
        session.start()
        answers = []
        session.create_watchpoint("TO", {})
        session.continue_()
        answers.append((session.metadata.step, tuple(session.hits)))
        session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": 0.0001})
        session.step()
        answers.append((session.metadata.step, tuple(session.hits)))
        session.recheck()
        answers.append((session.metadata.step, tuple(session.hits)))
    finally:
        session.close()
    return answers, [e for e in log.events if isinstance(e, Progress)]


def test_offline_session_on_the_cluster_gives_the_same_hits(
    client: Client, many_ranks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tuidebug offline DUMP --cluster`: the session's step, continue and recheck checks
    run on the cluster, over every rank, and find what they find here; the progress line
    says the cluster's tasks and the ranks done."""
    monkeypatch.setattr(session_mod, "PROGRESS_AFTER", 0.0)  # every check shows its line
    local, _ = _session_run(many_ranks, None)
    runner = ClusterRunner(client)
    remote, progress = _session_run(many_ranks, runner)
    assert remote == local
    assert local[0][0] == 2 and local[0][1]  # the overflow at iteration 1 stopped it
    assert local[1][0] == 3 and local[1][1]  # rank 2's weight changes a lot
    labels = [p.label for p in progress if "on the cluster" in p.label]
    assert labels and labels[-1].endswith("on the cluster: 4/4 tasks, ranks done 0–3")
    assert {h.tensor.rank for h in remote[0][1]} == {2}  # rank 2 alone overflows
    assert client.status == "running"  # a client passed in stays its owner's to close


def test_open_runner_is_closed_with_the_session(many_ranks: Path) -> None:
    runner = open_runner("local:1")
    c = runner.client
    session = OfflineSession(many_ranks, runner=runner)
    assert session.all_ranks  # a cluster is for checking every rank
    session.close()
    assert c.status == "closed"


def test_progress_describes_tasks_and_ranks_done() -> None:
    p = ClusterProgress(12, 16, 0, 0, 6, 1, (0, 1, 2, 3, 4, 5, 7))
    assert p.describe() == "12/16 tasks, ranks done 0–5, 7"
    assert ClusterProgress(0, 4, 0, 0, 0, 4).describe() == "0/4 tasks"
    assert cluster_mod.rank_ranges((9, 3, 4, 11, 10)) == "3–4, 9–11"


def test_parse_cluster() -> None:
    assert parse_cluster("local") == ("local", None)
    assert parse_cluster("local:3") == ("local", 3)
    assert parse_cluster("tcp://h:8786") == ("tcp://h:8786", None)


# ------------------------------------------------------------------ a hung worker
_REAL_CHECK_BATCH = cluster_mod.check_batch
_RELEASE = threading.Event()
_HUNG: list[str] = []  # the workers that hang (their address), or "*" for every worker


def _hanging_check_batch(tasks: Any, root: str, max_bytes: int | None) -> Any:
    """`check_batch` on a worker that hangs: the first worker to take a batch (or, with
    "*" in _HUNG, every worker) blocks until the test releases it."""
    from distributed import get_worker

    me = get_worker().address
    if not _HUNG:
        _HUNG.append(me)
    if me in _HUNG or "*" in _HUNG:
        _RELEASE.wait(60)
    return _REAL_CHECK_BATCH(tasks, root, max_bytes)


@pytest.fixture
def threads_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """Two in-process workers (so a test's function can hang them), released at the end."""
    monkeypatch.setattr(cluster_mod, "check_batch", _hanging_check_batch)
    monkeypatch.setattr(cluster_mod, "POLL_SECONDS", 0.05)
    _HUNG.clear()
    _RELEASE.clear()
    cluster = LocalCluster(
        n_workers=2,
        processes=False,
        threads_per_worker=1,
        dashboard_address=":0",
        silence_logs=logging.CRITICAL,
    )
    try:
        with Client(cluster) as c:
            yield c
    finally:
        _RELEASE.set()
        # bounded: a test that closed the scheduler leaves nothing for it to wait for
        with contextlib.suppress(TimeoutError):
            cluster.close(timeout=5)


@pytest.mark.timeout(120)
def test_a_hung_workers_batches_run_again_on_an_idle_worker(
    threads_cluster: Client, many_ranks: Path
) -> None:
    """A worker alive to Dask's heartbeats that never finishes: after `stall_seconds`
    without a result its batches run on the idle worker, and the report is the local one."""
    runner = ClusterRunner(threads_cluster, stall_seconds=1.0)
    _compare(many_ranks, runner)  # without the bound it waits for ever: the timeout fails it
    assert runner.rerun  # at least the batch the hung worker held
    assert runner.hung == set(_HUNG)
    # the next check (the TUI's next step) sends the hung worker nothing: no stall again
    _compare(many_ranks, runner)
    assert not runner.rerun


@pytest.mark.timeout(120)
def test_every_worker_hung_gives_up_with_one_sentence_per_batch(
    threads_cluster: Client, many_ranks: Path
) -> None:
    """No idle worker to move the batches to: they are given up after the bound, named,
    and the check is incomplete, instead of waiting for ever."""
    _HUNG.append("*")
    dump = OfflineDump(many_ranks)
    runner = ClusterRunner(threads_cluster, stall_seconds=1.0)
    report = Checker(dump, runner=runner).check(_watches(dump), dump.iterations())
    assert not report.outcomes or all(not o.result.hit for o in report.outcomes)
    sentences = set(report.problems)
    assert len(sentences) == len(runner.batches)
    for sentence in sentences:
        assert re.fullmatch(
            r"rank_\d graph \S+ iterations? [\d-]+ could not be checked on the cluster \(no "
            r"result after 1 s( on \S+)?: is a worker hung\?\), so its \d+ tensors were not "
            r"checked\.",
            sentence,
        ), sentence


# ------------------------------------------------------------------ a lost or hung scheduler
@pytest.mark.timeout(120)
def test_a_scheduler_lost_mid_check_is_one_sentence(
    threads_cluster: Client, many_ranks: Path
) -> None:
    """The scheduler goes away while every batch runs: Dask cancels the futures; the check
    ends at once, incomplete, with one sentence for all the batches it lost."""
    _HUNG.append("*")
    dump = OfflineDump(many_ranks)
    runner = ClusterRunner(threads_cluster)
    cluster = threads_cluster.cluster
    assert cluster is not None
    threading.Timer(1.0, lambda: cluster.sync(cluster.scheduler.close)).start()
    report = Checker(dump, runner=runner).check(_watches(dump), dump.iterations())
    assert not report.outcomes
    (sentence,) = set(report.problems)
    assert sentence == (
        f"{len(runner.batches)} tasks of ranks 0-3 (iterations 0-2) could not be checked on "
        f"the cluster (the connection to the Dask scheduler was lost), so their "
        f"{sum(len(b.tids) for b in runner.batches)} tensors were "
        f"not checked."
    )
    # the next check (a TUI step) says at once that the scheduler is gone, in one sentence
    session = OfflineSession(many_ranks, runner=runner, all_ranks=True)
    try:
        session.start()
        session.create_watchpoint("TO", {})
        with pytest.raises(SessionError) as err:
            session.step()
    finally:
        session.close()
    assert re.fullmatch(
        r"The check on the cluster failed: the connection to the Dask scheduler at "
        r"\S+ was lost \(\w+\): is it still running\?",
        str(err.value),
    ), str(err.value)


@pytest.mark.timeout(120)
def test_a_scheduler_hung_mid_check_gives_up_within_the_bounds(
    threads_cluster: Client, many_ranks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing comes back and the scheduler does not say which workers are busy (it is
    stopped, wedged): after the stall bound and one unanswered question, every batch is
    given up in one sentence, instead of waiting for the scheduler for ever."""
    _HUNG.append("*")
    monkeypatch.setattr(cluster_mod, "ANSWER_SECONDS", 0.5)
    monkeypatch.setattr(Client, "processing", lambda self, workers=None: _RELEASE.wait(60))
    dump = OfflineDump(many_ranks)
    runner = ClusterRunner(threads_cluster, stall_seconds=1.0)
    report = Checker(dump, runner=runner).check(_watches(dump), dump.iterations())
    assert not report.outcomes
    (sentence,) = set(report.problems)
    assert sentence.startswith(f"{len(runner.batches)} tasks of ranks 0-3 (iterations 0-2) ")
    assert "(no result after 1 s and no answer from the scheduler)" in sentence


def test_a_request_the_scheduler_never_answers_is_bounded() -> None:
    never = threading.Event()
    with pytest.raises(
        cluster_mod.ClusterError,
        match=r"^the Dask scheduler did not answer \(its workers\) within 0\.2 s: is it hung\?$",
    ):
        cluster_mod.ask(lambda: never.wait(30), "its workers", 0.2)
    with pytest.raises(ZeroDivisionError):  # the request's own error is the caller's
        cluster_mod.ask(lambda: 1 / 0, "a sum")
    assert cluster_mod.ask(lambda: 42, "the answer") == 42


@pytest.mark.timeout(120)
def test_a_stopped_scheduler_process_is_one_sentence(
    many_ranks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real `dask scheduler` process, stopped (SIGSTOP) after the client connected: the
    check's first question to it is bounded and said in one sentence."""
    monkeypatch.setattr(cluster_mod, "ANSWER_SECONDS", 1.0)
    address_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard", "--scheduler-file", str(address_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not address_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(address_file.read_text())["address"]
        dump = OfflineDump(many_ranks)
        with connect(address) as client:
            scheduler.send_signal(signal.SIGSTOP)
            try:
                with pytest.raises(cluster_mod.ClusterError, match=r"did not answer .* 1 s"):
                    Checker(dump, runner=ClusterRunner(client)).check(
                        _watches(dump), dump.iterations()
                    )
            finally:
                scheduler.send_signal(signal.SIGCONT)
    finally:
        scheduler.terminate()
        scheduler.wait(30)


# ------------------------------------------------------------------ no worker left
@pytest.mark.timeout(120)
def test_the_only_worker_killed_mid_check_ends_in_one_sentence(
    capsys: pytest.CaptureFixture[str],
    many_ranks: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real `dask scheduler` and its only worker (no nanny to restart it), SIGKILLed as it
    starts the first batch: the scheduler knows it is gone and keeps the batches queued for
    ever; `check` ends after the no-worker bound, incomplete (exit 2), with one sentence
    for every batch left, instead of printing nothing and never ending."""
    monkeypatch.setattr(cluster_mod, "NO_WORKER_SECONDS", 2.0)
    monkeypatch.setattr(cluster_mod, "WORKER_POLL_SECONDS", 0.2)
    address_file = tmp_path / "scheduler.json"
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard", "--scheduler-file", str(address_file)],
        **quiet,
    )  # fmt: skip
    worker: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 60
        while not address_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(address_file.read_text())["address"]
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--no-nanny",
             "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
            **quiet,
        )  # fmt: skip
        marker = str(tmp_path / "killed")

        class KillOnStart(WorkerPlugin):  # defined here: pickled by value to the worker
            name = "tuidebug-kill-on-start"

            def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
                if finish == "executing" and "tuidebug-check" in str(key):
                    open(marker, "w").close()  # the test asks whether it died mid-check
                    os.kill(os.getpid(), signal.SIGKILL)

        with Client(address) as client:
            client.wait_for_workers(1, timeout=60)
            client.register_plugin(KillOnStart())
        started = time.monotonic()
        code, out, err = check(capsys, str(many_ranks), "--watch", "TO", "--cluster", address)
        assert time.monotonic() - started < 60
        assert os.path.exists(marker)  # the worker did die mid-check
        assert worker.wait(30) == -signal.SIGKILL
    finally:
        for process in (worker, scheduler):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(30)
    assert code == 2, (out, err)
    lost = [line for line in sentences(err, "check") if "no worker" in line]
    assert len(lost) == 1, err
    assert re.fullmatch(
        r"warning: (\d+ tasks of ranks 0-3 \(iterations 0-2\)|rank_\d graph \S+ iterations? "
        r"[\d-]+) could not be checked on the cluster \(the cluster has had no worker for "
        r"2 s\), so (their|its) \d+ tensors were not checked\.",
        lost[0],
    ), lost[0]
