"""`attach` and `dump`, the two ways into the PyTorch client: each makes a `Debugger`
(`debugger.py`) with the user's options and starts it. A module of its own so that the
debugger's module holds the debugger alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from tuidebug.torch.debugger import Debugger, Keep, OnDisconnect
from tuidebug.torch.dump import StepSelection

__all__ = ["attach", "dump"]


def attach(
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    *,
    host: str | None = "127.0.0.1",
    port: int = 50051,
    on_disconnect: OnDisconnect = "continue",
    dump_dir: str | Path | None = None,
    dump_steps: StepSelection = None,
    example_inputs: Any = None,
    trace: str = "auto",
    keep: Keep = "auto",
    keep_output_grads: bool = False,
    heartbeat_period: int = 30,
    retry_delay: float = 1.0,
    wait: bool = True,
    step: int = 0,
) -> Debugger:
    """Attach `model` to the debugger at `host:port`: send its graph and wait for the first
    command (the initial suspension). Call `step_end()` after every `optimizer.step()` and
    `close()` at the end (or use the debugger as a context manager).

    `on_disconnect`: what happens when the debugger is unreachable or goes away —
    "continue" (default) warns (`DebuggerWarning`) and trains on without it, "wait" blocks
    until a debugger answers again (logging that it waits), "raise" raises
    `DebuggerUnavailable` (from `attach` or the next `step_end`).
    `dump_dir`/`dump_steps`: also write a MindSpore 2.10-layout dump (see `dump`).
    `host=None`: no debugger at all (dump only).
    `example_inputs`: one batch to learn output shapes from a side-effect-free probe pass
    (eval mode, no gradients); also needed up front for models `torch.fx` cannot trace
    (otherwise the graph is recorded during the first forward and sent right after it).
    `keep`: which tensors of a step are held (by reference) to be viewed when suspended:
    "all", "watched" only, or "auto" (default): all of them after a suspension that lasted
    (someone is stepping) or while node stepping, only the watched ones in continue mode
    (holding every activation until the step ends costs a few percent on small models).
    `keep_output_grads`: also hold every module's output gradient (by default only watched
    ones, and all of them while node stepping: a tensor hook per module output makes the
    backward pass call into Python, which costs several percent on small models).
    `retry_delay`: a debugger that stops answering is retried once after this many
    seconds, then lost (`on_disconnect` says what follows). `heartbeat_period`: seconds
    between heartbeats; a debugger that leaves `policy.HEARTBEAT_GIVE_UP` of them in a row
    unanswered (frozen without closing its connection) is lost the same way.
    Evaluation passes (the model in eval mode or run without gradients) are not checked
    (`policy.py`; `Debugger.check_eval_passes`).
    `wait=False`: no debugger yet is no error: train on, connect at the first step end one
    listens (every rank at the same step end, see `ranks.py`). `step`: the training's
    step now (a late attach, a resumed run), the step the debugger shows.
    Under torch.distributed each rank sends its rank and world size: one `tuidebug online`
    serves every rank of the job.
    """
    debugger = Debugger(
        model,
        optimizer,
        host=host,
        port=port,
        on_disconnect=on_disconnect,
        dump_dir=dump_dir,
        dump_steps=dump_steps,
        example_inputs=example_inputs,
        trace=trace,
        keep=keep,
        keep_output_grads=keep_output_grads,
        heartbeat_period=heartbeat_period,
        retry_delay=retry_delay,
        wait=wait,
        step=step,
    )
    return debugger.start()


def dump(
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    out_dir: str | Path,
    steps: StepSelection = None,
    *,
    example_inputs: Any = None,
    trace: str = "auto",
) -> Debugger:
    """Write the tensors of training steps as a MindSpore 2.10-layout dump in `out_dir`
    (read by `tuidebug offline`, `tuidebug check` and `DumpAnalyzer`), no debugger needed.

    `steps`: an int n dumps the first n steps; a collection dumps those iterations
    (0-based: step 1 is iteration 0, as in MindSpore dumps); None dumps every step.
    Call `step_end()` after every `optimizer.step()` and `close()` at the end."""
    debugger = Debugger(
        model,
        optimizer,
        host=None,
        dump_dir=out_dir,
        dump_steps=steps,
        example_inputs=example_inputs,
        trace=trace,
    )
    return debugger.start()
