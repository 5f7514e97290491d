"""Statistic-only dumps (`saved_data: "statistic"`, spec §5.1, §5.3): discovery from the
CSV rows, watchpoints decided from the statistics with MindSpore's math (the same hits as
the same values dumped in full, where the CSV decides exactly), one refusal sentence per
watchpoint that needs a statistic the CSV lacks, in the checker, `tuidebug check`, the API
and the session; the committed constructed fixtures."""

from __future__ import annotations

import filecmp
import logging
import math
from pathlib import Path
from typing import Any

import pytest

from tests.cli.support import check, sentences
from tests.constructed import statistic_dump as sd
from tuidebug.core.condition_catalogue import CheckRequest, Param
from tuidebug.core.session import Notice
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import Watchpoint, parse_watch_spec
from tuidebug.offline.check.checker import Checker, CheckReport, Watch
from tuidebug.offline.check.statistic import Missing, decide
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.tensor.reads import NOT_DUMPED, read_tensor, summarize

COMMITTED = Path(__file__).resolve().parents[1] / "data" / "constructed"
# decided exactly from either header (max/min/max_min/zero_percentage and the counts)
EXACT = ["TO", "TL:max_gt=1.5", "TS:min_lt=-1", "TZ:zero_percentage_ge=50", "TR:max_min_gt=3"]
WEIGHTS = ["WO", "WL:max_gt=0.5", "WS:min_lt=-1", "WI:zero_percentage_ge=40"]


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("statistic")
    return {
        "old": sd.write_old(root / "old"),
        "new": sd.write_new(root / "new"),
        "full_old": sd.write_full(root / "full_old"),
        "full_new": sd.write_full(root / "full_new", new=True),
    }


def run_check(root: Path, specs: list[str], iterations: tuple[int, ...] = (0, 1)) -> CheckReport:
    dump = OfflineDump(root)
    ((graph_name, graph),) = dump.graphs(0).items()
    pairs = [(n.name, s.slot) for n in graph for s in n.outputs]
    watches = []
    for wp_id, spec in enumerate(specs):
        condition, params = parse_watch_spec(spec)
        wp = Watchpoint(wp_id, condition, params)
        watches.append(Watch(wp_id, wp.request(), condition.needs_prev, {(0, graph_name): pairs}))
    return Checker(dump, workers=1).check(watches, iterations)


def outcomes(report: CheckReport) -> list[tuple[Any, ...]]:
    """Each reported result, actual values rounded as statistic.csv writes them (6 digits)."""
    out = []
    for o in report.outcomes:
        params = tuple(
            (p.name, p.hit, None if p.actual is None else float(f"{p.actual:g}"))
            for p in o.result.params
            if not p.disabled
        )
        out.append((o.key, o.watchpoint_id, o.result.hit, o.error_code, params))
    return out


# ------------------------------------------------------------------ discovery
@pytest.mark.parametrize("kind", ["old", "new"])
def test_a_statistic_only_folder_is_indexed_from_its_rows(
    dumps: dict[str, Path], kind: str
) -> None:
    dump = OfflineDump(dumps[kind])
    assert dump.iterations() == [0, 1]
    graph_name = next(iter(dump.graphs(0)))
    index = dump.index(0, graph_name)
    assert index.statistic_only(0) and index.statistic_only(1)
    rows = index.statistic_rows(1)
    assert (sd.LOG, "output", 0) in rows and ("fc.weight", "output", 0) in rows
    assert (sd.MATMUL, "input", 1) in rows  # inputs are kept under their io
    assert index.iterations_with_data(sd.LOG) == [0, 1]
    log = index.statistic_row(sd.LOG, 0, 1)
    assert log is not None and log.stats["nan_count"] == 1 and log.shape == (2, 2)
    # nothing to read, and no complaint about it
    assert dump.value(0, graph_name, sd.LOG, 0, 1) is None
    assert dump.problems == []


def test_a_row_that_contradicts_its_node_is_not_shown(tmp_path: Path) -> None:
    root = sd.write_old(tmp_path / "d")
    csv = root / "rank_0" / sd.NET / "0" / "0" / "statistic.csv"
    csv.write_text(
        csv.read_text().replace(
            'ReLU-op0,0,0,1700000000000222,output,0,16,float32,"(2,2)"',
            'ReLU-op0,0,0,1700000000000222,output,0,16,int8,"(2,2)"',
        )
    )
    dump = OfflineDump(root)
    index = dump.index(0, next(iter(dump.graphs(0))))
    assert index.statistic_row(sd.RELU, 0, 0) is None
    assert index.statistic_row(sd.LOG, 0, 0) is not None
    assert any("ReLU-op0:output:0" in p and "int8" in p for p in dump.problems)


def test_a_data_type_cell_in_numpy_grammar_is_not_evaluated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`Data Type` is untrusted text: numpy's dtype grammar raised ValueError ("(1,)("),
    SyntaxError ("(2)f4,(") or made a struct ("f4,f4": a false conflict). An unknown name
    is not checked: the rows stay, nothing is said, and the check runs."""
    root = sd.write_old(tmp_path / "d")
    csv = root / "rank_0" / sd.NET / "0" / "0" / "statistic.csv"
    text = csv.read_text()
    for op, cell in (("MatMul-op0", "(1,)("), ("ReLU-op0", "(2)f4,("), ("Log-op0", "f4,f4")):
        row = next(line for line in text.splitlines() if f",{op}," in line and ",output," in line)
        text = text.replace(row, row.replace(',float32,"', f',"{cell}","'))
    csv.write_text(text)
    dump = OfflineDump(root)
    index = dump.index(0, next(iter(dump.graphs(0))))
    for node in (sd.MATMUL, sd.RELU, sd.LOG):
        assert index.statistic_row(node, 0, 0) is not None, node
    assert index.statistic_row(sd.LOG, 0, 0).data_type == "f4,f4"  # type: ignore[union-attr]
    assert dump.problems == []
    code, out, err = check(capsys, str(root), "--watch", "TO")
    assert code == 1 and "Log-op0" in out and not sentences(err, "check")
    assert "Traceback" not in err


# ------------------------------------------------------------------ checks
@pytest.mark.parametrize("kind", ["old", "new"])
def test_hits_are_those_of_the_same_values_dumped_in_full(
    dumps: dict[str, Path], kind: str
) -> None:
    specs = EXACT + WEIGHTS
    from_stats = run_check(dumps[kind], specs)
    from_values = run_check(dumps[f"full_{kind}"], specs)
    assert from_stats.problems == [] and from_values.problems == []
    assert outcomes(from_stats) == outcomes(from_values)
    assert from_stats.tensors_checked == from_values.tensors_checked == 10
    overflow = [o for o in from_stats.outcomes if o.watchpoint_id == 0]
    assert {(o.key.node, o.key.iteration) for o in overflow} == {(sd.LOG, 0), (sd.LOG, 1)}
    # a threshold on a tensor with NaN/Inf: MindSpore's error code, nothing evaluated
    errors = {
        o.error_code
        for o in from_stats.outcomes
        if o.key.node == sd.LOG and o.watchpoint_id not in (0, 5)
    }
    assert errors == {2, 3}


def test_the_mean_is_the_csv_average(dumps: dict[str, Path]) -> None:
    """The old header has `Avg Value`: mean thresholds decide as the full tensors do (the
    actual value as the CSV writes it, 6 significant digits)."""
    from_stats = run_check(dumps["old"], ["TL:mean_gt=0.3"])
    from_values = run_check(dumps["full_old"], ["TL:mean_gt=0.3"])
    assert outcomes(from_stats) == outcomes(from_values) and from_stats.outcomes


@pytest.mark.parametrize(
    ("kind", "spec", "words"),
    [
        ("old", "TL:abs_mean_gt=1", "TensorTooLarge abs_mean_gt"),
        ("old", "TS:abs_mean_lt=1", "TensorTooSmall abs_mean_lt"),
        (
            "old",
            "TR:range_start_inclusive=0,range_end_inclusive=1,range_percentage_lt=50",
            "TensorRange range_percentage_lt",
        ),
        ("old", "WCL:abs_mean_update_ratio_gt=0.1", "TensorChangeAboveThreshold"),
        ("old", "WNC:rtol=0.001", "TensorUnchanged"),
        ("new", "TL:mean_gt=0.3", "'Avg Value' column"),
    ],
)
def test_a_watchpoint_the_csv_cannot_decide_is_refused_in_one_sentence(
    dumps: dict[str, Path], kind: str, spec: str, words: str
) -> None:
    report = run_check(dumps[kind], ["TO", spec])
    assert len(report.problems) == 1, report.problems
    (sentence,) = report.problems
    assert words in sentence and "statistic-only" in sentence and sentence.endswith(".")
    assert sentence.count(". ") == 0  # one sentence
    # the other watchpoint is still checked
    assert any(o.watchpoint_id == 0 and o.result.hit for o in report.outcomes)


def test_refusals_name_the_missing_column() -> None:
    req = CheckRequest(15, (Param("abs_mean_gt"), Param("max_gt", 1.0, False)))
    assert decide(req, {"max": 2.0, "nan_count": 0, "neg_inf_count": 0}) == Missing(
        "the 'Positive Inf Count' column of statistic.csv"
    )
    stats = {"max": 2.0, "nan_count": 0, "neg_inf_count": 0, "pos_inf_count": 0}
    result = decide(req, stats)
    assert not isinstance(result, Missing) and result.hit and result.params[1].actual == 2.0
    # an empty tensor is skipped, as MindSpore skips it
    empty = decide(req, {**stats, "count": 0})
    assert not isinstance(empty, Missing) and not empty.reported
    assert isinstance(decide(CheckRequest(13), {"nan_count": 1}), Missing)
    overflow = decide(CheckRequest(13), {"nan_count": 1, "neg_inf_count": 0, "pos_inf_count": 0})
    assert not isinstance(overflow, Missing) and overflow.hit and overflow.error_code == 0


# ------------------------------------------------------------------ tuidebug check
def test_check_exit_codes(dumps: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = check(capsys, str(dumps["new"]), "--watch", "TO")
    assert code == 1 and "Log-op0" in out and not sentences(err, "check")
    # on finite tensors (Log's NaN/Inf would give MindSpore's error codes, reported as hits)
    code, out, err = check(
        capsys, str(dumps["new"]), "--watch", "TL:abs_mean_gt=1", "--node", "MatMul"
    )
    lines = sentences(err, "check")
    assert code == 2
    assert any("TensorTooLarge abs_mean_gt" in line and "abs_mean" in line for line in lines)
    # a refusal beside hits: the hits are the result, the refusal a warning
    code, out, err = check(capsys, str(dumps["new"]), "--watch", "TO", "--watch", "TL:mean_gt=1")
    assert code == 1 and any("'Avg Value'" in line for line in sentences(err, "check"))


# ------------------------------------------------------------------ API
def test_api_checks_and_warns(dumps: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    from tuidebug.api import (
        DumpAnalyzer,
        TensorOverflowCondition,
        TensorTooLargeCondition,
    )
    from tuidebug.api import Watchpoint as ApiWatchpoint

    analyzer = DumpAnalyzer(str(dumps["old"]))
    tensors = analyzer.select_tensors("Log-op0", iterations=[0, 1])
    assert len(tensors) == 2
    with caplog.at_level(logging.WARNING, logger="tuidebug.api"):
        hits = analyzer.check_watchpoints(
            [
                ApiWatchpoint(tensors, TensorOverflowCondition()),
                ApiWatchpoint(tensors, TensorTooLargeCondition(abs_mean_gt=1.0)),
            ]
        )
    overflow = [h for h in hits if h.error_code == 0]
    assert sorted(h.tensor.iteration or 0 for h in overflow) == [0, 1]
    # abs_mean_gt on Log (NaN/Inf): error codes, as MindSpore, and no refusal
    assert {h.error_code for h in hits} == {0, 2, 3}
    assert not any("abs_mean" in r.getMessage() for r in caplog.records)
    weights = analyzer.select_tensors("fc.weight", iterations=[0])
    with caplog.at_level(logging.WARNING, logger="tuidebug.api"):
        refused = analyzer.check_watchpoints(
            [ApiWatchpoint(weights, TensorTooLargeCondition(abs_mean_gt=1.0))]
        )
    assert refused == []
    assert any("TensorTooLarge abs_mean_gt" in r.getMessage() for r in caplog.records)
    assert weights[0].value() is None  # values were not dumped


# ------------------------------------------------------------------ session
def test_session_statistics_entries_and_notices(dumps: dict[str, Path]) -> None:
    session = OfflineSession(dumps["old"])
    notices: list[str] = []
    session.subscribe(lambda e: notices.append(e.message) if isinstance(e, Notice) else None)
    session.start()
    try:
        session.create_watchpoint("TO", {})
        session.create_watchpoint("TL", {"abs_mean_gt": 1.0})
        session.step()
        assert session.metadata.step == 1
        assert [(h.tensor.node, h.tensor.iteration) for h in session.hits if h.error_code == 0] == [
            (sd.LOG, 0)
        ]
        assert sum("TensorTooLarge abs_mean_gt" in n for n in notices) == 1
        entries = session.tensor_entries()
        assert {e.node for e in entries} == {"x", "fc.weight", sd.MATMUL, sd.RELU, sd.LOG}
        ref = TensorRef(sd.LOG, 0, None, 0)
        assert session.tensor(ref) is None
        stats = session.dumped_statistics(ref)
        assert stats is not None and stats["neg_inf_count"] == 2 and stats["max"] == 0.693147
        node = next(iter(session.graphs.values())).node(sd.LOG)
        answer = read_tensor(session, node, ref, want_previous=False, shown_step=1)
        assert answer is not None and NOT_DUMPED in answer.error and "-Inf 2" in answer.error
        summary = summarize(session, ref)
        assert summary.inf_count == 2 and "statistics only" in summary.line
    finally:
        session.close()


def test_full_dumps_also_answer_their_csv(dumps: dict[str, Path], tmp_path: Path) -> None:
    """`saved_data: "full"`: the tensor is read, and its CSV row is there to compare."""
    root = sd.write_full(tmp_path / "full")
    csv = sd.csv_text(0, new=False)
    (root / "rank_0" / sd.NET / "0" / "0" / "statistic.csv").write_text(csv)
    session = OfflineSession(root)
    session.start()
    try:
        ref = TensorRef(sd.MATMUL, 0, 0, 0)
        value = session.tensor(ref)
        stats = session.dumped_statistics(ref)
        assert value is not None and stats is not None
        assert stats["max"] == float(value.max()) and stats["count"] == value.size
        assert math.isclose(stats["avg"], float(value.mean()), rel_tol=1e-5, abs_tol=1e-6)
    finally:
        session.close()


# ------------------------------------------------------------------ fixtures
def test_the_committed_fixtures_are_what_the_writer_writes(tmp_path: Path) -> None:
    sd.write(tmp_path)
    for kind in ("statistic_old", "statistic_new"):
        ours, committed = tmp_path / kind, COMMITTED / kind
        assert (committed / "README.md").is_file()
        files = sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
        assert files and all(filecmp.cmp(ours / f, committed / f, shallow=False) for f in files)
        kept = sorted(
            p.relative_to(committed)
            for p in committed.rglob("*")
            if p.is_file() and p.name != "README.md"
        )
        assert kept == files
