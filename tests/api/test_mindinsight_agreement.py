"""MindInsight's own script, run on tuidebug: `../shared/tools/mindinsight/watch_api.py` with
only its import line changed to `tuidebug.api`, over real dumps, must give the answers that
MindInsight 2.0.0 gave on the 2.0 dumps (`*.mindinsight.json`) and the reference answers on
the 2.10 dumps (`*.reference.json`: MindInsight's math, files mapped by spec §5.2a). The same
twenty watchpoints through `tuidebug check` must give them too.

Its twenty watchpoints (W1–W10 over all tensors and the weights, E1–E10 over weights,
gradients, activations and every other condition parameter) are compared hit for hit:
(iteration, graph, node, slot, error code) and the measured statistic of every value hit.

Dumps MindInsight cannot answer (it cannot read 2.4+ dumps, and it fails on the training
`while_loop` 2.0 dump, see tests/data/dumps/gen/README.md) have frozen answers
(`*.tuidebug.json`, written by `tests/data/dumps/gen/freeze_answers.py` after the file mapping
was checked against the naming rule and the graph's types): they catch regressions.

One deliberate difference: MindSpore 2.0's engine gives error 16 ("graph history file is not
available") for every tensor of a graph without a history file, whatever the condition, so
MindInsight checks nothing in the sub-graphs of control flow. tuidebug checks their values and
keeps error 16 for the conditions that need a previous step. On such graphs only MindInsight's
side of that is asserted.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.api.mindinsight_script import PROJECT_DUMPS, graphs_without_history, run_watch_api
from tuidebug.cli import main as cli_main
from tuidebug.core.graph import Category
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.files.names import encode_dump_name

REL = 1e-6
Key = tuple[int, str, int, int, str]  # iteration, node, slot, error code, graph ("" : any)
Hits = dict[Key, float | None]
ERROR_NO_HISTORY = 16
CHANGE_LABELS = {"W8", "W9", "W10"}

# (where, dump folder, version, expected answers); where: "shared" fixtures or the "project"'s
CASES = [
    ("shared", "mindspore_int_fp16_dump", "ms2_0_0", "int_fp16_ms2_0_0.mindinsight.json"),
    ("shared", "mindspore_int_fp16_dump", "ms2_10_0", "int_fp16_ms2_10_0.reference.json"),
    ("shared", "mindspore_lenet_dump", "ms2_0_0", "lenet_ms2_0_0.mindinsight.json"),
    ("shared", "mindspore_lenet_dump", "ms2_10_0", "lenet_ms2_10_0.reference.json"),
    *(
        ("project", name, version, f"{name}_{version}.{kind}.json")
        for name, versions in [
            ("dense_stack", {"ms2_0_0": "mindinsight", "ms2_10_0": "tuidebug"}),
            ("two_graphs", {"ms2_0_0": "mindinsight", "ms2_10_0": "tuidebug"}),
            ("while_loop_fwd", {"ms2_0_0": "mindinsight", "ms2_10_0": "tuidebug"}),
            ("while_loop", {"ms2_0_0": "tuidebug", "ms2_10_0": "tuidebug"}),
        ]
        for version, kind in versions.items()
    ),
]
CASE_IDS = [f"{c[1]}-{c[2]}" for c in CASES]
W_LABELS = [f"W{i}" for i in range(1, 11)]


def is_frozen(case: tuple[str, str, str, str]) -> bool:
    return case[3].endswith(".tuidebug.json")


def case_paths(fixtures_dir: Path, case: tuple[str, str, str, str]) -> tuple[Path, Path]:
    """(dump root, expected answers file) of a case."""
    where, folder, version, expected = case
    if where == "shared":
        return fixtures_dir / folder / version, fixtures_dir / "expected" / expected
    return PROJECT_DUMPS / folder / version, PROJECT_DUMPS / "expected" / expected


def by_file_name(case: tuple[str, str, str, str]) -> bool:
    """Whether the expected answers name tensors by their files (2.10 references and frozen
    answers) rather than by graph node (MindInsight's own)."""
    return not case[3].endswith(".mindinsight.json")


def _mindinsight_keys(
    doc: dict[str, Any], file_name: Any = None, keep_graph: bool = False
) -> dict[str, Hits]:
    """Label → hits of a watch_api.py run (nodes by graph name, or, with `file_name(rank,
    graph, node, slot, iteration)`, by the name of their file and with no graph unless
    `keep_graph`)."""
    out: dict[str, Hits] = {}
    for group in ("watchpoints", "extra_watchpoints"):
        for i, w in enumerate(doc.get(group, [])):
            label = w.get("label", f"W{i + 1}")  # the LeNet answers predate labels
            hits: Hits = {}
            for h in w["hits"]:
                actual = next((p["actual"] for p in h.get("actual", []) if p["hit"]), None)
                node, graph = h["node"], h["graph"]
                if file_name is not None:
                    node = file_name(h["rank"], graph, node, h["slot"], h["iteration"])
                    graph = graph if keep_graph else ""
                hits[(h["iteration"], node, h["slot"], h["error_code"], graph)] = actual
            # MindInsight reports some error-16 hits twice (while_loop_fwd): compared as sets
            assert len(hits) <= w["n_hits"], label
            out[label] = hits
    return out


def _file_keys(doc: dict[str, Any]) -> dict[str, Hits]:
    """Label → hits of a reference or frozen answer (tensors named by their files)."""
    labels = [k for k in doc if not k.startswith("_")]
    out: dict[str, Hits] = {}
    for i, name in enumerate(labels):
        label = name if re.fullmatch(r"[WE]\d+", name) else W_LABELS[i]
        # frozen answers keep the graph: a weight both graphs of a rank read is one file name
        hits = {
            (h["iteration"], h["name"], h["slot"], h["error_code"], h.get("graph", "")): h.get(
                "actual"
            )
            for h in doc[name]
        }
        assert len(hits) == len(doc[name]), label
        out[label] = hits
    return out


def _file_namer(dump: OfflineDump) -> Any:
    def file_name(rank: int, graph: str, node: str, slot: int, iteration: int) -> str:
        found = dump.tensor_file(rank, graph, node, slot, iteration)
        assert found is not None, f"hit on {node}:{slot} at {iteration} without a file"
        return found.op_name

    return file_name


def expected_answers(fixtures_dir: Path, case: tuple[str, str, str, str]) -> dict[str, Hits]:
    doc = json.loads(case_paths(fixtures_dir, case)[1].read_text())
    return _file_keys(doc) if by_file_name(case) else _mindinsight_keys(doc)


def assert_agrees(got: dict[str, Hits], expected: dict[str, Hits], no_history: set[str]) -> None:
    """Every label of `expected` equal in `got`, but for MindInsight's blanket error 16 on
    graphs without a history file (see the module docstring)."""
    assert set(expected) <= set(got)
    assert len(expected) in (10, 20)
    for label, want in expected.items():
        have = got[label]
        if no_history:
            assert all(k[3] == ERROR_NO_HISTORY for k in want if k[4] in no_history), label
            if label not in CHANGE_LABELS:
                assert not [k for k in have if k[4] in no_history and k[3] == ERROR_NO_HISTORY]
            want = {k: v for k, v in want.items() if k[4] not in no_history}
            have = {k: v for k, v in have.items() if k[4] not in no_history}
        assert set(have) == set(want), (
            label,
            sorted(set(have) - set(want))[:5],
            sorted(set(want) - set(have))[:5],
        )
        for key, value in want.items():
            if value is not None:
                assert have[key] is not None, (label, key)
                assert math.isclose(have[key], value, rel_tol=REL), (label, key, have[key], value)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_watch_api_agrees(
    case: tuple[str, str, str, str], fixtures_dir: Path, tmp_path: Path
) -> None:
    root, _ = case_paths(fixtures_dir, case)
    got_doc = run_watch_api(fixtures_dir, root, tmp_path)
    expected = expected_answers(fixtures_dir, case)
    if by_file_name(case):
        namer = _file_namer(OfflineDump(root))
        got = _mindinsight_keys(got_doc, namer, keep_graph=is_frozen(case))
        assert_agrees(got, expected, set())
    else:
        assert_agrees(_mindinsight_keys(got_doc), expected, graphs_without_history(root))


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


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_check_cli_agrees(
    case: tuple[str, str, str, str], fixtures_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = case_paths(fixtures_dir, case)
    expected = expected_answers(fixtures_dir, case)
    dump = OfflineDump(root)
    file_name = _file_namer(dump) if by_file_name(case) else None
    got: dict[str, Hits] = {}
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
        if code == 2 and "no node matches the watchpoints' targets" in captured.err:
            # e.g. no gradient in a forward-only network: MindInsight watched nothing either
            assert all(not expected[label] for label, _ in wanted), captured.err
            hits = []
        else:
            assert code in (0, 1), captured.err
            hits = json.loads(captured.out)
        for label, spec in wanted:
            mine: Hits = {}
            for h in hits:
                if h["watchpoint"] != spec:
                    continue
                node, graph = h["node"], h["graph"]
                if file_name is not None:
                    node = file_name(h["rank"], graph, node, h["slot"], h["iteration"])
                    graph = graph if is_frozen(case) else ""
                actual = next((p["actual"] for p in h["params"] if p["hit"]), None)
                mine[(h["iteration"], node, h["slot"], h["error_code"], graph)] = actual
            got[label] = mine
    assert set(got) == set(expected)
    # W8–W10 watch the weight category (spec §3.2), which leaves out parameters of optimizer
    # scopes (the optimizer sub-graph of a while loop); watch_api.py picks weights by name
    for label in CHANGE_LABELS & set(expected):
        expected[label] = {k: v for k, v in expected[label].items() if _is_weight(dump, k)}
    no_history = set() if file_name is not None else graphs_without_history(root)
    assert_agrees(got, expected, no_history)


def _is_weight(dump: OfflineDump, key: Key) -> bool:
    """Whether the parameter a hit names (by node or file name) is in the weight category."""
    _, name, _, _, graph = key
    graphs = [dump.graph(0, graph)] if graph else list(dump.graphs(0).values())
    for g in graphs:
        for node in g.parameters:
            if name in (node.name, encode_dump_name(node.name)):
                return Category.WEIGHT in g.categories(node)
    raise AssertionError(f"no parameter named {name} in {graph or 'any graph'}")
