"""The divergence tab's engine compares one tensor pair at a time (progress, stopping), yet
judges the rows as `tuidebug compare` does: where the runs differ in precision (msprobe's
bf16 autocast dump against fp32), every float tensor by the lower precision."""

from __future__ import annotations

from pathlib import Path

from tuidebug.compare.run import compare_dumps
from tuidebug.tui.divergence.engine import open_pair, run_compare


def test_the_tab_judges_a_step_as_the_cli_does(fixtures_dir: Path) -> None:
    mlp = fixtures_dir / "msprobe_mlp"
    target, golden = mlp / "tensor_mix_bf16", mlp / "tensor_mix_fp32"
    outcome = run_compare(open_pair(target, golden), 0, 0)
    cli = compare_dumps(target, golden, steps=[0], ranks=[0])
    tab = [(r.name, r.status) for r in outcome.report.rows]
    assert tab == [(r.name, r.status) for r in cli.rows]
    assert any("differ in precision" in note for note in outcome.report.notes)
