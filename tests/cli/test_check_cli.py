"""`tuidebug check`: exit codes, the table, JSON, argument mistakes, closed or full output
streams, damaged and odd dump folders — every user error is one sentence on stderr with exit
status 2, never a traceback, and never a silently wrong or empty result."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.support import check, sentences
from tests.dump_names import DEMO_FIRST_INF, LOSS_2_10
from tests.offline.damaged_dumps import DAMAGES, Damage, damaged_copy
from tuidebug import cli
from tuidebug.cli import check as check_cli
from tuidebug.cli.check import parse_iteration_ranges, parse_iterations
from tuidebug.cli.common import UsageError

JSON_KEYS = {
    "watchpoint",
    "condition",
    "rank",
    "graph",
    "iteration",
    "step",  # the TUI's step for the iteration (iteration + 1), added beside it
    "node",
    "slot",
    "error_code",
    "error_messages",
    "params",
}


# ------------------------------------------------------------------ results
def test_no_hits_exit_0_and_table_summary(capsys, dump_2_10: Path) -> None:
    code, out, err = check(capsys, str(dump_2_10), "--watch", "TO")
    assert code == 0
    assert out.splitlines() == [out.splitlines()[-1]]  # no table, only the summary
    assert out.startswith("0 hits; 264 tensors checked, iterations 0-3 of rank_0")
    sentences(err, "check")


def test_hits_exit_1_and_table(capsys, dump_2_10: Path) -> None:
    code, out, err = check(
        capsys, str(dump_2_10), "--watch", "TL:abs_mean_gt=1", "--iteration", "2"
    )
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["ITER", "RANK", "SLOT", "WATCH", "RESULT", "NODE"]
    assert lines[1].endswith(LOSS_2_10) and "TL:abs_mean_gt=1  abs_mean_gt: 2.3031 > 1" in lines[1]
    assert lines[-1].startswith("4 hits; ")
    assert "iteration 2 of rank_0" in lines[-1]
    sentences(err, "check")


def test_json_is_one_array(capsys, dump_2_10: Path) -> None:
    code, out, _err = check(
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
    # the step the TUI, `pt` and the hit list name the same data by (issue 28)
    assert all(h["step"] == h["iteration"] + 1 for h in hits)
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
    code, out, _ = check(capsys, str(dump_2_0), "--watch", "TO", "--json")
    assert code == 0 and json.loads(out) == []


def test_node_filter_rank_and_workers(capsys, dump_2_10: Path) -> None:
    code, out, _ = check(
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
    code, out, _ = check(capsys, str(dump_2_10), "--watch", "WNC", "--iteration", "0", "--json")
    assert code == 1
    hits = json.loads(out)
    assert len(hits) == 8 and all(h["error_code"] == 4 for h in hits)


def test_recommended(capsys, dump_2_0: Path) -> None:
    code, out, err = check(capsys, str(dump_2_0), "--recommended", "--json")
    assert code == 1
    specs = {h["watchpoint"] for h in json.loads(out)}
    assert "WCL:abs_mean_update_ratio_gt=1" in specs
    sentences(err, "check")


def test_error_on_no_value(capsys, dump_2_0: Path) -> None:
    code, out, _ = check(capsys, str(dump_2_0), "--watch", "TO", "--error-on-no-value", "--json")
    assert code == 1
    hits = json.loads(out)
    # the 204 of MindInsight's API run less the 5 constants x 4 iterations: tensor
    # conditions of `check` watch operators and parameters (constants are not dumped data)
    assert len(hits) == 184 and {h["error_code"] for h in hits} == {32}
    assert not any(h["node"].startswith("cst") for h in hits)


def test_mem_limit_gives_error_8(capsys, tmp_path: Path) -> None:
    """A tensor above --mem-limit is not read: error code 8, and the rest is checked."""
    import numpy as np

    from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

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
    code, out, _ = check(capsys, str(root), "--watch", "TO", "--mem-limit", "1", "--json")
    assert code == 1
    (hit,) = json.loads(out)
    assert (hit["node"], hit["iteration"], hit["error_code"]) == ("inputs0", 0, 8)
    assert hit["error_messages"] == ["The tensor size exceeds the memory limit."]
    code, out, _ = check(capsys, str(root), "--watch", "TO", "--mem-limit", "3", "--json")
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


def test_demo_overflow_is_found_where_the_inf_first_appears(
    capsys: pytest.CaptureFixture[str], demo_dump: Path
) -> None:
    code, out, err = check(capsys, str(demo_dump), "--watch", "TO", "--json")
    assert code == 1
    sentences(err)
    hits = json.loads(out)
    assert min(h["iteration"] for h in hits) == 3
    first = hits[0]
    # the forward MatMul of fc2 is the first kernel in execution order whose output overflows
    assert (first["iteration"], first["node"], first["slot"]) == (3, DEMO_FIRST_INF, 0)
    assert first["error_code"] == 0 and first["params"] == []
    # and nothing before it at iteration 3: fc1 and its ReLU are still finite
    assert not any("fc1-Dense/MatMul" in h["node"] and h["iteration"] == 3 for h in hits)


def test_json_schema_is_exact(capsys: pytest.CaptureFixture[str], demo_dump: Path) -> None:
    code, out, _ = check(
        capsys,
        str(demo_dump),
        "--watch",
        "TL:abs_mean_gt=0.5",
        "--watch",
        "WNC:rtol=1e-3,atol=1",
        "--iteration",
        "0-1",
        "--json",
    )
    assert code == 1
    hits = json.loads(out)
    assert isinstance(hits, list) and hits
    for h in hits:
        assert set(h) == JSON_KEYS
        for p in h["params"]:
            assert set(p) == {"name", "value", "actual", "hit"}
    wnc = [h for h in hits if h["condition"] == "weight_not_changed"]
    # atol is a hidden parameter, but the user set it: it is shown with the rest
    assert {p["name"] for p in wnc[0]["params"]} == {"rtol", "atol"}
    tl = next(h for h in hits if h["watchpoint"] == "TL:abs_mean_gt=0.5")
    assert [p["name"] for p in tl["params"]] == ["abs_mean_gt"]


def test_table_puts_the_node_last_and_does_not_repeat_the_condition(
    capsys: pytest.CaptureFixture[str], demo_dump: Path
) -> None:
    code, out, _ = check(capsys, str(demo_dump), "--watch", "TO", "--iteration", "3")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["ITER", "RANK", "SLOT", "WATCH", "RESULT", "NODE"]
    assert lines[1].endswith(DEMO_FIRST_INF)
    assert re.search(r"\bTO\s+contains NaN or \+/-Inf\s+Default/", lines[1]), lines[1]
    assert not re.search(r"\bTO\s+TO\b", lines[1])
    # no cell is padded to the longest node name of the table
    assert all("          " not in line for line in lines[1:-1]), lines


def test_recommended_specs_do_not_widen_every_row(
    capsys: pytest.CaptureFixture[str], demo_dump: Path
) -> None:
    code, out, _ = check(capsys, str(demo_dump), "--recommended", "--iteration", "2")
    assert code == 1
    rows = out.splitlines()[1:-1]
    gv = next(r for r in rows if r.split()[3].startswith("GV:"))
    # GV's short spec is not padded to the long AR spec of the same table
    assert re.search(r"GV:abs_mean_lt=1e-09 {2,30}abs_mean_lt", gv), gv


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
    code, out, err = check(capsys, str(dump_2_10), *argv)
    assert code == 2
    assert out == ""
    lines = sentences(err, "check")
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
        code, out, err = check(capsys, str(path), "--watch", "TO")
        assert code == 2 and out == ""
        lines = sentences(err, "check")
        assert len(lines) == 1 and words in lines[0] and str(path) in lines[0]


def test_dump_without_iterations(capsys, dump_2_10: Path, tmp_path: Path) -> None:
    from tests.offline.dump_copy import copy_dump

    root = copy_dump(
        dump_2_10, tmp_path / "d", keep=lambda rel: not rel.startswith("rank_0/LeNet/0/")
    )
    code, _out, err = check(capsys, str(root), "--watch", "TO")
    assert code == 2
    assert "has no dumped iteration" in sentences(err, "check")[-1]


def test_huge_iteration_range_is_not_expanded(
    capsys: pytest.CaptureFixture[str], demo_dump: Path
) -> None:
    assert parse_iteration_ranges("0-999999999999") == [(0, 999999999999)]
    code, out, err = check(capsys, str(demo_dump), "--watch", "TO", "--iteration", "0-999999999999")
    assert code == 1
    lines = sentences(err)
    assert any("iterations 6-999999999999" in line and "not checked" in line for line in lines)
    assert "iterations 0-5 of rank_0" in out.splitlines()[-1]
    with pytest.raises(UsageError, match="more than a million"):
        parse_iterations("0-999999999999")


def test_partly_missing_range_warns_and_missing_single_iteration_fails(
    capsys: pytest.CaptureFixture[str], demo_dump: Path
) -> None:
    code, out, err = check(capsys, str(demo_dump), "--watch", "TO", "--iteration", "4-9")
    assert code == 1
    assert any("iterations 6-9 of --iteration 4-9" in line for line in sentences(err))
    assert "iterations 4-5 of rank_0" in out.splitlines()[-1]
    code, out, err = check(capsys, str(demo_dump), "--watch", "TO", "--iteration", "2,9")
    assert code == 2 and out == ""
    assert sentences(err) == ["tuidebug check: iteration 9 is not in the dump (iterations: 0-5)."]


@pytest.mark.parametrize("text", ["-1", "1--2", "٣", "1-", "3 4", "0x3"])
def test_iteration_syntax_errors(text: str) -> None:
    with pytest.raises(UsageError, match="is not an iteration"):
        parse_iteration_ranges(text)


def test_boolean_parameter_is_accepted(capsys: pytest.CaptureFixture[str], demo_dump: Path) -> None:
    """`WNC:equal_nan=1` used to crash: the spec parser gave back 1.0, which the watchpoint
    then refused as not a bool."""
    code, out, err = check(
        capsys, str(demo_dump), "--watch", "WNC:equal_nan=1,rtol=1e-3", "--iteration", "0-1"
    )
    assert code in (0, 1)
    sentences(err)
    assert "tensors checked" in out


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("TL:", "--watch 'TL:': Watch spec 'TL:' has a ':' but no parameters."),
        ("WNC:equal_nan=2", "must be true or false"),
        ("TL:abs_mean_gt=nan", "must satisfy 0 <= value < inf"),
        ("TR:range_start_inclusive=1,range_end_inclusive=0,range_percentage_lt=5", "must not"),
        ("13", "Unknown condition '13'"),
    ],
)
def test_bad_watch_specs_are_one_quoted_sentence(
    capsys: pytest.CaptureFixture[str], demo_dump: Path, spec: str, words: str
) -> None:
    code, out, err = check(capsys, str(demo_dump), "--watch", spec)
    assert code == 2 and out == ""
    (line,) = sentences(err)
    assert words in line and f"--watch {spec!r}" in line


def test_workers_upper_bound(capsys: pytest.CaptureFixture[str], demo_dump: Path) -> None:
    code, _out, err = check(capsys, str(demo_dump), "--watch", "TO", "--workers", "100000")
    assert code == 2
    assert sentences(err) == [
        f"tuidebug check: --workers must be between 1 and {check_cli.MAX_WORKERS}, not 100000."
    ]


def test_conditions_that_cannot_mean_what_they_say_are_named(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    code, _out, err = check(
        capsys, str(dump_2_0), "--watch", "OO", "--watch", "WI:max_gt=1", "--iteration", "0"
    )
    assert code == 0
    lines = sentences(err)
    assert any(line.startswith("warning: OO") and "CPU dump" in line for line in lines)
    assert any(line.startswith("warning: WI") and "not the initial ones" in line for line in lines)


def test_help_lists_every_condition_and_the_exit_status() -> None:
    from tuidebug.core.condition_catalogue import CONDITIONS

    text = subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    for cond in CONDITIONS.values():
        assert re.search(rf"\b{cond.abbr}\b", text), cond.abbr
        for param in cond.visible_params:
            assert param.name in text or cond.abbr in ("WL", "WS", "GL", "GV", "AR"), param
    assert "exit status: 0 no hit, 1 hits, 2" in text


def test_empty_and_non_utf8_paths(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _out, err = check(capsys, "", "--watch", "TO")
    assert code == 2
    assert sentences(err) == [
        "tuidebug check: the dump folder path is empty; give the folder holding rank_0/."
    ]
    bad = os.fsdecode(os.fsencode(tmp_path) + b"/\xff\xfe")
    code, _out, err = check(capsys, bad, "--watch", "TO")
    assert code == 2
    (line,) = sentences(err)
    assert "\\xff\\xfe does not exist." in line and "\udcff" not in line


# ------------------------------------------------------------------ output streams
def test_closed_stdout_keeps_the_exit_status(
    monkeypatch: pytest.MonkeyPatch, demo_dump: Path
) -> None:
    """`tuidebug check … >&-`: Python's stdout is None; the exit status still tells."""
    monkeypatch.setattr(sys, "stdout", None)
    assert cli.main(["check", str(demo_dump), "--watch", "TO", "--iteration", "3"]) == 1


def test_closed_stderr_never_lands_on_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`2>&-`: stderr is None and `print(file=None)` would write the error to stdout."""
    monkeypatch.setattr(sys, "stderr", None)
    assert cli.main(["check", "/no/such/dump", "--watch", "TO"]) == 2
    assert capsys.readouterr().out == ""


class _FullStream(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no fd")


def test_a_full_disk_is_an_error_not_lost_results(
    monkeypatch: pytest.MonkeyPatch, demo_dump: Path
) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", _FullStream())
    monkeypatch.setattr(sys, "stderr", err)
    assert cli.main(["check", str(demo_dump), "--watch", "TO", "--json"]) == 2
    assert sentences(err.getvalue()) == [
        "tuidebug check: cannot write the results to standard output: No space left on device."
    ]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_dev_full_in_a_real_process(demo_dump: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "tuidebug", "check", str(demo_dump), "--watch", "TO"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 2
    assert sentences(proc.stderr)[-1].startswith("tuidebug check: cannot write the results")


# ------------------------------------------------------------------ damaged dumps
@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
def test_damaged_dump(capsys, dump_2_10: Path, tmp_path: Path, damage: Damage) -> None:
    root, shown = damaged_copy(dump_2_10, tmp_path / "d", damage)
    code, out, err = check(capsys, str(root), "--watch", "TO")
    lines = sentences(err, "check")
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
    code, out, err = check(capsys, str(root), "--watch", "TL:abs_mean_gt=1", "--json")
    sentences(err, "check")
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
    code, out, err = check(capsys, str(root), "--watch", "TO", "--rank", "1")
    assert code == 2 and out == ""
    assert "rank_1 has no readable graph" in sentences(err, "check")[-1]


def test_python_dash_m_with_checker_threads(dump_2_10: Path) -> None:
    """`python -m tuidebug check` with the checker threads (forced: LeNet is small)."""
    code = (
        "import runpy, sys\n"
        "from tuidebug.offline.check import checker\n"
        "checker.THREADED_MIN_BYTES = 0\n"
        f"sys.argv = ['tuidebug', 'check', {str(dump_2_10)!r}, '--watch', 'TL:abs_mean_gt=1',"
        " '--workers', '2', '--json']\n"
        "runpy.run_module('tuidebug', run_name='__main__')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert len(json.loads(proc.stdout)) == 14


# ------------------------------------------------------------------ odd dump folders
def _demo_copy(demo_dump: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(demo_dump, dst, symlinks=True)
    return dst


def test_a_rank_folder_linking_outside_is_named(
    capsys: pytest.CaptureFixture[str], demo_dump: Path, tmp_path: Path
) -> None:
    outside = _demo_copy(demo_dump, tmp_path / "outside")
    root = tmp_path / "dump"
    root.mkdir()
    (root / "rank_0").symlink_to(outside / "rank_0")
    code, _out, err = check(capsys, str(root), "--watch", "TO")
    assert code == 2
    (line,) = sentences(err)
    assert "rank_0 is a symbolic link to" in line and "outside the dump folder" in line


def test_a_zero_padded_iteration_folder_is_not_a_second_copy(
    capsys: pytest.CaptureFixture[str], demo_dump: Path, tmp_path: Path
) -> None:
    import shutil

    root = _demo_copy(demo_dump, tmp_path / "dump")
    iterations = root / "rank_0" / "MLP" / "0"
    shutil.copytree(iterations / "3", iterations / "03")
    code, out, err = check(capsys, str(root), "--watch", "TO", "--iteration", "3")
    assert code == 1
    assert "rank_0/MLP/0/03 is not an iteration folder" in err
    assert "35 hits; 42 tensors checked, iteration 3 of rank_0" in out
    from tuidebug.offline.layout.root import DumpLayout

    assert DumpLayout.open(root).rank(0).dumped_iterations[0] == [0, 1, 2, 3, 4, 5]


def test_hits_on_renumbered_kernels_need_no_warning(
    capsys: pytest.CaptureFixture[str], dump_2_10: Path
) -> None:
    """MindSpore 2.10 writes `…Conv2DBackpropFilter-op0` files for the graph's `-op1` node
    (spec §5.2a): that is its numbering, not a guess, so the hit reads them silently."""
    code, out, err = check(
        capsys,
        str(dump_2_10),
        "--watch",
        "TL:abs_mean_gt=0",
        "--node",
        "conv1-Conv2d/Grad_Conv2D/Conv2DBackpropFilter",
        "--iteration",
        "1",
        "--json",
    )
    assert code == 1 and err == ""
    (hit,) = json.loads(out)
    assert hit["node"].endswith("conv1-Conv2d/Grad_Conv2D/Conv2DBackpropFilter-op1")


def test_a_file_that_contradicts_its_node_is_checked_as_it_is(
    capsys: pytest.CaptureFixture[str], dump_2_10: Path, tmp_path: Path
) -> None:
    """A ReLU output file holding another shape than the graph declares is checked as it is
    (its Inf is an Inf whatever the shape), and one warning names the file and the node; the
    file is never silently skipped (issue 27 §3)."""
    import numpy as np

    from tests.offline.dump_copy import copy_dump

    root = copy_dump(dump_2_10, tmp_path / "d", with_data=True)
    (relu,) = (root / "rank_0/LeNet/0/1").glob("ReLU.*relu-ReLU_ReLU-op1.*.output.0.*.npy")
    relu.unlink()
    np.save(relu, np.full((3, 3), np.inf, np.float32))
    code, out, err = check(capsys, str(root), "--watch", "TO", "--iteration", "1", "--json")
    assert code == 1
    (hit,) = json.loads(out)
    assert hit["node"].endswith("relu-ReLU/ReLU-op1")
    (line,) = sentences(err)
    assert line == (
        f"warning: rank_0/LeNet/0/1/{relu.name} has shape (3, 3), but the graph declares "
        "Default/network-WithLossCell/_backbone-LeNet5/relu-ReLU/ReLU-op1 output 0 as "
        "(4, 16, 10, 10), so the file is not shown under that node (nor are other files of it "
        "that disagree); a check reads it as it is."
    )
    # without a hit the same file makes the check incomplete
    np.save(relu, np.ones((3, 3), np.float32))
    code, out, err = check(capsys, str(root), "--watch", "TO", "--iteration", "1", "--json")
    assert code == 2 and json.loads(out) == []
    assert sentences(err)[-1].endswith("so the check is incomplete.")


def test_nothing_checked_is_not_all_clear(
    capsys: pytest.CaptureFixture[str], demo_dump: Path, tmp_path: Path
) -> None:
    root = _demo_copy(demo_dump, tmp_path / "dump")
    for f in (root / "rank_0" / "MLP" / "0" / "2").iterdir():
        f.unlink()
    code, out, err = check(capsys, str(root), "--watch", "TO", "--iteration", "2")
    assert code == 2 and out == ""
    assert sentences(err) == [
        "tuidebug check: none of the watched tensors has a dumped file in iteration 2, so "
        "nothing was checked."
    ]
    # asked for, the missing files are the answer (error code 32)
    code, out, _ = check(
        capsys, str(root), "--watch", "TO", "--iteration", "2", "--error-on-no-value", "--json"
    )
    assert code == 1 and {h["error_code"] for h in json.loads(out)} == {32}
    # one empty iteration among others is fine
    code, out, _ = check(capsys, str(root), "--watch", "TO", "--iteration", "1-2")
    assert code == 0 and "0 hits; 42 tensors checked" in out


def test_a_watch_that_watches_nothing_is_named(
    capsys: pytest.CaptureFixture[str], demo_dump: Path
) -> None:
    code, out, err = check(
        capsys,
        str(demo_dump),
        "--watch",
        "TO",
        "--watch",
        "AR:max_min_lt=1",
        "--watch",
        "GE",
        "--node",
        "fc1-Dense/MatMul",
        "--iteration",
        "2",
    )
    assert code == 0 and "1 tensor checked" in out
    assert sentences(err) == [
        "warning: --watch AR:max_min_lt=1 watches no activation node matching --node, so it "
        "was not checked.",
        "warning: --watch GE watches no gradient node matching --node, so it was not checked.",
    ]


def test_many_ranks_are_named_as_runs(capsys, tmp_path: Path) -> None:
    """A many-rank dump's summary names its ranks as runs, not one name per rank."""
    from tests.offline.many_ranks import write_ranks

    write_ranks(tmp_path / "dump", ranks=4, iterations=3)
    code, out, _ = check(capsys, str(tmp_path / "dump"), "--watch", "TO")
    assert code == 1
    assert " tensors checked, iterations 0-2 of ranks 0-3, " in out.splitlines()[-1]
    for argv, ranks in [
        (["--rank", "1,3"], "1,3"),
        (["--rank", "1-2", "--rank", "0"], "0-2"),
        (["--rank", "2-99"], "2-3"),
    ]:
        code, out, _ = check(capsys, str(tmp_path / "dump"), "--watch", "TO", *argv)
        assert f" of ranks {ranks}, " in out.splitlines()[-1], argv
    code, out, _ = check(capsys, str(tmp_path / "dump"), "--watch", "TO", "--rank", "2")
    assert " of rank_2, " in out.splitlines()[-1]


@pytest.mark.parametrize(
    ("rank", "said"),
    [
        ("7", "rank 7 is not in the dump (ranks: 0-3)."),
        ("5-9", "no rank from 5 to 9 is in the dump (ranks: 0-3)."),
        ("x", "--rank 'x' is not a rank, a range like 2-5, or a list of them."),
        ("3-1", "--rank range '3-1' ends before it starts."),
    ],
)
def test_bad_ranks_are_one_sentence(capsys, tmp_path: Path, rank: str, said: str) -> None:
    from tests.offline.many_ranks import write_ranks

    write_ranks(tmp_path / "dump", ranks=4, iterations=1)
    code, out, err = check(capsys, str(tmp_path / "dump"), "--watch", "TO", "--rank", rank)
    assert code == 2 and out == ""
    assert sentences(err, "check") == [f"tuidebug check: {said}"]


# ------------------------------------------------------------------ the foreign half
FOREIGN = "tuidebug.cli.check_foreign"


def test_the_foreign_half_loads_only_for_a_foreign_dump(dump_2_10: Path) -> None:
    """cli/check_foreign.py (msprobe, tfdbg) stays out of a MindSpore check's start."""
    from tests.cli.test_cold_imports import loaded_after

    data = Path(__file__).parents[1] / "data"
    for dump, loads in [
        (dump_2_10, False),
        (data / "msprobe" / "v8_stat_mix_inf", True),
        (data / "tfdbg" / "full_health", True),
    ]:
        loaded = loaded_after(
            "from tuidebug.cli import main\n"
            f"rc = main(['check', {str(dump)!r}, '--watch', 'TO', '--json'])\n"
            "assert rc in (0, 1), rc"
        )
        assert (FOREIGN in loaded) is loads, dump
