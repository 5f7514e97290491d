"""`DumpAnalyzer(TARGET).compare(DumpAnalyzer(GOLDEN), …)` (issue 30): the rows of
`tuidebug compare`, the first divergence and its chain, errors as the API's exceptions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tuidebug.api.analyzer import DumpAnalyzer
from tuidebug.api.errors import DebuggerParamTypeError, DebuggerParamValueError
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
MSPROBE = FIXTURES / "msprobe_mlp"


def _dump(root: Path, bump: float = 0.0) -> Path:
    nodes = [
        NodeDef("Default/fc1/MatMul-op0", "MatMul", ["x"], np.float32, (4,)),
        NodeDef("Default/fc2/MatMul-op1", "MatMul", ["Default/fc1/MatMul-op0"], np.float32, (4,)),
    ]
    with DumpWriter(root, net_name="Net", start_timestamp=1) as w:
        w.add_graph(0, nodes, [ParamDef("x", np.float32, (4,))])
        for it in (0, 1):
            base = np.arange(1, 5, dtype=np.float32)
            w.write_iteration(
                0,
                it,
                {
                    ("x", "output", 0): base,
                    (nodes[0].full_name, "output", 0): base + np.float32(bump * it),
                    (nodes[1].full_name, "output", 0): base * 2 + np.float32(bump * it),
                },
            )
    return root


def test_compare_returns_the_rows(tmp_path: Path) -> None:
    target = DumpAnalyzer(_dump(tmp_path / "t", bump=1.0))
    golden = DumpAnalyzer(_dump(tmp_path / "g"))
    result = target.compare(golden)
    assert result.summary == {"matched": 6, "diverged": 2, "unmatched": 0, "skipped": 0}
    assert [r.status for r in result.rows[:3]] == ["pass"] * 3  # iteration 0
    first = result.first_divergence
    assert first is not None and first.name.endswith("fc1/MatMul-op0:output.0")
    assert first.step == 1 and first.metrics is not None and first.reason
    assert [result.rows[i].name.split("/")[-1] for i in result.chain()] == ["MatMul-op1:output.0"]
    assert result.complete
    # a folder works as the golden too; options as in the CLI
    only = target.compare(str(tmp_path / "g"), iterations=0, node="fc2")
    assert [r.name.split("/")[-1] for r in only.rows] == ["MatMul-op1:output.0"]
    assert only.first_divergence is None
    assert target.compare(golden, cosine=0.9, atol=10.0).first_divergence is None


def test_compare_errors_are_the_apis(tmp_path: Path) -> None:
    target = DumpAnalyzer(_dump(tmp_path / "t"))
    with pytest.raises(DebuggerParamTypeError):
        target.compare(42)  # type: ignore[arg-type]
    with pytest.raises(DebuggerParamValueError, match="iteration 7 is not in either dump"):
        target.compare(target, iterations=[7])
    with pytest.raises(DebuggerParamValueError, match="valid regular expression"):
        target.compare(target, node="(")
    with pytest.raises(DebuggerParamValueError, match="should be 0 or more"):
        target.compare(target, cosine=-1)
    with pytest.raises(DebuggerParamValueError, match="not a folder"):
        target.compare(tmp_path / "nope")


@pytest.mark.skipif(not MSPROBE.is_dir(), reason="../shared/fixtures is absent")
def test_compare_msprobe_tensor_dumps() -> None:
    result = DumpAnalyzer(MSPROBE / "tensor_mix_bf16").compare(
        MSPROBE / "tensor_mix_fp32", iterations=0
    )
    assert result.summary["matched"] == 302 and result.first_divergence is None
    gelu = next(r for r in result.rows if r.name == "Functional.gelu.0.forward.output.0")
    assert gelu.metrics is not None and isinstance(gelu.metrics.cosine, float)
    assert gelu.target_dtype == "torch.bfloat16" and gelu.golden_dtype == "torch.float32"
