"""transformers' `Trainer` under tuidebug: a tiny random-init GPT-2 (built from a config,
nothing downloaded) learns random tokens; from global step `--poison` its
`transformer.h.1.mlp.c_fc` writes +inf.

    tuidebug online --port 50051                                  # terminal 1
    python examples/torch_trainer.py --port 50051 --poison 8      # terminal 2

Accept the recommended watchpoints and continue: the training stops in step 8 at `c_fc`, the
module that produced the Inf (`--accumulate 4`: the step is still the optimizer's step 8, and
the training's stderr names the micro-batch). Terminate: `train()` returns at that step. Or
write a dump and check it headless:

    python examples/torch_trainer.py --dump /tmp/hf_dump --poison 3
    tuidebug check /tmp/hf_dump --watch TO
"""

from __future__ import annotations

import argparse
import math
import tempfile
from typing import Any

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from transformers import TrainerCallback as HFCallback

import tuidebug.torch as tdb


class RandomTokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 4096

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        x = torch.randint(0, 128, (32,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": x, "labels": x}


class Poison(HFCallback):
    """+inf out of `module` from global step `at` (1-based) on; 0: never."""

    def __init__(self, module: torch.nn.Module, at: int) -> None:
        self.at, self.on = at, False
        module.register_forward_hook(lambda m, a, out: out * math.inf if self.on else out)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.on = 0 < self.at <= state.global_step + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=50051)
    parser.add_argument("--dump", metavar="DIR", help="write a dump instead of attaching")
    parser.add_argument("--poison", type=int, default=0, help="global step of the fault")
    parser.add_argument("--accumulate", type=int, default=1, help="micro-batches per step")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=128)
    model = GPT2LMHeadModel(config)
    debug = tdb.TrainerCallback(dump_dir=args.dump) if args.dump else tdb.TrainerCallback(
        port=args.port
    )  # fmt: skip
    options = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        max_steps=args.steps,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=args.accumulate,
        learning_rate=5e-4,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
    )
    poison = Poison(model.transformer.h[1].mlp.c_fc, args.poison)
    trainer = Trainer(
        model=model, args=options, train_dataset=RandomTokens(), callbacks=[poison, debug]
    )
    trainer.train()
    print(f"trained {trainer.state.global_step} steps")


if __name__ == "__main__":
    main()
