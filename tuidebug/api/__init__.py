"""A DumpAnalyzer-compatible Python API (spec §6): a thin face over `offline/` and `core/`.

A MindInsight user's script runs after changing only its import line::

    from tuidebug.api import DumpAnalyzer, Watchpoint, TensorTooLargeCondition

Differences from MindInsight, all deliberate:

* no MindSpore is needed: tensors are read and checked by tuidebug itself (same math);
* `check_watchpoints` need not be called under ``if __name__ == "__main__"`` (it still works
  there): checks run in threads of the calling process, never in child processes;
* `export_graphs` writes CSV (nodes and stacks) instead of xlsx;
* user mistakes raise `DebuggerParamValueError` / `DebuggerParamTypeError` (subclasses of
  `ValueError` / `TypeError` and of `DumpAnalyzerError`) whose message is one sentence;
* graph edges are the graph's own: an `Assign` keeps its first (parameter) input, which
  MindInsight drops from a three-input `Assign`, so the parameter's outputs list the
  `Assign` too; a producer that feeds two inputs of a node is listed once by
  `get_input_nodes` / `get_output_nodes` / `list_affected_nodes` (MindInsight lists it
  once per input), while `get_input_tensors` numbers its slots per input as MindInsight does;
* stacks: a `source_address` whose candidate header is followed by no frame is an empty
  stack (MindInsight returns the lone header line as a frame); locations in the newer
  `In file p:12~14, 4~20/code/` and the old `In file p(12)` forms are parsed (MindInsight
  keeps such a line as a code-only frame); blank lines inside a `source_address` are skipped;
* `DebuggerTensor.has_value` is True only when the tensor's own file exists. MindInsight's
  looks in every graph folder of the iteration for a file whose name matches
  `<short name>.*.output.<slot>.*.npy`, so a parameter named `u` "has a value" because of
  `ReduceSum….output.0….npy` while its `value()` is None (and `error_on_no_value` then
  reports nothing for it; tuidebug reports error 32);
* graphs without a history file (the sub-graphs of control flow): MindSpore 2.0's engine
  gives error 16 for every watched tensor of them, whatever the condition; tuidebug checks
  their values and gives 16 only for the conditions that need a previous step.
"""

from __future__ import annotations

from tuidebug import _API_NAMES

# re-exported (`__all__` below): the public surface is this package, not its modules
from tuidebug.api.analyzer import DumpAnalyzer  # noqa: F401
from tuidebug.api.conditions import (  # noqa: F401
    ConditionBase,
    HitDetail,
    HitParameter,
    OperatorOverflowCondition,
    TensorAllZeroCondition,
    TensorChangeAboveThresholdCondition,
    TensorChangeBelowThresholdCondition,
    TensorOverflowCondition,
    TensorRangeCondition,
    TensorTooLargeCondition,
    TensorTooSmallCondition,
    TensorUnchangedCondition,
)
from tuidebug.api.errors import (  # noqa: F401
    DebuggerParamTypeError,
    DebuggerParamValueError,
    DumpAnalyzerError,
    TensorValueError,
)
from tuidebug.api.nodes import (  # noqa: F401
    DebuggerTensor,
    Node,
    NodeType,
    Source,
)
from tuidebug.api.watchpoints import (  # noqa: F401
    Watchpoint,
    WatchpointHit,
)

# the names `tuidebug` re-exports lazily are listed there once; the errors, the node types
# and the stack frame type are this package's own (MindInsight keeps the last two in
# mindinsight.domain.graph.base)
__all__ = sorted(
    {
        *_API_NAMES,
        "DebuggerParamTypeError",
        "DebuggerParamValueError",
        "DumpAnalyzerError",
        "NodeType",
        "Source",
    }
)


# The classes live in the modules of this package but say they are `tuidebug.api`'s, where
# users import them from: tracebacks, reprs and pickles read as before the package split.
for _name in (*__all__, "HitDetail", "HitParameter", "TensorValueError"):
    globals()[_name].__module__ = __name__
del _name
