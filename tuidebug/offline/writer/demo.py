"""The demo dump: a small numpy MLP whose learning rate blows up, dumped like MindSpore 2.10.

`write_demo_dump` trains a 3-layer perceptron (Dense+ReLU, Dense+Tanh, Dense, softmax
cross-entropy, SGD with momentum) on random data for a few steps and writes every kernel's
inputs and outputs and every parameter after its update, exactly as a MindSpore synchronous
dump does. The learning rate is multiplied by 10¹² each step (a schedule gone wrong): the
first step is healthy, the updated weights then grow huge, a forward MatMul overflows to +Inf
at iteration 3 with NaN downstream, and from iteration 4 on nearly everything is NaN. The
watchpoints of `tuidebug demo` (overflow, too large, change too large…) all have something
to find, and the first Inf can be traced back to its kernel.

Kernel names, scopes and parameter names follow MindSpore's conventions
(`Default/network-WithLossCell/_backbone-MLP/fc1-Dense/MatMul-op0`, `Gradients/…`,
`Default/optimizer-Momentum/ApplyMomentum-opN`, `moments.fc1.weight`…). Each kernel's source
stack is the real Python stack of the numpy line that computed it, so the stack view opens
this very file. Everything is seeded: two runs write identical bytes.
"""

from __future__ import annotations

import linecache
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

import numpy as np

from tuidebug.core.graph import StackFrame
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef, TensorKey

SEED = 20240611
BATCH = 16
IN_FEATURES = 32
HIDDEN1 = 64
HIDDEN2 = 32
CLASSES = 10
BASE_LR = 0.05
LR_GROWTH = 1e12  # per step: healthy, then huge weights, then Inf (iteration 3), then NaN
MOMENTUM = 0.9
NET_NAME = "MLP"
GRAPH_ID = 0
START_TIMESTAMP = 1_718_000_000_000_000

NET = "Default/network-WithLossCell/_backbone-MLP"
LOSS = "Default/network-WithLossCell/_loss_fn-SoftmaxCrossEntropyWithLogits"
OPTIMIZER = "Default/optimizer-Momentum"


def _caller_stack() -> list[StackFrame]:
    """The Python stack of the numpy line that called `Recorder.kernel`, innermost first,
    restricted to this file (the frames a MindSpore user would see for their model code)."""
    frames: list[StackFrame] = []
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == __file__:
        line = linecache.getline(__file__, frame.f_lineno).rstrip("\n")
        frames.append(StackFrame(__file__, frame.f_lineno, line))
        frame = frame.f_back
    return frames


class Recorder:
    """Collects one training step's kernel tensors and, on the first step, the graph."""

    def __init__(self) -> None:
        self.tensors: dict[TensorKey, np.ndarray] = {}
        self.nodes: list[NodeDef] = []
        self._declared: set[str] = set()

    def start_step(self) -> None:
        self.tensors = {}

    def kernel(
        self,
        name: str,
        op_type: str,
        inputs: Sequence[tuple[str, np.ndarray]],
        output: np.ndarray,
    ) -> np.ndarray:
        """Record a kernel run: copies of its inputs and output (parameters change in place
        later in the step). `inputs` pair each value with its producer's name."""
        result = np.asarray(output)
        for slot, (_, value) in enumerate(inputs):
            self.tensors[(name, "input", slot)] = np.array(value, copy=True)
        self.tensors[(name, "output", 0)] = np.array(result, copy=True)
        if name not in self._declared:
            self._declared.add(name)
            self.nodes.append(
                NodeDef(
                    full_name=name,
                    op_type=op_type,
                    inputs=[src for src, _ in inputs],
                    dtype=result.dtype,
                    shape=tuple(result.shape),
                    stack=_caller_stack(),
                )
            )
        return result


class Dense:
    """`y = x · Wᵀ + b` with MindSpore's weight layout (out_channels, in_channels)."""

    def __init__(self, attr: str, in_channels: int, out_channels: int, rng: np.random.Generator):
        self.attr = attr
        self.scope = f"{NET}/{attr}-Dense"
        self.grad_scope = f"Gradients/{self.scope}"
        scale = np.float32(1.0 / np.sqrt(in_channels))
        self.weight = (rng.standard_normal((out_channels, in_channels)) * scale).astype(np.float32)
        self.bias = np.zeros(out_channels, dtype=np.float32)

    def construct(self, rec: Recorder, x_name: str, x: np.ndarray) -> tuple[str, np.ndarray]:
        w, b = f"{self.attr}.weight", f"{self.attr}.bias"
        matmul, bias_add = f"{self.scope}/MatMul-op0", f"{self.scope}/BiasAdd-op0"
        y = rec.kernel(matmul, "MatMul", [(x_name, x), (w, self.weight)], x @ self.weight.T)
        out = rec.kernel(bias_add, "BiasAdd", [(matmul, y), (b, self.bias)], y + self.bias)
        return bias_add, out

    def bprop(
        self, rec: Recorder, x: tuple[str, np.ndarray], dout: tuple[str, np.ndarray], need_dx: bool
    ) -> tuple[tuple[str, np.ndarray] | None, tuple[str, np.ndarray], tuple[str, np.ndarray]]:
        """Gradients of input, weight and bias, as MindSpore's Grad_MatMul/Grad_BiasAdd."""
        db_name = f"{self.grad_scope}/Grad_BiasAdd/BiasAddGrad-op0"
        db = rec.kernel(db_name, "BiasAddGrad", [dout], dout[1].sum(axis=0))
        dw_name = f"{self.grad_scope}/Grad_MatMul/MatMul-op0"
        dw = rec.kernel(dw_name, "MatMul", [dout, x], dout[1].T @ x[1])
        dx = None
        if need_dx:
            dx_name = f"{self.grad_scope}/Grad_MatMul/MatMul-op1"
            w = (f"{self.attr}.weight", self.weight)
            dx = (dx_name, rec.kernel(dx_name, "MatMul", [dout, w], dout[1] @ self.weight))
        return dx, (dw_name, dw), (db_name, db)


class MLP:
    """fc1 → ReLU → fc2 → Tanh → fc3 (logits)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.fc1 = Dense("fc1", IN_FEATURES, HIDDEN1, rng)
        self.fc2 = Dense("fc2", HIDDEN1, HIDDEN2, rng)
        self.fc3 = Dense("fc3", HIDDEN2, CLASSES, rng)
        self.cache: dict[str, tuple[str, np.ndarray]] = {}

    def construct(self, rec: Recorder, x: np.ndarray) -> tuple[str, np.ndarray]:
        z1 = self.fc1.construct(rec, "inputs0", x)
        relu = f"{NET}/relu-ReLU/ReLU-op0"
        h1 = (relu, rec.kernel(relu, "ReLU", [z1], np.maximum(z1[1], 0)))
        z2 = self.fc2.construct(rec, h1[0], h1[1])
        tanh = f"{NET}/tanh-Tanh/Tanh-op0"
        h2 = (tanh, rec.kernel(tanh, "Tanh", [z2], np.tanh(z2[1])))
        logits = self.fc3.construct(rec, h2[0], h2[1])
        self.cache = {"x": ("inputs0", x), "h1": h1, "h2": h2}
        return logits

    def bprop(
        self, rec: Recorder, dlogits: tuple[str, np.ndarray]
    ) -> dict[str, tuple[str, np.ndarray]]:
        """Backward pass; returns {parameter name: (gradient kernel, gradient)}."""
        x, h1, h2 = self.cache["x"], self.cache["h1"], self.cache["h2"]
        dh2, dw3, db3 = self.fc3.bprop(rec, h2, dlogits, need_dx=True)
        assert dh2 is not None
        tanh_grad = f"Gradients/{NET}/tanh-Tanh/Grad_Tanh/TanhGrad-op0"
        dz2 = (tanh_grad, rec.kernel(tanh_grad, "TanhGrad", [h2, dh2], dh2[1] * (1 - h2[1] ** 2)))
        dh1, dw2, db2 = self.fc2.bprop(rec, h1, dz2, need_dx=True)
        assert dh1 is not None
        relu_grad = f"Gradients/{NET}/relu-ReLU/Grad_ReLU/ReluGrad-op0"
        dz1 = (relu_grad, rec.kernel(relu_grad, "ReluGrad", [dh1, h1], dh1[1] * (h1[1] > 0)))
        _, dw1, db1 = self.fc1.bprop(rec, x, dz1, need_dx=False)
        return {
            "fc3.bias": db3,
            "fc3.weight": dw3,
            "fc2.bias": db2,
            "fc2.weight": dw2,
            "fc1.bias": db1,
            "fc1.weight": dw1,
        }

    def parameters(self) -> dict[str, np.ndarray]:
        return {
            name: array
            for layer in ("fc1", "fc2", "fc3")
            for name, array in (
                (f"{layer}.weight", getattr(self, layer).weight),
                (f"{layer}.bias", getattr(self, layer).bias),
            )
        }


SSCE = "SparseSoftmaxCrossEntropyWithLogits"
LOSS_KERNEL = f"{LOSS}/{SSCE}-op0"
LOSS_GRAD_KERNEL = f"Gradients/{LOSS}/Grad_{SSCE}/{SSCE}-op0"


def softmax_cross_entropy(
    rec: Recorder, logits: tuple[str, np.ndarray], labels: np.ndarray
) -> tuple[np.ndarray, tuple[str, np.ndarray]]:
    """MindSpore's SparseSoftmaxCrossEntropyWithLogits: mean loss, and its gradient kernel."""
    z, batch = logits[1], logits[1].shape[0]
    shifted = z - z.max(axis=1, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(axis=1))
    rows, label_in = np.arange(batch), ("inputs1", labels)
    loss_value = np.array(np.mean(log_sum - shifted[rows, labels]), dtype=np.float32)
    loss = rec.kernel(LOSS_KERNEL, SSCE, [logits, label_in], loss_value)
    probs = np.exp(shifted - log_sum[:, None])
    probs[rows, labels] -= 1
    grad = rec.kernel(LOSS_GRAD_KERNEL, SSCE, [logits, label_in], probs / np.float32(batch))
    return loss, (LOSS_GRAD_KERNEL, grad)


def apply_momentum(
    var: np.ndarray, accum: np.ndarray, grad: np.ndarray, lr: np.ndarray, momentum: np.ndarray
) -> np.ndarray:
    """MindSpore's ApplyMomentum, in place: accum = accum·momentum + grad; var -= lr·accum."""
    accum *= momentum
    accum += grad
    var -= lr * accum
    return var


class Momentum:
    """The optimizer: one ApplyMomentum kernel per parameter, moments named `moments.<p>`."""

    def __init__(self, params: dict[str, np.ndarray]) -> None:
        self.params = params
        self.moments = {name: np.zeros_like(value) for name, value in params.items()}
        self.learning_rate = np.array(BASE_LR, dtype=np.float32)
        self.momentum = np.array(MOMENTUM, dtype=np.float32)

    def construct(self, rec: Recorder, grads: dict[str, tuple[str, np.ndarray]]) -> None:
        lr, mom = ("learning_rate", self.learning_rate), ("momentum", self.momentum)
        for i, (name, (grad_name, grad)) in enumerate(grads.items()):
            var, accum = self.params[name], self.moments[name]
            kernel = f"{OPTIMIZER}/ApplyMomentum-op{i}"
            # inputs are copied after the in-place update runs, so input 0 equals output 0
            # exactly as MindSpore dumps in-place kernels
            inputs = [(name, var), (f"moments.{name}", accum), lr, (grad_name, grad), mom]
            update = apply_momentum(var, accum, grad, self.learning_rate, self.momentum)
            rec.kernel(kernel, "ApplyMomentum", inputs, update)


def train(steps: int, rec: Recorder, seed: int = SEED) -> list[dict[TensorKey, np.ndarray]]:
    """Run `steps` training steps; per step, every kernel tensor and parameter value."""
    rng = np.random.default_rng(seed)
    net = MLP(rng)
    optimizer = Momentum(net.parameters())
    iterations: list[dict[TensorKey, np.ndarray]] = []
    for step in range(steps):
        rec.start_step()
        x = rng.standard_normal((BATCH, IN_FEATURES)).astype(np.float32)
        labels = rng.integers(0, CLASSES, size=BATCH).astype(np.int32)
        with np.errstate(all="ignore"):  # the blow-up is the point of the demo
            optimizer.learning_rate[...] = BASE_LR * LR_GROWTH**step
            logits = net.construct(rec, x)
            _loss, dlogits = softmax_cross_entropy(rec, logits, labels)
            grads = net.bprop(rec, dlogits)
            optimizer.construct(rec, grads)
        tensors = dict(rec.tensors)
        # parameters are dumped after the step's update, as MindSpore does
        for name, value in _parameter_values(net, optimizer, x, labels).items():
            tensors[(name, "output", 0)] = np.array(value, copy=True)
        iterations.append(tensors)
    return iterations


def _parameter_values(
    net: MLP, optimizer: Momentum, x: np.ndarray, labels: np.ndarray
) -> dict[str, np.ndarray]:
    values: dict[str, np.ndarray] = dict(net.parameters())
    values["inputs0"] = x
    values["inputs1"] = labels
    values["learning_rate"] = optimizer.learning_rate
    values["momentum"] = optimizer.momentum
    for name, accum in optimizer.moments.items():
        values[f"moments.{name}"] = accum
    return values


def write_demo_dump(out_dir: Path, steps: int = 6, ranks: int = 1) -> Path:
    """Train the demo MLP for `steps` steps and write its dump under `out_dir` (which gets
    `rank_0/`; with `ranks` > 1 also `rank_1/`…, each rank its own seed, as ranks of a
    data-parallel run see other data). Returns `out_dir`, the dump root to open with
    `tuidebug offline`."""
    if steps < 1:
        raise ValueError("The demo needs at least one step.")
    for rank in range(ranks):
        rec = Recorder()
        iterations = train(steps, rec, seed=SEED + rank)
        first = iterations[0]
        params = [
            ParamDef(
                name, first[(name, "output", 0)].dtype, tuple(first[(name, "output", 0)].shape)
            )
            for name in _parameter_order()
        ]
        with DumpWriter(
            Path(out_dir), net_name=NET_NAME, rank=rank, start_timestamp=START_TIMESTAMP
        ) as writer:
            writer.add_graph(GRAPH_ID, rec.nodes, params)
            for iteration, tensors in enumerate(iterations):
                writer.write_iteration(GRAPH_ID, iteration, tensors)
    return Path(out_dir)


def _parameter_order() -> list[str]:
    """Weights first, then data inputs and optimizer state, like MindSpore's graph inputs."""
    weights = [f"{layer}.{kind}" for layer in ("fc3", "fc2", "fc1") for kind in ("bias", "weight")]
    return [
        *weights,
        "inputs0",
        "inputs1",
        "learning_rate",
        "momentum",
        *(f"moments.{name}" for name in weights),
    ]
