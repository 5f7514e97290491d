"""What the debugger's hooks hold of a training step, and how they are installed.

Why a module of its own: holding a tensor is a promise about its values, and the rules that
keep that promise honest are the same for every hook (forward outputs, output gradients,
parameter gradients). Tensors are held by reference, never copied — a copy per module would
cost what the debugger is meant to avoid — so a held tensor that the training later changes
in place (an in-place ReLU after a convolution, `zero_grad(set_to_none=False)`) must be
told apart from an intact one: each is held with its version counter and reads as None
once that moved, and the caller reports it as unavailable rather than show wrong values.

The hook helpers are here for the same reason: every hook the debugger installs is wrapped
the same way (`eager`) and removed the same way (`remove_handles`); `BackwardEnd` turns a
gradient hook into a check point at the end of the backward pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch

__all__ = ["BackwardEnd", "Held", "StepStore", "eager", "remove_handles"]

_Hook = TypeVar("_Hook", bound=Callable[..., Any])


class Held:
    """A captured tensor and its version: an in-place change after capture makes it stale."""

    __slots__ = ("tensor", "version")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor.detach()
        self.version = tensor._version

    def get(self) -> torch.Tensor | None:
        return self.tensor if self.tensor._version == self.version else None


class StepStore:
    """What the current step produced: node name → output slots, and execution order."""

    def __init__(self) -> None:
        self.slots: dict[str, list[Held | None]] = {}
        self.order: dict[str, int] = {}
        self.seq = 0

    def put_all(self, name: str, tensors: Sequence[torch.Tensor]) -> None:
        self.slots[name] = [Held(t) for t in tensors]
        self.order[name] = self.seq
        self.seq += 1

    def put(self, name: str, slot: int, tensor: torch.Tensor) -> None:
        held = self.slots.get(name)
        if held is None:
            held = self.slots[name] = []
            self.order[name] = self.seq
            self.seq += 1
        while len(held) <= slot:
            held.append(None)
        held[slot] = Held(tensor)

    def get(self, name: str, slot: int) -> torch.Tensor | None:
        held = self.slots.get(name)
        if held is None or slot >= len(held) or held[slot] is None:
            return None
        return held[slot].get()  # type: ignore[union-attr]

    def values(self) -> tuple[dict[str, list[torch.Tensor | None]], list[str]]:
        """Every captured tensor by name (None where a slot is missing or stale), and the
        names with a stale slot (for a dump, which writes what is still intact)."""
        tensors: dict[str, list[torch.Tensor | None]] = {}
        stale = []
        for name, slots in self.slots.items():
            values = [h.get() if h is not None else None for h in slots]
            if any(h is not None and v is None for h, v in zip(slots, values, strict=True)):
                stale.append(name)
            tensors[name] = values
        return tensors, stale

    def clear(self) -> None:
        self.slots.clear()
        self.order.clear()
        self.seq = 0


def eager(hook: _Hook) -> _Hook:
    """The hook runs eagerly, outside any `torch.compile` graph: dynamo would otherwise trace
    into the debugger and break the graph at each of its data-dependent steps (and warn at
    every step); a disabled function is called as it is, between the compiled parts."""
    return torch.compiler.disable(hook, recursive=True)


def remove_handles(handles: list[Any]) -> None:
    for handle in handles:
        handle.remove()
    handles.clear()


class BackwardEnd:
    """Calls `fn` once when the running backward pass is over: `arm()` from any gradient
    hook queues it on the autograd engine (once per pass). Why: the end of backward is the
    one moment the gradients are final and untouched — a `clip_grad_norm_` or a framework's
    clipping rewrites them in place right after, and under `optimizer.step(closure)` the
    optimizer's pre-hook runs before the closure's forward, so it is no check point after
    backward at all."""

    __slots__ = ("fn", "queued")

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn
        self.queued = False

    def arm(self) -> None:
        if not self.queued:
            self.queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._run)

    def _run(self) -> None:
        self.queued = False
        self.fn()
