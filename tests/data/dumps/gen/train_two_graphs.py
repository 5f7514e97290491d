"""Two different compiled networks in one process, giving two root graphs on rank 0: a train step
(`nn.TrainOneStepCell` of an MLP Dense(8,12)+Tanh, Dense(12,12)+ReLU, Dense(12,4) with softmax
cross-entropy and Adam) and a separate eval cell (the same backbone, shared weights, plus
Softmax/ArgMax/Equal accuracy) called after every train step; 3 steps.
Usage:  bash run_dump.sh train_two_graphs.py dump_config_two_graphs.json OUTPUT_DIR [PYTHON]
"""

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops
from mindspore.common.initializer import Normal

ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
ms.set_seed(11)
np.random.seed(11)

STEPS = 3


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 12, weight_init=Normal(0.3))
        self.fc2 = nn.Dense(12, 12, weight_init=Normal(0.3))
        self.out = nn.Dense(12, 4, weight_init=Normal(0.3))
        self.tanh = nn.Tanh()
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.out(self.relu(self.fc2(self.tanh(self.fc1(x)))))


class EvalNet(nn.Cell):
    def __init__(self, net):
        super().__init__(auto_prefix=False)
        self.net = net
        self.softmax = nn.Softmax(axis=1)
        self.argmax = ops.Argmax(axis=1, output_type=ms.int32)
        self.equal = ops.Equal()

    def construct(self, x, y):
        prob = self.softmax(self.net(x))
        correct = ops.cast(self.equal(self.argmax(prob), y), ms.float32)
        return prob, correct.mean()


def main():
    net = Mlp()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Adam(net.trainable_params(), learning_rate=0.01)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
    train_net.set_train()
    eval_net = EvalNet(net)
    eval_net.set_train(False)
    x_val = Tensor(np.random.randn(5, 8).astype(np.float32))
    y_val = Tensor(np.random.randint(0, 4, size=(5,)).astype(np.int32))
    for step in range(STEPS):
        x = Tensor(np.random.randn(5, 8).astype(np.float32))
        y = Tensor(np.random.randint(0, 4, size=(5,)).astype(np.int32))
        loss = train_net(x, y)
        _, acc = eval_net(x_val, y_val)
        print(f"step {step} loss {loss.asnumpy()} val_acc {acc.asnumpy()}", flush=True)


if __name__ == "__main__":
    main()
