"""tuidebug: a terminal graph debugger for neural-network training.

The DumpAnalyzer-compatible API is importable from here too (`from tuidebug import
DumpAnalyzer`); it loads on first use so that `import tuidebug` stays light.
"""

from __future__ import annotations

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
        from tuidebug import api

        return getattr(api, name)
    raise AttributeError(f"module 'tuidebug' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API_NAMES})
