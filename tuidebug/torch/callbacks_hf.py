"""`TrainerCallback`: transformers' `Trainer` attached to tuidebug (needs `transformers`).

    import tuidebug.torch as tdb
    trainer = Trainer(model=model, args=args, train_dataset=ds,
                      callbacks=[tdb.TrainerCallback(port=50051)])
    trainer.train()

Each optimizer step is one debugger step (with `gradient_accumulation_steps` the
micro-batches are inside it), numbered by `state.global_step`; gradients are checked and
stopped on before the Trainer clips them; terminating in the debugger ends `train()`
normally (`control.should_training_stop`). `TrainerCallback(dump_dir=…)` dumps instead of
connecting (`host=` as well to do both). The rules are `training_link`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import TrainerCallback as _HFCallback

from tuidebug.torch.dump import StepSelection
from tuidebug.torch.training_link import TrainingLink

__all__ = ["TrainerCallback"]


class TrainerCallback(_HFCallback):
    """Attach the Trainer's model to the debugger at `host:port` when training begins
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

    @property
    def debugger(self) -> Any:
        """The `Debugger` once training has begun (None before)."""
        return self.link.debugger

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        model = kwargs.get("model")
        if model is None:
            return
        self.link.accumulation = max(1, int(getattr(args, "gradient_accumulation_steps", 1)))
        self.link.begin(model, kwargs.get("optimizer"), int(state.global_step))
        if self.link.debugger is not None and self.link.debugger._pending is not None:
            # terminated (or lost with on_disconnect="raise") at the initial suspension
            self._step_end(state, control)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_end(state, control)

    def _step_end(self, state: Any, control: Any) -> None:
        if self.link.step_end(int(state.global_step)):
            control.should_training_stop = True

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.link.end()
