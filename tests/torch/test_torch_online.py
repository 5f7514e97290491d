"""A real PyTorch training in this process, attached to the real server (`OnlineSession` on
an ephemeral loopback port): initial suspension, continue to the NaN's origin, pause, step,
terminate, node stepping, tensor views, change conditions, and what happens without a
server. Every wait is bounded; no assertion depends on timing."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tuidebug.torch as tdb
import tuidebug.torch.check_items as torch_check_items
import tuidebug.torch.debugger as torch_debugger
from tests.torch.support import (
    LogNet,
    TinyCNN,
    Training,
    free_port,
    make_session,
    node_named,
    sgd_loop,
    torch,
    wait_state,
    wait_until,
)
from tuidebug.core.session import SessionState
from tuidebug.core.tensor import TensorRef
from tuidebug.online.session import OnlineSession
from tuidebug.torch.debugger import INTERACTIVE_SECONDS
from tuidebug.torch.stats import to_numpy

nn = torch.nn
WAITING = SessionState.WAITING
FOREVER = 1_000_000  # steps: the test ends the training itself


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


def cnn_batches(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(i)
    return torch.randn(4, 1, 8, 8, generator=g), torch.randn(4, 3, generator=g)


def log_batches(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(i)
    return torch.randn(4, 4, generator=g), torch.randn(4, 3, generator=g)


def start(
    session: OnlineSession,
    model: nn.Module,
    steps: int,
    batches: Any = cnn_batches,
    *,
    lr: float = 0.01,
    record: list[int] | None = None,
    before: Any = None,
    forward: Any = None,
    **attach: Any,
) -> Training:
    torch.manual_seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    attach.setdefault("retry_delay", 0.02)
    stop = threading.Event()
    body = sgd_loop(
        model, opt, steps, batch=batches, before=before, record=record, stop=stop, forward=forward
    )
    return Training(model, body, optimizer=opt, port=session.port, stop=stop, **attach).start()


def waiting(session: OnlineSession) -> bool:
    return session.metadata.state is WAITING


def finish(session: OnlineSession, training: Training) -> None:
    """Terminate a training that is still suspended and wait for its thread."""
    if not training.finished.is_set():
        wait_state(session, WAITING)
        session.terminate()
    training.join()


# ------------------------------------------------------------------------------ session
def test_attach_sends_graph_and_suspends_before_the_first_step(session: OnlineSession) -> None:
    model = TinyCNN()
    done: list[int] = []
    training = start(session, model, 3, record=done)
    wait_state(session, WAITING)
    md = session.metadata
    assert md.step == 0
    assert md.backend == "GPU"
    assert md.ms_version == f"torch-{torch.__version__}"
    assert done == []  # suspended before training
    graph = session.graphs["kernel_graph0"]
    assert graph.node("Default/TinyCNN/conv1-Conv2d/Conv2d-op1").op_type == "Conv2d"
    assert graph.node("conv1.weight").ui_name == "Default/TinyCNN/conv1-Conv2d/conv1.weight"
    assert session.capabilities.can_step_node
    session.continue_()
    training.join()
    assert training.error is None
    assert done == [0, 1, 2]
    wait_state(session, SessionState.DONE)  # training_done at close()


def test_continue_stops_at_the_module_that_produced_the_nan(session: OnlineSession) -> None:
    model = LogNet()
    poison_step = 2  # 0-based: the third step's Log produces NaN

    def before(i: int) -> None:
        model.offset = -100.0 if i >= poison_step else 1.0

    training = start(session, model, 10, log_batches, before=before)
    wait_state(session, WAITING)
    session.create_watchpoint("TO", {}, [])  # tensor overflow on every node
    session.continue_()
    wait_until(lambda: waiting(session) and bool(session.hits), what="the first hit")
    graph = tdb.graph_for(model)
    log_node = node_named(graph, "/log-Log/")
    fc2_node = node_named(graph, "/fc2-Linear/")
    md = session.metadata
    assert md.cur_node == log_node  # suspended inside the step, at the origin
    assert md.step == poison_step + 1
    assert [h.tensor.node for h in session.hits] == [log_node]
    assert session.hits[0].error_code == 0
    # checked at the end of the forward pass: the kernels after the origin have run (their
    # tensors are there), the hit and the suspension name the origin
    downstream = session.tensor(TensorRef(fc2_node))
    assert downstream is not None and np.isnan(downstream).all()
    origin = session.tensor(TensorRef(log_node))
    assert origin is not None and np.isnan(origin).any()

    session.continue_()  # the next stop is the next module that carries the NaN on
    wait_until(lambda: waiting(session) and session.metadata.cur_node == fc2_node, what="fc2")
    assert [h.tensor.node for h in session.hits] == [log_node, fc2_node]
    finish(session, training)
    assert isinstance(training.error, tdb.Terminated)


def test_pause_step_and_terminate(session: OnlineSession) -> None:
    done: list[int] = []
    training = start(session, TinyCNN(), FOREVER, record=done)
    wait_state(session, WAITING)
    session.continue_()
    wait_until(lambda: session.metadata.step >= 3, what="three steps")
    session.pause()
    wait_state(session, WAITING)
    paused_at = session.metadata.step
    assert session.metadata.cur_node == ""  # pause takes effect at a step end
    wait_until(lambda: len(done) == paused_at - 1)  # suspended inside step_end
    session.step(2)
    wait_until(
        lambda: waiting(session) and session.metadata.step == paused_at + 2, what="two steps"
    )
    assert len(done) == paused_at + 1
    session.terminate()
    training.join()
    assert isinstance(training.error, tdb.Terminated)
    assert len(done) == paused_at + 1  # the step that was told to terminate never returned
    assert session.metadata.state is SessionState.DONE


def test_continue_runs_free_with_few_wait_cmds(
    session: OnlineSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no time limit on free running, so the counts below do not depend on the machine
    monkeypatch.setattr(torch_debugger, "FREE_RUN_SECONDS", 3600.0)
    done: list[int] = []
    training = start(session, TinyCNN(), 120, record=done)
    wait_state(session, WAITING)
    session.step(50)  # one RunCMD{step, run_steps=50}: the client asks again after 50
    wait_until(lambda: waiting(session) and session.metadata.step == 50, what="50 steps")
    wait_until(lambda: len(done) == 49)  # suspended inside the 50th step_end
    dbg = training.debugger
    assert dbg is not None and dbg.waits == 1
    session.continue_()  # no watchpoint: the remaining 70 steps without a single WaitCMD
    training.join()
    assert training.error is None and len(done) == 120
    assert dbg.waits == 1
    wait_state(session, SessionState.DONE)


def test_step_n_counts_the_steps_a_free_running_client_ran(session: OnlineSession) -> None:
    done: list[int] = []

    def slow_fourth(i: int) -> None:
        if i == 3:  # longer than FREE_RUN_SECONDS: the client asks again after step 4
            time.sleep(2 * torch_debugger.FREE_RUN_SECONDS)

    training = start(session, TinyCNN(), FOREVER, record=done, before=slow_fourth)
    wait_state(session, WAITING)
    session.step(10)
    wait_until(lambda: waiting(session) and session.metadata.step == 10, what="ten steps")
    wait_until(lambda: len(done) == 9)
    dbg = training.debugger
    assert dbg is not None and 2 <= dbg.waits <= 10
    finish(session, training)
    assert len(done) == 9  # exactly ten steps: the step count survived the early WaitCMD


def test_pause_stops_a_free_running_client(session: OnlineSession) -> None:
    done: list[int] = []
    training = start(session, TinyCNN(), FOREVER, record=done)
    wait_state(session, WAITING)
    session.continue_()
    wait_until(lambda: len(done) >= 30, what="thirty steps")
    session.pause()
    # the client asks within FREE_RUN_SECONDS plus one step and is then held there
    wait_state(session, WAITING)
    paused_at = session.metadata.step
    wait_until(lambda: len(done) == paused_at - 1)  # suspended inside step_end
    dbg = training.debugger
    assert dbg is not None and dbg.step == paused_at
    session.step(3)  # a pause left no stale step budget behind
    wait_until(
        lambda: waiting(session) and session.metadata.step == paused_at + 3, what="three steps"
    )
    finish(session, training)
    assert len(done) == paused_at + 2


def test_step_n_after_an_input_hit_runs_n_steps(session: OnlineSession) -> None:
    def nan_third_batch(i: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = cnn_batches(i)
        if i == 2:
            x[0, 0, 0, 0] = float("nan")
        return x, y

    done: list[int] = []
    training = start(session, TinyCNN(), FOREVER, nan_third_batch, record=done)
    wait_state(session, WAITING)
    session.create_watchpoint("TO", {}, ["args0"])
    session.continue_()
    # the input check suspends step 3 before its forward, named after the input
    wait_until(lambda: waiting(session) and bool(session.hits), what="the input hit")
    assert session.metadata.step == 3 and session.metadata.cur_node.endswith("args0")
    session.step(2)  # the rest of step 3, then step 4
    wait_until(lambda: waiting(session) and session.metadata.step == 4, what="step 4")
    wait_until(lambda: len(done) == 3)
    assert session.metadata.cur_node == ""
    finish(session, training)
    assert len(done) == 3


def test_terminate_at_the_initial_suspension(session: OnlineSession) -> None:
    done: list[int] = []
    training = start(session, TinyCNN(), 5, record=done)
    wait_state(session, WAITING)
    session.terminate()
    training.join()
    assert isinstance(training.error, tdb.Terminated)
    assert done == []


def test_hooks_are_out_while_nothing_is_watched(session: OnlineSession) -> None:
    model = TinyCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    capturing: list[tuple[bool, bool]] = []

    stop = threading.Event()

    def body(dbg: tdb.Debugger) -> None:
        loss_fn = nn.MSELoss()
        for i in range(FOREVER):
            if stop.is_set():
                return
            x, y = cnn_batches(i)
            loss_fn(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            dbg.step_end()
            capturing.append(dbg.capturing)

    training = Training(
        model, body, optimizer=opt, port=session.port, keep="watched", stop=stop
    ).start()
    wait_state(session, WAITING)
    session.continue_()
    wait_until(lambda: len(capturing) >= 2, what="two steps")
    session.pause()
    wait_state(session, WAITING)
    assert set(capturing) == {(False, False)}  # continue, nothing watched: no hooks at all
    conv = node_named(tdb.graph_for(model), "/conv1-Conv2d/")
    session.create_watchpoint("TO", {}, [conv])
    session.step(1)
    wait_until(lambda: waiting(session) and capturing[-1] == (True, False), what="forward hooks")
    finish(session, training)


# ------------------------------------------------------------------------------ tensors
def test_tensor_views_equal_the_torch_tensors(session: OnlineSession) -> None:
    model = TinyCNN()
    seen: dict[str, torch.Tensor] = {}

    def keep_output(name: str) -> Any:
        def hook(module: nn.Module, args: Any, out: torch.Tensor) -> None:
            seen[name] = out.detach().clone()
            seen[name + ".in"] = args[0].detach().clone()
            if out.requires_grad:
                out.register_hook(lambda g: seen.__setitem__(name + ".grad", g.clone()))

        return hook

    model.conv1.register_forward_hook(keep_output("conv1"))
    model.sig.register_forward_hook(keep_output("sig"))
    model.fc1.weight.register_post_accumulate_grad_hook(
        lambda p: seen.__setitem__("fc1.weight.grad", p.grad.clone())
    )
    training = start(session, model, 3, keep="all", keep_output_grads=True)
    wait_state(session, WAITING)
    session.step(1)
    wait_until(lambda: waiting(session) and session.metadata.step == 1, what="step 1")
    graph = tdb.graph_for(model)
    conv = node_named(graph, "/conv1-Conv2d/")
    sig = node_named(graph, "/sig-Sigmoid/")

    def value(node: str, slot: int = 0) -> np.ndarray:
        got = session.tensor(TensorRef(node, slot))
        assert got is not None, node
        return got

    np.testing.assert_array_equal(value(conv), seen["conv1"].numpy())
    np.testing.assert_array_equal(value(sig), seen["sig"].numpy())
    np.testing.assert_array_equal(value("args0"), seen["conv1.in"].numpy())
    # parameters: their value after the optimizer step
    np.testing.assert_array_equal(value("fc1.weight"), model.fc1.weight.detach().numpy())
    # gradients survive optimizer.zero_grad() before step_end()
    pgrad = graph.param_grad_of["fc1.weight"].name
    np.testing.assert_array_equal(value(pgrad), seen["fc1.weight.grad"].numpy())
    ograd = graph.output_grad_of[sig].name
    np.testing.assert_array_equal(value(ograd), seen["sig.grad"].numpy())
    stats = session.tensor_statistics(TensorRef(conv))
    assert stats is not None
    assert stats.count == seen["conv1"].numel()
    assert stats.max_value == pytest.approx(float(seen["conv1"].max()))
    # only parameters watched by a change condition keep a previous value
    assert session.tensor(TensorRef("fc1.weight"), previous=True) is None
    finish(session, training)


def test_auto_keep_holds_every_tensor_after_a_long_suspension(session: OnlineSession) -> None:
    model = TinyCNN()
    training = start(session, model, 3)  # keep="auto"
    wait_state(session, WAITING)
    time.sleep(2 * INTERACTIVE_SECONDS)  # someone looks at the initial suspension
    session.step(1)
    wait_until(lambda: waiting(session) and session.metadata.step == 1, what="step 1")
    graph = tdb.graph_for(model)
    assert session.tensor(TensorRef(node_named(graph, "/conv1-Conv2d/"))) is not None
    finish(session, training)


def test_a_tensor_changed_in_place_later_is_reported_missing(session: OnlineSession) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True), nn.Linear(4, 3))
    training = start(session, model, 3, log_batches, keep="all")
    wait_state(session, WAITING)
    session.step(1)
    wait_until(lambda: waiting(session) and session.metadata.step == 1, what="step 1")
    graph = tdb.graph_for(model)
    first = node_named(graph, "/0-Linear/")
    relu = node_named(graph, "/1-ReLU/")
    # the in-place ReLU overwrote the first Linear's output: no wrong values are shown
    assert session.tensor(TensorRef(first)) is None
    relu_out = session.tensor(TensorRef(relu))
    assert relu_out is not None and (relu_out >= 0).all()
    finish(session, training)


def test_weight_change_hits_at_step_end_in_execution_order(session: OnlineSession) -> None:
    model = LogNet()
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    training = start(session, model, 5, log_batches, lr=50.0)
    wait_state(session, WAITING)
    session.create_watchpoint("WCL", {"abs_mean_update_ratio_gt": 0.5}, [])
    session.continue_()
    wait_until(lambda: waiting(session) and bool(session.hits), what="weight change hits")
    assert session.metadata.step == 1 and session.metadata.cur_node == ""
    names = [h.tensor.node for h in session.hits]
    order = [n for n, _ in model.named_parameters()]
    assert names and names == sorted(names, key=order.index)
    assert all(h.error_code == 0 and h.hit_params for h in session.hits)
    name = names[0]
    before = session.tensor(TensorRef(name), previous=True)
    assert before is not None
    np.testing.assert_array_equal(before, initial[name].numpy())
    after = session.tensor(TensorRef(name))
    np.testing.assert_array_equal(after, dict(model.named_parameters())[name].detach().numpy())
    finish(session, training)


def test_weight_initialization_is_checked_at_the_initial_suspension(
    session: OnlineSession,
) -> None:
    model = LogNet()
    with torch.no_grad():
        model.fc2.weight.zero_()
    done: list[int] = []
    training = start(session, model, 3, log_batches, record=done)
    wait_state(session, WAITING)
    session.create_watchpoint("WI", {"zero_percentage_ge": 100.0}, [])
    session.continue_()  # the server rechecks first: the hit keeps the training suspended
    wait_until(lambda: waiting(session) and bool(session.hits), what="the WI hit")
    assert [h.tensor.node for h in session.hits] == ["fc2.weight"]
    assert session.metadata.step == 0 and done == []
    finish(session, training)


class Branchy(nn.Module):
    """Data-dependent control flow: `torch.fx` cannot trace it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.act = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if h.sum() > 1e9:
            h = -h
        return self.act(h)


def test_untraceable_model_sends_its_graph_after_the_first_forward(
    session: OnlineSession,
) -> None:
    model = Branchy()
    done: list[int] = []
    training = start(session, model, 3, log_batches, record=done)
    assert training.attached.wait(20)  # attach returns at once: nothing to send yet
    wait_state(session, WAITING)
    graph = session.graphs["kernel_graph0"]
    tanh = next(n for n in graph if n.op_type == "Tanh")
    assert tanh.outputs[0].shape == (4, 3)  # recorded from the real pass
    assert done == [] and session.metadata.step == 0
    session.create_watchpoint("TO", {}, [])
    session.continue_()
    training.join()
    assert training.error is None and done == [0, 1, 2]
    assert session.hits == ()


# ------------------------------------------------------------------------- node stepping
def test_next_node_and_run_to_node_suspend_inside_the_forward(session: OnlineSession) -> None:
    model = TinyCNN()
    seen: dict[str, torch.Tensor] = {}
    model.relu1.register_forward_hook(
        lambda m, a, out: seen.__setitem__("relu", out.detach().clone())
    )
    training = start(session, model, 3)
    wait_state(session, WAITING)
    graph = tdb.graph_for(model)
    conv = node_named(graph, "/conv1-Conv2d/")
    relu = node_named(graph, "/relu1-ReLU/")
    fc2 = node_named(graph, "/fc2-Linear/")

    session.step_node()
    wait_until(lambda: waiting(session) and session.metadata.cur_node == conv, what="conv1")
    session.step_node()
    wait_until(lambda: waiting(session) and session.metadata.cur_node == relu, what="relu1")
    got = session.tensor(TensorRef(relu))
    assert got is not None
    np.testing.assert_array_equal(got, seen["relu"].numpy())
    assert session.tensor(TensorRef(fc2)) is None  # not run yet
    session.step_node(fc2)
    wait_until(lambda: waiting(session) and session.metadata.cur_node == fc2, what="fc2")
    assert session.tensor(TensorRef(fc2)) is not None
    assert session.metadata.step == 1  # still inside the first step
    session.continue_()
    training.join()
    assert training.error is None


# ------------------------------------------------------------------------ no debugger
def test_training_goes_on_with_a_warning_when_no_debugger_listens() -> None:
    model = TinyCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.warns(tdb.DebuggerWarning, match="without the debugger"):
        dbg = tdb.attach(model, opt, port=free_port())
    assert not dbg.connected
    sgd_loop(model, opt, 3, batch=cnn_batches)(dbg)
    assert dbg.step == 3
    dbg.close()


def test_no_debugger_with_raise_policy_raises() -> None:
    with pytest.raises(tdb.DebuggerUnavailable):
        tdb.attach(TinyCNN(), port=free_port(), on_disconnect="raise")


@pytest.mark.filterwarnings("ignore::tuidebug.torch.DebuggerWarning")
def test_debugger_lost_mid_training_continue_policy(
    session: OnlineSession, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tuidebug.torch")
    done: list[int] = []
    # runs until the test stops it: a short training could end inside one free run
    # (FREE_RUN_SECONDS without a WaitCMD) and never notice the debugger was gone
    training = start(session, TinyCNN(), FOREVER, record=done)
    wait_state(session, WAITING)
    session.continue_()
    wait_until(lambda: session.metadata.step >= 2, what="two steps")
    session.close()
    wait_until(lambda: "Lost the debugger" in caplog.text, what="the loss noticed")
    steps_then = len(done)
    wait_until(lambda: len(done) >= steps_then + 5, what="the training going on")
    training.stop.set()
    training.join(60)
    assert training.error is None
    assert done == list(range(len(done)))


def test_debugger_lost_mid_training_raise_policy(session: OnlineSession) -> None:
    done: list[int] = []
    training = start(session, TinyCNN(), FOREVER, record=done, on_disconnect="raise")
    wait_state(session, WAITING)
    session.continue_()
    wait_until(lambda: session.metadata.step >= 2, what="two steps")
    session.close()
    training.join(60)
    assert isinstance(training.error, tdb.DebuggerUnavailable)


@pytest.mark.filterwarnings("ignore::tuidebug.torch.DebuggerWarning")
def test_wait_policy_blocks_until_a_debugger_comes() -> None:
    port = free_port()
    done: list[int] = []
    model = TinyCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    body = sgd_loop(model, opt, 2, batch=cnn_batches, record=done)
    training = Training(
        model, body, optimizer=opt, port=port, on_disconnect="wait", retry_delay=0.02
    ).start()
    session = OnlineSession("127.0.0.1", port, wait_slice=0.1)
    try:
        session.start()
        wait_state(session, WAITING)
        assert done == []
        session.continue_()
        training.join()
        assert training.error is None and done == [0, 1]
    finally:
        session.close()


class Scale(nn.Module):
    """A leaf module multiplying by `factor` (in the input's dtype: under autocast a huge
    factor overflows bfloat16/float16 to Inf here first)."""

    def __init__(self) -> None:
        super().__init__()
        self.factor = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor


class AutocastNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.scale = Scale()
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.scale(self.fc1(x)))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_hit_tensor_is_viewable_in_its_own_dtype(
    session: OnlineSession, dtype: str
) -> None:
    """A mixed-precision step on CPU (torch.autocast): the low-precision activation that
    overflows is the hit, and the debugger serves it bit for bit in its own dtype."""
    torch_dtype = getattr(torch, dtype)
    model = AutocastNet()
    seen: dict[str, torch.Tensor] = {}
    model.scale.register_forward_hook(lambda m, a, out: seen.__setitem__("out", out.detach()))

    def before(i: int) -> None:
        model.scale.factor = 1e39 if i >= 1 else 1.0  # Inf in 16 bits, not in 32

    def forward(x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch_dtype):
            return model(x)

    training = start(session, model, FOREVER, log_batches, before=before, forward=forward)
    wait_state(session, WAITING)
    session.create_watchpoint("TO", {}, [])
    session.continue_()
    wait_until(lambda: waiting(session) and bool(session.hits), what="the overflow")
    graph = session.graphs["kernel_graph0"]
    (scale_node,) = [n for n in graph.nodes if "/scale-Scale/" in n and "Gradients" not in n]
    assert session.hits[0].tensor.node == scale_node
    got = session.tensor(TensorRef(scale_node))
    assert got is not None
    held = seen["out"]
    assert held.dtype == torch_dtype
    want = to_numpy(held)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()  # bit for bit, Inf included
    assert np.isinf(got.astype(np.float32)).any()
    finish(session, training)


class DeepMLP(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            *[m for _ in range(depth) for m in (nn.Linear(4, 4), nn.Tanh())], nn.Linear(4, 3)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def test_read_backs_per_step_do_not_grow_with_the_watched_tensors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The device path (forced on CPU): TensorOverflow on every node of a 5- and a
    41-module network, continue; the host read-backs of a step are the same few."""
    monkeypatch.setattr(torch_check_items, "DEFER_ON_CPU", True)
    small, large = (_read_backs_per_step(depth, monkeypatch) for depth in (2, 20))
    # three check points a step (forward end, optimizer step, step end): a copy and a list each
    assert small == large == {"cpu": 3.0, "tolist": 3.0}, (small, large)


def _read_backs_per_step(depth: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    from tests.torch.test_torch_stats import count_read_backs

    session, _log = make_session()
    counts = count_read_backs(monkeypatch)
    window: list[Counter[str]] = []

    def before(i: int) -> None:
        if i == 3:
            counts.clear()  # past the first steps (hooks installed, plans made)
        elif i == 13:  # the step ends of steps 3..12 counted
            window.append(Counter(counts))
            training.stop.set()

    try:
        training = start(session, DeepMLP(depth), FOREVER, log_batches, before=before)
        wait_state(session, WAITING)
        session.create_watchpoint("TO", {}, [])
        session.continue_()
        training.join()
        assert training.error is None and not session.hits
    finally:
        session.close()
    return {k: v / 10 for k, v in window[0].items()}


def test_compiled_model_keeps_the_debugger_out_of_its_graphs(session: OnlineSession) -> None:
    """`torch.compile` (the eager backend: dynamo's tracing without a C++ toolchain): the
    training attaches, the NaN's origin is found, and dynamo never traces into the
    debugger: its only graph breaks are at the debugger's hooks, which run as they are."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = LogNet()

    def before(i: int) -> None:
        model.offset = -100.0 if i >= 2 else 1.0

    compiled = torch.compile(model, backend="eager")
    training = start(session, model, FOREVER, log_batches, before=before, forward=compiled)
    try:
        wait_state(session, WAITING)
        session.create_watchpoint("TO", {}, [])
        session.continue_()
        wait_until(lambda: waiting(session) and bool(session.hits), what="the first hit")
        assert session.hits[0].tensor.node == node_named(tdb.graph_for(model), "/log-Log/")
        assert session.metadata.step == 3
        breaks = list(counters["graph_break"])
        assert breaks and all("torch.compiler.disable" in reason for reason in breaks), breaks
    finally:
        finish(session, training)
        torch._dynamo.reset()
