"""Five `nn.Dense` layers in one `nn.SequentialCell`: Dense(10,16)+ReLU, Dense(16,16)+ReLU,
Dense(16,16)+Tanh, Dense(16,8)+ReLU, Dense(8,3). Two Dense(16,16) of the same shape side by side,
the others of different shapes, so a wrong kernel-to-file mapping shows up as a shape mismatch.
(One Tanh because MindSpore 2.0 fuses Dense+ReLU into MatMulBiasAddReluFusion on CPU, which would
leave no standalone activation kernel there.) Softmax cross-entropy, `nn.TrainOneStepCell`, Momentum; 4 steps.
Many kernels of the same type (MatMul, BiasAdd, ReLU and their gradients) in sibling scopes.
Usage:  bash run_dump.sh train_dense_stack.py dump_config_dense_stack.json OUTPUT_DIR [PYTHON]
"""

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn
from mindspore.common.initializer import Normal

ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
ms.set_seed(5)
np.random.seed(5)

STEPS = 4


class DenseStack(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.SequentialCell(
            [
                nn.Dense(10, 16, weight_init=Normal(0.3)),
                nn.ReLU(),
                nn.Dense(16, 16, weight_init=Normal(0.3)),
                nn.ReLU(),
                nn.Dense(16, 16, weight_init=Normal(0.3)),
                nn.Tanh(),
                nn.Dense(16, 8, weight_init=Normal(0.3)),
                nn.ReLU(),
                nn.Dense(8, 3, weight_init=Normal(0.3)),
            ]
        )

    def construct(self, x):
        return self.layers(x)


def main():
    net = DenseStack()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
    train_net.set_train()
    for step in range(STEPS):
        x = Tensor(np.random.randn(6, 10).astype(np.float32))
        y = Tensor(np.random.randint(0, 3, size=(6,)).astype(np.int32))
        loss = train_net(x, y)
        print(f"step {step} loss {loss.asnumpy()}", flush=True)


if __name__ == "__main__":
    main()
