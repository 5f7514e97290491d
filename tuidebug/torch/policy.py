"""What the PyTorch debugger checks and how long it trusts a silent debugger: rules kept out
of `debugger.py` so that they read in one place.

* **Evaluation passes are not checked.** A forward pass of the attached model that starts
  with the model in eval mode (`model.eval()`: `Trainer.evaluate`, Lightning's validation
  and its sanity check) or with gradients off (`torch.no_grad()`, `torch.inference_mode()`)
  is an evaluation pass: the debugger holds none of its tensors and checks nothing in it,
  so an evaluation batch never stops the training nor shows as the next training step, and
  the tensors viewable at a step end are the training step's. The decision is taken once
  per pass, where the model's own forward starts: a `no_grad` region *inside* a training
  forward (a frozen backbone) and a submodule put in eval mode during training (frozen
  batch norm) are still checked. `Debugger.check_eval_passes = True` checks evaluation
  passes too (debugging inference: they then count in the step running).
* **A debugger that stops answering is given up** after `HEARTBEAT_GIVE_UP` heartbeats in a
  row unanswered (each waits at most the heartbeat period, 10 s at most): the wait at a
  suspension is cancelled and the training goes on as when the connection closes (one
  warning; `on_disconnect` decides), instead of waiting until TCP gives up.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["HEARTBEAT_GIVE_UP", "check_options", "is_eval_pass"]

HEARTBEAT_GIVE_UP = 3  # heartbeats in a row unanswered (ProtocolClient.heartbeat_give_up)


def is_eval_pass(model: nn.Module, check_eval: bool) -> bool:
    """Whether the forward pass of `model` starting now is an evaluation pass (see above)."""
    return not check_eval and (not model.training or not torch.is_grad_enabled())


def check_options(on_disconnect: str, keep: str, trace: str) -> None:
    """`attach`'s choices, each refused in one sentence (ValueError)."""
    if on_disconnect not in ("continue", "wait", "raise"):
        raise ValueError(f"on_disconnect must be continue, wait or raise, not {on_disconnect!r}.")
    if keep not in ("auto", "all", "watched"):
        raise ValueError(f"keep must be auto, all or watched, not {keep!r}.")
    if trace not in ("auto", "fx", "hooks"):
        raise ValueError(f"trace must be auto, fx or hooks, not {trace!r}.")
