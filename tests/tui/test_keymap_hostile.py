"""A keys file that is no keys file (a FIFO, /dev/zero, 27 MB, tables nested thousands
deep) is one sentence, from `load_keymap`, from `tuidebug keys` (exit 2) and in the TUI,
never a hang or a traceback (issue 27 §6)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.tui.support import FakeSession
from tests.tui.test_keymap import SIZE, keys_file_with, started, warnings
from tuidebug import cli
from tuidebug.cli.common import EXIT_USAGE
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.keymap import ENV_VAR, load_keymap

CAP = 1024 * 1024  # the size a keys file may have
KNOWN = {"tuidebug.step"}  # spares the tests importing every binding of the TUI
QUICK = 5.0  # seconds: each refusal is instant; the bound is for a shared machine


def _one_sentence(path: Path, problems: list[str]) -> str:
    [problem] = problems
    assert problem.startswith(f"The keys file {path} ")
    assert problem.endswith("so no keys were remapped.")
    assert "\n" not in problem and "Traceback" not in problem
    return problem


@pytest.mark.timeout(20)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "keys.toml"
    os.mkfifo(fifo)  # nobody ever writes: a plain open() would wait forever
    keymap, problems = load_keymap(fifo, KNOWN)
    assert keymap == {}
    assert "a FIFO (named pipe), not a regular file" in _one_sentence(fifo, problems)


@pytest.mark.timeout(20)
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_dev_zero_is_refused_at_once() -> None:
    zero = Path("/dev/zero")
    started = time.monotonic()
    keymap, problems = load_keymap(zero, KNOWN)
    assert time.monotonic() - started < QUICK
    assert keymap == {}
    assert "a character device, not a regular file" in _one_sentence(zero, problems)


@pytest.mark.timeout(30)
def test_a_27_mb_file_is_refused_by_its_size(tmp_path: Path) -> None:
    big = tmp_path / "keys.toml"
    # distinct unknown ids: each one a sentence with a spelling suggestion, were it parsed
    big.write_bytes(b"[keys]\n" + b"".join(b'k%07d = "j"\n' % i for i in range(1_800_000)))
    assert big.stat().st_size > CAP
    started = time.monotonic()
    keymap, problems = load_keymap(big, KNOWN)
    assert time.monotonic() - started < QUICK
    assert keymap == {}
    assert "larger than the 1 MiB a keys file may have" in _one_sentence(big, problems)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "text",
    [
        # dotted keys thousands deep: nested tables the id flattener walks
        "[keys]\n" + ".".join(["a"] * (sys.getrecursionlimit() * 2)) + ' = "j"\n',
        # a [keys] table whose header nests as deep
        "[keys." + ".".join(["b"] * (sys.getrecursionlimit() * 2)) + ']\nstep = "j"\n',
        # arrays nested thousands deep: the TOML parser's own recursion
        "[keys]\nstep = " + "[" * 5000 + "]" * 5000 + "\n",
        # inline tables as deep
        "[keys]\nstep = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n",
    ],
    ids=["dotted", "header", "arrays", "inline-tables"],
)
def test_deeply_nested_tables_are_one_sentence(tmp_path: Path, text: str) -> None:
    deep = tmp_path / "keys.toml"
    deep.write_text(text)
    assert deep.stat().st_size <= CAP
    keymap, problems = load_keymap(deep, KNOWN)
    assert keymap == {}
    assert problems, "a nested mess must be said"
    for problem in problems:
        assert "\n" not in problem and "Traceback" not in problem


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_tuidebug_keys_with_a_fifo_is_a_sentence_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "keys.toml"
    os.mkfifo(fifo)
    monkeypatch.setenv(ENV_VAR, str(fifo))
    assert cli.main(["keys"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"tuidebug keys: The keys file {fifo} cannot be read (it is a FIFO" in err
    assert "Traceback" not in err


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
async def test_the_tui_starts_beside_a_fifo_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fifo = tmp_path / "keys.toml"
    os.mkfifo(fifo)
    monkeypatch.setenv(ENV_VAR, str(fifo))
    app = DebuggerApp(FakeSession(), start_session=True, user_keys=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        [notice] = warnings(app)
        assert f"The keys file {fifo} cannot be read (it is a FIFO" in notice


@pytest.mark.timeout(60)
async def test_the_tui_starts_beside_a_deep_file_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keys_file_with(monkeypatch, tmp_path, "[keys]\nstep = " + "[" * 5000 + "]" * 5000 + "\n")
    app = DebuggerApp(FakeSession(), start_session=True, user_keys=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        [notice] = warnings(app)
        assert "nests its tables too deeply" in notice
