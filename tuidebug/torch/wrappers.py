"""What training frameworks wrap around a model and an optimizer, taken off before attaching.

Why a module of its own: `attach` is given whatever the user's framework holds, and the
debugger needs the objects underneath — hooks and names belong to the real module, the
step pre-hook to the real optimizer:

* `torch.compile(model)` is an `OptimizedModule` whose parameters are named `_orig_mod.…`;
  the debugger attaches to `_orig_mod`, whose hooks run when the compiled module is called,
  so names are the model's own (and match an uncompiled run of the same model).
  `DistributedDataParallel` / `DataParallel` (`module.…`) likewise: the wrapped module runs
  inside their forward.
* accelerate's `AcceleratedOptimizer` (what transformers' `Trainer` holds) and Lightning's
  `LightningOptimizer` are not real optimizers: the first subclasses `Optimizer` without
  initialising it (`'AcceleratedOptimizer' object has no attribute
  '_optimizer_step_pre_hooks'`), the second is no `Optimizer` at all. Both forward `step`
  to the optimizer they hold, so a hook on the inner one fires at every real step.

Nothing here imports accelerate, Lightning or transformers: wrappers are recognised by the
attribute that holds the wrapped object.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["unrecorded_message", "unwrap_model", "unwrap_optimizer"]

_MAX_DEPTH = 8  # wrappers around wrappers; a cycle must not loop for ever


def unwrap_model(model: nn.Module) -> nn.Module:
    """The module under `torch.compile` (`OptimizedModule._orig_mod`) and data-parallel
    (`DistributedDataParallel.module`, `DataParallel.module`) wrappers."""
    parallel = (nn.DataParallel, nn.parallel.DistributedDataParallel)
    for _ in range(_MAX_DEPTH):
        inner = getattr(model, "_orig_mod", None)
        if inner is None and isinstance(model, parallel):
            inner = model.module
        if not isinstance(inner, nn.Module) or inner is model:
            return model
        model = inner
    return model


def unwrap_optimizer(optimizer: Any) -> Any:
    """The real `torch.optim.Optimizer` under accelerate's and Lightning's wrappers (the
    object itself when it is one, or when nothing inside is)."""
    for _ in range(_MAX_DEPTH):
        if optimizer is None:
            return None
        if isinstance(optimizer, torch.optim.Optimizer) and hasattr(
            optimizer, "_optimizer_step_pre_hooks"
        ):
            return optimizer  # initialised: its hooks work
        inner = None
        for attr in ("optimizer", "_optimizer"):  # accelerate, Lightning
            candidate = getattr(optimizer, attr, None)
            if isinstance(candidate, torch.optim.Optimizer) and candidate is not optimizer:
                inner = candidate
                break
        if inner is None:
            return optimizer
        optimizer = inner
    return optimizer


def unrecorded_message(model: nn.Module, step: int) -> str:
    """Why an attached model has no graph after a training step: its `forward` never ran (a
    LightningModule whose `training_step` calls a submodule), with the modules that hold its
    parameters as candidates to attach instead."""
    holders = [n for n, c in model.named_children() if next(c.parameters(), None) is not None]
    hint = f"; attach the module it calls instead (one of: {', '.join(holders[:6])})"
    return (
        f"{type(model).__name__}.forward was not called during training step {step}, so the "
        f"debugger has no graph and is not connected{hint if holders else ''}."
    )
