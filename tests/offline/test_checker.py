"""The offline checker itself: process pool vs in-process, ordering, progress, cancellation,
the memory limit (error 8) and the no-value report (error 32)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from tests.offline.dump_copy import copy_dump
from tuidebug.core.watchpoints import Watchpoint, resolve_targets
from tuidebug.offline.check import checker as checker_module
from tuidebug.offline.check.checker import Checker, CheckOutcome, Watch, needs_previous
from tuidebug.offline.dump import OfflineDump

GRAPH = "kernel_graph0"


def plan(dump: OfflineDump, specs: list[tuple[str, dict[str, float]]]) -> list[Watch]:
    graph = dump.graph(0, GRAPH)
    watches = []
    for wp_id, (cond, params) in enumerate(specs, start=1):
        wp = Watchpoint(wp_id, cond, params)
        pairs = [
            (n.name, s)
            for n in resolve_targets(wp.condition, (), graph)
            for s in range(max(1, len(n.outputs)))
        ]
        watches.append(Watch(wp_id, wp.request(), wp.condition.needs_prev, {(0, GRAPH): pairs}))
    return watches


SPECS = [
    ("TO", {}),
    ("TL", {"abs_mean_gt": 1.0}),
    ("WCS", {"abs_mean_update_ratio_lt": 1e-3}),
    (
        "TR",
        {"range_start_inclusive": -0.01, "range_end_inclusive": 0.01, "range_percentage_lt": 50},
    ),
]


def summary(outcomes: list[CheckOutcome]) -> list[tuple]:
    return [
        (
            o.key,
            o.watchpoint_id,
            o.error_code,
            tuple((p.name, p.hit, p.actual) for p in o.result.params),
        )
        for o in outcomes
    ]


@pytest.fixture(scope="module")
def dump(dump_2_10: Path) -> OfflineDump:
    return OfflineDump(dump_2_10)


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """LeNet is small: make every check use the checker threads."""
    monkeypatch.setattr(checker_module, "THREADED_MIN_BYTES", 0)


def test_threads_and_one_thread_agree(dump: OfflineDump, threaded: None) -> None:
    watches = plan(dump, SPECS)
    with Checker(dump, workers=1) as single:
        inproc = single.check(watches, range(4))
    assert inproc.workers == 1 and not inproc.problems
    seen: list[tuple[int, int]] = []
    with Checker(dump, workers=2) as pooled:
        report = pooled.check(watches, range(4), progress=lambda d, t: seen.append((d, t)))
        again = pooled.check(watches, [2])  # the threads are reused
    assert report.workers == 2 and not report.problems
    assert summary(report.outcomes) == summary(inproc.outcomes)
    assert report.problems == inproc.problems
    assert report.tensors_checked == inproc.tensors_checked == 4 * 66
    assert seen[0] == (0, report.tensors_checked) and seen[-1] == (264, 264)
    assert summary(again.outcomes) == [s for s in summary(inproc.outcomes) if s[0].iteration == 2]


def test_order_is_iteration_then_execution_order_then_watchpoint(dump: OfflineDump) -> None:
    with Checker(dump) as checker:
        report = checker.check(plan(dump, SPECS), range(4))
    keys = [
        (
            o.key.iteration,
            dump.execution_position(0, GRAPH, o.key.node),
            o.key.slot,
            o.watchpoint_id,
        )
        for o in report.outcomes
    ]
    assert keys == sorted(keys)
    assert len({o.watchpoint_id for o in report.outcomes}) == 3  # TO never hits


WEIGHTS = (
    "conv1.weight",
    "conv2.weight",
    "fc1.bias",
    "fc1.weight",
    "fc2.bias",
    "fc2.weight",
    "fc3.bias",
    "fc3.weight",
)


def test_each_tensor_is_read_once_for_all_its_watchpoints(dump: OfflineDump) -> None:
    with Checker(dump) as checker:
        one = checker.check(plan(dump, SPECS[:1]), [1])
        four = checker.check(plan(dump, SPECS), [1])
    # the weights' previous values are read too (WCS), nothing else is read twice
    weights_prev = sum(dump.value(0, GRAPH, n, 0, 0).nbytes for n in WEIGHTS)
    assert four.tensors_checked == one.tensors_checked
    assert four.bytes_read == one.bytes_read + weights_prev


def test_cancel(dump: OfflineDump, threaded: None, monkeypatch: pytest.MonkeyPatch) -> None:
    cancel = threading.Event()
    cancel.set()
    with Checker(dump) as checker:
        report = checker.check(plan(dump, SPECS), range(4), cancel=cancel)
    assert report.cancelled and report.tensors_checked == 0 and report.outcomes == []

    real = checker_module.run_task
    calls = 0

    def stop_after_ten(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 10:
            cancel.set()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(checker_module, "run_task", stop_after_ten)
    cancel.clear()
    with Checker(dump, workers=2) as checker:
        report = checker.check(plan(dump, SPECS), range(4), cancel=cancel)
    # each thread stops at its next tensor: the ten, and the one the other was on
    assert report.cancelled and 10 <= report.tensors_checked <= 11


def test_memory_limit_error_8(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d", with_data=True)
    limited = OfflineDump(root, mem_limit=4096)
    with Checker(limited) as checker:
        report = checker.check(
            plan(limited, [("TO", {}), ("WCS", {"abs_mean_update_ratio_lt": 1e-3})]), [1]
        )
    big = {o.key.node for o in report.outcomes if o.error_code == 8}
    # fc1.weight (120x400 float32) and the conv activations exceed 4 KiB; biases do not
    assert "fc1.weight" in big and "fc1.bias" not in big
    assert {o.watchpoint_id for o in report.outcomes if o.key.node == "fc1.weight"} == {1, 2}
    assert all(
        o.error_code in (0, 8) for o in report.outcomes
    )  # the small weights are evaluated normally (no error 4 at iteration 1)


def test_error_on_no_value(dump: OfflineDump) -> None:
    graph = dump.graph(0, GRAPH)
    make_tuple = next(n for n in graph if n.op_type == "MakeTuple")
    wp = Watchpoint(1, "TO", {})
    watches = [Watch(1, wp.request(), False, {(0, GRAPH): [(make_tuple.name, 0), ("fc1.bias", 0)]})]
    with Checker(dump) as checker:
        assert checker.check(watches, [0]).outcomes == []
        report = checker.check(watches, [0], error_on_no_value=True)
    assert [(o.key.node, o.error_code) for o in report.outcomes] == [(make_tuple.name, 32)]


def test_nan_and_inf_are_hits_with_error_bits(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d", with_data=True)
    target = next((root / "rank_0/LeNet/0/1").glob("Parameter.fc1_bias.*.npy"))
    values = np.load(target)
    values[0], values[1] = np.nan, np.inf
    target.unlink()
    np.save(target, values)
    d = OfflineDump(root)
    watches = plan(d, [("TO", {}), ("TL", {"abs_mean_gt": 1e10})])
    with Checker(d) as checker:
        report = checker.check(watches, [1])
    found = {(o.key.node, o.watchpoint_id, o.error_code, o.result.hit) for o in report.outcomes}
    assert found == {("fc1.bias", 1, 0, True), ("fc1.bias", 2, 3, False)}


def test_needs_previous() -> None:
    assert [c for c in range(22) if needs_previous(c)] == [18, 19, 20]


def test_worker_count_validation(dump: OfflineDump) -> None:
    with pytest.raises(ValueError):
        Checker(dump, workers=0)


def test_a_check_starts_no_process(
    dump: OfflineDump, threaded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads of this process, never a child: no spawn to wait for, nothing to shut down."""

    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("the checker started a process")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    monkeypatch.setattr(os, "fork", no_process)
    with Checker(dump, workers=2) as checker:
        report = checker.check(plan(dump, SPECS), range(4))
    assert report.workers == 2 and report.tensors_checked == 4 * 66


def test_a_bug_in_a_checker_thread_reaches_the_caller(
    dump: OfflineDump, threaded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug is not swallowed by a helper thread: the check raises it, and the next check
    runs normally."""
    calls = 0
    real = checker_module.run_task

    def flaky(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("a bug")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(checker_module, "run_task", flaky)
    with Checker(dump, workers=2) as checker:
        with pytest.raises(RuntimeError, match="a bug"):
            checker.check(plan(dump, SPECS), range(4))
        assert checker.check(plan(dump, SPECS), [1]).tensors_checked == 66


@pytest.mark.parametrize(
    "module", ["tuidebug.offline.check.checker", "tuidebug.offline.session", "tuidebug.cli.check"]
)
def test_loads_without_textual(module: str) -> None:
    code = f"import sys, importlib; importlib.import_module({module!r}); print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_each_file_is_opened_once(dump_2_10: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check reads a file's header with its data and verifies it against the graph
    then: no separate header pass (a dump of many tiny files would pay it per file)."""
    from tuidebug.offline.layout import tensor_index

    peeks: list[object] = []
    real = tensor_index.peek_header
    monkeypatch.setattr(tensor_index, "peek_header", lambda p: peeks.append(p) or real(p))
    fresh = OfflineDump(dump_2_10)
    with Checker(fresh) as checker:
        report = checker.check(plan(fresh, [("TO", {})]), range(4))
    assert report.tensors_checked == 4 * 66 and peeks == []


def test_a_file_that_contradicts_its_node_is_checked_as_it_is(
    dump_2_10: Path, tmp_path: Path
) -> None:
    """Found when read, as the header pass would have found it: not shown under its node (the
    dump's problems say so), but checked as it is, its sentence in the check's problems."""
    root = copy_dump(dump_2_10, tmp_path / "d", with_data=True)
    (relu,) = (root / "rank_0/LeNet/0/1").glob("ReLU.*relu-ReLU_ReLU-op1.*.output.0.*.npy")
    relu.unlink()
    np.save(relu, np.full((3, 3), np.inf, np.float32))
    d = OfflineDump(root)
    node = "Default/network-WithLossCell/_backbone-LeNet5/relu-ReLU/ReLU-op1"
    wp = Watchpoint(1, "TO", {})
    watches = [Watch(1, wp.request(), False, {(0, GRAPH): [(node, 0)]})]
    with Checker(d) as checker:
        report = checker.check(watches, [1], error_on_no_value=True)
    assert [(o.key.node, o.error_code, o.result.hit) for o in report.outcomes] == [(node, 0, True)]
    assert report.tensors_checked == 1
    assert any("has shape (3, 3)" in p and "reads it as it is" in p for p in report.problems)
    assert d.tensor_file(0, GRAPH, node, 0, 1) is None  # later lookups agree


def test_raw_layout_notes_are_listed_once_and_a_flood_is_counted() -> None:
    """A hostile .bin folder of 100,000 raw tensors gives 21 lines, not 100,000 (issue 27 §4),
    and each note is kept once however often it is said."""
    from tuidebug.offline.check.checker import _Notes

    notes = _Notes()
    for i in range(1000):
        notes.add(f"t{i} is raw.")
        notes.add("t0 is raw.")
    final = notes.final()
    assert final[: _Notes.LISTED] == [f"t{i} is raw." for i in range(_Notes.LISTED)]
    assert (
        final[-1]
        == f"{1000 - _Notes.LISTED} more tensors were likewise used raw, in their device layout."
    )
    assert len(final) == _Notes.LISTED + 1
    few = _Notes()
    few.add("a.")
    few.add("a.")
    assert few.final() == ["a."]
