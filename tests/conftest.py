"""Shared test fixtures. Real MindSpore dumps come from ../shared/fixtures beside the clone.

Tests that need them skip only when that folder is absent (a wheel install); under CI
(CI=true) its absence is an error, so nothing is skipped silently there.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = Path(
    os.environ.get("TUIDEBUG_FIXTURES", REPO.parent / "shared" / "fixtures")
).resolve()


def _require_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the shared fixtures at {SHARED_FIXTURES}")
        pytest.skip(f"shared fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return _require_fixtures()


@pytest.fixture(scope="session")
def dump_2_0(fixtures_dir: Path) -> Path:
    """MindSpore 2.0.0 LeNet dump root (holds rank_0/)."""
    return fixtures_dir / "mindspore_lenet_dump" / "ms2_0_0"


@pytest.fixture(scope="session")
def dump_2_10(fixtures_dir: Path) -> Path:
    """MindSpore 2.10.0 LeNet dump root (holds rank_0/)."""
    return fixtures_dir / "mindspore_lenet_dump" / "ms2_10_0"


@pytest.fixture(scope="session", params=["ms2_0_0", "ms2_10_0"])
def lenet_dump(request: pytest.FixtureRequest, fixtures_dir: Path) -> Path:
    """Both LeNet dump roots, one test run each."""
    return fixtures_dir / "mindspore_lenet_dump" / request.param


@pytest.fixture(scope="module")
def demo_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo dump (`tuidebug demo`): healthy, then +Inf in fc2's forward MatMul at
    iteration 3, then NaN. One per test module: a module may not change another's."""
    from tuidebug.offline.writer.demo import write_demo_dump

    return write_demo_dump(tmp_path_factory.mktemp("demo"))


@pytest.fixture(autouse=True)
def _heatmap_palettes_reset() -> Iterator[None]:
    """An app started for a real terminal (`TERM=xterm`, a non-UTF-8 locale) picks the
    heatmap's palettes and glyphs module-wide (tui/kit/colormap.py `use_terminal`, or
    terminal_caps.py's `heatmap` while colormap is not loaded yet); put the truecolor /
    half-block defaults back so no later test in the process draws with them."""
    yield
    colormap = sys.modules.get("tuidebug.tui.kit.colormap")
    if colormap is not None:
        colormap.use_terminal()
    caps = sys.modules.get("tuidebug.tui.kit.terminal_caps")
    if caps is not None:
        caps.heatmap = caps.TerminalCaps()
