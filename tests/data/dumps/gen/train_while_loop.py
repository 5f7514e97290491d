"""A Python `while` loop on a Tensor condition inside `construct`: the number of rounds is an input
Tensor, so MindSpore cannot unroll it and compiles real control flow (several kernel graphs).
Each round applies the shared `block` Dense(8,8)+ReLU; an `if` on a Tensor inside the loop picks
one of two branches. `nn.TrainOneStepCell`, Momentum; 3 steps (rounds 2, 3, 2).
Usage:  bash run_dump.sh train_while_loop.py dump_config_while_loop.json OUTPUT_DIR [PYTHON]
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
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    train_net = nn.TrainOneStepCell(WithLoss(net), opt)
    train_net.set_train()
    for step in range(STEPS):
        x = Tensor(np.random.randn(4, 6).astype(np.float32))
        y = Tensor(np.random.randint(0, 3, size=(4,)).astype(np.int32))
        loss = train_net(x, Tensor(ROUNDS[step], ms.int32), y)
        print(f"step {step} rounds {ROUNDS[step]} loss {loss.asnumpy()}", flush=True)


if __name__ == "__main__":
    main()
