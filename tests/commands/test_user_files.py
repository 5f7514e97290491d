"""Issue 27 §5, "the user's files are safe", in the commands (the TUI's `:` line and
`tuidebug exec` run the same registry):

- `-w .`, `-w /`, `-w ~` and a folder name are one sentence, never a traceback, never a
  `/root.npy` beside the home folder;
- `> FILE` and `-w FILE` never replace an existing file: `>| FILE` and `-f` say so;
- a FIFO (or any non-regular file) as a target is refused at once, never opened;
- a write goes to a temporary file renamed into place: a failed write leaves nothing;
- `ps` shows a file a stack names only under a source root, and says how to allow others.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tuidebug.commands import CommandRegistry, command_registry
from tuidebug.commands.source import ROOTS_VARIABLE, source_roots
from tuidebug.core.graph import StackFrame
from tuidebug.core.user_files import TargetExistsError, WriteRefusedError, write_user_file
from tuidebug.offline.session import OfflineSession
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

RELU = "Default/net/ReLU-op0"


def write_dump(root: Path, secret: Path) -> Path:
    """A dump whose ReLU's stack names `secret`, a file outside every source root."""
    writer = DumpWriter(root, start_timestamp=1000)
    stack = [StackFrame(str(secret), 2, "quoted line two")]
    writer.add_graph(
        0,
        [NodeDef(RELU, "ReLU", ["w"], shape=(4,), stack=stack)],
        [ParamDef("w", np.float32, (4,))],
    )
    writer.write_iteration(
        0, 0, {("w", "output", 0): np.arange(4, dtype=np.float32), (RELU, "output", 0): np.ones(4)}
    )
    writer.finish()
    return root


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder of the test: the user's project, where relative targets go."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv(ROOTS_VARIABLE, raising=False)
    return folder


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "etc" / "shadow"
    path.parent.mkdir()
    path.write_text("root:SECRET-HASH:1\nline two SECRET\n")
    return path


@pytest.fixture
def registry(tmp_path: Path, work: Path, secret: Path) -> Iterator[CommandRegistry]:
    session = OfflineSession(write_dump(tmp_path / "dump", secret))
    session.start()
    yield command_registry(session, width=120)
    session.close()


# ------------------------------------------------------------------ folders as targets
@pytest.mark.parametrize("target", [".", "/", "~", "..", "sub/", "sub"])
def test_a_folder_target_is_one_sentence(
    registry: CommandRegistry, work: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = work / "home"
    home.mkdir()
    (work / "sub").mkdir()
    monkeypatch.setenv("HOME", str(home))
    for line in (f"pt w -w {target}", f"eval `w`*2 -w {target}", f"lt > {target}"):
        out = registry.run(line)
        assert out.error is not None and out.error.endswith("is a folder; name a file in it.")
        assert not out.lines
    assert not (work / "home.npy").exists() and not (work / "sub.npy").exists()
    assert list(home.iterdir()) == []


def test_tilde_expands_to_the_home_folder_as_a_shell_would(
    registry: CommandRegistry, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = work / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    out = registry.run("pt w -w ~/w")
    assert out.error is None, out.error
    np.testing.assert_array_equal(np.load(home / "w.npy"), np.arange(4, dtype=np.float32))
    assert registry.run("lt > ~/lt.txt").error is None
    assert "w:0" in (home / "lt.txt").read_text()


# ------------------------------------------------------------------ existing files
def test_redirect_never_replaces_a_file_unless_told(registry: CommandRegistry, work: Path) -> None:
    target = work / "notes.txt"
    target.write_text("the user's notes\n")
    out = registry.run(f"lt > {target}")
    assert out.error == f"{target} exists and was left as it is; write >| {target} to replace it."
    assert target.read_text() == "the user's notes\n"
    for line in (f"lt >| {target}", f"lt >|{target}"):
        out = registry.run(line)
        assert (
            out.error is None and out.plain() == f"Wrote {out_lines(registry)} lines to {target}."
        )
        assert "w:0" in target.read_text()
    out = registry.run(f"lt >> {target}")
    assert out.error is not None and ">| FILE" in out.error


def out_lines(registry: CommandRegistry) -> int:
    return len(registry.run("lt").lines)


def test_save_never_replaces_a_file_unless_forced(registry: CommandRegistry, work: Path) -> None:
    saved = work / "w.npy"
    saved.write_bytes(b"precious")
    for line in ("pt w -w w", "pt w -w w.npy", "eval `w`+1 -w w"):
        out = registry.run(line)
        assert out.error == f"{Path('w.npy')} exists and was left as it is; add -f to replace it."
    assert saved.read_bytes() == b"precious"
    assert registry.run("pt w -w w -f").error is None
    np.testing.assert_array_equal(np.load(saved), np.arange(4, dtype=np.float32))
    assert registry.run("eval `w`+1 -w w.npy --force").error is None
    np.testing.assert_array_equal(np.load(saved), np.arange(4, dtype=np.float32) + 1)


def test_a_new_file_gets_the_mode_of_a_plain_open(registry: CommandRegistry, work: Path) -> None:
    old = os.umask(0o027)
    try:
        assert registry.run("lt > new.txt").error is None
    finally:
        os.umask(old)
    assert (work / "new.txt").stat().st_mode & 0o777 == 0o640  # not mkstemp's 0600


# ------------------------------------------------------------------ FIFOs and failures
def test_a_fifo_target_is_refused_without_blocking(registry: CommandRegistry, work: Path) -> None:
    fifo = work / "fifo"
    os.mkfifo(fifo)
    results: list[str | None] = []

    def attempt() -> None:
        for line in ("lt > fifo", "lt >| fifo", "pt w -w fifo.npy -f"):
            results.append(registry.run(line).error)

    os.mkfifo(work / "fifo.npy")
    runner = threading.Thread(target=attempt, daemon=True)
    runner.start()
    runner.join(20)
    assert not runner.is_alive(), "a write to a FIFO blocked"
    assert results == [
        "fifo is a FIFO (named pipe); output goes only to regular files.",
        "fifo is a FIFO (named pipe); output goes only to regular files.",
        "fifo.npy is a FIFO (named pipe); output goes only to regular files.",
    ]


def test_a_failed_write_leaves_no_file(work: Path) -> None:
    def breaks(handle: object) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(WriteRefusedError, match="No space left on device"):
        write_user_file(work / "out.txt", breaks)
    assert list(work.iterdir()) == []  # neither the target nor the temporary file
    (work / "keep.txt").write_text("kept")
    with pytest.raises(WriteRefusedError):
        write_user_file(work / "keep.txt", breaks, overwrite=True)
    assert (work / "keep.txt").read_text() == "kept" and len(list(work.iterdir())) == 1
    with pytest.raises(TargetExistsError):
        write_user_file(work / "keep.txt", lambda h: h.write(b"x"))
    with pytest.raises(WriteRefusedError, match="No such file or directory"):
        write_user_file(work / "missing" / "out.txt", lambda h: h.write(b"x"))


def test_a_link_is_written_through_as_a_shell_would(registry: CommandRegistry, work: Path) -> None:
    real = work / "real.txt"
    real.write_text("old")
    (work / "link.txt").symlink_to(real)
    assert registry.run("lt > link.txt").error is not None  # the file it names exists
    assert registry.run("lt >| link.txt").error is None
    assert (work / "link.txt").is_symlink() and "w:0" in real.read_text()


# ------------------------------------------------------------------ ps and source roots
def test_ps_never_shows_a_file_outside_the_roots(
    registry: CommandRegistry, secret: Path, work: Path
) -> None:
    for line in ("ps shadow", f"ps {secret}"):
        out = registry.run(line)
        text = out.plain()
        assert "SECRET" not in text
        assert out.error is None and "quoted line two" in text  # the dump's own quote
        folder = secret.parent
        assert (
            f"{secret} is on this machine but outside the folders source files are shown from"
            in text
        )
        assert f"ps --root {folder} or {ROOTS_VARIABLE}={folder} to show it." in text
    shown = registry.run(f"ps --root {secret.parent} shadow").plain()
    assert "SECRET-HASH" in shown and "line two SECRET" in shown


def test_ps_shows_files_under_the_working_folder_and_named_roots(
    registry: CommandRegistry, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = work / "train.py"
    here.write_text("a = 1\nb = 2\n")
    assert "b = 2" in registry.run("ps train.py").plain()
    elsewhere = tmp_path / "project" / "net.py"
    elsewhere.parent.mkdir()
    elsewhere.write_text("x = 1\n")
    assert "x = 1" not in registry.run(f"ps {elsewhere}").plain()
    monkeypatch.setenv(ROOTS_VARIABLE, str(elsewhere.parent))
    assert "x = 1" in registry.run(f"ps {elsewhere}").plain()
    monkeypatch.delenv(ROOTS_VARIABLE)
    registry.context.source_roots = [str(elsewhere.parent)]  # exec --source-root
    try:
        assert "x = 1" in registry.run(f"ps {elsewhere}").plain()
    finally:
        registry.context.source_roots = []


def test_a_link_out_of_a_root_is_outside_it(
    registry: CommandRegistry, work: Path, secret: Path
) -> None:
    (work / "shadow.py").symlink_to(secret)
    assert "SECRET" not in registry.run("ps shadow.py").plain()


def test_home_and_the_file_system_root_are_no_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv(ROOTS_VARIABLE, raising=False)
    for cwd in (home, tmp_path, Path("/")):
        monkeypatch.chdir(cwd)
        assert source_roots() == ()
    monkeypatch.chdir(home / "project")
    assert source_roots() == (os.path.realpath(home / "project"),)
