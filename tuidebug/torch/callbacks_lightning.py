"""`LightningCallback`: a Lightning `Trainer` attached to tuidebug (needs `lightning`, or
the older `pytorch_lightning`).

    import tuidebug.torch as tdb
    trainer = L.Trainer(max_steps=1000, callbacks=[tdb.LightningCallback(port=50051)])
    trainer.fit(module, loader)

Each optimizer step is one debugger step (with `accumulate_grad_batches` the micro-batches
are inside it), numbered by `trainer.global_step`; `on_before_optimizer_step` and the end
of each backward pass are check points, so under Lightning's `optimizer.step(closure)` a bad
gradient stops the training before clipping and the update; terminating in the debugger
sets `trainer.should_stop`. A LightningModule that does not define `forward` (its
`training_step` calls a submodule) is attached through the one child that holds its
parameters; otherwise a warning after the first step names the candidates. The rules are
`training_link`'s.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from torch import nn

from tuidebug.torch.dump import StepSelection
from tuidebug.torch.training_link import TrainingLink

try:  # the unified package first, the standalone one otherwise
    import lightning.pytorch as _pl
except ImportError:  # pragma: no cover - depends on what is installed
    import pytorch_lightning as _pl  # type: ignore[no-redef]

__all__ = ["LightningCallback", "training_module"]

log = logging.getLogger("tuidebug.torch")


def training_module(pl_module: nn.Module) -> nn.Module:
    """The module whose forward runs in a training step: the LightningModule itself when
    it defines `forward`, else its one child holding parameters (`self.model = …`), else
    itself (the link warns after the first step if its forward never ran)."""
    if type(pl_module).forward is not _pl.LightningModule.forward:
        return pl_module
    holders = [
        child for child in pl_module.children() if next(child.parameters(), None) is not None
    ]
    if len(holders) == 1:
        name = next(n for n, c in pl_module.named_children() if c is holders[0])
        log.info(
            "tuidebug: %s defines no forward; attached its submodule %r",
            type(pl_module).__name__,
            name,
        )
        return holders[0]
    return pl_module


class LightningCallback(_pl.Callback):
    """Attach the LightningModule to the debugger at `host:port` when training starts
    (`dump_dir`: write a dump; only `dump_dir`: no debugger). Other keyword arguments go
    to `tdb.attach` (`on_disconnect`, `keep`, `example_inputs`…)."""

    def __init__(
        self,
        host: str | None = None,
        port: int = 50051,
        *,
        dump_dir: str | Path | None = None,
        dump_steps: StepSelection = None,
        **attach: Any,
    ) -> None:
        self.link = TrainingLink(
            host=host, port=port, dump_dir=dump_dir, dump_steps=dump_steps, attach=attach
        )
        self._stepped = False
        self._step_hooks: list[Any] = []

    @property
    def debugger(self) -> Any:
        """The `Debugger` once training has started (None before)."""
        return self.link.debugger

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        optimizers = list(getattr(trainer, "optimizers", []) or [])
        optimizer = optimizers[0] if len(optimizers) == 1 else None
        self.link.accumulation = max(1, int(getattr(trainer, "accumulate_grad_batches", 1)))
        self.link.begin(training_module(pl_module), optimizer, int(trainer.global_step))
        debugger = self.link.debugger
        for opt in optimizers:
            inner = _inner(opt)
            self._step_hooks.append(inner.register_step_post_hook(self._after_update))
        if debugger is not None and debugger._pending is not None:
            # terminated (or lost with on_disconnect="raise") at the initial suspension
            self._stepped = True
            self._step_end(trainer)

    def _after_update(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._stepped = True

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self.link.backward_done()  # before Lightning clips, before the update

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self._stepped:
            self._step_end(trainer)

    def _step_end(self, trainer: Any) -> None:
        self._stepped = False
        if self.link.step_end(int(trainer.global_step)):
            trainer.should_stop = True

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._close()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._close()

    def _close(self) -> None:
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks.clear()
        self.link.end()


def _inner(optimizer: Any) -> Any:
    from tuidebug.torch.wrappers import unwrap_optimizer

    return unwrap_optimizer(optimizer)
