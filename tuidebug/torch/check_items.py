"""The protocol client's `CheckItem`s for a PyTorch training: how a held tensor or a live
parameter is loaded, checked at once, or launched on its device to be decided later.

Why a module of its own: which engine decides a tensor is a choice made per tensor, by its
device, and it is the same for every tensor the debugger holds — a CPU tensor is decided at
once by the numpy engine (exactly what an offline check of the same values gives, and
nothing to wait for), any other has its statistics queued on its own device (`deferred`) so
that a check point reads every tensor back in one synchronisation. The `Debugger` only
says which tensors are watched; this module says how each is checked.

A held tensor changed in place since it was produced has no results (`UNAVAILABLE`): the
debugger reports it as unavailable rather than check values it never produced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import torch
from torch import nn

from tuidebug.client.protocol import CheckItem, Selection
from tuidebug.core.condition_catalogue import CheckRequest, CheckResult
from tuidebug.torch.capture import Held
from tuidebug.torch.deferred import Launched, launch
from tuidebug.torch.stats import evaluate_tensor, evaluate_with_torch, to_numpy

__all__ = ["DEFER_ON_CPU", "UNAVAILABLE", "launch_selection", "param_item", "tensor_item"]

# CPU tensors are decided at once by the numpy engine (nothing to wait for); tests set this
# to take the device path (statistics queued, one read-back per check point) on CPU
DEFER_ON_CPU = False

# a tensor that is not available (changed in place since it was produced): no results
UNAVAILABLE = Launched((), results=None)


def tensor_item(
    name: str, slot: int, order: int, held: Held, on_stale: Callable[[str], None]
) -> CheckItem:
    """A captured output (or gradient) of this step; `on_stale(name)` when it was changed in
    place since it was captured."""

    def load() -> np.ndarray | None:
        tensor = held.get()
        return to_numpy(tensor) if tensor is not None else None

    def check(requests: Sequence[CheckRequest], wants_prev: bool) -> list[CheckResult] | None:
        tensor = held.get()
        if tensor is None:
            on_stale(name)
            return None
        return evaluate_tensor(tensor, requests, None)

    def start(requests: Sequence[CheckRequest], wants_prev: bool) -> Launched:
        tensor = held.get()
        if tensor is None:
            on_stale(name)
            return UNAVAILABLE
        if tensor.device.type == "cpu" and not DEFER_ON_CPU:
            return Launched(requests, results=evaluate_tensor(tensor, requests, None))

        def exact() -> list[CheckResult] | None:
            current = held.get()  # None once changed in place after it was produced
            return evaluate_with_torch(current, requests) if current is not None else None

        return launch(tensor, requests, None, exact)

    return CheckItem(name, slot, order, False, load=load, evaluate=check, launch=start)


def param_item(
    name: str, param: nn.Parameter, order: int, previous: Callable[[], torch.Tensor | None]
) -> CheckItem:
    """A parameter, live (its value now); `previous()` is its previous-step copy, if kept."""

    def load() -> np.ndarray | None:
        return to_numpy(param)

    def load_previous() -> np.ndarray | None:
        prev = previous()
        return to_numpy(prev) if prev is not None else None

    def check(requests: Sequence[CheckRequest], wants_prev: bool) -> list[CheckResult]:
        prev = previous() if wants_prev else None
        return evaluate_tensor(param, requests, prev)

    def start(requests: Sequence[CheckRequest], wants_prev: bool) -> Launched:
        prev = previous() if wants_prev else None
        if param.device.type == "cpu" and not DEFER_ON_CPU:
            return Launched(requests, results=evaluate_tensor(param, requests, prev))
        return launch(param, requests, prev, partial(evaluate_with_torch, param, requests, prev))

    return CheckItem(
        name,
        0,
        order,
        True,
        load=load,
        load_previous=load_previous,
        evaluate=check,
        launch=start,
    )


def launch_selection(sel: Selection) -> Launched | None:
    """Launch the checks the client selected for an item; None when its `launch` gave
    something else (the client types it as `object`: it knows nothing of `Launched`)."""
    assert sel.item.launch is not None
    launched = sel.item.launch(sel.requests, sel.wants_previous)
    return launched if isinstance(launched, Launched) else None
