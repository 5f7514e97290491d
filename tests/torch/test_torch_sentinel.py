"""The headless sentinel (`run_sentinel` on a real `JobSession`) against a real PyTorch
training in this process: a healthy model under `--recommended --until-hit` runs to its end
and exits 0 (check errors are not hits). Every wait is bounded."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.torch.support import TinyCNN, Training, sgd_loop, torch
from tuidebug.cli.online_sentinel import run_sentinel
from tuidebug.online.job import JobSession


@pytest.fixture(autouse=True)
def _stop_trainings() -> Iterator[None]:
    yield
    Training.stop_all()


def cnn_batches(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(i)
    return torch.randn(4, 1, 8, 8, generator=g), torch.randn(4, 3, generator=g)


@pytest.mark.parametrize("optimizer", [True, False])
def test_healthy_training_under_recommended_until_hit_exits_0(optimizer: bool) -> None:
    """With and without the optimizer given to attach (the weight-change previous value is
    then taken at the step end): no stop, no hit, exit 0, a JSON array of check errors
    only (none at all here)."""
    job = JobSession(port=0)
    job.start()
    try:
        out = io.StringIO()
        codes: list[int] = []
        sentinel = threading.Thread(
            target=lambda: codes.append(
                run_sentinel(job, [], recommended=True, as_json=True, out=out, connect_timeout=120)
            ),
            daemon=True,
        )
        sentinel.start()
        torch.manual_seed(0)
        model = TinyCNN()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        body = sgd_loop(model, opt, 6, batch=cnn_batches)
        training = Training(
            model, body, optimizer=opt if optimizer else None, port=job.port, retry_delay=0.02
        ).start()
        training.join(120)
        sentinel.join(60)
        assert training.error is None
        assert codes == [0]
        records = json.loads(out.getvalue())
        assert all(r["check_error"] for r in records)  # no finding on a healthy model
        assert {spec.split(":")[0] for spec in (w.spec for w in job.watchpoints)} >= {"WCL"}
    finally:
        job.close()


def test_a_trainer_hit_under_accumulation_names_its_micro_batch(tmp_path: Any) -> None:
    """`--watch TO --until-hit --json` on a `Trainer` with 2 micro-batches per step whose
    c_fc writes +inf from step 3: exit 1, the hit's `micro_batch` is 1, `train()` returns."""
    pytest.importorskip("transformers")
    import tuidebug.torch as tdb
    from tests.torch.test_torch_frameworks import Poison, Thread, hf_trainer, tiny_gpt2
    from tuidebug.cli.watch_options import parse_watch_option

    job = JobSession(port=0)
    job.start()
    try:
        out = io.StringIO()
        codes: list[int] = []
        options = [parse_watch_option("TO")]
        sentinel = threading.Thread(
            target=lambda: codes.append(
                run_sentinel(job, options, recommended=False, as_json=True, out=out)
            ),
            daemon=True,
        )
        sentinel.start()
        model = tiny_gpt2()
        poison = Poison(model.transformer.h[1].mlp.c_fc, at=3)
        callback = tdb.TrainerCallback(port=job.port, retry_delay=0.02)
        trainer = hf_trainer(
            tmp_path, model, [poison, callback], max_steps=20, gradient_accumulation_steps=2
        )
        run = Thread(trainer.train)
        run.join()
        sentinel.join(60)
        assert run.error is None  # terminated cleanly: train() returned
        assert codes == [1]
        records = json.loads(out.getvalue())
        hits = [r for r in records if not r["check_error"]]
        assert hits and hits[0]["step"] == 3 and hits[0]["micro_batch"] == 1
        assert "c_fc" in hits[0]["node"]
    finally:
        job.close()
