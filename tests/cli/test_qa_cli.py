"""QA regressions for the headless commands (`check`, `online`, `simulate`, the entry point):
each test is a mistake or a hostile situation a demanding user ran into, and the answer the
bar asks for — one sentence and a non-zero exit, never a traceback, never silently wrong
results."""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dump_names import DEMO_FIRST_INF
from tuidebug import check_cli, cli
from tuidebug.check_cli import parse_iteration_ranges, parse_iterations
from tuidebug.cli import UsageError

JSON_KEYS = {
    "watchpoint",
    "condition",
    "rank",
    "graph",
    "iteration",
    "node",
    "slot",
    "error_code",
    "error_messages",
    "params",
}


@pytest.fixture(scope="module")
def demo_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo dump: healthy, then +Inf in a forward MatMul at iteration 3, then NaN."""
    from tuidebug.offline.demo import write_demo_dump

    return write_demo_dump(tmp_path_factory.mktemp("demo"))


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["check", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def sentences(err: str) -> list[str]:
    """Every stderr line is a warning or the final error, each one sentence."""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    for line in lines:
        assert line.startswith(("warning: ", "tuidebug ")), line
        assert line.endswith("."), line
    return lines


# ------------------------------------------------------------------ the demo's story
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


# ------------------------------------------------------------------ --iteration
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


# ------------------------------------------------------------------ --watch and friends
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


# ------------------------------------------------------------------ paths
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


# ------------------------------------------------------------------ the entry point
def test_entry_point_help_version_and_no_command() -> None:
    run = [sys.executable, "-m", "tuidebug"]
    helped = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "check" in helped.stdout and "simulate" in helped.stdout
    version = subprocess.run([*run, "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("tuidebug ")
    bare = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert bare.returncode == 2 and "usage:" in bare.stderr and "Traceback" not in bare.stderr


# ------------------------------------------------------------------ online / simulate
def test_online_host_that_is_not_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    # 192.0.2.0/24 is TEST-NET-1: never an address of this machine
    assert cli.main(["online", "--host", "192.0.2.1", "--port", "0"]) == cli.EXIT_USAGE
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert "no authentication" in lines[0]
    assert lines[-1] == (
        "tuidebug online: Cannot listen on 192.0.2.1: it is not an address of this machine "
        "(use 127.0.0.1, or 0.0.0.0 for every interface)."
    )


def test_online_without_a_terminal_prints_events_instead_of_drawing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    drawn: list[object] = []
    monkeypatch.setattr(cli, "_tui_runner", lambda: drawn.append)
    monkeypatch.setattr(cli, "_on_terminal", lambda: False)

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_wait_forever", ctrl_c)
    assert cli.main(["online", "--port", "0"]) == cli.EXIT_OK
    assert drawn == []
    assert "not a terminal" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("connect", "words"),
    [
        ("http://127.0.0.1:50051", "--connect must be HOST:PORT"),
        ("[::1:50051", "--connect must be HOST:PORT"),
        ("a b:1", "--connect must be HOST:PORT"),
        ("127.0.0.1:0", "between 1 and 65535, not 0"),
        ("127.0.0.1:５０", "--connect must be HOST:PORT"),
    ],
)
def test_simulate_bad_connect(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, connect: str, words: str
) -> None:
    code = cli.main(["simulate", str(dump_2_0), "--connect", connect])
    assert code == cli.EXIT_USAGE
    (line,) = sentences(capsys.readouterr().err)
    assert words in line


def test_simulate_unreachable_says_what_to_start(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = cli.main(["simulate", str(dump_2_0), "--connect", f"127.0.0.1:{port}"])
    assert code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    (line,) = sentences(err)
    assert "Cannot reach the debugger" in line and "tuidebug online" in line


def test_simulate_replay_warnings_are_one_prefixed_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    from tuidebug.client import simulator

    class FakeSim:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.replay = type("R", (), {"iterations": [0]})()
            self.cur_step = 1

        def run(self) -> None:
            logging.getLogger("tuidebug.client").warning("x.npy is truncated.")

    monkeypatch.setattr(simulator, "DumpSimulator", FakeSim)
    assert cli.main(["simulate", str(dump_2_0)]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert err.splitlines() == ["tuidebug simulate: warning: x.npy is truncated."]
    assert not logging.getLogger("tuidebug.client").handlers  # removed afterwards


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
    from tuidebug.offline.layout import DumpLayout

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


def test_a_file_that_contradicts_its_node_is_not_checked(
    capsys: pytest.CaptureFixture[str], dump_2_10: Path, tmp_path: Path
) -> None:
    """A ReLU output file holding another shape than the graph declares is never read as that
    ReLU's tensor: one warning names the file and the node, and the rest is checked."""
    import numpy as np

    from tests.offline.dump_copy import copy_dump

    root = copy_dump(dump_2_10, tmp_path / "d", with_data=True)
    (relu,) = (root / "rank_0/LeNet/0/1").glob("ReLU.*relu-ReLU_ReLU-op1.*.output.0.*.npy")
    relu.unlink()
    np.save(relu, np.full((3, 3), np.inf, np.float32))
    code, out, err = check(capsys, str(root), "--watch", "TO", "--iteration", "1", "--json")
    assert code == 0 and json.loads(out) == []
    (line,) = sentences(err)
    assert line == (
        f"warning: rank_0/LeNet/0/1/{relu.name} has shape (3, 3), but the graph declares "
        "Default/network-WithLossCell/_backbone-LeNet5/relu-ReLU/ReLU-op1 output 0 as "
        "(4, 16, 10, 10), so the file is not shown under that node (nor are other files of it "
        "that disagree)."
    )


@pytest.mark.parametrize("version", ["abc", "", "2.3.0; rm -rf /"])
def test_simulate_bad_ms_version(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, version: str
) -> None:
    assert cli.main(["simulate", str(dump_2_0), "--ms-version", version]) == cli.EXIT_USAGE
    (line,) = sentences(capsys.readouterr().err)
    assert line == f"tuidebug simulate: --ms-version must look like 2.3.0, not {version!r}."


def test_simulate_log_lines_are_sentences(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    from tuidebug.client import simulator

    class FakeSim:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.replay = type("R", (), {"iterations": [0]})()
            self.cur_step = 0

        def run(self) -> None:
            log = logging.getLogger("tuidebug.client")
            log.warning("the debugger reports a version mismatch")
            log.error("sending the graph failed:\n  unavailable")
            log.info("not shown")

    monkeypatch.setattr(simulator, "DumpSimulator", FakeSim)
    assert cli.main(["simulate", str(dump_2_0)]) == cli.EXIT_OK
    assert capsys.readouterr().err.splitlines() == [
        "tuidebug simulate: warning: the debugger reports a version mismatch.",
        "tuidebug simulate: error: sending the graph failed: unavailable.",
    ]


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
