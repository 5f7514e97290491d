"""msprobe dumps through the foreign-dump seam (issue 29): `open_dump` detects them, the
session checks them with MindSpore's math on msprobe's statistics (or on `.pt` values),
the origin trace and the first TO hit of every step agree with `msprobe overflow_check`,
`exec` addresses tensors by msprobe's names, the API reads them, `r` picks up new steps,
and a hostile dump.json never raises."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuidebug.cli import main as cli_main
from tuidebug.core.graph import NodeKind
from tuidebug.core.origins import trace_in_session
from tuidebug.core.session import Notice
from tuidebug.offline.dump import OfflineDump, TensorFileError
from tuidebug.offline.foreign.dump import KEPT_STEPS, ForeignDump, open_dump
from tuidebug.offline.session import OfflineSession

DATA = Path(__file__).resolve().parents[1] / "data" / "msprobe"


@pytest.fixture
def mlp(fixtures_dir: Path) -> Path:
    return fixtures_dir / "msprobe_mlp"


def _session(root: Path, *specs: str, rank: int | None = None) -> tuple[OfflineSession, list[str]]:
    session = OfflineSession(root, rank=rank)
    notes: list[str] = []
    session.subscribe(lambda e: notes.append(e.message) if isinstance(e, Notice) else None)
    session.start()
    for spec in specs:
        name, _, params = spec.partition(":")
        values = {k: float(v) for k, v in (p.split("=") for p in params.split(",") if p)}
        session.create_watchpoint(name, values)
    return session, notes


def _first_hits(session: OfflineSession) -> dict[int, str | None]:
    """Step index (msprobe's step number) → the call of the first hit there."""
    out: dict[int, str | None] = {}
    for step in range(1, (session.metadata.max_step or 0) + 1):
        session.reset_step(step)
        session.recheck()
        hits = session.hits
        out[step - 1] = hits[0].tensor.node.rsplit("/", 1)[-1] if hits else None
    return out


def _msprobe_answers(root: Path) -> dict[tuple[int, int], str]:
    """(step, rank) → msprobe overflow_check's first anomaly, from its saved answers."""
    out: dict[tuple[int, int], str] = {}
    for f in (root / "msprobe_results").glob("overflow_check_*step*.json"):
        step = int(f.stem.rsplit("step", 1)[1])
        for rank, found in json.loads(f.read_text()).items():
            out[(step, int(rank.removeprefix("rank_")))] = found[0]["op_name"]
    return out


def test_every_root_form_opens_as_an_msprobe_dump(mlp: Path) -> None:
    run = mlp / "stat_L1_blowup"
    proc = next((run / "step1").iterdir())
    for root in (run, run / "step1", proc):
        dump = open_dump(root)
        assert isinstance(dump, ForeignDump) and dump.kind == "msprobe", root
    assert open_dump(run).iterations() == [0, 1, 2]


def test_nodes_are_calls_in_order_with_scopes_stacks_and_parameters(mlp: Path) -> None:
    dump = open_dump(mlp / "tensor_mix_fp32")
    graph = dump.graph(0, "msprobe")
    calls = [n.dump_name for n in graph if n.dump_name]
    raw = json.loads(next((mlp / "tensor_mix_fp32" / "step0").glob("*/dump.json")).read_text())
    assert calls == list(raw["data"])  # execution order, every call
    linear = graph.node("Module.inp.Linear.forward.0/Functional.linear.0.forward")
    assert linear.stack and linear.stack[0].line_no is not None
    module = graph.node("Module.inp.Linear.forward.0/Module.inp.Linear.forward.0")
    assert "Module.inp.Linear.forward.0.parameters.weight" in module.inputs
    assert module.attributes["parameter weight"] == "torch.float32 [24, 12]"
    assert "Gradients" in graph.top_scopes() and "optimizer" in graph.top_scopes()
    norm = graph.node("Module.norm.LayerNorm.forward.0/Functional.layer_norm.0.forward")
    assert graph.inputs(norm.name)  # an edge from the call whose output it read
    # L1 writes construct.json as {}: calls grouped by API family
    l1 = open_dump(mlp / "stat_L1_blowup").graph(0, "msprobe")
    assert l1.top_scopes()[:2] == ["Functional", "Torch"]


def test_first_to_hit_and_origin_equal_msprobe_overflow_check(mlp: Path) -> None:
    session, _ = _session(mlp / "stat_L1_blowup", "TO")
    # step 1: Norm is Infinity while Max/Min are finite: no alarm (msprobe: no anomaly)
    assert _first_hits(session) == {0: None, 1: None, 2: "Functional.layer_norm.0.forward"}
    graph = session.graphs["msprobe"]
    downstream = next(h.tensor.node for h in session.hits if "gelu" in h.tensor.node)
    trace = trace_in_session(session, graph, downstream, iteration=2)
    assert [o.node.rsplit("/", 1)[-1] for o in trace.origins] == ["Functional.layer_norm.0.forward"]


@pytest.mark.parametrize(
    ("run", "rank"),
    [
        ("v26_stat_mix_bf16_nan", 0),  # the faulty call exists only in the last step
        ("v26_tensor_mix_inf", 0),
        ("v26_tensor_L0_nan", 0),
        ("v8_stat_mix_inf", 0),  # 8.x: parameters_grad written where the forward ran
        ("v8_overflow_check_task_inf", 0),  # 8.x's overflow_check task: its own dump
        ("v26_dist2_stat_L1_inf_rank1", 1),
        # a collective first: msprobe's answer comes from its cross-rank pass
        ("v26_dist2_stat_L1_inf_after_comm", 1),
    ],
)
def test_first_hit_per_step_equals_msprobe_on_frozen_dumps(run: str, rank: int) -> None:
    root = DATA / run
    if not root.is_dir():
        pytest.skip(f"{root} not made yet")
    answers = _msprobe_answers(root)
    session, _ = _session(root, "TO", rank=rank)
    found = _first_hits(session)
    for step, call in found.items():
        assert call == answers.get((step, rank)), (run, step)


def test_statistics_refuse_what_they_cannot_decide_in_one_sentence(mlp: Path) -> None:
    session, notes = _session(mlp / "stat_L1_blowup", "TZ:zero_percentage_ge=50", "TL:max_gt=1e20")
    session.reset_step(3)
    session.recheck()
    refusals = [n for n in notes if "cannot be checked" in n]
    assert refusals == [
        "The watchpoint TensorAllZero zero_percentage_ge cannot be checked on msprobe "
        "statistics (Max, Min, Mean, Norm) without tensor files: it needs the zero count."
    ]
    # TL decided from Max; TZ only says that NaN/Inf tensors cannot be judged (errors)
    assert any(h.watchpoint_id == 2 and h.error_code == 0 for h in session.hits)
    assert all(h.error_code != 0 for h in session.hits if h.watchpoint_id == 1)


def test_tensor_dumps_are_checked_on_values_across_steps(mlp: Path) -> None:
    session, notes = _session(
        mlp / "tensor_mix_fp32", "TZ:zero_percentage_ge=1", "WCL:abs_mean_update_ratio_gt=0.001"
    )
    session.reset_step(2)
    session.recheck()
    assert not [n for n in notes if "cannot be checked" in n]
    wcl = [h for h in session.hits if h.watchpoint_id == 2]
    assert wcl and all(h.error_code == 0 for h in wcl)  # step 1's values read as previous
    assert all(".parameters." in h.tensor.node for h in wcl)


def test_only_the_steps_in_view_are_kept(mlp: Path) -> None:
    dump = open_dump(mlp / "stat_L1_blowup")
    assert isinstance(dump, ForeignDump)
    for it in (0, 1, 2, 0, 1):
        dump.index(0, "msprobe").statistics_for(it)
    assert len(dump._steps) <= KEPT_STEPS


def test_the_steps_own_data_flow_is_kept_with_the_step_and_dropped_with_it() -> None:
    """The origin trace's per-step edges (v26_stat_mix_bf16_nan: `Torch.sqrt` runs at step
    2 only, so the graph, from step 0, leaves it no consumer): at step 2 the NaN reaches
    tanh from sqrt; they are made on the trace's first question, kept with the step's
    tensors and dropped with them (memory bounded by the steps in view, not the run)."""
    dump = open_dump(DATA / "v26_stat_mix_bf16_nan")
    assert isinstance(dump, ForeignDump)
    graph = dump.graph(0, "msprobe")
    tanh = next(n for n in graph if n.dump_name == "Torch.tanh.0.forward")
    sqrt = next(n for n in graph if n.dump_name == "Torch.sqrt.0.forward")
    assert sqrt.name not in tanh.inputs  # the graph's edge, from step 0
    mul = next(n for n in graph if n.dump_name == "Tensor.__mul__.0.forward")
    module = next(n for n in graph if n.dump_name == "Module.fault.Fault.forward.0")
    at_step = dump.step_inputs(0, "msprobe", 2)
    # tanh read the module's output, made by the mul inside it, which read sqrt's
    assert at_step[tanh.name].inputs == (module.name,)
    assert at_step[module.name].passes == (mul.name,)
    assert at_step[mul.name].inputs == (sqrt.name,)
    assert dump.step_inputs(0, "msprobe", 2) is at_step  # kept with the step
    assert sqrt.name not in tanh.inputs and dump.graph(0, "msprobe") is graph
    edges = open_dump(DATA / "v26_stat_mix_rule_edges")
    assert isinstance(edges, ForeignDump)
    first = edges.step_inputs(0, "msprobe", 2)
    for it in (3, 0, 1):
        edges.index(0, "msprobe").statistics_for(it)
    assert len(edges._steps) <= KEPT_STEPS and (0, "msprobe", 2) not in edges._steps
    again = edges.step_inputs(0, "msprobe", 2)
    assert again == first and again is not first  # read again, not kept past its step
    assert edges.step_inputs(0, "msprobe", 99) == {}  # no such step: the graph's edges


def test_exec_addresses_tensors_by_msprobe_names(
    mlp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(
        [
            "exec",
            str(mlp / "tensor_mix_fp32"),
            "lt -n layer_norm -i 0",
            "pt Functional.linear.0.forward.output.0@1[0,:2]",
            "pt Module.inp.Linear.forward.0/Functional.linear.0.forward:0@1[0,:2]",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Functional.layer_norm.0.forward:0" in out
    first, second = out.split("Tensor ")[1:3]
    assert first.splitlines()[1] == second.splitlines()[1]  # the same values either way


def test_exec_on_a_statistics_dump_says_no_value(
    mlp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(["exec", str(mlp / "stat_L1_blowup"), "pt Functional.linear.0.forward:0@2"])
    _, err = capsys.readouterr()
    assert code == 2 and "has no value at step 3" in err


def test_api_reads_an_msprobe_dump(mlp: Path) -> None:
    from tuidebug.api import DumpAnalyzer, TensorOverflowCondition, Watchpoint

    analyzer = DumpAnalyzer(str(mlp / "stat_L1_blowup"))
    assert analyzer.get_ranks() == [0] and analyzer.get_iterations() == [0, 1, 2]
    nodes = analyzer.select_nodes("layer_norm.0.forward")
    assert nodes
    tensors = analyzer.select_tensors("", iterations=[1, 2])
    hits = analyzer.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
    assert hits and hits[0].tensor.node.name.endswith("Functional.layer_norm.0.forward")
    assert hits[0].tensor.iteration == 2  # step 1's Norm=Infinity is no overflow
    stats = analyzer.select_tensor_statistics(iterations=[2])[0][2]
    assert any(k.startswith("Functional.layer_norm.0.forward.output.0:") for k in stats)


def test_a_step_written_while_open_is_picked_up_on_recheck(mlp: Path, tmp_path: Path) -> None:
    root = tmp_path / "run"
    for step in ("step0", "step1"):
        shutil.copytree(mlp / "stat_L1_blowup" / step, root / step)
    session, notes = _session(root, "TO")
    assert session.metadata.max_step == 2
    shutil.copytree(mlp / "stat_L1_blowup" / "step2", root / "step2")
    session.recheck()
    assert session.metadata.max_step == 3
    assert any("now goes to step 3" in n for n in notes)


def test_a_mindspore_dump_still_opens_as_one(lenet_dump: Path) -> None:
    assert type(open_dump(lenet_dump)) is OfflineDump


_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
_RECORD = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["torch.float32", "Float32", "x", 3]),
        "shape": st.one_of(st.lists(st.integers(-2, 4), max_size=3), _SCALAR),
    },
    optional={
        "Max": _SCALAR,
        "Min": _SCALAR,
        "Mean": _SCALAR,
        "data_name": st.sampled_from(["../x.pt", "a.pt", "b.npy", "b/c.npy", 1]),
    },
)
_VALUE = st.recursive(
    st.one_of(_SCALAR, _RECORD),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=8,
)
_NAME = st.sampled_from(
    [
        "Functional.linear.0.forward",
        "Module.a/b.Linear.forward.0",
        "Module.a.Linear.parameters_grad",
        "x",
        "Torch.t.0.backward",
        "Functional.linear.0.forward.input.0",  # a call named as another's input node
    ]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.dictionaries(
        _NAME,
        st.dictionaries(
            st.sampled_from(["input_args", "output", "parameters", "weight"]), _VALUE, max_size=3
        ),
        max_size=4,
    ),
    construct=st.dictionaries(_NAME, st.one_of(st.none(), _NAME, st.integers()), max_size=4),
    blob=st.one_of(st.binary(max_size=64), st.just(b"\x93NUMPY\x01\x00v\x00{'descr': '<f4'}")),
    stack=st.one_of(
        st.dictionaries(
            st.text(max_size=3),
            st.lists(st.one_of(st.text(max_size=40), st.lists(_NAME, max_size=2)), max_size=2),
            max_size=2,
        ),
        st.lists(st.integers()),
    ),
)
def test_fuzz_hostile_dump_json_never_raises(
    tmp_path_factory: pytest.TempPathFactory,
    data: object,
    construct: object,
    stack: object,
    blob: bytes,
) -> None:
    folder = tmp_path_factory.mktemp("fuzz") / "step0" / "rank0"
    (folder / "dump_tensor_data").mkdir(parents=True)
    doc = {"task": "tensor", "level": "mix", "framework": "pytorch", "data": data}
    (folder / "dump.json").write_text(json.dumps(doc))
    (folder / "construct.json").write_text(json.dumps(construct))
    (folder / "stack.json").write_text(json.dumps(stack))
    for name in ("a.pt", "b.npy"):  # value files that are not what they say
        (folder / "dump_tensor_data" / name).write_bytes(blob)
    dump = open_dump(folder.parent.parent)
    assert isinstance(dump, ForeignDump)
    for name, graph in dump.graphs(0).items():
        if isinstance(data, dict) and data:  # every call a node: none overwrote another
            assert sum(n.kind is NodeKind.OPERATOR for n in graph) == len(data)
        index = dump.index(0, name)
        index.statistics_for(0)
        index.files_for(0)
        for node in graph:
            for slot in range(len(node.outputs)):
                with contextlib.suppress(TensorFileError):  # one sentence naming the file
                    dump.value(0, name, node.name, slot, 0)
    assert isinstance(dump.problems, list)


def test_trace_names_msprobe_first_anomaly_on_rule_edges() -> None:
    """v26_stat_mix_rule_edges (real msprobe 26.2 dump, its answers beside it): from the
    step's last forward hit, the trace's first origin is msprobe overflow_check's call:
    step 2 a batch NaN reaching einsum inside its operand list (einsum, not the linear that
    read the batch; the batch is listed after it), step 3 a NaN weight (its module, not the
    linear inside it that read the weight as an argument); step 1's Torch.fill_ Inf is
    watched by no watchpoint (msprobe's rule ignores that name), so no hit there."""
    root = DATA / "v26_stat_mix_rule_edges"
    answers = _msprobe_answers(root)
    assert answers == {(2, 0): "Torch.einsum.0.forward", (3, 0): "Module.inp.Linear.forward.0"}
    session, _ = _session(root, "TO")
    graph = session.graphs["msprobe"]
    origins: dict[int, str | None] = {}
    for step in range(1, (session.metadata.max_step or 0) + 1):
        session.reset_step(step)
        session.recheck()
        forward = [h.tensor.node for h in session.hits if "forward" in h.tensor.node]
        if not forward:
            origins[step - 1] = None
            continue
        trace = trace_in_session(session, graph, forward[-1], iteration=step - 1)
        origins[step - 1] = trace.origins[0].node.rsplit("/", 1)[-1]
        assert trace.chain(trace.origins[0].node)[-1] == forward[-1]
        # from every forward hit from msprobe's call on, modules included (a module's
        # output is the call's inside it, followed there), the first origin is that call
        answer = answers[(step - 1, 0)]
        later = forward[[n.rsplit("/", 1)[-1] for n in forward].index(answer) :]
        for start in later:
            first = trace_in_session(session, graph, start, iteration=step - 1).origins[0]
            assert first.node.rsplit("/", 1)[-1] == answer, (step - 1, start)
    assert origins == {0: None, 1: None, **{s: c for (s, _r), c in answers.items()}}
    fill = next(n for n in graph if n.dump_name == "Torch.fill_.0.forward")
    assert graph.categories(fill) == frozenset()


def _frozen() -> list[str]:
    return sorted(p.name for p in DATA.iterdir() if p.is_dir()) if DATA.is_dir() else []


@pytest.mark.parametrize("run", _frozen())
def test_every_frozen_msprobe_dump_opens_and_reads_every_step(run: str) -> None:
    """26.x and 8.x, PyTorch and MindSpore PyNative, statistics/tensor/structure, one rank
    or two: each step of each rank reads with nothing left unread."""
    dump = open_dump(DATA / run)
    assert isinstance(dump, ForeignDump)
    for rank in dump.ranks:
        assert dump.graphs(rank), (run, rank)
        index = dump.index(rank, "msprobe")
        for it in dump.iterations(rank):
            index.statistics_for(it)
            for f in index.files_for(it).values():  # every value file reads
                node = f.op_name
                assert dump.value(rank, "msprobe", node, f.slot, it) is not None
    structure = run.endswith("structure_mix")
    assert [p for p in dump.problems if "structure only" not in p] == []
    assert structure == any("structure only" in p for p in dump.problems)


def test_mindspore_pynative_npy_values_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    root = DATA / "ms_pynative_tensor_mix_nan"
    if not root.is_dir():
        pytest.skip(f"{root} not made yet")
    session, notes = _session(root, "TZ:zero_percentage_ge=90", "TO")
    session.reset_step(3)
    session.recheck()
    assert not [n for n in notes if "cannot be checked" in n]
    assert any(h.watchpoint_id == 2 for h in session.hits)
    code = cli_main(["exec", str(root), "pt Cell.inp.Dense.forward.0.output.0@0"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "float32" in out


def test_the_trace_reads_msprobe_parameters_as_the_call_read_them(
    mlp: Path, tmp_path: Path
) -> None:
    """msprobe records a module's parameters when its forward reads them (MindSpore dumps
    them after the update): a weight NaN at step 1's forward is where the module's NaN
    output came from (the previous step's finite weight is not what it read), and the trace
    names the module, as msprobe overflow_check does (parameters are no inputs in its rule)."""
    root = tmp_path / "run"
    for step in ("step0", "step1"):
        shutil.copytree(mlp / "stat_mix_fp32" / step, root / step)
    path = next((root / "step1").glob("*/dump.json"))
    doc = json.loads(path.read_text())
    module = doc["data"]["Module.hid.Linear.forward.0"]
    module["parameters"]["weight"]["Max"] = float("nan")
    module["output"][0]["Max"] = float("nan")
    path.write_text(json.dumps(doc))
    session, _ = _session(root)
    assert session.capabilities.parameters_after_update is False
    graph = session.graphs["msprobe"]
    start = "Module.hid.Linear.forward.0/Module.hid.Linear.forward.0"
    trace = trace_in_session(session, graph, start, iteration=1)
    assert [o.node for o in trace.origins] == [start]
    # the walk read the weight, this step's value (the one the module read)
    assert trace.reached_from["Module.hid.Linear.forward.0.parameters.weight"] == start


def test_hostile_value_files_are_one_sentence_each(
    mlp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A value file that is a FIFO, a link out of the dump or not a torch.save zip: `pt` says
    one sentence naming it (never blocks, never reads outside the dump); the rest reads."""
    root = tmp_path / "run"
    shutil.copytree(mlp / "tensor_mix_fp32" / "step0", root / "step0")
    data = next((root / "step0").glob("*/dump_tensor_data"))
    outside = tmp_path / "secret.pt"
    shutil.copy(data / "Functional.gelu.0.forward.output.0.pt", outside)
    (data / "Functional.linear.0.forward.output.0.pt").unlink()
    os.mkfifo(data / "Functional.linear.0.forward.output.0.pt")
    (data / "Functional.gelu.0.forward.output.0.pt").unlink()
    (data / "Functional.gelu.0.forward.output.0.pt").symlink_to(outside)
    (data / "Torch.tanh.0.forward.output.0.pt").write_bytes(b"PK\x03\x04 not a zip")
    names = ["Functional.linear.0.forward", "Functional.gelu.0.forward", "Torch.tanh.0.forward"]
    said = []
    for name in names:
        code = cli_main(["exec", str(root), f"pt {name}.output.0@0"])
        assert code == 2, name
        said.append(capsys.readouterr().err.strip())
    assert said == [
        "tuidebug exec: Functional.linear.0.forward.output.0.pt is a FIFO (named pipe), not a "
        "regular file.",
        "tuidebug exec: Functional.gelu.0.forward.output.0.pt points outside the dump folder "
        "and is refused.",
        "tuidebug exec: Torch.tanh.0.forward.output.0.pt cannot be read: it is not a zip file "
        "(too short).",
    ]
    code = cli_main(["exec", str(root), "pt Functional.layer_norm.0.forward.output.0@0"])
    assert code == 0


@pytest.mark.parametrize("run", ["stat_L1_blowup", "stat_mix_bf16", "tensor_mix_bf16"])
def test_the_session_and_check_find_the_same_tensors(
    mlp: Path, run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The TUI/exec/API path (the seam) and `tuidebug check` (its streaming path) decide the
    same watchpoints on the same tensors: weights, gradients, tensors alike."""
    specs = ["TO", "TL:max_gt=1e20", "GL:max_gt=0.01", "WL:max_gt=0.3"]
    if run.startswith("tensor"):
        specs = ["TO", "WL:max_gt=0.3", "GL:max_gt=0.01"]  # on values: max from the values
    argv = ["check", str(mlp / run), "--json"]
    for spec in specs:
        argv += ["--watch", spec]
    cli_main(argv)
    cli = {
        (h["watchpoint"], h["iteration"], h["tensor"])
        for h in json.loads(capsys.readouterr().out)
        if h["error_code"] == 0
    }
    session, _ = _session(mlp / run, *specs)
    dump = session.dump
    assert isinstance(dump, ForeignDump)
    seen = set()
    for step in range(1, (session.metadata.max_step or 0) + 1):
        session.reset_step(step)
        session.recheck()
        for h in session.hits:
            if h.error_code:
                continue
            t = dump.foreign_tensor(0, "msprobe", h.tensor.node, h.tensor.slot, step - 1)
            assert t is not None
            seen.add((specs[h.watchpoint_id - 1], step - 1, t.name))
    assert cli and seen == cli


def test_check_decides_on_values_what_tensor_dump_statistics_cannot(
    mlp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tuidebug check` on a task-tensor dump: TZ and WCL, refused on statistics, are
    checked on the `.pt` values (no refusal, no warning), WCL against the previous step."""
    argv = ["check", str(mlp / "tensor_mix_bf16"), "--json"]
    argv += ["--watch", "TZ:zero_percentage_ge=10", "--watch", "WCL:abs_mean_update_ratio_gt=0.01"]
    assert cli_main(argv) == 1
    out, err = capsys.readouterr()
    assert "cannot be checked" not in err
    hits = json.loads(out)
    zero = {(h["iteration"], h["tensor"]) for h in hits if h["watchpoint"].startswith("TZ")}
    assert (0, "Module.norm.LayerNorm.forward.0.parameters.bias") in zero  # all zero at start
    change = [h for h in hits if h["watchpoint"].startswith("WCL")]
    assert {h["error_code"] for h in change if h["iteration"] == 0} == {4}  # no previous step
    assert any(h["error_code"] == 0 and h["iteration"] == 1 for h in change)
    steps = [(h["iteration"]) for h in hits]
    assert steps == sorted(steps)  # hits in step order, execution order within one


def test_offline_accepts_an_msprobe_root_and_refuses_graph_in_one_sentence(
    mlp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuidebug.cli.launch import check_dump_dir

    root = str(mlp / "stat_L1_blowup")
    assert check_dump_dir(root) is None  # `tuidebug offline ROOT` opens it
    said = check_dump_dir(root, graph_dir=root)
    assert said is not None and said.startswith("--graph reads MindSpore graphs;")
    assert cli_main(["exec", "--graph", root, root, "lt"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("tuidebug exec: --graph reads MindSpore graphs;")


def test_steps_past_the_scan_budget_are_said_and_their_new_calls_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Opening scans later steps for new calls only up to MAX_SCANNED_BYTES; past it one
    sentence says so, and a step holding a call the graph lacks says that when checked."""
    import tuidebug.offline.foreign.msprobe as foreign_msprobe

    root = DATA / "v26_stat_mix_bf16_nan"  # Torch.sqrt.0.forward only in step 2
    if not root.is_dir():
        pytest.skip(f"{root} not made yet")
    monkeypatch.setattr(foreign_msprobe, "MAX_SCANNED_BYTES", 1)
    session, notes = _session(root, "TO")
    assert any("were not scanned for calls" in n for n in notes)
    session.reset_step(3)
    session.recheck()
    assert any("Torch.sqrt.0.forward" in n and "were not read" in n for n in notes)


def test_a_calls_arguments_carry_their_statistics_and_presence_flags(mlp: Path) -> None:
    """Node details list each input and parameter of a call (`Graph.arguments`) with the
    statistics of the tensor it is; msprobe's NaN/Inf counts are 0/1 flags from Max/Min,
    so they read "yes"/"no" (never "NaN 1") in the details, `pt` and `L`."""
    from tuidebug.core.tensor import TensorRef
    from tuidebug.core.tensor_health import summary_from_statistics
    from tuidebug.tui.tensor.reads import statistics_text
    from tuidebug.tui.tensor_list.rows import Columns, format_numbers

    session, _ = _session(mlp / "stat_L1_blowup")
    graph = session.graphs["msprobe"]
    norm = "Functional/Functional.layer_norm.0.forward"
    args = graph.arguments(norm)
    assert args[0] == ("input.0", "Functional/Functional.linear.0.forward", 0)  # made by linear
    assert [label for label, _, _ in args] == ["input.0", "input.2", "input.3"]  # 1: an int list
    stats = session.dumped_statistics(TensorRef(args[0][1], 0, 2, 0, "msprobe"))
    assert stats is not None
    text = statistics_text(stats)
    assert "max 4.91863e+25" in text and "NaN no" in text and "+Inf no" in text
    out = session.dumped_statistics(TensorRef(norm, 0, 2, 0, "msprobe"))
    assert out is not None and "NaN yes" in statistics_text(out)
    summary = summary_from_statistics(out)
    assert summary is not None and summary.presence and summary.nan == 1
    cells = format_numbers(summary, Columns(1, 1, 1, 1, 1, 0, 0, 5, 5))
    assert [c.strip() for c, _ in cells] == ["yes", "no"]
    # a statistic.csv row counts: shown as a count
    assert "NaN 3" in statistics_text({"nan_count": 3.0, "pos_inf_count": 0.0})
    # parameters are arguments of their module's call
    module = "Module.inp.Linear.forward.0/Module.inp.Linear.forward.0"
    params = open_dump(mlp / "tensor_mix_fp32").graph(0, "msprobe").arguments(module)
    assert ("parameters.weight", "Module.inp.Linear.forward.0.parameters.weight", 0) in params


def test_all_ranks_name_the_rank_whose_call_began_the_inf() -> None:
    """The two-rank dump: rank 0's first TO hit is the all_reduce carrying rank 1's Inf
    (msprobe names no anomaly on rank 0); checked on every rank, the first NaN/Inf is rank
    1's own call (msprobe's anomaly there), and the hit list's alert line names the rank."""
    from tuidebug.core.hit_rules import nan_inf_summary
    from tuidebug.tui.panes.hit_list import nan_inf_alert

    root = DATA / "v26_dist2_stat_L1_inf_rank1"
    answers = _msprobe_answers(root)
    session = OfflineSession(root, all_ranks=True)
    session.start()
    session.create_watchpoint("TO", {})
    last = session.metadata.max_step or 0
    session.reset_step(last)
    session.recheck()
    ranks = {h.tensor.rank for h in session.hits}
    assert ranks == {0, 1}
    summary = nan_inf_summary(session.hits)
    assert summary is not None and summary.ranks == 2
    first = summary.first.tensor
    assert first.rank == 1
    assert first.node.rsplit("/", 1)[-1] == answers[(last - 1, 1)]  # msprobe's anomaly
    line = nan_inf_alert(summary)
    assert "on rank 1 — " in line and first.node.rsplit("/", 1)[-1] in line, line
    # one rank's hits: no rank named (the header says which rank is shown)
    one = nan_inf_summary([h for h in session.hits if h.tensor.rank == 1])
    assert one is not None and "rank" not in nan_inf_alert(one)
