"""tuidebug compare on msprobe dumps (issue 30): tensor dumps' values read from their `.pt`
files without torch, every cell of msprobe compare's CSV equal to ours on its own answers
(the fixture's two CSVs and four more made by `tests/data/compare/msprobe/make.sh`), the
non-tensor rows as msprobe shows them, statistics against tensors, the mixed-precision
tolerance and the divergence chain."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuidebug.cli import main
from tuidebug.compare.pairing import pair_msprobe
from tuidebug.compare.report import compare_pairs, csv_text
from tuidebug.offline.files.msprobe import find_msprobe_root

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
MSPROBE = FIXTURES / "msprobe_mlp"
OURS = Path(__file__).resolve().parents[1] / "data" / "compare" / "msprobe"
# msprobe's cells we do not reproduce: its stack text, its Result (it marks every
# bf16-against-fp32 row "error" for the dtype alone) and its message words
_NOT_COMPARED = {"NPU_Stack_Info", "Result", "Err_message"}

pytestmark = pytest.mark.skipif(not MSPROBE.is_dir(), reason="../shared/fixtures is absent")

CASES = [
    # (msprobe's CSV, target, golden, step, rows)
    (MSPROBE / "msprobe_results" / "compare_tensor_mix_bf16_vs_fp32_step0.csv",
     "tensor_mix_bf16", "tensor_mix_fp32", 0, 302),
    (OURS / "tensor_fp32_vs_bf16_step0.csv", "tensor_mix_fp32", "tensor_mix_bf16", 0, 302),
    (OURS / "tensor_bf16_vs_fp32_step2.csv", "tensor_mix_bf16", "tensor_mix_fp32", 2, 302),
    (OURS / "tensor_fp32_vs_fp32_step1.csv", "tensor_mix_fp32", "tensor_mix_fp32", 1, 302),
    (MSPROBE / "msprobe_results" / "compare_stat_mix_bf16_vs_fp32_step1.csv",
     "stat_mix_bf16", "stat_mix_fp32", 1, 302),
    (OURS / "stat_L1_blowup_vs_fp32_step2.csv", "stat_L1_blowup", "stat_mix_fp32", 2, 271),
]  # fmt: skip


def head_index(rows: list[list[str]], column: str) -> int:
    return rows[0].index(column)


@pytest.mark.parametrize(("theirs_csv", "target", "golden", "step", "count"), CASES)
def test_every_cell_equals_msprobe_compare(
    theirs_csv: Path, target: str, golden: str, step: int, count: int
) -> None:
    """Every row of msprobe compare's CSV, in its order, every column but the three above,
    as text: Cosine, EucDist, MaxAbsErr, MaxRelativeErr, the ratios, the statistics and
    their diffs, Data_name, for tensors and for the non-tensor rows (`<class 'int'>`,
    `None`)."""
    t, g = find_msprobe_root(MSPROBE / target), find_msprobe_root(MSPROBE / golden)
    assert t is not None and g is not None
    report = compare_pairs(pair_msprobe(t, g, steps=[step]))
    ours = list(csv.reader(csv_text(report).splitlines()))
    with theirs_csv.open(encoding="utf-8") as f:
        theirs = list(csv.reader(f))
    assert ours[0] == theirs[0]
    # msprobe lists the target's records only; a golden-only one (here the L1 dump against
    # a mix one: the modules) is our unmatched row, never dropped
    listed = {r[0] for r in theirs[1:]}
    assert all(r[head_index(ours, "Result")] == "N/A" for r in ours[1:] if r[0] not in listed)
    ours = [ours[0]] + [r for r in ours[1:] if r[0] in listed]
    assert [r[0] for r in ours[1:]] == [r[0] for r in theirs[1:]]
    assert len(ours) - 1 == count
    head = theirs[0]
    cells = 0
    for mine, their in zip(ours[1:], theirs[1:], strict=True):
        for i, col in enumerate(head):
            if col not in _NOT_COMPARED:
                assert mine[i] == their[i], (mine[0], col)
                cells += 1
    assert cells == count * (len(head) - len(_NOT_COMPARED))


def test_bf16_against_fp32_is_not_a_divergence(capsys: pytest.CaptureFixture[str]) -> None:
    """msprobe marks every bf16-vs-fp32 row 'error'; the autocast run is clean, and the
    fp32 tensors computed from bf16 ones (loss, gradients, Adam's state) are judged by
    bf16's tolerance, said in a note."""
    target, golden = str(MSPROBE / "tensor_mix_bf16"), str(MSPROBE / "tensor_mix_fp32")
    assert main(["compare", target, golden, "--step", "0"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == "302 matched (0 diverged), 0 unmatched, 0 skipped"
    assert "differ in precision (bfloat16" in captured.err
    # the same pair with a cosine bar above what bf16 reaches diverges
    assert main(["compare", target, golden, "--step", "0", "--cosine", "0.9999999", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    # msprobe records no data flow; an input equal (dtype, shape, statistics) to an earlier
    # output is that output, so the chain runs from the first linear through the forward
    assert out["first_divergence"]["name"] == "Functional.linear.0.forward.output.0"
    assert out["chain"]["basis"] == "data flow"
    assert out["chain"]["rows"][:2] == [
        "Functional.layer_norm.0.forward.input.0",
        "Functional.layer_norm.0.forward.output.0",
    ]


def test_statistics_against_tensors_compares_statistics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    target, golden = str(MSPROBE / "stat_mix_bf16"), str(MSPROBE / "tensor_mix_fp32")
    assert main(["compare", target, golden, "--step", "1", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["summary"] == {"matched": 302, "diverged": 0, "unmatched": 0, "skipped": 0}
    assert "statistics" in out["rows"][0] and "metrics" not in out["rows"][0]
    assert "the target is a statistics dump and the other a tensor dump" in captured.err


def test_blowup_first_divergence_and_chain(capsys: pytest.CaptureFixture[str]) -> None:
    """The learning rate made 1e25 after step 0: the first divergence is the scaled step of
    Adam's first parameter update at step 1, and the chain lists what follows it."""
    target, golden = str(MSPROBE / "stat_L1_blowup"), str(MSPROBE / "stat_mix_fp32")
    assert main(["compare", target, golden, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    first = out["first_divergence"]
    assert (first["name"], first["step"]) == ("Tensor.addcdiv_.0.forward.input.value", 1)
    assert first["target"]["value"].endswith("e+25") and first["status"] == "diverged"
    assert out["chain"]["basis"] == "data flow"
    assert out["chain"]["rows"][0] == "Tensor.addcdiv_.0.forward.output.0"
    assert main(["compare", target, golden]) == 1
    text = capsys.readouterr().out
    assert "divergence chain (" in text and "→ Tensor.addcdiv_.0.forward.output.0" in text


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_missing_tensor_file_is_a_skipped_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _copy(MSPROBE / "tensor_mix_bf16", tmp_path / "t")
    (
        next(target.glob("step0/proc*/dump_tensor_data")) / "Functional.gelu.0.forward.output.0.pt"
    ).unlink()
    golden = str(MSPROBE / "tensor_mix_fp32")
    assert main(["compare", str(target), golden, "--step", "0", "--json"]) == 2
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    skipped = [r for r in out["rows"] if r["status"] == "skipped"]
    assert [r["name"] for r in skipped] == ["Functional.gelu.0.forward.output.0"]
    assert "no such file" in skipped[0]["reason"]
    assert out["summary"]["skipped"] == 1
    assert "could not be compared" in captured.err and "Traceback" not in captured.err


def test_a_step_only_one_side_has_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "t"
    target.mkdir()
    shutil.copytree(MSPROBE / "stat_mix_bf16" / "step0", target / "step0")
    golden = str(MSPROBE / "stat_mix_fp32")
    assert main(["compare", str(target), golden]) == 2
    err = capsys.readouterr().err
    assert "steps 1, 2 only in the golden dump, so not compared" in err
    assert main(["compare", str(target), golden, "--step", "0"]) == 0
    assert main(["compare", str(target), golden, "--step", "1"]) == 2
    assert "step 1 is not in the target dump" in capsys.readouterr().err


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "value", "dtype", "shape", "x"]), inner, max_size=4
        )
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(data=_JSON)
def test_fuzz_records_and_rows_never_crash(data: object) -> None:
    """Arbitrary records under a call (hostile dump.json): the reader's records() and the
    compare's rows take them without a traceback, every record a row."""
    from tuidebug.compare.pairing import Pair, _records
    from tuidebug.offline.files.msprobe import parse_dump_json

    doc = {"task": "statistics", "data": {"Functional.x.0.forward": {"input_args": [data],
                                                                      "output": data}}}  # fmt: skip
    dump = parse_dump_json(json.dumps(doc).encode(), "dump.json")
    records = _records(dump, None)
    assert len(records) == sum(len(c.tensors) + len(c.values) for c in dump.calls)
    pairs = [Pair(name, 0, 0, side, side, node=call) for name, (call, side) in records.items()]
    report = compare_pairs(pairs)
    assert len(report.rows) == len(pairs)
    csv_text(report)
