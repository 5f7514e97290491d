"""Evaluation passes (`tuidebug.torch.policy`): a forward of the attached model in eval mode
or under `torch.no_grad()` between training steps (what `Trainer.evaluate` and Lightning's
validation do) is not checked, so a NaN in an evaluation batch neither stops the training nor
shows as the next training step; a `no_grad` region inside a training forward still is, and
`check_eval_passes` checks evaluation passes too. Real training, real server, bounded waits."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.torch.support import TinyCNN, Training, make_session, torch, wait_state, wait_until
from tuidebug.core.session import HitsArrived, SessionState
from tuidebug.online.session import OnlineSession

nn = torch.nn
WAITING = SessionState.WAITING


@pytest.fixture(autouse=True)
def _stop_trainings() -> Iterator[None]:
    yield
    Training.stop_all()


@pytest.fixture
def session() -> Iterator[OnlineSession]:
    session, _log = make_session()
    try:
        yield session
    finally:
        session.close()


def batch(i: int, bad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(i)
    x = torch.randn(4, 1, 8, 8, generator=g)
    return (x * math.inf if bad else x), torch.randn(4, 3, generator=g)


def train_then_evaluate(model: nn.Module, opt: Any, steps: int, how: str) -> Any:
    """Each step: a healthy training step, then an evaluation pass on a +inf batch."""

    def body(dbg: Any) -> None:
        for i in range(steps):
            x, y = batch(i)
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            dbg.step_end()
            bad, _ = batch(i, bad=True)
            if how == "eval":
                model.eval()
                model(bad)  # eval mode alone (grad on): still an evaluation pass
                model.train()
            else:
                with torch.no_grad():
                    model(bad)

    return body


def run(session: OnlineSession, how: str) -> tuple[Training, list[Any]]:
    torch.manual_seed(0)
    model = TinyCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    seen: list[Any] = []
    session.subscribe(lambda e: seen.extend(e.hits) if isinstance(e, HitsArrived) else None)
    training = Training(
        model, train_then_evaluate(model, opt, 4, how), optimizer=opt, port=session.port,
        retry_delay=0.02,
    )  # fmt: skip
    training.start()
    wait_state(session, WAITING)
    session.create_watchpoint("TO", {}, [])
    session.continue_()
    return training, seen


@pytest.mark.parametrize("how", ["eval", "no_grad"])
def test_an_evaluation_pass_is_not_checked(session: OnlineSession, how: str) -> None:
    training, seen = run(session, how)
    training.join()
    assert training.error is None
    assert seen == []  # the +inf evaluation batches stopped nothing
    assert session.metadata.step == 4


def test_check_eval_passes_checks_them(
    session: OnlineSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tuidebug.torch as tdb

    monkeypatch.setattr(tdb.Debugger, "check_eval_passes", True)
    training, _seen = run(session, "no_grad")
    wait_until(lambda: session.metadata.state is WAITING and bool(session.hits), what="a hit")
    assert session.metadata.step == 2  # the evaluation after step 1 counts in step 2's run
    session.terminate()
    training.join()


def test_no_grad_inside_a_training_forward_is_checked(session: OnlineSession) -> None:
    """A frozen part run under no_grad inside the training forward is part of the step."""

    class Frozen(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone = nn.Linear(4, 4)
            self.head = nn.Linear(4, 3)
            self.poison = False

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                h = self.backbone(x * (math.inf if self.poison else 1.0))
            return self.head(h)

    torch.manual_seed(0)
    model = Frozen()
    opt = torch.optim.SGD(model.head.parameters(), lr=0.01)
    stop = threading.Event()

    def body(dbg: Any) -> None:
        for i in range(50):
            if stop.is_set():
                return
            model.poison = i == 2
            x = torch.randn(4, 4)
            nn.functional.mse_loss(model(x), torch.randn(4, 3)).backward()
            opt.step()
            opt.zero_grad()
            dbg.step_end()

    training = Training(model, body, optimizer=opt, port=session.port, stop=stop).start()
    wait_state(session, WAITING)
    session.create_watchpoint("TO", {}, [])
    session.continue_()
    wait_until(lambda: session.metadata.state is WAITING and bool(session.hits), what="a hit")
    assert session.metadata.step == 3  # in step 3's run, before its end
    assert "backbone" in session.hits[0].tensor.node
    session.terminate()
    training.join()


# ------------------------------------------------------------------ the frameworks' eval
def test_trainer_evaluate_with_nan_does_not_stop_the_training(
    session: OnlineSession, tmp_path: Path
) -> None:
    """`Trainer` evaluating every 2 steps on batches whose c_fc writes +inf in eval mode."""
    transformers = pytest.importorskip("transformers")
    import tuidebug.torch as tdb
    from tests.torch.test_torch_frameworks import Thread, TokenData, tiny_gpt2

    model = tiny_gpt2()
    c_fc = model.transformer.h[1].mlp.c_fc
    c_fc.register_forward_hook(lambda m, a, out: out if m.training else out * math.inf)
    callback = tdb.TrainerCallback(port=session.port, retry_delay=0.02)
    options = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
        per_device_eval_batch_size=2, report_to=[], use_cpu=True, save_strategy="no",
        logging_strategy="no", disable_tqdm=True, max_steps=4, eval_strategy="steps",
        eval_steps=2,
    )  # fmt: skip
    trainer = transformers.Trainer(
        model=model, args=options, train_dataset=TokenData(), callbacks=[callback],
        eval_dataset=torch.utils.data.Subset(TokenData(), range(4)),
    )  # fmt: skip
    seen: list[Any] = []
    session.subscribe(lambda e: seen.extend(e.hits) if isinstance(e, HitsArrived) else None)
    run = Thread(trainer.train)
    wait_state(session, WAITING)
    session.create_watchpoint("TO", {}, [])
    session.continue_()
    run.join()
    assert run.error is None
    assert trainer.state.global_step == 4
    assert any("eval_loss" in entry for entry in trainer.state.log_history)  # it evaluated
    assert seen == []


def test_lightning_validation_and_sanity_check_are_not_checked(session: OnlineSession) -> None:
    pytest.importorskip("lightning")
    import tuidebug.torch as tdb
    from tests.torch.test_torch_frameworks import Thread, Wrapped, loader, pl_trainer

    class Validated(Wrapped):  # type: ignore[misc,valid-type]
        validated = 0

        def validation_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            x, y = batch
            type(self).validated += 1
            return nn.functional.mse_loss(self.net(x * math.inf), y)

    module = Validated()
    callback = tdb.LightningCallback(port=session.port, retry_delay=0.02)
    trainer = pl_trainer(
        [callback], max_steps=4, val_check_interval=2, limit_val_batches=2,
        num_sanity_val_steps=2,
    )  # fmt: skip
    seen: list[Any] = []
    session.subscribe(lambda e: seen.extend(e.hits) if isinstance(e, HitsArrived) else None)
    run = Thread(lambda: trainer.fit(module, loader(), loader()))
    wait_state(session, WAITING)
    session.create_watchpoint("TO", {}, [])
    session.continue_()
    run.join()
    assert run.error is None
    assert Validated.validated >= 4  # the sanity check and two validations ran
    assert seen == []
