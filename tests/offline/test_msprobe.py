"""msprobe dumps (issue 29): the reader against msprobe's own files and answers, the
statistics check (`tuidebug check` on an msprobe root, no flag), and hostile inputs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuidebug import cli
from tuidebug.core.graph import Category
from tuidebug.core.watchpoints import parse_watch_spec
from tuidebug.offline.check.msprobe import check_msprobe
from tuidebug.offline.files import msprobe as mp
from tuidebug.offline.files.msprobe import (
    MsprobeError,
    find_msprobe_root,
    parse_call_name,
    parse_dump_json,
    read_construct,
    read_dump_json,
    read_stack,
)

RUNS = ("stat_L1_blowup", "stat_mix_fp32", "stat_mix_bf16", "tensor_mix_fp32", "tensor_mix_bf16")
CLEAN = ("stat_mix_fp32", "stat_mix_bf16", "tensor_mix_fp32", "tensor_mix_bf16")


@pytest.fixture
def msprobe_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "msprobe_mlp"


def _first_anomaly(root: Path, step: int) -> str | None:
    """The first call whose output hits TO, as tuidebug's check answers it."""
    found = find_msprobe_root(root)
    assert found is not None
    cond, params = parse_watch_spec("TO")
    from tuidebug.core.watchpoints import Watchpoint

    req = Watchpoint(0, cond, dict(params)).request()
    report = check_msprobe(found, [(req, Category.TENSOR)], steps=lambda s: s == step)
    assert not report.problems and not report.refusals
    return report.hits[0].place.node if report.hits else None


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("Functional.linear.0.forward", ("Functional", "linear", 0, "forward", False)),
        ("Torch.matmul.0.backward", ("Torch", "matmul", 0, "backward", False)),
        ("Tensor.add_.3.forward", ("Tensor", "add_", 3, "forward", False)),
        ("Primitive.matmul.MatMul.1.forward", ("Primitive", "matmul.MatMul", 1, "forward", False)),
        ("Module.fc1.Linear.forward.0", ("Module", "fc1.Linear", 0, "forward", True)),
        ("Cell.fc1.Dense.backward.0", ("Cell", "fc1.Dense", 0, "backward", True)),
        (
            "Module.fc1.Linear.parameters_grad.0",
            ("Module", "fc1.Linear", 0, "parameters_grad", True),
        ),
        (
            "Module.fc1.Linear.parameters_grad",
            ("Module", "fc1.Linear", None, "parameters_grad", True),
        ),
    ],
)
def test_call_name_grammar(name: str, parts: tuple[object, ...]) -> None:
    parsed = parse_call_name(name)
    assert parsed is not None
    assert (parsed.prefix, parsed.op, parsed.index, parsed.direction, parsed.is_module) == parts


@pytest.mark.parametrize(
    "name", ["", "linear", "a.b", "Functional.linear.x.sideways", "a..0.forward"]
)
def test_other_names_are_not_calls(name: str) -> None:
    assert parse_call_name(name) is None


# ---------------------------------------------------------------- the real files


@pytest.mark.parametrize("run", RUNS)
def test_roots_of_every_kind_are_found(msprobe_dir: Path, run: str) -> None:
    root = find_msprobe_root(msprobe_dir / run)
    assert root is not None and sorted(root.steps) == [0, 1, 2] and root.rank_ids == [0]
    folder = root.steps[1].ranks[0]
    one_step = find_msprobe_root(folder.parent)
    assert one_step is not None and list(one_step.steps) == [1]
    one_rank = find_msprobe_root(folder)
    assert one_rank is not None and one_rank.steps[1].ranks == {0: folder}


def test_rank_layouts(tmp_path: Path, msprobe_dir: Path) -> None:
    data = (msprobe_dir / "stat_mix_fp32/step0").glob("proc*/dump.json").__next__().read_bytes()
    for folder in ("step3/rank", "step3/rank1", "step4/rank1"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "dump.json").write_bytes(data)
    root = find_msprobe_root(tmp_path)
    assert root is not None
    assert {s: sorted(v.ranks) for s, v in root.steps.items()} == {3: [0, 1], 4: [1]}
    assert find_msprobe_root(tmp_path / "step3" / "rank") is not None
    (tmp_path / "empty").mkdir()
    assert find_msprobe_root(tmp_path / "empty") is None


def test_tensor_records_match_data_names(msprobe_dir: Path) -> None:
    folder = next((msprobe_dir / "tensor_mix_bf16/step0").glob("proc*"))
    dump = read_dump_json(folder / "dump.json")
    assert (dump.task, dump.level, dump.framework) == ("tensor", "mix", "pytorch")
    tensors = list(mp.iter_tensors(dump))
    assert tensors and all(t.data_name for t in tensors)
    # every record's name is msprobe's own (its .pt file name without the extension)
    assert all(t.data_name == t.name + ".pt" for t in tensors)
    out = dump.calls[1]
    assert out.name == "Module.inp.Linear.forward.0"
    assert [t.slot for t in out.role("parameters")] == ["weight", "bias"]
    assert out.role("output")[0].dtype == "torch.bfloat16"
    assert out.role("output")[0].shape == (5, 24)
    stack = read_stack(folder / "stack.json")
    assert any("train_mlp.py" in f for f in stack["Module.inp.Linear.forward.0"])
    construct = read_construct(folder / "construct.json")
    assert construct["Functional.linear.0.forward"] == "Module.inp.Linear.forward.0"


def test_nan_and_infinity_tokens(msprobe_dir: Path) -> None:
    folder = next((msprobe_dir / "stat_L1_blowup/step2").glob("proc*"))
    dump = read_dump_json(folder / "dump.json")
    assert read_construct(folder / "construct.json") == {}  # level L1
    ln = next(c for c in dump.calls if c.name == "Functional.layer_norm.0.forward")
    assert ln.scalars == 2  # the int in a list and eps
    assert ln.role("input")[0].norm == float("inf") and not ln.role("input")[0].overflows
    assert ln.role("output")[0].overflows


# ---------------------------------------------------------------- msprobe's answers


def test_first_anomaly_equals_msprobe_overflow_check(msprobe_dir: Path) -> None:
    answer = json.loads(
        (msprobe_dir / "msprobe_results/overflow_check_stat_L1_blowup_step2.json").read_text()
    )
    expected = answer["rank_0"][0]["op_name"]
    assert expected == "Functional.layer_norm.0.forward"
    assert _first_anomaly(msprobe_dir / "stat_L1_blowup", 2) == expected


def test_norm_infinity_alone_is_no_overflow(msprobe_dir: Path) -> None:
    # step 1: Norm is Infinity on the huge weights, Max/Min finite; msprobe: "Cannot find any
    # anomaly node"
    folder = next((msprobe_dir / "stat_L1_blowup/step1").glob("proc*"))
    assert any(
        t.norm == float("inf") for t in mp.iter_tensors(read_dump_json(folder / "dump.json"))
    )
    assert _first_anomaly(msprobe_dir / "stat_L1_blowup", 1) is None
    assert _first_anomaly(msprobe_dir / "stat_L1_blowup", 0) is None


@pytest.mark.parametrize("run", CLEAN)
def test_clean_runs_have_no_overflow(msprobe_dir: Path, run: str) -> None:
    for step in (0, 1, 2):
        assert _first_anomaly(msprobe_dir / run, step) is None


def test_check_cli_detects_msprobe(msprobe_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = msprobe_dir / "stat_L1_blowup"
    assert cli.main(["check", str(root / "step1"), "--watch", "TO"]) == 0
    capsys.readouterr()
    assert cli.main(["check", str(root), "--watch", "TO", "--json"]) == 1
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["node"] == "Functional.layer_norm.0.forward"
    assert hits[0]["iteration"] == 2 and hits[0]["tensor"].endswith(".output.0")
    assert {h["iteration"] for h in hits} == {2}
    # thresholds on Max/Min with MindSpore's math
    assert cli.main(["check", str(root), "--watch", "TS:min_lt=-1e20", "--iteration", "1"]) == 1
    capsys.readouterr()


def test_undecidable_watchpoints_are_one_sentence_each(
    msprobe_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", str(msprobe_dir / "stat_mix_fp32"), "--watch", "TZ:zero_percentage_ge=50"]
    assert cli.main([*args, "--watch", "TL:abs_mean_gt=1"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")]
    assert len(err) == 2 and all("cannot be checked on msprobe statistics" in e for e in err)


# ---------------------------------------------------------------- hostile input


def _one_sentence(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_truncated_and_bad_tokens(tmp_path: Path) -> None:
    for body in (b'{"data": {"a.0.forward": {"output": [', b'{"data": {}, "x": nan}', b"\xff\xfe"):
        with pytest.raises(MsprobeError) as info:
            parse_dump_json(body, "dump.json")
        assert "dump.json" in _one_sentence(info.value)
    with pytest.raises(MsprobeError, match="nests too deeply"):
        parse_dump_json(b"[" * 200_000, "dump.json")
    with pytest.raises(MsprobeError, match='no "data"'):
        parse_dump_json(b"[1]", "dump.json")


def test_huge_dump_json_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mp, "MAX_DUMP_JSON_BYTES", 100)
    path = tmp_path / "dump.json"
    path.write_bytes(b'{"data": {}}' + b" " * 200)
    with pytest.raises(MsprobeError, match="limit"):
        read_dump_json(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "step0" / "rank0"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "dump.json")
    with pytest.raises(MsprobeError, match="FIFO"):
        read_dump_json(folder / "dump.json")
    # a FIFO is no dump.json: the folder is not an msprobe dump at all
    assert find_msprobe_root(tmp_path) is None


def test_unreadable_dump_json_in_check_is_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "step0" / "rank0"
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text('{"data": {"Functional.a.0.forward": ')
    assert cli.main(["check", str(tmp_path), "--watch", "TO"]) == 2
    warnings = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning")]
    assert len(warnings) == 1 and "not valid JSON" in warnings[0]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(data=_json, cut=st.integers(min_value=0, max_value=400))
def test_fuzz_reader_never_crashes(data: object, cut: int) -> None:
    start = time.monotonic()
    doc = {"task": "statistics", "data": {"Functional.x.0.forward": {"output": [data]}, "y": data}}
    blob = json.dumps(doc).encode()
    for body in (blob, blob[:cut]):
        try:
            parse_dump_json(body, "dump.json")
        except MsprobeError as err:
            _one_sentence(err)
    assert time.monotonic() - start < 5


def test_escapes_in_call_names_are_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "step0" / "rank0"
    folder.mkdir(parents=True)
    record = {"dtype": "torch.float32", "shape": [2], "Max": "NaN", "Min": 0, "Mean": 0, "Norm": 0}
    name = "Functional.\x1b]0;pwned\x07x.0.forward"
    doc = json.dumps({"data": {name: {"output": [record]}}}).replace('"NaN"', "NaN")
    (folder / "dump.json").write_text(doc)
    assert cli.main(["check", str(tmp_path), "--watch", "TO"]) == 1
    out = capsys.readouterr().out
    assert "pwned" in out and "\x1b" not in out and "\x07" not in out


def _clean_dump(folder: Path) -> None:
    folder.mkdir(parents=True)
    record = {"dtype": "torch.float32", "shape": [2], "Max": 1, "Min": 0, "Mean": 0.5, "Norm": 1}
    (folder / "dump.json").write_text(
        json.dumps({"data": {"Functional.x.0.forward": {"output": [record]}}})
    )


def test_folders_left_unread_make_the_check_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # rank and proc folders side by side: the proc folder is not read, so no all-clear
    _clean_dump(tmp_path / "step0" / "rank0")
    _clean_dump(tmp_path / "step0" / "proc123")
    assert cli.main(["check", str(tmp_path), "--watch", "TO"]) == 2
    assert "only the rank folders are read" in capsys.readouterr().err


def test_nothing_checked_is_no_all_clear(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a step the dump lacks: "0 hits in 0 records" would read as all clear
    _clean_dump(tmp_path / "step0" / "rank0")
    assert cli.main(["check", str(tmp_path), "--watch", "TO"]) == 0
    assert cli.main(["check", str(tmp_path), "--watch", "TO", "--iteration", "5"]) == 2
    assert "nothing was checked" in capsys.readouterr().err


def test_a_small_file_costs_its_size_not_its_limit(tmp_path: Path) -> None:
    """read_regular asks for the file's size, not the limit: a 2-byte construct.json under
    a 128 MiB limit once allocated 128 MiB for a moment (read(n) allocates n first)."""
    import tracemalloc

    from tuidebug.offline.files.regular_file import read_regular

    small = tmp_path / "construct.json"
    small.write_text("{}")
    tracemalloc.start()
    try:
        assert read_regular(small, 1 << 30) == b"{}"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
