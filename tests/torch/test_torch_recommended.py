"""The recommended watchpoints on a PyTorch training (a tiny random-init HF GPT-2 attached
to the real server): no stop on a healthy model in its first 20 steps (MindInsight's rules
stopped it at step 0 on its zero biases and at step 1 on their update ratio), and a module
that outputs huge-but-finite values is named itself by tensor too large, not the module
where they later turn into Inf/NaN. MindSpore sessions keep MindInsight's set exactly
(tests/core/test_watchpoints.py, tests/offline)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import tuidebug.torch as tdb
from tests.torch.support import Training, make_session, torch, wait_state, wait_until
from tuidebug.core.session import SessionState
from tuidebug.online.session import OnlineSession

transformers = pytest.importorskip("transformers")
WAITING = SessionState.WAITING


@pytest.fixture
def session() -> Iterator[OnlineSession]:
    session, _log = make_session()
    try:
        yield session
    finally:
        session.close()
        Training.stop_all()


def gpt2() -> Any:
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=2, n_positions=32, vocab_size=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def train(model: Any, steps: int, stop: threading.Event) -> Any:
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)

    def body(dbg: tdb.Debugger) -> None:
        for i in range(steps):
            if stop.is_set():
                return
            x = torch.randint(0, 64, (4, 16), generator=torch.Generator().manual_seed(i))
            model(input_ids=x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad()
            dbg.step_end()

    return opt, body


def test_a_healthy_gpt2_runs_20_steps_without_a_stop(session: OnlineSession) -> None:
    model = gpt2()
    stop = threading.Event()
    opt, body = train(model, 20, stop)
    training = Training(model, body, optimizer=opt, port=session.port, stop=stop)
    training.start()
    wait_state(session, WAITING)
    created = {w.condition.id for w in session.apply_recommended()}
    assert {"weight_initialization", "weight_change_too_large", "tensor_too_large"} <= created
    session.continue_()
    wait_state(session, SessionState.DONE, timeout=60)
    assert not session.hits
    training.join()
    assert training.error is None


def test_a_huge_output_is_named_at_the_module_that_produced_it(session: OnlineSession) -> None:
    model = gpt2()
    c_fc = model.transformer.h[0].mlp.c_fc
    huge = threading.Event()
    c_fc.register_forward_hook(lambda m, a, out: out * 1e30 if huge.is_set() else out)
    stop = threading.Event()
    opt, body = train(model, 50, stop)
    training = Training(model, body, optimizer=opt, port=session.port, stop=stop)
    training.start()
    wait_state(session, WAITING)
    session.apply_recommended()
    huge.set()
    session.continue_()
    wait_until(lambda: session.metadata.state is WAITING and bool(session.hits), what="a hit")
    first = session.hits[0]
    assert "/h-ModuleList/0-GPT2Block/mlp-GPT2MLP/c_fc-Conv1D/" in first.tensor.node
    assert first.condition.id == "tensor_too_large"  # finite: TensorOverflow says nothing
    stop.set()
    session.terminate()
    training.join()


def test_only_a_torch_graph_gets_the_torch_rules() -> None:
    """The same graph: MindSpore's set (no framework) is MindInsight's — biases watched by
    WI/WCL, no tensor too large; PyTorch's leaves 1-D parameters to the other conditions."""
    from tests.torch.support import TinyCNN
    from tuidebug.core.watchpoints import TORCH, framework_of, recommended_watchpoints

    graph = tdb.build_graph(TinyCNN())
    ms = {r.condition: r for r in recommended_watchpoints(graph, "GPU", step=0)}
    pt = {r.condition: r for r in recommended_watchpoints(graph, "GPU", 0, framework=TORCH)}
    assert "tensor_too_large" not in ms and "tensor_too_large" in pt
    assert "conv1.bias" in ms["weight_initialization"].targets
    assert pt["weight_initialization"].targets == ("conv1.weight", "fc1.weight", "fc2.weight")
    assert pt["weight_change_too_large"].targets == pt["weight_initialization"].targets
    assert framework_of(f"torch-{torch.__version__}") == TORCH and framework_of("2.3.0") == ""


class Block(torch.nn.Module):
    """torchvision's BasicBlock: conv-BN-ReLU-conv-BN, + identity, ReLU."""

    def __init__(self, width: int) -> None:
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + x)


class TinyResNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True)
        )
        self.layer1 = nn.Sequential(Block(16), Block(16))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.layer1(self.stem(x))), 1))


def test_a_healthy_resnet_runs_20_steps_without_a_stop(session: OnlineSession) -> None:
    torch.manual_seed(0)
    model = TinyResNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    stop = threading.Event()

    def body(dbg: tdb.Debugger) -> None:
        for i in range(20):
            g = torch.Generator().manual_seed(i)
            x, y = torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 10, (8,), generator=g)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            dbg.step_end()

    training = Training(model, body, optimizer=opt, port=session.port, stop=stop)
    training.start()
    wait_state(session, WAITING)
    assert session.apply_recommended()
    session.continue_()
    wait_state(session, SessionState.DONE, timeout=60)
    assert not session.hits
    training.join()
    assert training.error is None
