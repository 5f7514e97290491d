"""PyTorch training client for tuidebug (needs `pip install tuidebug[torch]`).

    import tuidebug.torch as tdb
    dbg = tdb.attach(model, optimizer=opt, host="127.0.0.1", port=50051)
    for x, y in loader:
        loss = loss_fn(model(x), y); loss.backward(); opt.step(); opt.zero_grad()
        dbg.step_end()          # suspension point: watchpoints, step/continue/pause/terminate
    dbg.close()

`tdb.dump(model, opt, out_dir, steps=…)` writes a MindSpore 2.10-layout dump instead (or as
well: `attach(..., dump_dir=…)`); `tdb.build_graph(model)` gives the `core.Graph` a debugger
would show, without any server. This package never imports textual.
"""

from __future__ import annotations

from tuidebug.torch.debugger import (
    BACKEND,
    Debugger,
    DebuggerUnavailable,
    DebuggerWarning,
    OnDisconnect,
    Terminated,
    attach,
    dump,
)
from tuidebug.torch.graph import ModelGraph, TraceFailed, build_graph, graph_for

__all__ = [
    "BACKEND",
    "Debugger",
    "DebuggerUnavailable",
    "DebuggerWarning",
    "ModelGraph",
    "OnDisconnect",
    "Terminated",
    "TraceFailed",
    "attach",
    "build_graph",
    "dump",
    "graph_for",
]
