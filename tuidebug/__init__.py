"""tuidebug: a terminal graph debugger for neural-network training.

The DumpAnalyzer-compatible API is importable from here too (`from tuidebug import
DumpAnalyzer`); it loads on first use so that `import tuidebug` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API_NAMES = frozenset(
    {
        "ConditionBase",
        "DebuggerTensor",
        "DumpAnalyzer",
        "Node",
        "OperatorOverflowCondition",
        "TensorAllZeroCondition",
        "TensorChangeAboveThresholdCondition",
        "TensorChangeBelowThresholdCondition",
        "TensorOverflowCondition",
        "TensorRangeCondition",
        "TensorTooLargeCondition",
        "TensorTooSmallCondition",
        "TensorUnchangedCondition",
        "Watchpoint",
        "WatchpointHit",
    }
)


def __getattr__(name: str) -> Any:
    if name in _API_NAMES:
        # by name, not `from tuidebug import api`: every `tuidebug.x` import passes through
        # this package, and a static import here would make core depend on the API layer
        api = importlib.import_module("tuidebug.api")
        return getattr(api, name)
    raise AttributeError(f"module 'tuidebug' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API_NAMES})
