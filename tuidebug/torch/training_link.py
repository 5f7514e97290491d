"""What the Trainer and Lightning callbacks share: one `Debugger` driven by a training
framework's events instead of a hand-written loop.

Why a module of its own: transformers' `Trainer` and Lightning differ in their event names,
not in what the debugger needs from them, and getting these rules right once matters more
than the glue:

* **Optimizer steps are debugger steps.** `step_end` is called after each optimizer step,
  never after a micro-batch of gradient accumulation, and the step shown (and the dump's
  iteration, `global_step - 1`) is the framework's own global step, so a resumed training
  is numbered as its logs are.
* **A check point at the end of every backward pass**, before the framework touches the
  gradients: the Trainer clips them in place after backward even with `max_grad_norm=0`
  (a norm computed by clipping to infinity, which multiplies every gradient by 1, or by NaN
  when the norm is NaN), and under `optimizer.step(closure)` the optimizer's own pre-hook
  runs before the closure's forward. A callback queued on the autograd engine from a
  gradient hook runs when backward ends; there the checks launched during backward are
  decided, so a bad gradient stops the training before clipping and before the update,
  with its values as backward produced them. When someone is looking (every tensor held)
  or the step is dumped, the gradients are copied there, so they are still viewable and
  dumped as computed once clipping has changed them in place.
* **The micro-batch is named**: with gradient accumulation each hit carries the micro-batch
  it happened in (and the step's number of micro-batches when the framework says it) in
  fields of its own that MindSpore's schema ignores (`core.rank_fields.encode_micro_batch`):
  the TUI's hit list and the sentinel's JSON show it; it is also said on stderr.
* **`Terminated` ends the training cleanly**: the callback asks the framework to stop
  (`control.should_training_stop`, `trainer.should_stop`) instead of raising through it.
* **A model whose `forward` never runs** (a LightningModule whose `training_step` calls a
  submodule) is never recorded: `Debugger.step_end` warns after the first step that did not
  call it, naming the modules that hold its parameters.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from tuidebug.core.rank_fields import encode_micro_batch
from tuidebug.torch.capture import BackwardEnd, Held, eager, remove_handles
from tuidebug.torch.debugger import Debugger, Terminated
from tuidebug.torch.dump import StepSelection

__all__ = ["TrainingLink"]

log = logging.getLogger("tuidebug.torch")


class _LinkedDebugger(Debugger):
    """A `Debugger` whose hits are also said with the micro-batch they happened in."""

    link: TrainingLink | None = None

    def _new_client(self) -> Any:
        client = super()._new_client()
        send = client.send_hits

        def send_hits(hits: Sequence[Any]) -> bool:
            if self.link is not None:
                self.link.note_hits(hits)
            return bool(send(hits))  # the hits carry the micro-batch now (note_hits)

        client.send_hits = send_hits  # type: ignore[method-assign]
        return client


class TrainingLink:
    """One training framework's events → one `Debugger` (see the module text)."""

    def __init__(
        self,
        *,
        host: str | None,
        port: int,
        dump_dir: str | Path | None,
        dump_steps: StepSelection,
        attach: dict[str, Any],
    ) -> None:
        if host is None and dump_dir is None:
            host = "127.0.0.1"  # neither: the usual debugger on this machine
        self.host = host
        self.port = port
        self.dump_dir = dump_dir
        self.dump_steps = dump_steps
        self.attach_options = attach
        self.debugger: _LinkedDebugger | None = None
        self.model: nn.Module | None = None
        self.terminated = False
        self.micro_batch = 0  # training forwards in the running optimizer step
        self.accumulation = 1  # micro-batches per optimizer step, when the framework says
        self._handles: list[Any] = []
        self._backward = BackwardEnd(self.backward_done)

    # ------------------------------------------------------------------ lifecycle
    def begin(self, model: nn.Module, optimizer: Any, global_step: int) -> None:
        """Attach (once): the initial suspension shows `global_step` completed steps."""
        if self.debugger is not None:
            return
        debugger = _LinkedDebugger(
            model,
            optimizer,
            host=self.host,
            port=self.port,
            dump_dir=self.dump_dir,
            dump_steps=self.dump_steps,
            **self.attach_options,
        )
        debugger.link = self
        debugger.step = int(global_step)
        self.debugger = debugger
        self.model = debugger.model
        self._install(debugger.model)
        debugger.start()

    def end(self) -> None:
        remove_handles(self._handles)
        if self.debugger is not None:
            self.debugger.close()

    def _install(self, model: nn.Module) -> None:
        self._handles.append(model.register_forward_pre_hook(eager(self._on_forward)))
        for param in model.parameters():
            if param.requires_grad:
                hook = eager(self._on_grad)
                self._handles.append(param.register_post_accumulate_grad_hook(hook))

    # ------------------------------------------------------------------ events
    def _on_forward(self, module: nn.Module, args: Any) -> None:
        if module.training and torch.is_grad_enabled():
            self.micro_batch += 1

    def _on_grad(self, param: torch.Tensor) -> None:
        self._backward.arm()  # once this backward pass is over, before anything sees its grads

    def backward_done(self) -> None:
        """The end of a backward pass (or the framework's last event before clipping and
        the update): keep the gradients as computed, and decide the launched checks."""
        debugger = self.debugger
        if debugger is None or debugger._closed:
            return
        # Debugger internals on purpose: this module is the adapter's own
        holding = debugger._hold_all or (
            debugger._dump is not None and debugger._dump.wants(debugger.step)
        )
        if holding:
            self._copy_gradients(debugger)
        if debugger._online and not debugger._suspended:
            debugger._check_point()

    @staticmethod
    def _copy_gradients(debugger: Debugger) -> None:
        """Replace the held gradients by copies: the framework is about to change them in
        place (clipping), which would make them unavailable to a view or a dump."""
        store = debugger._store
        for name in debugger._param_grad_nodes:
            slots = store.slots.get(name)
            if not slots or slots[0] is None:
                continue
            tensor = slots[0].get()
            if tensor is not None:
                slots[0] = Held(tensor.detach().clone())

    def step_end(self, global_step: int) -> bool:
        """After an optimizer step that made `global_step` steps; True when the debugger
        terminated the training (the caller asks its framework to stop)."""
        debugger = self.debugger
        self.micro_batch = 0
        if debugger is None or self.terminated:
            return self.terminated
        if not debugger._suspended:
            debugger.step = max(0, int(global_step) - 1)
        try:
            debugger.step_end()
        except Terminated:
            self.terminated = True
            log.warning("tuidebug: the debugger terminated the training at step %s", global_step)
        return self.terminated

    # ------------------------------------------------------------------ reporting
    def note_hits(self, hits: Sequence[Any]) -> None:
        """Mark `hits` (wire messages about to be sent) with the running micro-batch and
        say it on stderr; nothing with one micro-batch per step (the step says it all), and
        nothing at the step end or the initial suspension (no micro-batch is running: the
        hit is of the step, e.g. a weight after the update)."""
        if self.micro_batch == 0 or (self.accumulation <= 1 and self.micro_batch <= 1):
            return
        extra = encode_micro_batch(
            self.micro_batch, self.accumulation if self.accumulation > 1 else None
        )
        for hit in hits:
            hit.MergeFromString(extra)
        debugger = self.debugger
        step = debugger.step + 1 if debugger is not None else 0
        nodes = list(dict.fromkeys(h.tensor.node_name for h in hits))
        shown = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
        of = f" of {self.accumulation}" if self.accumulation > 1 else ""
        log.warning(
            "tuidebug: watchpoint hit at step %d, micro-batch %d%s: %s",
            step,
            self.micro_batch,
            of,
            shown,
        )
