"""`tuidebug exec DUMP 'CMD' …`: the analyzer's commands from a shell, the TUI's `:` output
without colour; one sentence and exit 2 for each mistake, the other commands still run."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.cli.support import sentences
from tuidebug.cli import main as cli_main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli_main(["exec", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_commands_print_what_the_registry_prints(
    capsys: pytest.CaptureFixture[str], lenet_dump: Path
) -> None:
    code, out, err = run(capsys, str(lenet_dump), "lt -t ^Conv2D$", "ni conv1.weight -d")
    assert code == 0, err
    assert out.startswith("2 of ") and "Conv2D" in out
    assert "Data at 4 iteration(s): 0-3" in out
    assert err == ""


def test_a_failing_command_is_one_sentence_and_the_rest_run(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    code, out, err = run(capsys, str(dump_2_0), "pt nosuch", "pt fc3.bias")
    assert code == 2
    assert sentences(err, "exec") == ["tuidebug exec: No node is named 'nosuch'."]
    assert "Tensor fc3.bias:0 @ step 1 (iteration 0)" in out


def test_iteration_option_and_eval(capsys: pytest.CaptureFixture[str], dump_2_0: Path) -> None:
    (path,) = (dump_2_0 / "rank_0" / "LeNet" / "0" / "2").glob("Parameter.fc3.bias.*.npy")
    code, out, _ = run(capsys, "--iteration", "2", str(dump_2_0), "eval `fc3.bias`.sum()")
    assert code == 0
    assert float(out.split(" = ")[-1]) == pytest.approx(float(np.load(path).sum()), rel=1e-6)
    # options may also follow the dump, between commands
    code, out, _ = run(
        capsys, str(dump_2_0), "lt -t BiasAdd", "--iteration", "2", "eval `fc3.bias`.sum()"
    )
    assert code == 0
    assert float(out.split(" = ")[-1]) == pytest.approx(float(np.load(path).sum()), rel=1e-6)


def test_commands_from_stdin(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("# a comment\nli ReLU-op78\n\nlo ReLU-op78\n"))
    code, out, _ = run(capsys, str(dump_2_0), "-")
    assert code == 0
    assert "Inputs to" in out and "Consumers of" in out


def test_mistakes_in_the_invocation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(capsys, str(tmp_path / "nope"), "lt")
    assert code == 2 and len(sentences(err, "exec")) == 1
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run(capsys, str(tmp_path / "nope"))  # no command, none on stdin either
    assert code == 2 and sentences(err, "exec") == ["tuidebug exec: stdin held no command."]


def test_exec_loads_no_textual(dump_2_0: Path) -> None:
    script = (
        "import sys\nfrom tuidebug.cli import main\n"
        f"rc = main(['exec', {str(dump_2_0)!r}, 'lt', 'pt fc3.bias'])\n"
        "assert 'textual' not in sys.modules, 'textual loaded'\nsys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------- issue 27 §5: the user's files are safe
def test_folder_targets_are_sentences_and_the_later_commands_run(
    capsys: pytest.CaptureFixture[str],
    dump_2_0: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    code, out, err = run(
        capsys,
        str(dump_2_0),
        "pt fc3.bias -w .",
        "pt fc3.bias -w /",
        "pt fc3.bias -w ~",
        "pt fc3.bias -w ~/bias",
        "pt fc3.bias",
    )
    assert code == 2
    assert sentences(err, "exec") == [
        "tuidebug exec: . is a folder; name a file in it.",
        "tuidebug exec: / is a folder; name a file in it.",
        f"tuidebug exec: {home} is a folder; name a file in it.",
    ]
    assert f"Saved 10 elements to {home / 'bias.npy'}." in out  # ~ is the home folder
    assert out.count("Tensor fc3.bias:0 @ step 1 (iteration 0)") == 2
    assert not (tmp_path / "home.npy").exists()


def test_existing_files_are_kept_unless_the_user_says_so(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, tmp_path: Path
) -> None:
    listing, saved = tmp_path / "lt.txt", tmp_path / "bias.npy"
    listing.write_text("mine\n")
    saved.write_bytes(b"mine")
    code, _, err = run(capsys, str(dump_2_0), f"lt > {listing}", f"pt fc3.bias -w {saved}")
    assert code == 2
    assert sentences(err, "exec") == [
        f"tuidebug exec: {listing} exists and was left as it is; write >| {listing} to replace it.",
        f"tuidebug exec: {saved} exists and was left as it is; add -f to replace it.",
    ]
    assert listing.read_text() == "mine\n" and saved.read_bytes() == b"mine"
    code, out, err = run(capsys, str(dump_2_0), f"lt >| {listing}", f"pt fc3.bias -w {saved} -f")
    assert code == 0 and err == ""
    assert out.startswith("Wrote ") and "fc3.bias" in listing.read_text()
    assert np.load(saved).shape == (10,)


def test_a_fifo_target_never_hangs(dump_2_0: Path, tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "tuidebug", "exec", str(dump_2_0), "lt > fifo", "lt -t Conv2D"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert sentences(done.stderr, "exec") == [
        "tuidebug exec: fifo is a FIFO (named pipe); output goes only to regular files."
    ]
    assert "Conv2D" in done.stdout


def test_source_root_option(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path, tmp_path: Path
) -> None:
    # the 2.0 dump's stacks name /home/dev/ws/gen/lenet/train_lenet.py; a copy here under
    # the same tail is the file `ps` finds, shown only under a root the user names
    here = tmp_path / "gen" / "lenet" / "train_lenet.py"
    here.parent.mkdir(parents=True)
    here.write_text("\n".join(f"line {i}" for i in range(1, 41)))
    code, out, _ = run(capsys, str(dump_2_0), f"ps {here} -b 30 -n 1")
    assert code == 0 and "line 30" not in out and "outside the folders" in out
    code, out, _ = run(
        capsys, str(dump_2_0), "--source-root", str(tmp_path), f"ps {here} -b 30 -n 1"
    )
    assert code == 0 and "line 30" in out


def test_an_iteration_not_in_the_dump_is_one_sentence_and_exit_2(
    capsys: pytest.CaptureFixture[str], dump_2_0: Path
) -> None:
    # Before: every command answered for the missing iteration ("0 tensors") and exit 0.
    code, out, err = run(capsys, "--iteration", "9", str(dump_2_0), "lt")
    assert code == 2
    assert out == ""
    assert sentences(err, "exec") == [
        "tuidebug exec: iteration 9 is not in the dump (iterations: 0-3)."
    ]
