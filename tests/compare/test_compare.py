"""tuidebug compare (issue 30): msprobe's metrics number for number, the first divergence of
two dumps, bad inputs in one sentence, exit codes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from tuidebug.cli import main
from tuidebug.compare.metrics import tensor_metrics
from tuidebug.compare.pairing import pair_msprobe
from tuidebug.compare.report import compare_pairs, csv_text
from tuidebug.offline.files.msprobe import find_msprobe_root
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
MSPROBE = FIXTURES / "msprobe_mlp"
LENET = FIXTURES / "mindspore_lenet_dump" / "ms2_10_0"
STAT_CSV = MSPROBE / "msprobe_results" / "compare_stat_mix_bf16_vs_fp32_step1.csv"
_STAT_COLUMNS = [
    "NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape",
    "Bench Tensor Shape", "Max diff", "Min diff", "Mean diff", "L2norm diff",
    "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr", "NPU max",
    "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm",
]  # fmt: skip


def test_statistics_compare_equals_msprobes_csv() -> None:
    """Every tensor row of msprobe's statistics compare, every statistics column, as text."""
    target, golden = (
        find_msprobe_root(MSPROBE / "stat_mix_bf16"),
        find_msprobe_root(MSPROBE / "stat_mix_fp32"),
    )
    assert target is not None and golden is not None
    report = compare_pairs(pair_msprobe(target, golden, steps=[1]))
    ours = list(csv.reader(csv_text(report).splitlines()))
    with STAT_CSV.open(encoding="utf-8") as f:
        theirs = list(csv.reader(f))
    assert ours[0] == theirs[0]  # the same header names in the same order
    head = theirs[0]
    by_name = {r[0]: r for r in theirs[1:]}
    compared = 0
    for row in ours[1:]:
        for col in _STAT_COLUMNS:
            assert row[head.index(col)] == by_name[row[0]][head.index(col)], (row[0], col)
            compared += 1
    # 243 tensors and 59 non-tensor arguments (ints, floats, None), in msprobe's order
    assert compared == 302 * len(_STAT_COLUMNS)
    assert [r[0] for r in ours[1:]] == [r[0] for r in theirs[1:]]


def test_tensor_metrics_as_msprobe_defines_them() -> None:
    a = np.array([1.0, 2.0, 3.0, 0.0], dtype=np.float32)
    m = tensor_metrics(a, a.copy())
    assert m.values() == (1.0, 0.0, 0.0, 0.0, 1.0, 1.0)
    b = a + np.float32(0.002)
    m = tensor_metrics(b, a)
    assert m.max_abs_err == pytest.approx(0.002, abs=1e-7)
    assert m.one_thousandth == 0.25  # only 3 + 0.002 is within 0.001 of 3
    # the golden zero is nudged by float32's eps on both sides: 0.002 / eps
    assert (
        m.max_relative_err == float(f"{0.002 / np.finfo(np.float32).eps:.12f}")
        or m.max_relative_err > 1e4
    )
    # zeros: both all-zero → cosine 1; one side all-zero → msprobe's 'Nan'
    z = np.zeros(4, np.float32)
    assert tensor_metrics(z, z).cosine == 1.0
    assert tensor_metrics(z, a).cosine == "Nan"
    # NaN at the same place: zeroed on both sides; at different places: N/A everywhere
    n = a.copy()
    n[1] = np.nan
    assert tensor_metrics(n, n.copy()).cosine == 1.0
    assert tensor_metrics(n, a).values() == ("N/A",) * 6
    # shapes, 0-d, one element
    assert tensor_metrics(a, a[:3]).values() == ("shape unmatched",) * 6
    s = tensor_metrics(np.float32(2.0), np.float32(1.0))
    assert (s.cosine, s.max_abs_err, s.max_relative_err) == ("unsupported", 1.0, 1.0)
    assert tensor_metrics(a[:1], a[:1]).cosine == "unsupported"


def test_relative_error_ratios_match_msprobes_rule() -> None:
    golden = np.array([1.0, 1.0, 1.0, 0.0], dtype=np.float32)
    target = np.array([1.0005, 1.002, 1.01, 0.0], dtype=np.float32)
    m = tensor_metrics(target, golden)
    assert m.one_thousandth == 0.5  # 1.0005 and the zero pair
    assert m.five_thousandths == 0.75
    assert m.cosine == round(
        float(
            f"{np.dot(target.astype(float), golden) / (np.linalg.norm(target.astype(float)) * np.linalg.norm(golden)):.12f}"
        ),
        6,
    )


# ---------------------------------------------------------------------------- MindSpore dumps

_NODES = [f"Default/net/fc{i}/MatMul-op{i}" for i in range(1, 5)]


def _write(
    root: Path, perturb_from: int | None = None, net: str = "Net", names: list[str] | None = None
) -> Path:
    names = names or _NODES
    rng = np.random.default_rng(0)
    nodes = [NodeDef(names[0], "MatMul", ["x"], np.float32, (4, 8))]
    nodes += [
        NodeDef(names[i], "MatMul", [names[i - 1]], np.float32, (4, 8))
        for i in range(1, len(names))
    ]
    with DumpWriter(root, net_name=net, start_timestamp=1) as w:
        w.add_graph(0, nodes, [ParamDef("x", np.float32, (4, 8))])
        for it in (0, 1):
            tensors = {("x", "output", 0): rng.standard_normal((4, 8)).astype(np.float32)}
            for i, name in enumerate(names):
                value = rng.standard_normal((4, 8)).astype(np.float32)
                if perturb_from is not None and i >= perturb_from and it == 1:
                    value = value + np.float32(0.5)
                tensors[(name, "output", 0)] = value
            w.write_iteration(0, it, tensors)
    return root


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("cmp")
    return _write(base / "target", perturb_from=2), _write(base / "golden")


def test_first_divergence_is_the_perturbed_node(
    dumps: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    target, golden = dumps
    assert main(["compare", str(target), str(golden), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["first_divergence"]["name"].endswith("fc3/MatMul-op3:output.0")
    assert out["first_divergence"]["step"] == 1
    assert out["summary"] == {"matched": 10, "diverged": 2, "unmatched": 0, "skipped": 0}
    assert main(["compare", str(target), str(golden), "--iteration", "0"]) == 0


def test_table_starts_at_the_first_divergence(
    dumps: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    target, golden = dumps
    assert main(["compare", str(target), str(golden)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "fc3/MatMul-op3" in lines[0] and lines[1].startswith("diverged")
    assert lines[-1] == "10 matched (2 diverged), 0 unmatched, 0 skipped"


def test_node_filter_and_csv(
    dumps: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, golden = dumps
    out = tmp_path / "cmp.csv"
    assert main(["compare", str(target), str(golden), "--node", "fc1", "--csv", str(out)]) == 0
    rows = list(csv.reader(out.open()))
    assert rows[0][8:14] == [
        "Cosine",
        "EucDist",
        "MaxAbsErr",
        "MaxRelativeErr",
        "One Thousandth Err Ratio",
        "Five Thousandths Err Ratio",
    ]
    assert len(rows) == 3 and all("fc1" in r[0] for r in rows[1:])
    # never over an existing file, unless --force
    assert main(["compare", str(target), str(golden), "--csv", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["compare", str(target), str(golden), "--csv", str(out), "--force"]) == 1


def test_real_lenet_dump_against_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(LENET), str(LENET), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["first_divergence"] is None
    assert out["summary"]["matched"] > 0 and out["summary"]["unmatched"] == 0


def _one_sentence(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and err.startswith("tuidebug compare: ")
    return err


def test_bad_inputs_are_one_sentence(
    dumps: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, golden = dumps
    other = _write(tmp_path / "other", names=[f"Default/x/Conv2D-op{i}" for i in range(4)])
    assert main(["compare", str(target), str(other)]) == 2
    assert "different networks" in _one_sentence(capsys)
    assert main(["compare", str(target), str(golden), "--iteration", "7"]) == 2
    assert "iteration 7 is not in either dump" in _one_sentence(capsys)
    assert main(["compare", str(target), str(tmp_path / "nope")]) == 2
    assert "not a folder" in _one_sentence(capsys)
    assert main(["compare", str(target), str(MSPROBE / "stat_mix_fp32")]) == 2
    assert "msprobe dump" in _one_sentence(capsys)
    assert main(["compare", str(target), str(golden), "--node", "("]) == 2
    _one_sentence(capsys)


def test_shape_mismatch_and_missing_tensor_are_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = _write(tmp_path / "g")
    target = tmp_path / "t"
    nodes = [NodeDef(_NODES[0], "MatMul", ["x"], np.float32, (4, 8))]
    nodes += [NodeDef(_NODES[i], "MatMul", [_NODES[i - 1]], np.float32, (2, 8)) for i in (1, 2, 3)]
    with DumpWriter(target, start_timestamp=1) as w:
        w.add_graph(0, nodes, [ParamDef("x", np.float32, (4, 8))])
        for it in (0, 1):
            tensors = {(_NODES[0], "output", 0): np.zeros((4, 8), np.float32)}
            tensors.update({(n, "output", 0): np.zeros((2, 8), np.float32) for n in _NODES[1:]})
            w.write_iteration(0, it, tensors)
    assert main(["compare", str(target), str(golden), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    reasons = {
        r["name"].split("/")[-1]: (r["status"], r["reason"]) for r in out["rows"] if r["step"] == 0
    }
    assert reasons["MatMul-op2:output.0"] == ("diverged", "shapes differ: [2, 8] against [4, 8]")
    assert reasons["x:output.0"] == ("unmatched", "only in the golden dump")
    assert out["summary"]["unmatched"] == 2


def test_a_skipped_row_makes_the_compare_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, golden = _write(tmp_path / "t"), _write(tmp_path / "g")
    damaged = sorted(target.rglob("*MatMul-op4*.npy"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])  # a header, no data
    assert main(["compare", str(target), str(golden), "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["skipped"] == 1 and out["summary"]["diverged"] == 0


def test_data_a_dump_left_unread_makes_the_compare_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file discovery refuses (here a FIFO named like a tensor file) never becomes a row:
    it was said as a dump problem and dropped, and the compare exited 0 as if all matched."""
    import os

    target, golden = _write(tmp_path / "t"), _write(tmp_path / "g")
    real = sorted(golden.rglob("*MatMul-op4*.npy"))[-1]
    fifo = real.with_name(real.name.replace("MatMul-op4", "MatMul-op5"))
    os.mkfifo(fifo)
    assert main(["compare", str(target), str(golden)]) == 2
    err = capsys.readouterr().err
    assert "tuidebug compare: warning: golden: " in err and fifo.name in err
    assert "so the compare is incomplete" in err
