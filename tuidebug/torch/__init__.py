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

Training frameworks: `tdb.TrainerCallback(port=…)` for transformers' `Trainer`,
`tdb.LightningCallback(port=…)` for Lightning (both with `dump_dir=` for dump mode); each
imports its framework only when first used.

Modules:
- `api`: `attach`, `dump`: a `Debugger` made and started with the user's options
- `debugger`: `Debugger`: the protocol client and the step's check points
- `capture`: what the hooks hold of a step (by reference, stale once changed in place)
- `check_items`: how a held tensor or a parameter is checked (at once on CPU, else queued)
- `deferred`: statistics queued on the device, read back once per check point
- `stats`: MindSpore's watchpoint math on torch tensors; a DTensor's local shard
- `graph`: a model as a MindSpore-style graph (fx or one recorded forward pass)
- `dump`: dump mode, one `rank_<global rank>` folder per process
- `ranks`: this process's rank and job under torch.distributed; late attach
- `wrappers`: the model and optimizer under torch.compile, accelerate and Lightning
- `policy`: evaluation passes are not checked; a frozen debugger is given up
- `training_link`: one `Debugger` driven by a framework's events (the callbacks' rules)
- `callbacks_hf`: `TrainerCallback` for transformers' `Trainer`
- `callbacks_lightning`: `LightningCallback` for Lightning
"""

from __future__ import annotations

from tuidebug.torch.api import attach, dump
from tuidebug.torch.debugger import (
    BACKEND,
    Debugger,
    DebuggerUnavailable,
    DebuggerWarning,
    OnDisconnect,
    Terminated,
)
from tuidebug.torch.graph import ModelGraph, TraceFailed, build_graph, graph_for

# the callbacks import their framework (transformers, lightning): only when asked for
_LAZY = {
    "TrainerCallback": "tuidebug.torch.callbacks_hf",
    "LightningCallback": "tuidebug.torch.callbacks_lightning",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tuidebug.torch' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "BACKEND",
    "Debugger",
    "DebuggerUnavailable",
    "DebuggerWarning",
    "LightningCallback",
    "ModelGraph",
    "OnDisconnect",
    "Terminated",
    "TraceFailed",
    "TrainerCallback",
    "attach",
    "build_graph",
    "dump",
    "graph_for",
]
