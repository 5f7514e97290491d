"""The layering of DESIGN.md: import-linter contracts, and a runtime check that the non-UI
layers really load without textual."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

NON_UI_MODULES = [
    "tuidebug.core.graph",
    "tuidebug.core.session",
    "tuidebug.cli",
]


def test_import_linter_contracts_hold() -> None:
    exe = shutil.which("lint-imports") or str(
        __import__("pathlib").Path(sys.executable).with_name("lint-imports")
    )
    result = subprocess.run([exe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize("module", NON_UI_MODULES)
def test_module_loads_without_textual(module: str) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        "bad = [m for m in ('textual', 'grpc') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    bad = out.stdout.strip()
    if module.startswith("tuidebug.core"):
        assert bad == "", f"{module} pulled in {bad}"
    else:
        assert "textual" not in bad, f"{module} pulled in textual"
