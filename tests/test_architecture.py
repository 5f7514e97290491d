"""The claims of ARCHITECTURE.md that no import-linter contract checks: the shape of the
house (folder widths, module lengths, import-free package docstrings), where the TUI reads the
session's mode, and that `tuidebug keys` sees the bindings of every feature package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "tuidebug"
MAX_LINES = 950  # "~900": a module past it holds two things; the scan engine is one big one
LONG_ALLOWED = {"tuidebug/core/scan_engine.py"}


def modules_in(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*.py") if p.name != "__init__.py"]


@pytest.mark.parametrize(("folder", "most"), [("tui", 15), ("offline", 10)])
def test_the_wide_packages_hold_feature_folders_not_modules(folder: str, most: int) -> None:
    direct = modules_in(PACKAGE / folder)
    assert len(direct) <= most, sorted(p.name for p in direct)
    assert [p for p in (PACKAGE / folder).iterdir() if (p / "__init__.py").exists()]


def test_no_module_is_over_the_length_limit() -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in PACKAGE.rglob("*.py")
        if "_proto" not in p.parts and (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert set(long) <= LONG_ALLOWED, long


def test_package_inits_are_a_table_of_contents_that_imports_nothing() -> None:
    """Importing `tuidebug.tui.tensor` must not load the tensor view (cold start), and the
    docstring is where a newcomer reads what the folder holds."""
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent in (PACKAGE, PACKAGE / "_proto") or init.parent.parent == PACKAGE:
            continue  # the top packages have their own rules (lazy API, the CLI's parser)
        tree = ast.parse(init.read_text())
        assert ast.get_docstring(tree), f"{init} has no docstring"
        body = [n for n in tree.body if not isinstance(n, ast.Expr)]
        assert body == [], f"{init} runs code"
        listed = set(re.findall(r"^- `(\w+)`", ast.get_docstring(tree) or "", re.M))
        assert listed == {p.stem for p in modules_in(init.parent)}, f"{init} lists {listed}"


def test_the_tui_reads_the_session_mode_only_for_wording_and_the_check_command() -> None:
    readers = {
        str(p.relative_to(PACKAGE / "tui"))
        for p in (PACKAGE / "tui").rglob("*.py")
        if re.search(r"\b(md|metadata)\.mode\b", p.read_text())
    }
    wording = {"kit/labels.py", "kit/session_text.py", "panes/header.py"}
    check_command = {"app.py", "watchpoints/flows.py"}  # the dump path for `tuidebug check`
    assert readers - check_command == wording


def test_keys_finds_the_bindings_of_every_feature_package() -> None:
    from tuidebug.tui.keys.keymap import _tui_classes

    packages = {cls.__module__.split(".")[2] for cls in _tui_classes()}
    # a screen or widget with bindings lives in each of these folders
    assert {"app", "panes", "tensor", "tensor_list", "neighbours", "keys", "watchpoints"} <= (
        packages
    )
