"""A 5-layer 2048-wide MLP trained for 3 steps on CPU under a MindSpore synchronous dump, the
last step overflowing (its input holds inf): the real-dump side of bench_api_check.py.

Usage:  bash run_dump.sh OUTPUT_DIR [PYTHON]   (PYTHON: one with MindSpore, e.g. the
MindInsight oracle's venv for a 2.0.0 dump that MindInsight itself can read)
"""

import sys

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
ms.set_seed(1)
np.random.seed(1)

WIDTH = 2048
LAYERS = 5
BATCH = 32


class MLP(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.CellList([nn.Dense(WIDTH, WIDTH) for _ in range(LAYERS)])
        self.relu = nn.ReLU()

    def construct(self, x):
        for layer in self.layers:
            x = self.relu(layer(x))
        return x


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    net = MLP()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
    train_net.set_train()
    for step in range(steps):
        x = np.random.randn(BATCH, WIDTH).astype(np.float32)
        if step == steps - 1:
            x[0, :8] = np.inf  # the overflow the benchmark's TensorOverflow finds
        y = np.random.randint(0, WIDTH, size=(BATCH,)).astype(np.int32)
        loss = train_net(Tensor(x), Tensor(y))
        print(f"step {step} loss {loss.asnumpy()}", flush=True)


if __name__ == "__main__":
    main()
