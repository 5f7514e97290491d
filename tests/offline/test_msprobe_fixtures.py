"""msprobe dumps (issue 29) against msprobe's own answers: every frozen real dump under
tests/data/msprobe (26.2.0 tensor L0/mix, bf16, structure, 2-rank gloo, MindSpore PyNative;
8.3.3's older layout and its overflow_check task; see its README) checked with
`tuidebug check ROOT --watch TO --json`, whose first hit of every step and rank must be the
call msprobe's `overflow_check` names; and the streamed dump.json reader at every chunk cut."""

from __future__ import annotations

import json
import math
import tracemalloc
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuidebug import cli
from tuidebug.core.origins import trace_in_session
from tuidebug.offline.files import msprobe_json as mj
from tuidebug.offline.files import msprobe_rule
from tuidebug.offline.files.msprobe import (
    MsprobeError,
    find_msprobe_root,
    parse_call_name,
    parse_dump_json,
    read_dump_json,
    scan_dump_json,
)
from tuidebug.offline.session import OfflineSession

DATA = Path(__file__).resolve().parent.parent / "data" / "msprobe"
NAN, INF = math.nan, math.inf
FIXTURES = sorted(p.name for p in DATA.iterdir() if (p / "msprobe_results").is_dir())
# the fixtures whose steps hold statistics (the structure task records none)
CHECKED = [f for f in FIXTURES if "structure" not in f]


def _check_json(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[dict[str, object]], str]:
    code = cli.main(["check", str(root), "--watch", "TO", "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else [], captured.err


def _first_hits(hits: list[dict[str, object]], anomaly: bool = False) -> dict[tuple[int, int], str]:
    """(step, rank) → the call of the first hit there (`anomaly`: the first hit whose call
    is an anomaly by msprobe's rule, as `check --json` flags it)."""
    first: dict[tuple[int, int], str] = {}
    for hit in hits:
        if anomaly and hit["anomaly"] is not True:
            continue
        first.setdefault((int(hit["iteration"]), int(hit["rank"])), str(hit["node"]))  # type: ignore[call-overload]
    return first


def _msprobe_answers(root: Path) -> dict[int, dict[int, str] | None]:
    """step → {rank: msprobe's first anomaly}, or None where it found none."""
    answers: dict[int, dict[int, str] | None] = {}
    for path in sorted((root / "msprobe_results").glob("overflow_check_step*")):
        step = int(path.name.split("step")[1].split(".")[0])
        if path.name.endswith(".json"):
            doc = json.loads(path.read_text())
            answers[step] = {int(k.split("_")[1]): v[0]["op_name"] for k, v in doc.items()}
        elif not path.name.endswith(".refused.log"):
            assert "Cannot find any anomaly node" in path.read_text(), path
            answers[step] = None
    return answers


def test_every_fixture_is_here() -> None:
    assert len(FIXTURES) == 10, FIXTURES
    total = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert total < 3_000_000  # small frozen samples, not a data set


@pytest.mark.parametrize("name", CHECKED)
def test_first_anomaly_equals_msprobe_overflow_check(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = DATA / name
    code, hits, err = _check_json(root, capsys)
    assert code == 1 and "warning" not in err, err
    first = _first_hits(hits, anomaly=True)
    answers = _msprobe_answers(root)
    assert sorted(answers) == list(range(len(answers))) and len(answers) >= 3
    for step, answer in answers.items():
        if answer is None:
            # msprobe: "Cannot find any anomaly node"; tuidebug: no anomaly in that step
            assert not [k for k in first if k[0] == step], (step, first)
        else:
            # every rank: the ones msprobe names nothing on (rank 0 of the 2-rank dumps,
            # whose all_reduce output is Inf from rank 1's data) carry no flag
            flagged = {rank: call for (s, rank), call in first.items() if s == step}
            assert flagged == answer, (step, flagged, answer)
    # hits come in execution order within a step: the first named above is the first
    assert [h["iteration"] for h in hits] == sorted(int(h["iteration"]) for h in hits)  # type: ignore[call-overload]


@pytest.mark.parametrize("name", CHECKED)
def test_trace_from_the_steps_hits_names_msprobe_first_anomaly(name: str) -> None:
    """For every step where msprobe overflow_check names an anomaly, the origin trace (`o`)
    from each forward-pass hit from msprobe's call on names that call first. The trace walks
    the step's own data flow (`DebugSession.step_inputs`): the graph's edges come from step
    0, where the fault multiplies by 1.0 (its output matches its input's statistics) and
    v26_stat_mix_bf16_nan's `Torch.sqrt` does not run, so they cut step 2's culprit off.
    The graph itself (node list, scopes, edges) stays as opened, whatever step is traced."""
    root = DATA / name
    for step, answer in _msprobe_answers(root).items():
        for rank, op_name in (answer or {}).items():
            session = OfflineSession(root, rank=rank)
            session.start()
            session.create_watchpoint("TO", {})
            graph = session.graphs["msprobe"]
            before = [(n.name, n.scope, tuple(n.inputs)) for n in graph]
            session.reset_step(step + 1)
            session.recheck()
            # the forward pass: the hits before the first backward call's (the gradients'
            # all-reduce, msprobe's cross-rank pass and later anomalies are another walk)
            forward: list[str] = []
            for hit in session.hits:
                call = graph.node(hit.tensor.node).dump_name
                if not call:
                    continue  # a parameter, the batch: no call, so no trace from there
                if "forward" not in call:
                    break
                forward.append(hit.tensor.node)
            calls = [graph.node(n).dump_name for n in forward]
            assert op_name in calls, (name, step, rank, calls)
            for start in forward[calls.index(op_name) :]:
                trace = trace_in_session(session, graph, start, iteration=step, rank=rank)
                first = trace.origins[0].node
                assert graph.node(first).dump_name == op_name, (name, step, rank, start)
                assert trace.chain(first)[-1] == start
            assert [(n.name, n.scope, tuple(n.inputs)) for n in graph] == before
            assert session.graphs["msprobe"] is graph


def test_msprobe_rule_edges_first_anomaly(capsys: pytest.CaptureFixture[str]) -> None:
    """The edges of msprobe's rule (v26_stat_mix_rule_edges, one per step; msprobe's
    answers frozen beside it): an ignored name's Inf is no hit and is said; a NaN reaching
    einsum inside its operand list blames einsum, not the linear that first read it; a NaN
    weight blames its module, not the linear inside it that read it as an argument."""
    code, hits, err = _check_json(DATA / "v26_stat_mix_rule_edges", capsys)
    assert code == 1
    assert "Torch.fill_.0.forward" in err and "msprobe's overflow_check rule ignores" in err
    assert not [h for h in hits if "Torch.fill" in str(h["node"])]
    assert _first_hits(hits, anomaly=True) == {
        (2, 0): "Torch.einsum.0.forward",
        (3, 0): "Module.inp.Linear.forward.0",
    }
    # the first NaN in execution order is elsewhere: the flag is what names msprobe's call
    assert _first_hits(hits) == {
        (2, 0): "Functional.linear.0.forward",
        (3, 0): "Functional.linear.0.forward",
    }
    # the text output marks it
    cli.main(["check", str(DATA / "v26_stat_mix_rule_edges"), "--watch", "TO"])
    out = capsys.readouterr().out
    marked = [line for line in out.splitlines() if "first anomaly" in line]
    assert [line.split()[3] for line in marked] == [
        "Torch.einsum.0.forward.output.0",
        "Module.inp.Linear.forward.0.parameters.weight",
    ]


def test_values_path_flags_msprobe_first_anomaly_too(capsys: pytest.CaptureFixture[str]) -> None:
    # a watchpoint the statistics cannot decide sends a tensor dump to its values (the
    # checker's path): its hits carry the same flag, from one rescan of a step with hits
    root = DATA / "v26_tensor_mix_inf"
    code = cli.main(
        ["check", str(root), "--watch", "TO", "--watch", "TZ:zero_percentage_ge=90", "--json"]
    )
    hits = json.loads(capsys.readouterr().out)
    assert code == 1 and any(h["watchpoint"].startswith("TZ") for h in hits)
    answers = _msprobe_answers(root)
    assert answers[2] == {0: "Tensor.__mul__.0.forward"}
    assert _first_hits(hits, anomaly=True) == {(2, 0): "Tensor.__mul__.0.forward"}


@pytest.mark.parametrize(
    ("record", "anomaly"),
    [
        ({"input_args": [{"Max": 1.0, "Min": 0.0}], "output": [{"Max": NAN, "Min": 0.0}]}, True),
        # nested inputs and parameters are not read; nested outputs neither
        ({"input_args": [[{"Max": NAN, "Min": 0.0}]], "output": [{"Max": INF, "Min": 0}]}, True),
        ({"parameters": {"w": {"Max": NAN, "Min": 0.0}}, "output": [{"Max": NAN}]}, True),
        ({"input_args": [], "output": [[{"Max": NAN, "Min": 0.0}]]}, False),
        ({"input_kwargs": {"x": {"Max": -INF, "Min": 0}}, "output": [{"Max": NAN}]}, False),
        ({"input": [{"Min": NAN}], "output": [{"Max": NAN}]}, False),  # backward
        ({"weight": [{"Max": NAN, "Min": NAN}]}, False),  # parameters_grad: no output
        ({"output": [{"type": "int", "value": 3}, {"Max": 3, "Min": 0}]}, False),
        ({"output": [{"Max": "inf", "Min": 0.0}]}, True),  # msprobe compares str().lower()
        ({"output": {"0": {"Max": NAN}}}, True),
        ("not a record", False),
    ],
)
def test_msprobe_rule_on_records(record: object, anomaly: bool) -> None:
    assert msprobe_rule.is_anomaly("Functional.x.0.forward", record) is anomaly


def test_msprobe_rule_ignores_empty_and_fill_by_name() -> None:
    bad = {"output": [{"Max": NAN, "Min": NAN}]}
    for name in ("Torch.empty.0.forward", "Torch.empty_like.1.backward", "Torch.fill_.0.forward"):
        assert msprobe_rule.is_ignored(name) and not msprobe_rule.is_anomaly(name, bad)
    for name in ("Tensor.fill_.0.forward", "Functional.empty.0.forward"):
        assert msprobe_rule.is_anomaly(name, bad)


@pytest.mark.parametrize("name", [c for c in CHECKED if "rule_edges" not in c])
def test_norm_infinity_alone_is_no_false_alarm(name: str) -> None:
    # step 1 multiplies by 1e20: the Norm statistic overflows (float32/bf16) while Max/Min
    # stay finite; msprobe finds nothing there, and so must check (asserted above)
    root = find_msprobe_root(DATA / name)
    assert root is not None
    records = [
        t
        for folder in root.steps[1].ranks.values()
        for call in read_dump_json(folder / "dump.json").calls
        for t in call.tensors
    ]
    if name.startswith("v8_overflow_check_task"):
        assert not records  # that task dumps overflowing calls only: step 1 has none
        return
    assert any(t.norm == math.inf and t.max is not None and math.isfinite(t.max) for t in records)
    assert not any(t.overflows for t in records)


def test_both_layouts_and_ranks() -> None:
    layouts = {
        "v26_tensor_L0_nan": ("proc", [0]),
        "v26_dist2_stat_L1_inf_rank1": ("rank", [0, 1]),
        "v8_stat_mix_inf": ("rank", [0]),
        "ms_pynative_tensor_mix_nan": ("proc", [0]),
    }
    for name, (prefix, ranks) in layouts.items():
        root = find_msprobe_root(DATA / name)
        assert root is not None and not root.problems
        assert sorted(root.steps) == [0, 1, 2] and root.rank_ids == ranks
        folders = [f.name for s in root.steps.values() for f in s.ranks.values()]
        assert all(f.startswith(prefix) for f in folders)
    # 8.x: the folder is named `rank` (rank 0), records carry is_recompute
    v8 = find_msprobe_root(DATA / "v8_stat_mix_inf")
    assert v8 is not None and v8.steps[2].ranks[0].name == "rank"
    dump = read_dump_json(v8.steps[2].ranks[0] / "dump.json")
    assert (dump.task, dump.level, dump.framework) == ("statistics", "mix", "pytorch")
    grads = [c for c in dump.calls if c.parsed and c.parsed.direction == "parameters_grad"]
    assert grads and all(c.parsed and c.parsed.index is None for c in grads)
    ms = read_dump_json(
        next((DATA / "ms_pynative_tensor_mix_nan/step0").glob("proc*")) / "dump.json"
    )
    assert ms.framework == "mindspore" and any(c.name.startswith("Cell.") for c in ms.calls)
    assert all(t.data_name and t.data_name.endswith(".npy") for c in ms.calls for t in c.tensors)


def test_v8_parameters_grad_is_at_its_backward_place(capsys: pytest.CaptureFixture[str]) -> None:
    # 8.3.3 writes `Module.inp.Linear.parameters_grad` into dump.json at the module's forward
    # (filled in at backward): read in file order, its NaN gradient would come before the
    # forward call that made the Inf, and check would name it as the first anomaly
    folder = DATA / "v8_stat_mix_inf/step2/rank"
    in_file = list(json.loads((folder / "dump.json").read_text(), parse_constant=float)["data"])
    assert in_file.index("Module.inp.Linear.parameters_grad") < in_file.index(
        "Tensor.__mul__.0.forward"
    )
    names = [c.name for c in read_dump_json(folder / "dump.json").calls]
    assert sorted(names) == sorted(in_file)
    grad = names.index("Module.inp.Linear.parameters_grad")
    assert names[grad + 1] == "Module.inp.Linear.backward.0"
    assert names.index("Module.out.Linear.parameters_grad") + 1 == names.index(
        "Module.out.Linear.backward.0"
    )


@pytest.mark.parametrize(
    "name", ["v26_dist2_stat_L1_inf_rank1", "v26_dist2_stat_L1_inf_after_comm"]
)
def test_distributed_fault_on_rank1_only(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # msprobe names rank 1's call: the all_reduce that carries its Inf to rank 0 is blamed on
    # nobody there (msprobe's cross-rank pass). The hit on rank 0 stays: its output is Inf
    root = DATA / name
    _code, hits, _err = _check_json(root, capsys)
    first = _first_hits(hits)
    assert first[(2, 1)] == "Tensor.__mul__.0.forward"
    assert first[(2, 0)].startswith("Distributed.all_reduce.")
    assert {k for k in first} == {(2, 0), (2, 1)}
    assert _first_hits(hits, anomaly=True) == {(2, 1): "Tensor.__mul__.0.forward"}
    assert _msprobe_answers(root)[2] == {1: "Tensor.__mul__.0.forward"}
    # the text output marks rank 1's call only
    cli.main(["check", str(root), "--watch", "TO"])
    marked = [line for line in capsys.readouterr().out.splitlines() if "first anomaly" in line]
    assert [line.split()[:4] for line in marked] == [
        ["step2", "rank", "1", "Tensor.__mul__.0.forward.output.0"]
    ]
    # checking rank 0 alone still reads rank 1 for the cross-rank pass: no flag on rank 0
    code = cli.main(["check", str(root), "--watch", "TO", "--rank", "0", "--json"])
    alone = json.loads(capsys.readouterr().out)
    assert code == 1 and alone and {h["rank"] for h in alone} == {0}
    assert not [h for h in alone if h["anomaly"]]


def _rec(bad_in: bool, bad_out: bool, **kwargs: object) -> dict[str, object]:
    clean = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0}
    inf = {**clean, "Max": INF}
    return {
        "input_args": [inf if bad_in else clean],
        "input_kwargs": kwargs,
        "output": [inf if bad_out else clean],
    }


def _trail(rank: int, calls: list[tuple[str, object]]) -> msprobe_rule.RankTrail:
    trail = msprobe_rule.RankTrail(rank)
    for name, record in calls:
        trail.add(name, record)
    return trail


def test_cross_rank_pass_during_and_after_communication() -> None:
    """msprobe's three passes on hand-made trails: before any communication each rank's
    first anomaly; else the earliest blamed call at the first communication round blaming
    anything (one call over all ranks); else each rank's first after the last one."""
    ar0, ar1 = "Distributed.all_reduce.0.forward", "Distributed.all_reduce.1.forward"
    mul, add = "Tensor.__mul__.0.forward", "Tensor.__add__.0.forward"
    # pass 1: anomalies on both ranks before their first all_reduce: one per rank
    both = [_trail(r, [(mul, _rec(False, True)), (ar0, _rec(True, True))]) for r in (0, 1)]
    assert msprobe_rule.first_anomalies(both) == {0: mul, 1: mul}
    # pass 2: rank 1's mul after all_reduce.0 feeds all_reduce.1 (input Inf): rank 1's mul,
    # not rank 0's all_reduce.1 whose Inf came from rank 1
    r0 = _trail(0, [(ar0, _rec(False, False)), (ar1, _rec(False, True))])
    r1 = _trail(1, [(ar0, _rec(False, False)), (mul, _rec(False, True)), (ar1, _rec(True, True))])
    assert msprobe_rule.first_anomalies([r0, r1]) == {1: mul}
    # a receiver (`src` names another rank) is not blamed for what it receives: rank 0's
    # broadcast output Inf with finite input is the anomaly itself
    bc = "Distributed.broadcast.0.forward"
    src1 = {"src": {"type": "int", "value": 1}}
    r0 = _trail(0, [(mul, _rec(False, False)), (bc, _rec(False, True, **src1))])
    r1 = _trail(1, [(bc, _rec(False, False, **src1))])
    assert msprobe_rule.first_anomalies([r0, r1]) == {0: bc}
    # an anomaly before a receiving call whose input is Inf: that call is not blamed, so
    # nothing at that round; after the last communication: each rank's first anomaly
    r0 = _trail(0, [(ar0, _rec(False, False)), (mul, _rec(False, True)), (add, _rec(False, True))])
    r1 = _trail(1, [(ar0, _rec(False, False)), (add, _rec(False, True))])
    assert msprobe_rule.first_anomalies([r0, r1]) == {0: mul, 1: add}
    # no communication at all: pass 1 reads the whole rank; nothing anywhere: nothing named
    assert msprobe_rule.first_anomalies([_trail(0, [(add, _rec(False, True))])]) == {0: add}
    assert msprobe_rule.first_anomalies([_trail(0, [(add, _rec(True, True))])]) == {}
    assert msprobe_rule.first_anomalies([]) == {}


def test_overflow_check_task_dumps_what_check_finds_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 8.3.3's overflow_check dump task wrote only the overflowing calls, in order
    folder = DATA / "v8_overflow_check_task_inf/step2/rank"
    dumped = read_dump_json(folder / "dump.json")
    assert dumped.task == "overflow_check"
    _code, hits, _err = _check_json(DATA / "v8_overflow_check_task_inf", capsys)
    assert _first_hits(hits)[(2, 0)] == dumped.calls[0].name == "Tensor.__mul__.0.forward"


def test_structure_task_is_said_not_passed_as_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, hits, err = _check_json(DATA / "v26_structure_mix", capsys)
    assert code == 2 and not hits
    assert "structure task, which records no statistics" in err


# ------------------------------------------------------------------ reader gaps


def _write(folder: Path, data: Mapping[str, object]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dump.json").write_text(json.dumps({"task": "statistics", "data": data}))


_CLEAN = {"dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0}


def test_records_past_the_nesting_cap_make_the_run_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep: object = dict(_CLEAN, Max=math.inf)
    for _ in range(80):
        deep = [deep]
    deeper: object = _CLEAN
    for _ in range(900):  # past the interpreter's recursion limit for a Python walk
        deeper = [deeper]
    _write(tmp_path / "step1" / "rank0", {"Functional.y.0.forward": {"output": deeper}})
    _write(tmp_path / "step0" / "rank0", {"Functional.x.0.forward": {"output": [_CLEAN, deep]}})
    dump = read_dump_json(tmp_path / "step0" / "rank0" / "dump.json")
    assert len(dump.calls[0].tensors) == 1 and dump.calls[0].too_deep == 1
    assert any("deeper than 64 levels" in p for p in dump.problems)
    assert cli.main(["check", str(tmp_path), "--watch", "TO"]) == 2
    err = capsys.readouterr().err
    assert "deeper than 64 levels" in err and "Functional.x.0.forward" in err
    assert "Functional.y.0.forward" in err


def test_step_and_rank_folder_name_collisions_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = {"Functional.x.0.forward": {"output": [_CLEAN]}}
    for folder in ("step1/rank0", "step01/rank0", "step2/rank", "step2/rank0", "step2/rank1"):
        _write(tmp_path / folder, record)
    root = find_msprobe_root(tmp_path)
    assert root is not None
    assert sorted(root.steps) == [1, 2] and sorted(root.steps[2].ranks) == [0, 1]
    said = " ".join(root.problems)
    assert "both name step 1" in said and "both name rank 0" in said
    # a clean check over folders left unread is no all-clear
    assert cli.main(["check", str(tmp_path), "--watch", "TO"]) == 2
    assert "both name step 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name",
    [
        "Functional.x.\u00b2.forward",
        "Functional.x." + "9" * 5000 + ".forward",
        "Module.m.forward.\u0663",
    ],
)
def test_odd_call_indexes_are_no_call_names(name: str) -> None:
    assert parse_call_name(name) is None
    dump = parse_dump_json(json.dumps({"data": {name: {"output": [_CLEAN]}}}).encode(), "d.json")
    assert dump.calls[0].parsed is None and "neither msprobe grammar" in dump.problems[0]


# ------------------------------------------------------------------ the streamed reader


def _chunked(text: str, size: int) -> Callable[[int], str]:
    pos = 0

    def read(_n: int) -> str:
        nonlocal pos
        part = text[pos : pos + size]
        pos += size
        return part

    return read


@pytest.mark.parametrize("size", [1, 2, 7, 64, 333])
def test_every_chunk_cut_reads_the_same(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mj, "CHUNK_CHARS", size)
    for path in sorted(DATA.glob("*/step2/*/dump.json")):
        text = path.read_text()
        whole = json.loads(text, parse_constant=mj.no_constant)
        header: dict[str, object] = {}
        data = dict(mj.top_level(mj.JsonText(_chunked(text, size), "d"), header))
        assert json.dumps(data) == json.dumps(whole["data"]), (path, size)
        assert header["task"] == whole["task"]
        # and from the file, through its byte reader (multi-byte characters cut too)
        assert [c for c, _p, _r in scan_dump_json(path)] == [
            c.name for c in read_dump_json(path).calls
        ]


def test_streamed_memory_is_one_chunk_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mj, "CHUNK_CHARS", 1 << 16)
    record = json.dumps({"input_args": [_CLEAN] * 3, "output": [_CLEAN]}, indent=1)
    path = tmp_path / "dump.json"
    with path.open("w") as out:
        # msprobe's own layout: indent 1
        out.write('{\n "task": "statistics",\n "data": {\n  ')
        out.write(",\n  ".join(f'"Functional.x.{i}.forward": {record}' for i in range(20_000)))
        out.write("\n }\n}")
    assert path.stat().st_size > 8_000_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in scan_dump_json(path))
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 20_000 and peak < 2_000_000


def test_bad_json_mid_file_is_said_where_it_is(tmp_path: Path) -> None:
    # the sentence names the line and column json.loads names, though read in chunks
    source = next((DATA / "v26_tensor_mix_inf/step0").glob("proc*")) / "dump.json"
    lines = source.read_text().splitlines(keepends=True)
    bad = next(i for i, line in enumerate(lines) if '"Max"' in line and i > len(lines) // 2)
    lines[bad] = lines[bad].replace('"Max": ', '"Max": 1.5.', 1)
    path = tmp_path / "dump.json"
    path.write_text("".join(lines))
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(path.read_text(), parse_constant=mj.no_constant)
    with pytest.raises(MsprobeError) as got:
        read_dump_json(path)
    assert f"line {expected.value.lineno} column {expected.value.colno}" in str(got.value)
    # and the calls before it were yielded, in order, by the stream
    names = []
    with pytest.raises(MsprobeError):
        for name, _parsed, _record in scan_dump_json(path):
            names.append(name)
    every = [c.name for c in read_dump_json(source).calls]
    assert names and names == every[: len(names)] and len(names) < len(every)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6, alphabet=st.characters(codec="utf-8")),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(
    data=st.dictionaries(st.text(max_size=8), _json, max_size=5),
    indent=st.sampled_from([None, 0, 1, 3]),
    size=st.integers(min_value=1, max_value=40),
    cut=st.integers(min_value=0, max_value=2000),
)
def test_fuzz_stream_equals_json_loads(
    data: dict[str, object], indent: int | None, size: int, cut: int
) -> None:
    text = json.dumps({"task": "x", "data": data}, indent=indent)
    for body in (text, text[:cut]):
        try:
            expected: object = json.loads(body, parse_constant=mj.no_constant)["data"]
        except (ValueError, RecursionError):
            expected = MsprobeError
        header: dict[str, object] = {}
        try:
            got: object = dict(mj.top_level(mj.JsonText(_chunked(body, size), "d"), header))
        except mj.NotAnObject:
            got = MsprobeError if body.strip()[:1] != "{" else "bad"
        except MsprobeError as err:
            assert "\n" not in str(err)
            got = MsprobeError
        # NaN != NaN: compare the texts
        assert json.dumps(got, default=str) == json.dumps(expected, default=str)


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(max_size=30),
    record=st.dictionaries(
        st.sampled_from(["input_args", "input_kwargs", "input", "output", "parameters", "x"]),
        _json,
        max_size=5,
    )
    | _json,
)
def test_fuzz_msprobe_rule_never_raises(name: str, record: object) -> None:
    # any JSON a hostile dump.json holds: a bool, never an exception
    assert msprobe_rule.is_anomaly(name, record) in (True, False)
    assert msprobe_rule.record_overflows(record) in (True, False)


_COMM_NAMES = st.sampled_from(
    ["Distributed.all_reduce.0.forward", "Distributed.broadcast.1.forward", "Distributed.send"]
)


@settings(max_examples=200, deadline=None)
@given(
    ranks=st.lists(
        st.lists(
            st.tuples(
                _COMM_NAMES | st.text(max_size=12),
                st.dictionaries(
                    st.sampled_from(["input_args", "input_kwargs", "output", "src", "dst"]),
                    _json,
                    max_size=4,
                )
                | _json,
            ),
            max_size=6,
        ),
        max_size=3,
    )
)
def test_fuzz_cross_rank_pass_never_raises(ranks: list[list[tuple[str, object]]]) -> None:
    # hostile records on communication calls (src/dst of any type, lists of anything):
    # each rank is named at most one call it made, never an exception
    trails = [_trail(rank, calls) for rank, calls in enumerate(ranks)]
    named = msprobe_rule.first_anomalies(trails)
    for rank, name in named.items():
        assert name in [n for n, _ in ranks[rank]]
