"""MindInsight's own `watch_api.py`, run on tuidebug (its import line changed to
`tuidebug.api`), must write MindInsight 2.0.0's transcript of the project's real 2.0 dumps
line for line: every API answer (iterations, nodes, every output tensor with has_value and
a hash of its value, inputs/outputs, input tensors, stacks, selections, every hit).

The frozen MindInsight transcripts (`tests/data/dumps/expected/*.transcript.txt`) are
turned into what tuidebug should say by undoing the deliberate differences, each narrowly
and on the dumps where it is known to apply (`DELIBERATE`); any other differing line fails:

* `assign`: MindInsight drops the first (parameter) input of a three-input `Assign`;
  tuidebug keeps the graph's edge, so the `Assign`'s inputs and the parameter's outputs list
  each other.
* `phantom_value`: MindInsight's `has_value()` looks for any file, in any graph folder of the
  iteration, whose name matches `<short name>.*.output.<slot>.*.npy`, so a parameter named
  `u` or `h` "has a value" because of `ReduceSum…output.0…` or `fc_in.weight…output.0…`
  while `value()` is None. tuidebug's has_value is True only when the tensor's own file
  exists, so it says False, counts no value for it, and `error_on_no_value` reports it with
  error 32.
* `no_history`: MindSpore 2.0's engine gives error 16 for every watched tensor of a graph
  without a history file, whatever the condition; tuidebug checks those tensors and gives 16
  only for the conditions that need a previous step. On such graphs MindInsight's error-16
  hits and tuidebug's value hits are left out (error-32 hits are still compared), and the
  hit counts are adjusted by what was left out.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.api.mindinsight_script import PROJECT_DUMPS, graphs_without_history, run_watch_api
from tuidebug.api import DumpAnalyzer
from tuidebug.offline.dump import OfflineDump

EXPECTED = PROJECT_DUMPS / "expected"
VERSION = "ms2_0_0"
DUMPS = ["dense_stack", "two_graphs", "while_loop_fwd"]

# MindInsight lines each deliberate difference changes (no_history: its error-16 hits left
# out), per dump; on any other dump it must change none
DELIBERATE: dict[str, dict[str, int]] = {
    "dense_stack": {},
    "two_graphs": {"assign": 4},
    "while_loop_fwd": {"phantom_value": 10, "no_history": 682},
}
CHANGE_LABELS = {"W8", "W9", "W10"}  # the watch_api.py watchpoints that need a previous step
ERROR_NO_HISTORY = 16
ERROR_NO_VALUE = 32
NO_VALUE_LABEL = "W1-no-value"

HIT_RE = re.compile(
    r"^hit (?P<label>\S+) it=\S+ rank=\S+ graph=(?P<graph>\S+) .* err=(?P<err>\d+) "
)
TENSOR_RE = re.compile(r"^tensor (?P<id>rank=\S+ graph=\S+ node=.+ slot=\d+ it=\S+) has_value=")
WP_RE = re.compile(r"^(?P<head>wp (?P<label>\S+) .*): (?P<n>\d+) hits$")
COMBINED_RE = re.compile(r"^combined (?P<n_wps>\d+) watchpoints: (?P<n>\d+) hits$")
NO_VALUE_RE = re.compile(r"^W1 error_on_no_value: (?P<n>\d+) hits \((?P<m>\d+) with error code\)$")
WITH_VALUE_RE = re.compile(r"^tensors with value: (?P<n>\d+)$")
TIMING_RE = re.compile(r" in [0-9.]*s$")


def mindinsight_lines(name: str) -> list[str]:
    text = (EXPECTED / f"{name}_{VERSION}.transcript.txt").read_text()
    return [TIMING_RE.sub("", line) for line in text.splitlines()]


# ------------------------------------------------------------------ the deliberate differences
def undo_assign(lines: list[str], root: Path) -> tuple[list[str], int]:
    """MindInsight's lines with each three-input `Assign`'s first input put back."""
    dump = OfflineDump(root)
    analyzer = DumpAnalyzer(str(root))
    added: dict[str, list[str]] = {}  # "get_…_nodes rank=R G:N" → names to add to its list
    for node in analyzer.select_nodes("Assign"):
        if node.op_type != "Assign":
            continue
        raw = dump.node(node.rank, node.graph_name, node.name)
        if len(raw.inputs) != 3:
            continue
        (param,) = [n for n in analyzer.get_input_nodes(node) if n.name == raw.inputs[0]]
        prefix = f"rank={node.rank} "
        added.setdefault(f"get_input_nodes {prefix}{node.graph_name}:{node.name}", []).append(
            f"{param.graph_name}:{param.name}"
        )
        added.setdefault(f"get_output_nodes {prefix}{param.graph_name}:{param.name}", []).append(
            f"{node.graph_name}:{node.name}"
        )
    out, changed = [], 0
    for line in lines:
        head, _, listed = line.partition(" -> ")
        if head in added:
            names = ast.literal_eval(listed)
            line = f"{head} -> {sorted([*names, *added[head]])}"
            changed += 1
        out.append(line)
    return out, changed


def undo_phantom_values(lines: list[str]) -> tuple[list[str], int]:
    """MindInsight's `has_value=True value=None` tensors as tuidebug answers them."""
    phantom = [
        m["id"]
        for line in lines
        if line.endswith(" has_value=True value=None") and (m := TENSOR_RE.match(line))
    ]
    if not phantom:
        return lines, 0
    out = []
    for line in lines:
        m = TENSOR_RE.match(line)
        if m and m["id"] in set(phantom):
            line = line.replace(" has_value=True value=None", " has_value=False value=None")
        elif m := WITH_VALUE_RE.match(line):
            line = f"tensors with value: {int(m['n']) - len(phantom)}"
        elif m := NO_VALUE_RE.match(line):
            n, k = int(m["n"]) + len(phantom), int(m["m"]) + len(phantom)
            line = f"W1 error_on_no_value: {n} hits ({k} with error code)"
        out.append(line)
    for tensor_id in phantom:
        rank, graph, node_slot_it = tensor_id.split(" ", 2)
        node, slot, it = node_slot_it.rsplit(" ", 2)
        out.append(
            f"hit {NO_VALUE_LABEL} {it} {rank} {graph} {node} {slot} err={ERROR_NO_VALUE} "
            "msg=Tensor has no value. actual=[]"
        )
    return out, len(phantom)


def undo_no_history(
    expected: list[str], got: list[str], no_history: set[str]
) -> tuple[list[str], list[str], int]:
    """Both transcripts without the hits on graphs without history that differ by design
    (MindInsight's error 16, tuidebug's value hits), counts adjusted by what was left out."""
    if not no_history:
        return expected, got, 0

    def split(
        lines: list[str], dropped: Callable[[re.Match[str]], bool]
    ) -> tuple[list[str], Counter[str]]:
        kept: list[str] = []
        left_out: Counter[str] = Counter()
        for line in lines:
            m = HIT_RE.match(line)
            if m and m["graph"] in no_history and dropped(m):
                left_out[m["label"]] += 1
            else:
                kept.append(line)
        return kept, left_out

    mine = [m for line in expected if (m := HIT_RE.match(line)) and m["graph"] in no_history]
    # MindInsight's side of it: nothing but error 16 (and 32 for missing values) there
    assert {int(m["err"]) for m in mine} <= {ERROR_NO_HISTORY, ERROR_NO_VALUE}
    expected, mi_out = split(expected, lambda m: int(m["err"]) == ERROR_NO_HISTORY)
    # tuidebug's side: value hits, and error 16 only for the change conditions
    got, tui_out = split(
        got,
        lambda m: (
            int(m["err"]) == 0
            or (int(m["err"]) == ERROR_NO_HISTORY and m["label"] in CHANGE_LABELS)
        ),
    )

    def recount(lines: list[str], left_out: Counter[str]) -> list[str]:
        out = []
        for line in lines:
            if m := WP_RE.match(line):
                line = f"{m['head']}: {int(m['n']) - left_out[m['label']]} hits"
            elif m := COMBINED_RE.match(line):
                n_wps = int(m["n_wps"])
                n = int(m["n"]) - sum(left_out[f"W{i}"] for i in range(1, n_wps + 1))
                line = f"combined {n_wps} watchpoints: {n} hits"
            elif m := NO_VALUE_RE.match(line):
                k = left_out[NO_VALUE_LABEL]
                line = f"W1 error_on_no_value: {int(m['n']) - k} hits ({int(m['m']) - k} with error code)"
            out.append(line)
        return out

    return recount(expected, mi_out), recount(got, tui_out), sum(mi_out.values())


def assert_same_lines(expected: list[str], got: list[str]) -> None:
    missing = Counter(expected) - Counter(got)
    extra = Counter(got) - Counter(expected)
    shown = [f"- {line}" for line in sorted(missing.elements())[:20]]
    shown += [f"+ {line}" for line in sorted(extra.elements())[:20]]
    assert not missing and not extra, (
        f"{sum(missing.values())} MindInsight lines missing, {sum(extra.values())} extra:\n"
        + "\n".join(shown)
    )


# ------------------------------------------------------------------ the test
@pytest.mark.parametrize("name", DUMPS)
def test_transcript_matches_mindinsight(name: str, fixtures_dir: Path, tmp_path: Path) -> None:
    root = PROJECT_DUMPS / name / VERSION
    run_watch_api(fixtures_dir, root, tmp_path)
    got = (tmp_path / "transcript.txt").read_text().splitlines()
    expected = mindinsight_lines(name)
    changed: dict[str, int] = {}
    expected, changed["assign"] = undo_assign(expected, root)
    expected, changed["phantom_value"] = undo_phantom_values(expected)
    expected, got, changed["no_history"] = undo_no_history(
        expected, got, graphs_without_history(root)
    )
    assert {k: v for k, v in changed.items() if v} == DELIBERATE[name]
    assert_same_lines(expected, got)


def test_undoing_leaves_other_differences() -> None:
    # the comparison fails on a line the deliberate differences do not explain
    expected = mindinsight_lines("two_graphs")
    expected, _ = undo_assign(expected, PROJECT_DUMPS / "two_graphs" / VERSION)
    with pytest.raises(AssertionError, match="1 MindInsight lines missing, 1 extra"):
        assert_same_lines(expected, [*expected[:-1], expected[-1] + " "])
    # an error 16 on a graph with history, or on a condition that needs none, stays
    hit = "hit W1 it=0 rank=0 graph=kernel_graph_1 node=n slot=0 err=16 msg=m actual=[]"
    _, got, _ = undo_no_history([], [hit], {"kernel_graph_1"})
    assert got == [hit]
    _, got, _ = undo_no_history([], [hit.replace("W1", "W9")], {"kernel_graph_1"})
    assert got == []
