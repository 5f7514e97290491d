"""Acceptance: the ten reference watchpoints W1–W10 on both real LeNet dumps reproduce the
reference answers of `fixtures/expected/` — MindInsight 2.0.0's own `DumpAnalyzer` on the 2.0.0
dump, an independent numpy implementation of MindSpore's math on the 2.10.0 dump — through
the Python API and through `tuidebug check --json` (in a subprocess and in-process).

Compared: the set of (iteration, node, slot, error code) per watchpoint, and the measured
statistic of every value hit to 1e-6 relative. The 2.10 reference names nodes as their files
do (`Default_network-…-op0`, `fc1_weight`), so our hits are mapped through the file that holds
each tensor.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tuidebug import api
from tuidebug.cli import main as cli_main
from tuidebug.offline.dump import OfflineDump

REL = 1e-6


@dataclass(frozen=True)
class W:
    label: str
    make: Callable[[], api.ConditionBase]
    spec: str  # the same watchpoint for `tuidebug check --watch`
    target: str  # "all" output tensors or the 8 "weights"
    condition: str  # MindInsight's condition name in the 2.0 reference
    params: dict[str, float]


WATCHPOINTS = [
    W("W1", api.TensorOverflowCondition, "TO", "all", "TensorOverflow", {}),
    W(
        "W2",
        lambda: api.TensorTooLargeCondition(abs_mean_gt=1e10),
        "TL:abs_mean_gt=1e10",
        "all",
        "TensorTooLarge",
        {"abs_mean_gt": 1e10},
    ),
    W(
        "W3",
        lambda: api.TensorTooLargeCondition(max_gt=1e30),
        "TL:max_gt=1e30",
        "all",
        "TensorTooLarge",
        {"max_gt": 1e30},
    ),
    W(
        "W4",
        lambda: api.TensorTooLargeCondition(abs_mean_gt=1.0),
        "TL:abs_mean_gt=1",
        "all",
        "TensorTooLarge",
        {"abs_mean_gt": 1.0},
    ),
    W(
        "W5",
        lambda: api.TensorTooSmallCondition(abs_mean_lt=1e-9),
        "TS:abs_mean_lt=1e-9",
        "all",
        "TensorTooSmall",
        {"abs_mean_lt": 1e-9},
    ),
    W(
        "W6",
        lambda: api.TensorAllZeroCondition(zero_percentage_ge=100),
        "TZ:zero_percentage_ge=100",
        "all",
        "TensorAllZero",
        {"zero_percentage_ge": 100.0},
    ),
    W(
        "W7",
        lambda: api.TensorRangeCondition(
            range_start_inclusive=-1e6, range_end_inclusive=1e6, range_percentage_lt=100
        ),
        "TR:range_start_inclusive=-1e6,range_end_inclusive=1e6,range_percentage_lt=100",
        "all",
        "TensorRange",
        {"range_start_inclusive": -1e6, "range_end_inclusive": 1e6, "range_percentage_lt": 100.0},
    ),
    W(
        "W8",
        lambda: api.TensorChangeAboveThresholdCondition(abs_mean_update_ratio_gt=1.0),
        "WCL:abs_mean_update_ratio_gt=1",
        "weights",
        "TensorChangeAboveThreshold",
        {"abs_mean_update_ratio_gt": 1.0, "epsilon": 1e-9},
    ),
    W(
        "W9",
        lambda: api.TensorChangeBelowThresholdCondition(abs_mean_update_ratio_lt=1e-3),
        "WCS:abs_mean_update_ratio_lt=1e-3",
        "weights",
        "TensorChangeBelowThreshold",
        {"abs_mean_update_ratio_lt": 1e-3, "epsilon": 1e-9},
    ),
    W(
        "W10",
        lambda: api.TensorUnchangedCondition(rtol=1e-5, atol=1e-8),
        "WNC:rtol=1e-5,atol=1e-8",
        "weights",
        "TensorUnchanged",
        {"rtol": 1e-5, "atol": 1e-8},
    ),
]
LABELS = [w.label for w in WATCHPOINTS]
WEIGHTS = {
    "conv1.weight",
    "conv2.weight",
    "fc1.bias",
    "fc1.weight",
    "fc2.bias",
    "fc2.weight",
    "fc3.bias",
    "fc3.weight",
}

Key = tuple[int, str, int, int]  # iteration, node, slot, error code


@dataclass
class Expected:
    keys: set[Key]
    actual: dict[Key, float]  # value hits: the measured statistic


def _load_expected(fixtures_dir: Path, version: str) -> list[Expected]:
    out: list[Expected] = []
    if version == "ms2_0_0":
        doc = json.loads((fixtures_dir / "expected" / "lenet_ms2_0_0.mindinsight.json").read_text())
        assert sorted(doc["weight_nodes"]) == sorted(WEIGHTS)
        for w, ref in zip(WATCHPOINTS, doc["watchpoints"], strict=True):
            # the table above must describe the reference's watchpoints, in its order
            assert (ref["condition"], ref["params"], ref["target"]) == (
                w.condition,
                w.params,
                w.target,
            )
            exp = Expected(set(), {})
            for hit in ref["hits"]:
                key = (hit["iteration"], hit["node"], hit["slot"], hit["error_code"])
                exp.keys.add(key)
                for p in hit.get("actual", []):
                    if p["hit"]:
                        exp.actual[key] = p["actual"]
            assert len(exp.keys) == ref["n_hits"]
            out.append(exp)
    else:
        doc = json.loads((fixtures_dir / "expected" / "lenet_ms2_10_0.reference.json").read_text())
        assert len(doc) == len(WATCHPOINTS)
        for label, hits in doc.items():
            exp = Expected(set(), {})
            for hit in hits:
                key = (hit["iteration"], hit["name"], hit["slot"], hit["error_code"])
                exp.keys.add(key)
                if "actual" in hit:
                    exp.actual[key] = hit["actual"]
            assert len(exp.keys) == len(hits), label
            out.append(exp)
    return out


@pytest.fixture(scope="module", params=["ms2_0_0", "ms2_10_0"])
def case(request: pytest.FixtureRequest, fixtures_dir: Path) -> dict[str, Any]:
    version = request.param
    root = fixtures_dir / "mindspore_lenet_dump" / version
    return {
        "version": version,
        "root": root,
        "expected": _load_expected(fixtures_dir, version),
        "dump": OfflineDump(root),
    }


def _reference_name(case: dict[str, Any], graph: str, node: str, slot: int, it: int) -> str:
    """2.0: the graph name (what MindInsight reports); 2.10: the name the file carries."""
    if case["version"] == "ms2_0_0":
        return node
    found = case["dump"].tensor_file(0, graph, node, slot, it)
    assert found is not None, f"hit on {node}:{slot} at {it} without a file"
    return found.op_name


def _compare(got: dict[Key, float | None], exp: Expected, label: str) -> None:
    assert set(got) == exp.keys, label
    for key, value in exp.actual.items():
        assert got[key] is not None, (label, key)
        assert math.isclose(got[key], value, rel_tol=REL), (label, key, got[key], value)


# ------------------------------------------------------------------ API
@pytest.fixture(scope="module")
def analyzer(case: dict[str, Any]) -> api.DumpAnalyzer:
    return api.DumpAnalyzer(str(case["root"]))


def _targets(analyzer: api.DumpAnalyzer, target: str) -> list[api.DebuggerTensor]:
    tensors = analyzer.select_tensors("")
    if target == "weights":
        tensors = [t for t in tensors if t.node.name in WEIGHTS]
    return tensors


def _api_result(case: dict[str, Any], hits: list[api.WatchpointHit]) -> dict[Key, float | None]:
    got: dict[Key, float | None] = {}
    for hit in hits:
        t = hit.tensor
        name = _reference_name(case, t.node.graph_name, t.node._node.name, t.slot, t.iteration)
        key = (t.iteration, name, t.slot, hit.error_code)
        detail = hit.get_hit_detail()
        actual = None
        if detail is not None:
            hit_params = [p for p in detail.param_dict if p.hit and not p.disabled]
            if hit_params:
                actual = hit_params[0].actual_value
        assert key not in got, f"duplicate hit {key}"
        got[key] = actual
    return got


def test_reference_targets_match(case: dict[str, Any], analyzer: api.DumpAnalyzer) -> None:
    """Both dumps have 4 iterations and the 8 weights; 2.0 also states how many tensors
    MindInsight watched (428 output tensors, 32 weight tensors)."""
    assert analyzer.get_iterations() == [0, 1, 2, 3]
    weights = _targets(analyzer, "weights")
    assert {t.node.name for t in weights} == WEIGHTS
    assert len(weights) == 32
    if case["version"] == "ms2_0_0":
        assert len(_targets(analyzer, "all")) == 428


@pytest.mark.parametrize("index", range(len(WATCHPOINTS)), ids=LABELS)
def test_api_each_watchpoint(case: dict[str, Any], analyzer: api.DumpAnalyzer, index: int) -> None:
    w = WATCHPOINTS[index]
    wp = api.Watchpoint(_targets(analyzer, w.target), w.make())
    hits = analyzer.check_watchpoints([wp])
    _compare(_api_result(case, hits), case["expected"][index], w.label)


def test_api_all_ten_at_once(case: dict[str, Any], analyzer: api.DumpAnalyzer) -> None:
    """One call with all ten: ids are list positions, every set is still exact."""
    wps = [api.Watchpoint(_targets(analyzer, w.target), w.make()) for w in WATCHPOINTS]
    hits = analyzer.check_watchpoints(wps)
    for index, w in enumerate(WATCHPOINTS):
        mine = [h for h in hits if h.watchpoint_id == index]
        assert all(h.get_threshold() is wps[index].condition for h in mine)
        _compare(_api_result(case, mine), case["expected"][index], w.label)
    if case["version"] == "ms2_0_0":
        assert len(hits) == 46  # MindInsight's "combined" run


def test_api_error_on_no_value_matches_mindinsight(dump_2_0: Path, fixtures_dir: Path) -> None:
    """MindInsight's TensorOverflow run with error_on_no_value=True: 204 error-32 hits."""
    doc = json.loads((fixtures_dir / "expected" / "lenet_ms2_0_0.mindinsight.json").read_text())
    ref = doc["overflow_error_on_no_value"]
    analyzer = api.DumpAnalyzer(str(dump_2_0))
    wp = api.Watchpoint(analyzer.select_tensors(""), api.TensorOverflowCondition())
    hits = analyzer.check_watchpoints([wp], error_on_no_value=True)
    got = {(h.tensor.iteration, h.tensor.node.name, h.tensor.slot, h.error_code) for h in hits}
    want = {(h["iteration"], h["node"], h["slot"], h["error_code"]) for h in ref["hits"]}
    assert len(want) == ref["n_hits"] == 204
    assert got == want
    assert all(h.error_msg == ["Tensor has no value."] for h in hits)


# ------------------------------------------------------------------ CLI
def _cli_result(case: dict[str, Any], hits: list[dict[str, Any]], spec: str) -> dict[Key, Any]:
    got: dict[Key, float | None] = {}
    for h in hits:
        if h["watchpoint"] != spec:
            continue
        name = _reference_name(case, h["graph"], h["node"], h["slot"], h["iteration"])
        key = (h["iteration"], name, h["slot"], h["error_code"])
        hit_params = [p for p in h["params"] if p["hit"]]
        assert key not in got
        got[key] = hit_params[0]["actual"] if hit_params else None
    return got


def test_cli_all_ten_in_process(case: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", str(case["root"]), "--json"]
    for w in WATCHPOINTS:
        argv += ["--watch", w.spec]
    code = cli_main(argv)
    out = capsys.readouterr().out
    hits = json.loads(out)
    assert isinstance(hits, list)
    assert code == (1 if hits else 0)
    for index, w in enumerate(WATCHPOINTS):
        _compare(_cli_result(case, hits, w.spec), case["expected"][index], w.label)
    for h in hits:
        assert set(h) == {
            "watchpoint",
            "condition",
            "rank",
            "graph",
            "iteration",
            "step",
            "node",
            "slot",
            "error_code",
            "error_messages",
            "params",
        }


@pytest.mark.parametrize("index", [3, 8], ids=["W4", "W9"])
def test_cli_subprocess(case: dict[str, Any], index: int) -> None:
    w = WATCHPOINTS[index]
    proc = subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", str(case["root"]), "--watch", w.spec, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    hits = json.loads(proc.stdout)
    _compare(_cli_result(case, hits, w.spec), case["expected"][index], w.label)
    assert "Traceback" not in proc.stderr
