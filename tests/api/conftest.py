"""The analyzers the API tests share: one per test module, as MindInsight users make one per
script."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuidebug.api import DumpAnalyzer


@pytest.fixture(scope="module")
def a20(dump_2_0: Path) -> DumpAnalyzer:
    """The real MindSpore 2.0.0 LeNet dump."""
    return DumpAnalyzer(str(dump_2_0))


@pytest.fixture(scope="module")
def a210(dump_2_10: Path) -> DumpAnalyzer:
    """The real MindSpore 2.10.0 LeNet dump."""
    return DumpAnalyzer(str(dump_2_10))


@pytest.fixture(scope="module")
def demo(demo_dump: Path) -> DumpAnalyzer:
    """The demo dump: +Inf in fc2's forward MatMul at iteration 3, then NaN."""
    return DumpAnalyzer(str(demo_dump))
