"""MindInsight's own script, run on tuidebug: `../shared/tools/mindinsight/watch_api.py` with
only its import line changed to `tuidebug.api`, over real dumps, must give the answers that
MindInsight 2.0.0 gave on the 2.0 dumps (`*.mindinsight.json`) and the reference answers on
the 2.10 dumps (`*.reference.json`: MindInsight's math, files mapped by spec §5.2a).

Its twenty watchpoints (W1–W10 over all tensors and the weights, E1–E10 over weights,
gradients, activations and every other condition parameter) are compared hit for hit:
(iteration, node, slot, error code) and the measured statistic of every value hit.
"""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tuidebug.cli import main as cli_main
from tuidebug.offline.dump import OfflineDump

REL = 1e-6
Key = tuple[int, str, int, int]  # iteration, node, slot, error code

# (dump folder, version, expected answers, labels the answers hold)
CASES = [
    ("mindspore_int_fp16_dump", "ms2_0_0", "int_fp16_ms2_0_0.mindinsight.json"),
    ("mindspore_int_fp16_dump", "ms2_10_0", "int_fp16_ms2_10_0.reference.json"),
    ("mindspore_lenet_dump", "ms2_0_0", "lenet_ms2_0_0.mindinsight.json"),
    ("mindspore_lenet_dump", "ms2_10_0", "lenet_ms2_10_0.reference.json"),
]
W_LABELS = [f"W{i}" for i in range(1, 11)]


def watch_api_module(fixtures_dir: Path) -> types.ModuleType:
    """MindInsight's watch_api.py with `mindinsight.debugger` replaced by `tuidebug.api`."""
    path = fixtures_dir.parent / "tools" / "mindinsight" / "watch_api.py"
    source = path.read_text()
    assert "from mindinsight.debugger import" in source
    module = types.ModuleType("watch_api_on_tuidebug")
    module.__file__ = str(path)
    code = compile(
        source.replace("from mindinsight.debugger import", "from tuidebug.api import"),
        str(path),
        "exec",
    )
    exec(code, module.__dict__)  # the shared oracle script, as its authors run it
    return module


def run_watch_api(fixtures_dir: Path, root: Path, out: Path) -> dict[str, Any]:
    module = watch_api_module(fixtures_dir)
    argv = sys.argv
    sys.argv = ["watch_api.py", str(root), str(out / "out.json"), str(out / "transcript.txt")]
    try:
        module.main()
    finally:
        sys.argv = argv
    return json.loads((out / "out.json").read_text())


def _mindinsight_keys(
    doc: dict[str, Any], file_name: Any = None
) -> dict[str, dict[Key, float | None]]:
    """Label → hits of a watch_api.py run (node names as the graph gives them, or as
    `file_name(rank, graph, node, slot, iteration)` gives them)."""
    out: dict[str, dict[Key, float | None]] = {}
    for group in ("watchpoints", "extra_watchpoints"):
        for i, w in enumerate(doc.get(group, [])):
            label = w.get("label", f"W{i + 1}")  # the LeNet answers predate labels
            hits: dict[Key, float | None] = {}
            for h in w["hits"]:
                actual = next((p["actual"] for p in h.get("actual", []) if p["hit"]), None)
                node = h["node"]
                if file_name is not None:
                    node = file_name(h["rank"], h["graph"], node, h["slot"], h["iteration"])
                hits[(h["iteration"], node, h["slot"], h["error_code"])] = actual
            assert len(hits) == w["n_hits"], label
            out[label] = hits
    return out


def _reference_keys(doc: dict[str, Any]) -> dict[str, dict[Key, float | None]]:
    """Label → hits of a 2.10 reference (node names as the files carry them)."""
    labels = [k for k in doc if not k.startswith("_")]
    out: dict[str, dict[Key, float | None]] = {}
    for i, name in enumerate(labels):
        label = W_LABELS[i] if i < len(W_LABELS) else name
        hits = {
            (h["iteration"], h["name"], h["slot"], h["error_code"]): h.get("actual")
            for h in doc[name]
        }
        assert len(hits) == len(doc[name]), label
        out[label] = hits
    return out


@pytest.fixture(scope="module", params=CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def agreement(
    request: pytest.FixtureRequest, fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, dict[Key, float | None]], dict[str, dict[Key, float | None]]]:
    folder, version, expected_name = request.param
    root = fixtures_dir / folder / version
    expected_doc = json.loads((fixtures_dir / "expected" / expected_name).read_text())
    got_doc = run_watch_api(fixtures_dir, root, tmp_path_factory.mktemp("watch_api"))
    if version == "ms2_0_0":
        return _mindinsight_keys(got_doc), _mindinsight_keys(expected_doc)
    # the reference names tensors by their files: map our hits through the file of each
    dump = OfflineDump(root)

    def file_name(rank: int, graph: str, node: str, slot: int, iteration: int) -> str:
        found = dump.tensor_file(rank, graph, node, slot, iteration)
        assert found is not None, f"hit on {node}:{slot} at {iteration} without a file"
        return found.op_name

    renamed = _mindinsight_keys(got_doc, file_name)
    return renamed, _reference_keys(expected_doc)


def test_every_watchpoint_agrees(
    agreement: tuple[dict[str, dict[Key, float | None]], dict[str, dict[Key, float | None]]],
) -> None:
    got, expected = agreement
    assert set(expected) <= set(got)
    assert len(expected) in (10, 20)
    for label, want in expected.items():
        have = got[label]
        assert set(have) == set(want), (
            label,
            sorted(set(have) - set(want))[:5],
            sorted(set(want) - set(have))[:5],
        )
        for key, value in want.items():
            if value is not None:
                assert have[key] is not None, (label, key)
                assert math.isclose(have[key], value, rel_tol=REL), (label, key, have[key], value)


# ------------------------------------------------------------------ tuidebug check
WEIGHTS_RE = r"^(?!(moments|accum|stat|moment1|moment2)\.).*\.(weight|bias)$"
TARGETS = {
    "all": None,
    "weights": WEIGHTS_RE,
    "gradients": r"^Gradients/",
    "activations": r"/(ReLU|Tanh)-op[0-9]+$",
}
# watch_api.py's twenty watchpoints as `tuidebug check` specs, by target
SPECS: dict[str, list[tuple[str, str]]] = {
    "all": [
        ("W1", "TO"),
        ("W2", "TL:abs_mean_gt=1e10"),
        ("W3", "TL:max_gt=1e30"),
        ("W4", "TL:abs_mean_gt=1"),
        ("W5", "TS:abs_mean_lt=1e-9"),
        ("W6", "TZ:zero_percentage_ge=100"),
        ("W7", "TR:range_start_inclusive=-1e6,range_end_inclusive=1e6,range_percentage_lt=100"),
        ("E7", "TL:min_gt=0.5,mean_gt=0.5"),
        ("E8", "TS:max_lt=0,min_lt=-3,mean_lt=-0.5"),
        ("E9", "TZ:zero_percentage_ge=50"),
    ],
    "weights": [
        ("W8", "WCL:abs_mean_update_ratio_gt=1"),
        ("W9", "WCS:abs_mean_update_ratio_lt=1e-3"),
        ("W10", "WNC:rtol=1e-5,atol=1e-8"),
        ("E1", "TO"),
        ("E2", "TL:abs_mean_gt=10,max_gt=100"),
        ("E10", "TR:range_start_inclusive=-0.1,range_end_inclusive=0.1,range_percentage_lt=50"),
    ],
    "gradients": [("E3", "TL:abs_mean_gt=1,max_gt=10"), ("E4", "TS:abs_mean_lt=1e-4")],
    "activations": [
        ("E5", "TR:range_start_inclusive=0,range_end_inclusive=0,range_percentage_gt=40"),
        ("E6", "TR:max_min_lt=1e-3,max_min_gt=5"),
    ],
}


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_check_cli_agrees(
    case: tuple[str, str, str], fixtures_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, version, expected_name = case
    root = fixtures_dir / folder / version
    expected_doc = json.loads((fixtures_dir / "expected" / expected_name).read_text())
    expected = (
        _mindinsight_keys(expected_doc) if version == "ms2_0_0" else _reference_keys(expected_doc)
    )
    dump = OfflineDump(root)
    compared = set()
    for target, specs in SPECS.items():
        wanted = [(label, spec) for label, spec in specs if label in expected]
        if not wanted:
            continue
        argv = ["check", str(root), "--json"]
        if TARGETS[target] is not None:
            argv += ["--node", TARGETS[target]]
        for _, spec in wanted:
            argv += ["--watch", spec]
        code = cli_main(argv)
        captured = capsys.readouterr()
        assert code in (0, 1), captured.err
        hits = json.loads(captured.out)
        for label, spec in wanted:
            got: dict[Key, float | None] = {}
            for h in hits:
                if h["watchpoint"] != spec:
                    continue
                node = h["node"]
                if version != "ms2_0_0":
                    found = dump.tensor_file(h["rank"], h["graph"], node, h["slot"], h["iteration"])
                    assert found is not None
                    node = found.op_name
                actual = next((p["actual"] for p in h["params"] if p["hit"]), None)
                got[(h["iteration"], node, h["slot"], h["error_code"])] = actual
            want = expected[label]
            assert set(got) == set(want), (
                label,
                sorted(set(got) - set(want))[:5],
                sorted(set(want) - set(got))[:5],
            )
            for key, value in want.items():
                if value is not None:
                    assert got[key] is not None and math.isclose(got[key], value, rel_tol=REL)
            compared.add(label)
    assert compared == set(expected)
