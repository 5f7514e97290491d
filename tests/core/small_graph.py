"""A small hand-built graph shaped like a slice of LeNet, with the names of its nodes: what the
watchpoint and shared-session tests resolve targets and recommendations on."""

from __future__ import annotations

from tuidebug.core.graph import Graph, Node, NodeKind

OP, PARAM, CONST = NodeKind.OPERATOR, NodeKind.PARAMETER, NodeKind.CONSTANT
CONV = "Default/net/conv1-Conv2d/Conv2D-op1"
RELU = "Default/net/relu-ReLU/ReLU-op2"
TANH = "Default/net/tanh-Tanh/Tanh-op3"
MATMUL = "Default/net/fc-Dense/MatMul-op4"
RELU_GRAD = "Gradients/Default/net/gradReLU/ReluGrad-op5"
CONV_GRAD = "Gradients/Default/net/gradConv/Conv2DBackpropFilter-op6"
MOMENTUM = "Default/optimizer-Momentum/ApplyMomentum-op7"


def op(name: str, op_type: str, inputs: list[str]) -> Node:
    return Node(name, OP, op_type, scope=name.rsplit("/", 1)[0], inputs=inputs)


def small_graph() -> Graph:
    """A LeNet-like slice: weights, activations, gradients, an optimizer and a constant."""
    return Graph(
        "kernel_graph_0",
        [
            Node("x", PARAM, "Parameter"),
            Node("conv1.weight", PARAM, "Parameter"),
            op(CONV, "Conv2D", ["x", "conv1.weight"]),
            op(RELU, "ReLU", [CONV]),
            op(TANH, "Tanh", [RELU]),
            # two weights alone in their scope: the recommender merges them into it
            Node("fc.weight", PARAM, "Parameter", scope="Default/params"),
            Node("fc.bias", PARAM, "Parameter", scope="Default/params"),
            op(MATMUL, "MatMul", [TANH, "fc.weight", "fc.bias"]),
            Node("cst1", CONST, "Const"),
            op(RELU_GRAD, "ReluGrad", [MATMUL, "cst1"]),
            op(CONV_GRAD, "Conv2DBackpropFilter", [RELU_GRAD]),
            Node("moments.conv1.weight", PARAM, "Parameter"),
            op(MOMENTUM, "ApplyMomentum", ["conv1.weight", "moments.conv1.weight", CONV_GRAD]),
        ],
    )
