"""transformers' `Trainer` and Lightning's `Trainer`, real ones on tiny random-init models
(built from configs, nothing downloaded), with `tdb.TrainerCallback` / `tdb.LightningCallback`
in dump mode and against the real server in this process: optimizer steps are debugger
steps under gradient accumulation, the step shown is the global step, a bad gradient stops
the training before it is clipped, terminating ends `train()`/`fit()` cleanly, accelerate's
and Lightning's optimizer wrappers are taken off, a LightningModule without `forward` is
attached through its submodule. Every wait is bounded; no assertion depends on timing."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.torch.support import make_session, torch, wait_state, wait_until
from tuidebug.core.session import SessionState
from tuidebug.core.tensor import TensorRef
from tuidebug.online.session import OnlineSession

transformers = pytest.importorskip("transformers")
nn = torch.nn
WAITING = SessionState.WAITING


@pytest.fixture
def session() -> Iterator[OnlineSession]:
    session, _log = make_session()
    try:
        yield session
    finally:
        session.close()


# ------------------------------------------------------------------ transformers' Trainer
class TokenData(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Random token sequences (labels = inputs: causal language modelling)."""

    def __len__(self) -> int:
        return 256

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        x = torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": x, "labels": x}


def tiny_gpt2() -> Any:
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=2, n_positions=32, vocab_size=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def hf_trainer(tmp_path: Path, model: Any, callbacks: list[Any], **args: Any) -> Any:
    args.setdefault("max_steps", 4)
    options = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        **args,
    )
    return transformers.Trainer(
        model=model, args=options, train_dataset=TokenData(), callbacks=callbacks
    )


class Poison(transformers.TrainerCallback):  # type: ignore[misc]
    """+inf out of `module` from optimizer step `at` (1-based, the global step) on."""

    def __init__(self, module: nn.Module, at: int) -> None:
        self.at = at
        self.on = False
        module.register_forward_hook(lambda m, a, out: out * math.inf if self.on else out)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.on = state.global_step + 1 >= self.at


class Thread:
    """Runs `fn` in a daemon thread and keeps its outcome."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.error: BaseException | None = None
        self.result: Any = None
        self.fn = fn
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # the test inspects it
            self.error = exc

    def join(self) -> None:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the training did not finish"


def test_trainer_dump_has_one_iteration_per_optimizer_step_with_its_gradients(
    tmp_path: Path,
) -> None:
    import tuidebug.torch as tdb
    from tuidebug.offline.dump import OfflineDump

    callback = tdb.TrainerCallback(dump_dir=tmp_path / "dump")
    trainer = hf_trainer(tmp_path, tiny_gpt2(), [callback], gradient_accumulation_steps=2)
    trainer.train()
    assert trainer.state.global_step == 4
    assert callback.debugger.optimizer is trainer.optimizer.optimizer  # accelerate's, taken off
    dump = OfflineDump(tmp_path / "dump")
    assert dump.iterations(0) == [0, 1, 2, 3]  # 4 optimizer steps, not 8 micro-batches
    folder = next((tmp_path / "dump" / "rank_0").glob("GPT2LMHeadModel/0/3"))
    grads = [p.name for p in folder.iterdir() if p.name.startswith("ParameterGrad.")]
    # clipped in place after backward, yet dumped: copied at the end of backward
    assert len(grads) == len([p for p in trainer.model.parameters() if p.requires_grad])


def test_trainer_online_stops_at_the_module_and_terminate_ends_train(
    tmp_path: Path, session: OnlineSession, caplog: pytest.LogCaptureFixture
) -> None:
    import tuidebug.torch as tdb

    model = tiny_gpt2()
    poison = Poison(model.transformer.h[1].mlp.c_fc, at=3)
    callback = tdb.TrainerCallback(port=session.port, retry_delay=0.02)
    trainer = hf_trainer(
        tmp_path, model, [poison, callback], max_steps=50, gradient_accumulation_steps=2
    )
    caplog.set_level(logging.WARNING, logger="tuidebug.torch")
    run = Thread(trainer.train)
    wait_state(session, WAITING)
    assert session.metadata.step == 0
    session.create_watchpoint("TO", {}, [])
    session.continue_()
    wait_until(lambda: session.metadata.state is WAITING and bool(session.hits), what="a hit")
    hit = session.hits[0].tensor.node
    assert "/h-ModuleList/1-GPT2Block/mlp-GPT2MLP/c_fc-Conv1D/" in hit, hit
    assert session.metadata.step == 3  # the global step being run
    assert "micro-batch 1 of 2" in caplog.text
    # on the wire too: the hit names its micro-batch (rank_fields.encode_micro_batch)
    assert (session.hits[0].micro_batch, session.hits[0].micro_batches) == (1, 2)
    session.terminate()
    run.join()
    assert run.error is None  # train() returned: no Terminated through the Trainer
    assert trainer.state.global_step == 3


def test_trainer_bad_gradient_stops_before_clipping(tmp_path: Path, session: OnlineSession) -> None:
    import tuidebug.torch as tdb

    model = tiny_gpt2()
    weight = model.transformer.h[0].mlp.c_proj.weight
    weight.register_hook(lambda g: torch.full_like(g, 1e30) if poisoned.is_set() else g)
    poisoned = threading.Event()
    callback = tdb.TrainerCallback(port=session.port, retry_delay=0.02)
    trainer = hf_trainer(tmp_path, model, [callback], max_steps=50, max_grad_norm=1.0)
    run = Thread(trainer.train)
    wait_state(session, WAITING)
    node = next(
        n.name for n in callback.debugger.graph.nodes if n.attributes.get("of") == (
            "transformer.h.0.mlp.c_proj.weight"
        )
    )  # fmt: skip
    session.create_watchpoint("TL", {"max_gt": 1e10}, [node])
    poisoned.set()
    session.continue_()
    wait_until(lambda: session.metadata.state is WAITING and bool(session.hits), what="a hit")
    assert session.metadata.cur_node == node
    value = session.tensor(TensorRef(node))
    # as backward made it: 1e30 everywhere, not the clipped values
    assert value is not None and np.allclose(value, 1e30)
    session.terminate()
    run.join()
    assert run.error is None


def test_trainer_under_torch_compile_records_its_graph_eagerly(tmp_path: Path) -> None:
    """An untraceable model attached through its `torch.compile` wrapper: names without
    `_orig_mod.`, and the recorded first pass never meets dynamo's recompile limit."""

    import tuidebug.torch as tdb

    torch._dynamo.reset()
    limits: list[str] = []

    class Limits(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "recompile_limit" in record.getMessage():
                limits.append(record.getMessage())

    handler = Limits()
    dynamo_log = logging.getLogger("torch._dynamo.convert_frame")
    dynamo_log.addHandler(handler)
    model = tiny_gpt2()
    compiled = torch.compile(model, backend="eager")
    try:
        debugger = tdb.dump(compiled, None, tmp_path / "dump", steps=2)
        assert debugger.model is model
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(3):
            x = TokenData()[i]["input_ids"][None]
            compiled(input_ids=x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad()
            debugger.step_end()
        debugger.close()
        assert debugger.graph is not None and debugger.graph.traced_with == "hooks"
        assert not any("_orig_mod" in n.name for n in debugger.graph.nodes)
        assert "transformer.h.0.mlp.c_fc.weight" in debugger.graph.parameters
        # the recorder used to be traced by dynamo, recompiling at each call until the limit
        assert limits == []
    finally:
        dynamo_log.removeHandler(handler)
        torch._dynamo.reset()


# ------------------------------------------------------------------------------ Lightning
L = pytest.importorskip("lightning.pytorch")


class Wrapped(L.LightningModule):  # type: ignore[misc]
    """No `forward`: `training_step` calls the submodule (the case `attach` missed)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        self.poison_at = 0  # global step (1-based) from which fc2's gradient is 1e30

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def loader() -> Any:
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(256, 4, generator=g), torch.randn(256, 1, generator=g)
    return torch.utils.data.DataLoader(list(zip(x, y, strict=True)), batch_size=4)


def pl_trainer(callbacks: list[Any], **options: Any) -> Any:
    return L.Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
        **options,
    )


def test_lightning_dump_counts_optimizer_steps_of_the_submodule(tmp_path: Path) -> None:
    import tuidebug.torch as tdb
    from tuidebug.offline.dump import OfflineDump

    callback = tdb.LightningCallback(dump_dir=tmp_path / "dump")
    module = Wrapped()
    pl_trainer([callback], max_steps=3, accumulate_grad_batches=2).fit(module, loader())
    assert callback.debugger.model is module.net  # found: the module training_step calls
    dump = OfflineDump(tmp_path / "dump")
    assert dump.iterations(0) == [0, 1, 2]  # optimizer steps, not the 6 micro-batches


def test_lightning_gradient_fault_stops_after_backward_before_the_update(
    session: OnlineSession,
) -> None:
    """Lightning steps through `optimizer.step(closure)`: the optimizer's pre-hook runs
    before the closure's forward, so the gradient is decided at the end of backward."""
    import tuidebug.torch as tdb

    module = Wrapped()
    fc2 = module.net[2]
    poisoned = threading.Event()
    fc2.weight.register_hook(lambda g: torch.full_like(g, math.inf) if poisoned.is_set() else g)
    callback = tdb.LightningCallback(port=session.port, retry_delay=0.02)
    trainer = pl_trainer([callback], max_steps=100, accumulate_grad_batches=2)
    run = Thread(lambda: trainer.fit(module, loader()))
    wait_state(session, WAITING)
    session.create_watchpoint("TO", {}, [])
    session.step(2)
    wait_until(lambda: session.metadata.state is WAITING and session.metadata.step == 2)
    before = fc2.weight.detach().clone()
    poisoned.set()
    session.continue_()
    wait_until(lambda: session.metadata.state is WAITING and bool(session.hits), what="a hit")
    assert session.metadata.step == 3  # the global step, not a micro-batch count
    assert "/2-Linear/" in session.hits[0].tensor.node
    assert "/weight.grad-op" in session.hits[0].tensor.node
    assert torch.equal(fc2.weight.detach(), before)  # not yet updated with the Inf
    session.terminate()
    run.join()
    assert run.error is None  # fit() returned: trainer.should_stop
    assert trainer.global_step == 3


class TwoParts(L.LightningModule):  # type: ignore[misc]
    """No `forward` and two submodules: which one runs is not knowable beforehand."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(4, 8)
        self.head = nn.Linear(8, 1)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.mse_loss(self.head(torch.tanh(self.encoder(x))), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def test_lightning_module_whose_forward_never_runs_is_named(tmp_path: Path) -> None:
    import tuidebug.torch as tdb

    callback = tdb.LightningCallback(dump_dir=tmp_path / "dump")
    with pytest.warns(tdb.DebuggerWarning, match=r"TwoParts\.forward was not called") as got:
        pl_trainer([callback], max_steps=2).fit(TwoParts(), loader())
    ours = [str(w.message) for w in got if issubclass(w.category, tdb.DebuggerWarning)]
    assert len(ours) == 1 and "one of: encoder, head" in ours[0]


def test_wrappers_are_taken_off() -> None:
    from tuidebug.torch.wrappers import unwrap_model, unwrap_optimizer

    model = nn.Linear(2, 2)
    assert unwrap_model(nn.DataParallel(torch.compile(model, backend="eager"))) is model
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    from accelerate.optimizer import AcceleratedOptimizer

    # as accelerate builds it, without its Accelerator: an Optimizer never initialised
    accelerated = AcceleratedOptimizer.__new__(AcceleratedOptimizer)
    accelerated.optimizer = opt
    assert not hasattr(accelerated, "_optimizer_step_pre_hooks")
    assert unwrap_optimizer(accelerated) is opt
    assert unwrap_optimizer(opt) is opt and unwrap_optimizer(None) is None


def test_trainer_terminated_at_the_initial_suspension_stops_after_one_step(
    tmp_path: Path, session: OnlineSession
) -> None:
    import tuidebug.torch as tdb

    callback = tdb.TrainerCallback(port=session.port, retry_delay=0.02)
    trainer = hf_trainer(tmp_path, tiny_gpt2(), [callback], max_steps=50)
    run = Thread(trainer.train)
    wait_state(session, WAITING)
    session.terminate()
    run.join()
    assert run.error is None
    # the Trainer reads its stop flag only after a step: one step runs, without the debugger
    assert trainer.state.global_step == 1
    assert callback.debugger._closed and not callback.debugger.connected


def test_plain_attach_stops_on_a_gradient_at_the_end_of_backward_under_a_closure(
    session: OnlineSession,
) -> None:
    """A hand-written loop with `optimizer.step(closure)` and `clip_grad_norm_` inside the
    closure: the gradient is decided when backward ends, before clipping and the update
    (the optimizer's pre-hook runs before the closure: no check point after backward)."""
    import tuidebug.torch as tdb
    from tests.torch.support import LogNet, Training

    model = LogNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    poisoned = threading.Event()
    model.fc2.weight.register_hook(lambda g: torch.full_like(g, 1e30) if poisoned.is_set() else g)

    def body(dbg: tdb.Debugger) -> None:
        for i in range(100):
            x = torch.rand(4, 4, generator=torch.Generator().manual_seed(i))

            def closure(x: torch.Tensor = x) -> torch.Tensor:
                opt.zero_grad()
                loss = model(x).square().mean()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                return loss

            opt.step(closure)
            dbg.step_end()

    training = Training(model, body, optimizer=opt, port=session.port, retry_delay=0.02)
    training.start()
    wait_state(session, WAITING)
    grad = next(
        n.name for n in tdb.graph_for(model).nodes if n.attributes.get("of") == "fc2.weight"
    )
    session.create_watchpoint("TL", {"max_gt": 1e10}, [grad])
    before = model.fc2.weight.detach().clone()
    poisoned.set()
    session.continue_()
    wait_until(lambda: session.metadata.state is WAITING and bool(session.hits), what="a hit")
    assert session.metadata.cur_node == grad
    value = session.tensor(TensorRef(grad))
    assert value is not None and np.allclose(value, 1e30)  # not clipped yet
    assert torch.equal(model.fc2.weight.detach(), before)  # not updated yet
    session.terminate()
    training.join()
    assert isinstance(training.error, tdb.Terminated)
    Training.stop_all()
