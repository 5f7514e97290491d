"""The debugger graph of PyTorch models (no server): names, scopes, op types, categories,
edges, stacks, fx vs hooks, and what the recommended watchpoints find in it."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tuidebug.torch as tdb
from tests.torch.support import LogNet, TinyCNN, torch
from tuidebug.core.graph import Category, NodeKind
from tuidebug.core.graph_pb import graph_from_proto
from tuidebug.core.watchpoints import recommended_watchpoints
from tuidebug.torch.graph import ForwardRecorder, graph_for, is_leaf_module, trace_model

nn = torch.nn


class Branchy(nn.Module):
    """Data-dependent control flow: `torch.fx` cannot trace it."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        if h.sum() > 1e9:  # never true, but fx cannot know
            h = -h
        return self.b(self.act(h) * 2.0)


class Shared(nn.Module):
    """One module called twice, and functional code between modules."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x)) + self.act(x.flip(0))


def test_scopes_op_types_and_categories_follow_mindspore() -> None:
    graph = tdb.build_graph(TinyCNN())
    conv = graph.node("Default/TinyCNN/conv1-Conv2d/Conv2d-op1")
    assert conv.kind is NodeKind.OPERATOR and conv.op_type == "Conv2d"
    assert conv.inputs == ["args0", "conv1.weight", "conv1.bias"]
    relu = graph.node("Default/TinyCNN/relu1-ReLU/ReLU-op2")
    assert Category.ACTIVATION in graph.categories(relu)
    sig = next(n for n in graph if n.op_type == "Sigmoid")
    assert Category.ACTIVATION in graph.categories(sig)
    # parameters keep their qualified names and sit under their module's scope (§3.2)
    weight = graph.node("conv1.weight")
    assert weight.kind is NodeKind.PARAMETER
    assert weight.ui_name == "Default/TinyCNN/conv1-Conv2d/conv1.weight"
    assert Category.WEIGHT in graph.categories(weight)
    # the data input is a parameter like MindSpore's `args0`, but no weight
    assert Category.WEIGHT not in graph.categories(graph.node("args0"))
    grads = graph.nodes_in(Category.GRADIENT)
    assert grads and all(n.name.startswith("Gradients/") for n in grads)
    names = {n.name for n in grads}
    assert any(n.endswith("/gradConv2d/weight.grad-op" + n.rsplit("op", 1)[1]) for n in names)
    assert graph.top_scopes() == ["Default", "Gradients"]


def test_edges_pass_through_functional_code_and_gradients_run_backwards() -> None:
    mg = trace_model(TinyCNN())
    assert mg is not None and mg.traced_with == "fx"
    call = {n.qualname: n for n in mg.nodes if n.kind == "forward"}
    # flatten() sits between pool and fc1: the edge still connects them
    assert call["fc1"].inputs == [call["pool"].name, "fc1.weight", "fc1.bias"]
    grad_fc2 = mg.output_grad_of[call["fc2"].name]
    grad_sig = mg.output_grad_of[call["sig"].name]
    assert grad_fc2.name in grad_sig.inputs  # backward: fc2's gradient flows into sigmoid's
    order = [n.name for n in mg.nodes]
    assert order.index(grad_fc2.name) < order.index(grad_sig.name)
    pgrad = mg.param_grad_of["fc1.weight"]
    assert "fc1.weight" in pgrad.inputs and pgrad.kind == "param_grad"
    # the proto the server receives builds the same graph
    graph = graph_from_proto(mg.graph_proto())
    assert set(graph.nodes) == set(mg.by_name) | set(mg.inputs)


def test_stack_of_each_call_points_at_the_model_code() -> None:
    graph = tdb.build_graph(TinyCNN())
    conv = graph.node("Default/TinyCNN/conv1-Conv2d/Conv2d-op1")
    assert conv.stack, "the call's source stack is sent with the graph"
    top = conv.stack[0]
    assert top.file_path.endswith("/tests/torch/support.py")
    assert "self.conv1(x)" in top.code_line and top.line_no is not None


def test_shared_module_gives_one_node_per_call() -> None:
    mg = trace_model(Shared())
    assert mg is not None
    tanh = [n for n in mg.nodes if n.op_type == "Tanh" and n.kind == "forward"]
    assert [n.call_index for n in tanh] == [0, 1]
    assert tanh[0].name != tanh[1].name
    assert tanh[1].inputs == ["args0"]  # through x.flip(0)


def test_untraceable_model_is_recorded_with_the_same_names() -> None:
    model = Branchy()
    assert trace_model(model) is None
    with pytest.raises(tdb.TraceFailed):
        trace_model(model, method="fx")
    mg = graph_for(model, torch.randn(2, 4))
    assert mg.traced_with == "hooks"
    forward = [n for n in mg.nodes if n.kind == "forward"]
    assert [n.op_type for n in forward] == ["Linear", "GELU", "Linear"]
    gelu, b = forward[1], forward[2]
    assert gelu.inputs == [forward[0].name]
    assert gelu.name in b.inputs  # through `* 2.0`, followed without autograd
    assert b.outputs is not None and b.outputs[0].shape == (2, 4)
    assert gelu.stack and "self.act(h)" in gelu.stack[0].code_line
    # the probe pass changed nothing: modes restored, no gradients kept
    assert model.training and model.a.weight.grad is None


def test_example_inputs_fill_output_types_without_side_effects() -> None:
    model = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.ReLU())
    before = model[1].running_mean.clone()
    mg = graph_for(model, torch.randn(7, 3))
    assert [n.outputs[0].shape for n in mg.nodes if n.kind == "forward"] == [(7, 5)] * 3
    assert torch.equal(model[1].running_mean, before)  # eval-mode probe
    assert mg.inputs["args0"].shape == (7, 3)


def test_multi_output_module_has_one_slot_per_tensor() -> None:
    model = nn.LSTM(3, 4)
    mg = graph_for(model, torch.randn(5, 2, 3))
    (node,) = [n for n in mg.nodes if n.kind == "forward"]
    assert [o.shape for o in node.outputs or ()] == [(5, 2, 4), (1, 2, 4), (1, 2, 4)]
    graph = mg.graph()
    assert [s.slot for s in graph.node(node.name).outputs] == [0, 1, 2]


def test_a_model_that_is_itself_a_leaf_is_one_call() -> None:
    model = nn.Linear(3, 2)
    mg = trace_model(model)
    assert mg is not None
    (node,) = [n for n in mg.nodes if n.kind == "forward"]
    assert node.name == "Default/Linear/Linear-op1"
    assert node.inputs == ["args0", "weight", "bias"]
    with ForwardRecorder(model) as rec:
        model(torch.randn(4, 3))
    assert [(c.qualname, c.call_index) for c in rec.calls] == [("", 0)]


def test_leaf_rule_keeps_torch_modules_whole() -> None:
    assert is_leaf_module(nn.MultiheadAttention(4, 2))
    assert not is_leaf_module(nn.Sequential(nn.ReLU()))
    assert is_leaf_module(nn.ReLU())


def test_recommended_watchpoints_find_activations_weights_and_gradients() -> None:
    graph = tdb.build_graph(LogNet())
    recs = {r.name: r for r in recommended_watchpoints(graph)}
    assert "recommend_tanh_activation_range_watchpoint" in recs
    assert "recommend_relu_activation_range_watchpoint" in recs
    assert "recommend_weight_change_too_large_watchpoint" in recs
    gv = recs["recommend_gradient_vanishing_watchpoint"]
    assert gv.targets and all(t.startswith("Gradients/") for t in gv.targets)
    assert recs["recommend_tensor_overflow_watchpoint"].targets == ("Default", "Gradients")


def test_recorder_ignores_calls_outside_the_first_pass() -> None:
    model = Shared()
    with ForwardRecorder(model) as rec:
        model(torch.randn(2, 4))
        model(torch.randn(2, 4))
    assert len(rec.calls) == 3  # fc, tanh, tanh — the second pass is not recorded


def test_importing_tuidebug_does_not_need_torch() -> None:
    code = (
        "import sys, tuidebug, tuidebug.cli, tuidebug.client.protocol, tuidebug.online.session;"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_torch_client_does_not_import_textual() -> None:
    code = "import sys, tuidebug.torch; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
