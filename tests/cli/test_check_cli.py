"""`tuidebug check`: exit codes, the table, JSON, argument mistakes and damaged dumps — every
user error is one sentence on stderr with exit status 2, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dump_names import LOSS_2_10
from tests.offline.damaged_dumps import DAMAGES, Damage, damaged_copy
from tuidebug.check_cli import parse_iterations
from tuidebug.cli import UsageError
from tuidebug.cli import main as cli_main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli_main(["check", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_sentences(err: str) -> list[str]:
    """Every stderr line is one sentence: a warning or the final error."""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    for line in lines:
        assert line.startswith(("warning: ", "tuidebug check: ")), line
        assert line.endswith("."), line
    return lines


# ------------------------------------------------------------------ results
def test_no_hits_exit_0_and_table_summary(capsys, dump_2_10: Path) -> None:
    code, out, err = run(capsys, str(dump_2_10), "--watch", "TO")
    assert code == 0
    assert out.splitlines() == [out.splitlines()[-1]]  # no table, only the summary
    assert out.startswith("0 hits; 264 tensors checked, iterations 0-3 of rank_0")
    assert_sentences(err)


def test_hits_exit_1_and_table(capsys, dump_2_10: Path) -> None:
    code, out, err = run(capsys, str(dump_2_10), "--watch", "TL:abs_mean_gt=1", "--iteration", "2")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["ITER", "RANK", "SLOT", "WATCH", "RESULT", "NODE"]
    assert lines[1].endswith(LOSS_2_10) and "TL:abs_mean_gt=1  abs_mean_gt: 2.3031 > 1" in lines[1]
    assert lines[-1].startswith("4 hits; ")
    assert "iteration 2 of rank_0" in lines[-1]
    assert_sentences(err)


def test_json_is_one_array(capsys, dump_2_10: Path) -> None:
    code, out, _err = run(
        capsys,
        str(dump_2_10),
        "--watch",
        "WCS:abs_mean_update_ratio_lt=1e-3",
        "--watch",
        "TL:abs_mean_gt=1",
        "--iteration",
        "0-1",
        "--json",
    )
    assert code == 1
    hits = json.loads(out)  # the whole stdout is one JSON document
    assert {h["iteration"] for h in hits} == {0, 1}
    errors = [h for h in hits if h["error_code"]]
    assert {h["node"] for h in errors} == {
        "conv1.weight",
        "conv2.weight",
        "fc1.bias",
        "fc1.weight",
        "fc2.bias",
        "fc2.weight",
        "fc3.bias",
        "fc3.weight",
    }
    first = errors[0]
    assert first["error_messages"] == ["The previous step value cannot be found."]
    assert first["condition"] == "weight_change_too_small"
    assert first["watchpoint"] == "WCS:abs_mean_update_ratio_lt=1e-3"
    assert first["params"] == [
        {"name": "abs_mean_update_ratio_lt", "value": 0.001, "actual": None, "hit": False}
    ]
    loss = next(h for h in hits if h["node"] == LOSS_2_10 and h["iteration"] == 1)
    assert loss["params"][0]["hit"] is True and loss["params"][0]["actual"] > 2.0
    # in iteration order, then execution order (kernels before parameters)
    order = [(h["iteration"]) for h in hits]
    assert order == sorted(order)


def test_json_empty_array_when_nothing_hits(capsys, dump_2_0: Path) -> None:
    code, out, _ = run(capsys, str(dump_2_0), "--watch", "TO", "--json")
    assert code == 0 and json.loads(out) == []


def test_node_filter_rank_and_workers(capsys, dump_2_10: Path) -> None:
    code, out, _ = run(
        capsys,
        str(dump_2_10),
        "--watch",
        "TL:abs_mean_gt=1",
        "--node",
        "^global_step$",
        "--rank",
        "0",
        "--workers",
        "2",
        "--json",
    )
    assert code == 1
    assert {h["node"] for h in json.loads(out)} == {"global_step"}


def test_weight_conditions_watch_weights_only(capsys, dump_2_10: Path) -> None:
    code, out, _ = run(capsys, str(dump_2_10), "--watch", "WNC", "--iteration", "0", "--json")
    assert code == 1
    hits = json.loads(out)
    assert len(hits) == 8 and all(h["error_code"] == 4 for h in hits)


def test_recommended(capsys, dump_2_0: Path) -> None:
    code, out, err = run(capsys, str(dump_2_0), "--recommended", "--json")
    assert code == 1
    specs = {h["watchpoint"] for h in json.loads(out)}
    assert "WCL:abs_mean_update_ratio_gt=1" in specs
    assert_sentences(err)


def test_error_on_no_value(capsys, dump_2_0: Path) -> None:
    code, out, _ = run(capsys, str(dump_2_0), "--watch", "TO", "--error-on-no-value", "--json")
    assert code == 1
    hits = json.loads(out)
    # the 204 of MindInsight's API run less the 5 constants x 4 iterations: tensor
    # conditions of `check` watch operators and parameters (constants are not dumped data)
    assert len(hits) == 184 and {h["error_code"] for h in hits} == {32}
    assert not any(h["node"].startswith("cst") for h in hits)


def test_mem_limit_gives_error_8(capsys, tmp_path: Path) -> None:
    """A tensor above --mem-limit is not read: error code 8, and the rest is checked."""
    import numpy as np

    from tuidebug.offline.dump_writer import DumpWriter, NodeDef, ParamDef

    writer = DumpWriter(tmp_path / "d", start_timestamp=1000)
    relu = "Default/net/ReLU-op0"
    writer.add_graph(
        0,
        [NodeDef(relu, "ReLU", ["inputs0"], shape=(4,))],
        [ParamDef("inputs0", np.float32, (600_000,))],
    )
    big = np.zeros(600_000, np.float32)  # 2.4 MB
    writer.write_iteration(
        0, 0, {(relu, "output", 0): np.ones(4, np.float32), ("inputs0", "output", 0): big}
    )
    writer.finish()
    root = tmp_path / "d"
    code, out, _ = run(capsys, str(root), "--watch", "TO", "--mem-limit", "1", "--json")
    assert code == 1
    (hit,) = json.loads(out)
    assert (hit["node"], hit["iteration"], hit["error_code"]) == ("inputs0", 0, 8)
    assert hit["error_messages"] == ["The tensor size exceeds the memory limit."]
    code, out, _ = run(capsys, str(root), "--watch", "TO", "--mem-limit", "3", "--json")
    assert code == 0 and json.loads(out) == []


def test_progress_bar_only_on_a_terminal(dump_2_10: Path) -> None:
    """Under a pipe (as here) stderr carries no bar; with a pseudo-terminal it does."""
    proc = subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", str(dump_2_10), "--watch", "TO"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "checking [" not in proc.stderr
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tuidebug", "check", str(dump_2_10), "--watch", "TO"],
            stdout=subprocess.PIPE,
            stderr=slave,
            timeout=300,
        )
        os.close(slave)
        slave = -1
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 0
    assert b"checking [" in b"".join(chunks)


# ------------------------------------------------------------------ usage errors
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--watch", "XX"], "Unknown condition 'XX'"),
        (["--watch", "TL"], "needs at least one threshold"),
        (["--watch", "TL:foo=1"], "Unknown parameter 'foo'"),
        (["--watch", "TL:abs_mean_gt=abc"], "needs a number"),
        (["--watch", "TL:abs_mean_gt"], "expected name=value"),
        (["--watch", "TZ:zero_percentage_ge=150"], "zero_percentage_ge"),
        (["--watch", "TR:range_percentage_lt=5"], "also needs"),
        ([], "at least one --watch"),
        (["--watch", "TO", "--iteration", "x"], "is not an iteration"),
        (["--watch", "TO", "--iteration", "5-2"], "ends before it starts"),
        (["--watch", "TO", "--iteration", "9"], "is not in the dump"),
        (["--watch", "TO", "--iteration", "7-9"], "is not in the dump"),
        (["--watch", "TO", "--rank", "3"], "rank 3 is not in the dump"),
        (["--watch", "TO", "--node", "("], "not a valid regular expression"),
        (["--watch", "TO", "--node", "^nothing$"], "no node matches"),
        (["--watch", "TO", "--workers", "0"], "--workers"),
        (["--watch", "TO", "--mem-limit", "0"], "--mem-limit"),
    ],
)
def test_usage_errors(capsys, dump_2_10: Path, argv: list[str], words: str) -> None:
    code, out, err = run(capsys, str(dump_2_10), *argv)
    assert code == 2
    assert out == ""
    lines = assert_sentences(err)
    assert len(lines) == 1 and words in lines[0], lines


def test_parse_iterations() -> None:
    assert parse_iterations("3") == [3]
    assert parse_iterations("2-5") == [2, 3, 4, 5]
    assert parse_iterations("0, 2,4-5") == [0, 2, 4, 5]
    with pytest.raises(UsageError):
        parse_iterations("1-")


def test_not_a_directory_empty_and_missing(capsys, tmp_path: Path) -> None:
    afile = tmp_path / "dump.txt"
    afile.write_text("x")
    empty = tmp_path / "empty"
    empty.mkdir()
    for path, words in [
        (afile, "is not a folder"),
        (empty, "holds no rank_<N> folder"),
        (tmp_path / "missing", "does not exist"),
    ]:
        code, out, err = run(capsys, str(path), "--watch", "TO")
        assert code == 2 and out == ""
        lines = assert_sentences(err)
        assert len(lines) == 1 and words in lines[0] and str(path) in lines[0]


def test_dump_without_iterations(capsys, dump_2_10: Path, tmp_path: Path) -> None:
    from tests.offline.dump_copy import copy_dump

    root = copy_dump(
        dump_2_10, tmp_path / "d", keep=lambda rel: not rel.startswith("rank_0/LeNet/0/")
    )
    code, _out, err = run(capsys, str(root), "--watch", "TO")
    assert code == 2
    assert "has no dumped iteration" in assert_sentences(err)[-1]


# ------------------------------------------------------------------ damaged dumps
@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
def test_damaged_dump(capsys, dump_2_10: Path, tmp_path: Path, damage: Damage) -> None:
    root, shown = damaged_copy(dump_2_10, tmp_path / "d", damage)
    code, out, err = run(capsys, str(root), "--watch", "TO")
    lines = assert_sentences(err)
    naming = [line for line in lines if shown in line]
    assert naming, (shown, lines)
    assert any(damage.words in line for line in naming), (damage.words, naming)
    if damage.graph_lost:
        assert code == 2 and out == ""
        assert "no readable graph" in lines[-1]
    elif damage.read_error:
        assert code == 2  # nothing hit, but a tensor could not be checked
        assert "could not be read" in lines[-1]
        assert "0 hits" in out
    else:
        assert code == 0 and "0 hits" in out
    # and the rest of the dump is still checked: the loss hits in the other iterations
    code, out, err = run(capsys, str(root), "--watch", "TL:abs_mean_gt=1", "--json")
    assert_sentences(err)
    if damage.graph_lost:
        assert code == 2
    else:
        assert code == 1
        iterations = {h["iteration"] for h in json.loads(out) if h["node"] == LOSS_2_10}
        broken = {damage.tensor[1]} if damage.tensor and damage.tensor[0] == LOSS_2_10 else set()
        assert iterations == {0, 1, 2, 3} - broken


def test_rank_without_graphs_selected(capsys, dump_2_10: Path, tmp_path: Path) -> None:
    damage = next(d for d in DAMAGES if d.name == "rank-without-graphs")
    root, _ = damaged_copy(dump_2_10, tmp_path / "d", damage)
    code, out, err = run(capsys, str(root), "--watch", "TO", "--rank", "1")
    assert code == 2 and out == ""
    assert "rank_1 has no readable graph" in assert_sentences(err)[-1]


def test_python_dash_m_with_worker_processes(dump_2_10: Path) -> None:
    """`python -m tuidebug check` with the worker pool (forced: LeNet is small)."""
    code = (
        "import runpy, sys\n"
        "from tuidebug.offline import checker\n"
        "checker.INPROCESS_MAX_BYTES = 0\n"
        f"sys.argv = ['tuidebug', 'check', {str(dump_2_10)!r}, '--watch', 'TL:abs_mean_gt=1',"
        " '--workers', '2', '--json']\n"
        "runpy.run_module('tuidebug', run_name='__main__')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert len(json.loads(proc.stdout)) == 14
