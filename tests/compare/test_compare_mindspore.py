"""tuidebug compare on MindSpore-layout dumps (issue 30): two MindSpore versions matched by
scope, type and order (the real LeNet dumps of 2.0.0 and 2.10.0), statistic-only dumps
against tensor dumps, tuidebug.torch dumps (bf16 autocast against fp32), and the divergence
chain along the graph's edges."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.constructed import statistic_dump as sd
from tuidebug.cli import main
from tuidebug.compare.pairing import pair_mindspore
from tuidebug.compare.report import compare_pairs
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
LENET = FIXTURES / "mindspore_lenet_dump"
COMMITTED = Path(__file__).resolve().parents[1] / "data" / "constructed"


@pytest.mark.skipif(not LENET.is_dir(), reason="../shared/fixtures is absent")
def test_two_mindspore_versions_are_matched_by_scope_type_and_order() -> None:
    """2.0.0 names kernels `kernel_graph_0/…/Conv2D-op77`, 2.10.0 `kernel_graph0/…/Conv2D-op0`:
    no name is shared, yet the layers pair up; fused kernels only 2.0 has stay unmatched
    rows, and every tensor is a row."""
    target, golden = OfflineDump(LENET / "ms2_0_0"), OfflineDump(LENET / "ms2_10_0")
    problems: list[str] = []
    report = compare_pairs(pair_mindspore(target, golden, iterations=[0], problems=problems))
    assert problems == []
    by_name = {r.name: r for r in report.rows}
    conv = by_name[
        "kernel_graph_0/Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/"
        "Conv2D-op77:output.0"
    ]
    assert conv.golden_name == (
        "kernel_graph0/Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/"
        "Conv2D-op0:output.0"
    )
    assert conv.target_shape == conv.golden_shape == (4, 6, 28, 28)
    # gradients: 2.0's `gradConv2D-expand` scope is 2.10's `Grad_Conv2D`
    grads = [r for r in report.rows if "Conv2DBackpropInput" in r.name and r.golden_name]
    assert grads and all("Grad_Conv2D" in r.golden_name for r in grads)
    fused = [r for r in report.rows if "MatMulBiasAddReluFusion" in r.name]
    assert fused and all(r.status == "unmatched" for r in fused)
    s = report.summary
    assert s["matched"] >= 140 and s["matched"] + s["unmatched"] == len(report.rows)


@pytest.mark.skipif(not LENET.is_dir(), reason="../shared/fixtures is absent")
def test_lenet_against_another_network_is_one_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    other = FIXTURES / "mindspore_int_fp16_dump" / "ms2_10_0"
    assert main(["compare", str(LENET / "ms2_10_0"), str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert "different networks" in err and "\n" not in err


def test_statistics_against_tensors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A statistic-only dump (2.3-era statistic.csv) against the same values dumped in full:
    compared on Max/Min/Mean/L2norm, said in a note, no divergence."""
    full = sd.write_full(tmp_path / "full")
    stats = COMMITTED / "statistic_old"
    assert main(["compare", str(stats), str(full), "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["summary"]["matched"] > 0 and out["summary"]["diverged"] == 0
    assert all("statistics" in r for r in out["rows"] if r["status"] == "pass")
    assert "has statistics only where the other has tensors" in captured.err
    # both statistic-only, across the 2.3 and 2.4+ headers and names
    assert main(["compare", str(stats), str(COMMITTED / "statistic_new")]) == 0


def _branches(root: Path, bump: dict[str, float], steps: int = 1) -> Path:
    """x → A → B → D and x → C: a tensor off the first divergence's path never joins the
    chain."""
    nodes = [
        NodeDef("Default/A-op0", "ReLU", ["x"], np.float32, (8,)),
        NodeDef("Default/B-op0", "ReLU", ["Default/A-op0"], np.float32, (8,)),
        NodeDef("Default/C-op0", "ReLU", ["x"], np.float32, (8,)),
        NodeDef("Default/D-op0", "ReLU", ["Default/B-op0"], np.float32, (8,)),
    ]
    with DumpWriter(root, net_name="Net", start_timestamp=1) as w:
        w.add_graph(0, nodes, [ParamDef("x", np.float32, (8,))])
        for it in range(steps):
            values = {("x", "output", 0): np.arange(1, 9, dtype=np.float32)}
            for n in nodes:
                values[(n.full_name, "output", 0)] = np.arange(1, 9, dtype=np.float32) + np.float32(
                    bump.get(n.full_name.split("/")[1], 0.0)
                )
            w.write_iteration(0, it, values)
    return root


def test_divergence_chain_follows_graph_edges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _branches(tmp_path / "t", {"A-op0": 1.0, "B-op0": 1.0, "C-op0": 1.0, "D-op0": 2.0})
    golden = _branches(tmp_path / "g", {})
    assert main(["compare", str(target), str(golden), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["first_divergence"]["name"].endswith("A-op0:output.0")
    assert out["chain"]["basis"] == "graph edges"
    chain = [n.split("/")[-1] for n in out["chain"]["rows"]]
    assert chain == ["B-op0:output.0", "D-op0:output.0"]  # not C, which x feeds
    assert main(["compare", str(target), str(golden)]) == 1
    text = capsys.readouterr().out
    assert "divergence chain (2 diverged tensors fed by the first, by graph edges):" in text


def test_nan_on_one_side_is_always_a_divergence(tmp_path: Path) -> None:
    target = _branches(tmp_path / "t", {"C-op0": float("nan")})
    golden = _branches(tmp_path / "g", {})
    report = compare_pairs(
        pair_mindspore(OfflineDump(target), OfflineDump(golden)), cosine=0.0, rtol=1e9, atol=1e9
    )
    first = report.rows[report.first or 0]
    assert first.status == "diverged" and first.reason == "NaN or Inf in the target only"


def test_torch_dumps_bf16_against_fp32(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tuidebug.torch dumps (the MindSpore 2.10 layout): a model run under bf16 autocast
    against the same model in fp32 is clean by bf16's tolerance; a weight changed in the
    target is the first divergence."""
    torch = pytest.importorskip("torch")
    import tuidebug.torch as tdb

    def run(out: Path, *, bf16: bool, bump: float = 0.0) -> Path:
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
        )
        with torch.no_grad():
            model[2].weight[0, 0] += bump
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
        dbg = tdb.dump(model, opt, out, steps=1)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        dbg.step_end()
        dbg.close()
        return out

    fp32 = run(tmp_path / "fp32", bf16=False)
    bf16 = run(tmp_path / "bf16", bf16=True)
    assert main(["compare", str(bf16), str(fp32), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["matched"] > 0 and out["summary"]["diverged"] == 0
    bumped = run(tmp_path / "bumped", bf16=False, bump=5.0)
    assert main(["compare", str(bumped), str(fp32), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["chain"]["basis"] == "graph edges"
