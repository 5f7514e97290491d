"""Forward-only twin of train_while_loop.py (same network, seed and inputs, no gradient and no
optimizer): the loss cell with the Tensor-conditioned `while` loop is run 3 times (rounds 2, 3, 2).
MindInsight 2.0.0 cannot load the training variant's 2.0.0 dump (UnknownDataTypeError on the
scalar Int32 outputs that MindSpore's control flow puts into the gradient graphs); it reads this one.
Usage:  bash run_dump.sh train_while_loop_fwd.py dump_config_while_loop_fwd.json OUTPUT_DIR [PYTHON]
"""

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn
from mindspore.common.initializer import Normal

ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
ms.set_seed(7)
np.random.seed(7)

STEPS = 3
ROUNDS = [2, 3, 2]


class WhileNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc_in = nn.Dense(6, 8, weight_init=Normal(0.3))
        self.block = nn.Dense(8, 8, weight_init=Normal(0.3))
        self.head = nn.Dense(8, 3, weight_init=Normal(0.3))
        self.relu = nn.ReLU()

    def construct(self, x, rounds):
        h = self.relu(self.fc_in(x))
        i = Tensor(0, ms.int32)
        while i < rounds:
            h = self.relu(self.block(h))
            if h.sum() > 4.0:
                h = h * 0.5
            i = i + 1
        return self.head(h)


class WithLoss(nn.Cell):
    def __init__(self, net):
        super().__init__(auto_prefix=False)
        self.net = net
        self.loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, x, rounds, y):
        return self.loss_fn(self.net(x, rounds), y)


def main():
    net = WhileNet()
    loss_net = WithLoss(net)
    for step in range(STEPS):
        x = Tensor(np.random.randn(4, 6).astype(np.float32))
        y = Tensor(np.random.randint(0, 3, size=(4,)).astype(np.int32))
        loss = loss_net(x, Tensor(ROUNDS[step], ms.int32), y)
        print(f"step {step} rounds {ROUNDS[step]} loss {loss.asnumpy()}", flush=True)


if __name__ == "__main__":
    main()
