"""Node names in the dumps the tests read, written once: the real LeNet fixtures (MindSpore
2.0.0 and 2.10.0, ../shared/fixtures) and the demo dump tuidebug writes (`tuidebug demo`).

MindSpore numbers a kernel differently per version (2.0 counts ops across the graph, 2.4+
per scope), so a LeNet name that differs between the two dumps carries its version."""

from __future__ import annotations

# ------------------------------------------------------------------ LeNet fixture dumps
LENET = "Default/network-WithLossCell/_backbone-LeNet5"
CONV1_2_0 = f"{LENET}/conv1-Conv2d/Conv2D-op77"
CONV1_2_10 = f"{LENET}/conv1-Conv2d/Conv2D-op0"
RELU_2_10 = f"{LENET}/relu-ReLU/ReLU-op0"
_LOSS_SCOPE = "Default/network-WithLossCell/_loss_fn-SoftmaxCrossEntropyWithLogits"
LOSS_2_0 = f"{_LOSS_SCOPE}/SparseSoftmaxCrossEntropyWithLogits-op87"
LOSS_2_10 = f"{_LOSS_SCOPE}/SparseSoftmaxCrossEntropyWithLogits-op0"

# ------------------------------------------------------------------ the demo dump
DEMO_NET = "Default/network-WithLossCell/_backbone-MLP"
# the forward MatMul of fc2: where the demo's first +Inf appears (iteration 3)
DEMO_FIRST_INF = f"{DEMO_NET}/fc2-Dense/MatMul-op0"
DEMO_LOSS = f"{_LOSS_SCOPE}/SparseSoftmaxCrossEntropyWithLogits-op0"
