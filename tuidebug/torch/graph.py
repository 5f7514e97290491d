"""A PyTorch model as a MindSpore-style debugger graph.

One operator node per *leaf-module call* (the op type is the module class, so the activation
categories and recommended watchpoints of spec §3.2/§4 apply to `ReLU`, `Tanh`, `Sigmoid`…),
one `Parameter` node per parameter (named by its qualified name, `fc1.weight`, so the weight
rule of §3.2 applies) and per tensor input of the model (`args0`, as MindSpore names data
inputs), and gradient nodes under `Gradients/`:

    Default/Net/conv1-Conv2d/Conv2d-op1                  forward call of `conv1`
    Gradients/Default/Net/conv1-Conv2d/gradConv2d/OutputGrad-op9   d loss / d output of that call
    Gradients/Default/Net/conv1-Conv2d/gradConv2d/weight.grad-op10 the gradient of `conv1.weight`

The structure comes from `torch.fx` when the model traces symbolically (data edges then pass
through functional code between modules); otherwise from hooks during one real forward pass
(`record_forward`), where edges follow tensor identity and the autograd graph. Output types
are unknown after a symbolic trace until tensors are seen (`observe`); parameter types are
always known.
"""

from __future__ import annotations

import linecache
import os
import re
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug.core.graph import Graph, StackFrame
from tuidebug.core.tensor import BFLOAT16
from tuidebug.offline.writer.dump_writer import NodeDef, ParamDef, TensorDef, build_model_proto

__all__ = [
    "GRAPH_ID",
    "GraphNode",
    "ModelGraph",
    "OutputInfo",
    "TraceFailed",
    "build_graph",
    "flatten_tensors",
    "is_leaf_module",
    "leaf_modules",
    "numpy_dtype_of",
    "trace_model",
]

GRAPH_ID = 0
NodeKind = Literal["forward", "output_grad", "param_grad"]
AttrValue = bool | int | float | str

# MindSpore spells two activations differently; the op type is what §3.2's category rule
# reads, so these get MindSpore's name (every other op type is the module class name).
_OP_TYPE_ALIASES = {"Hardsigmoid": "HSigmoid", "Hardswish": "HSwish"}
_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict, nn.ParameterList, nn.ParameterDict)
_TORCH_DIR = os.path.dirname(torch.__file__)
_TUIDEBUG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MAX_STACK = 32  # frames per node: enough for deep models, bounded for the graph size


class TraceFailed(Exception):
    """`torch.fx` cannot trace the model (data-dependent control flow and the like)."""


_TORCH_TO_NUMPY: dict[torch.dtype, np.dtype] = {
    torch.bool: np.dtype(np.bool_),
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32),
    torch.int64: np.dtype(np.int64),
    torch.uint8: np.dtype(np.uint8),
    torch.float16: np.dtype(np.float16),
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.bfloat16: BFLOAT16,
}
for _name, _np in (("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64)):
    if hasattr(torch, _name):  # unsigned types beyond uint8 exist only in torch ≥ 2.3
        _TORCH_TO_NUMPY[getattr(torch, _name)] = np.dtype(_np)


def numpy_dtype_of(dtype: torch.dtype) -> np.dtype | None:
    """The numpy dtype a torch dtype is shown, checked and dumped as; None for types the
    debugger protocol cannot carry (complex, float8, quantized…)."""
    return _TORCH_TO_NUMPY.get(dtype)


# =============================================================================== modules
def is_leaf_module(module: nn.Module) -> bool:
    """A module whose calls are graph nodes: no children, or a `torch.nn` module that is not
    a container (e.g. `MultiheadAttention`, whose `out_proj` is never called as a module).
    The same rule drives the fx tracer and the hooks, so both see the same calls."""
    if not any(True for _ in module.children()):
        return True
    mod = type(module).__module__
    return mod.startswith(("torch.nn.", "torch.ao.nn.")) and not isinstance(module, _CONTAINERS)


def leaf_modules(model: nn.Module) -> dict[str, nn.Module]:
    """Qualified name → module for every leaf reachable from `model` (descendants of a leaf
    are not leaves themselves), in registration order."""
    out: dict[str, nn.Module] = {}
    seen: set[int] = set()

    def walk(prefix: str, module: nn.Module) -> None:
        if id(module) in seen:
            return  # a module registered under two names keeps its first name, as fx does
        seen.add(id(module))
        if is_leaf_module(module):
            out[prefix] = module
            return
        for name, child in module.named_children():
            walk(f"{prefix}.{name}" if prefix else name, child)

    walk("", model)
    return out


def flatten_tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of a module output in a stable order: a tensor, or the tensors inside
    (nested) tuples, lists and dicts; other values are skipped. Slot i = i-th tensor."""
    if isinstance(value, torch.Tensor):
        return [value]
    out: list[torch.Tensor] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            out.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
    return out


def class_name(module: nn.Module) -> str:
    """The module's own class name. FSDP2's `fully_shard` swaps a module's class for a
    generated `FSDP<Class>` subclass; the graph names the class the user wrote, so that
    op types (and with them the recommended watchpoints' categories: `ReLU`, `Tanh`) and
    node names are the same sharded or not."""
    cls = type(module)
    name = cls.__name__
    if name.startswith("FSDP") and len(cls.__bases__) > 1:
        for base in cls.__bases__:
            if base.__name__ == name[4:]:
                return base.__name__
    return name


def op_type_of(module: nn.Module) -> str:
    name = class_name(module)
    return _OP_TYPE_ALIASES.get(name, name)


def local_shape(param: torch.Tensor) -> tuple[int, ...]:
    """The shape this rank holds: a DTensor's local shard (what is checked, viewed and
    dumped), any other tensor's own shape."""
    to_local = getattr(param, "to_local", None)
    return tuple(to_local().shape) if callable(to_local) else tuple(param.shape)


def sharding_of(param: torch.Tensor) -> str | None:
    """How a distributed parameter (`DTensor`: FSDP2, tensor parallelism) is split, in one
    line for the node details; None for an ordinary tensor."""
    placements = getattr(param, "placements", None)
    mesh = getattr(param, "device_mesh", None)
    if placements is None or mesh is None or not callable(getattr(param, "to_local", None)):
        return None
    try:
        rank = int(mesh.get_rank())
        mesh_shape = tuple(int(d) for d in mesh.shape)
    except Exception:  # a mesh without a process group: name the split only
        rank, mesh_shape = -1, ()
    split = ", ".join(repr(p) for p in placements)  # Shard(dim=0), not S(0)
    where = f" over a mesh of {mesh_shape}" if mesh_shape else ""
    held = f"rank {rank} holds" if rank >= 0 else "this rank holds"
    return f"{split}{where}; {held} {local_shape(param)} of {tuple(param.shape)}"


def _module_attributes(qualname: str, module: nn.Module) -> dict[str, AttrValue]:
    """Hyper-parameters shown in the node details: the module's path and its declared
    `__constants__` (kernel_size, stride, in_features…) rendered as scalars or text, and
    how each of its own parameters is sharded when it is a DTensor (FSDP2)."""
    attrs: dict[str, AttrValue] = {"module": qualname or "(root)"}
    for pname, param in module.named_parameters(recurse=False):
        sharding = sharding_of(param)
        if sharding is not None:
            attrs[f"{pname}.sharding"] = sharding
    for name in getattr(module, "__constants__", ()):
        value = getattr(module, name, None)
        if isinstance(value, (bool, int, float, str)):
            attrs[name] = value
        elif isinstance(value, (tuple, list)) and all(
            isinstance(v, (bool, int, float, str)) for v in value
        ):
            attrs[name] = "(" + ", ".join(str(v) for v in value) + ")"
    return attrs


# ================================================================================ stacks
def _user_frame(path: str) -> bool:
    real = os.path.abspath(path)
    return not (real.startswith(_TORCH_DIR) or real.startswith(_TUIDEBUG_DIR))


_FX_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>.*)$')


def parse_fx_stack(text: str | None) -> list[StackFrame]:
    """An fx `stack_trace` (outermost call first, torch internals included) → the user's
    frames innermost first, as MindSpore writes `source_address`."""
    if not text:
        return []
    frames: list[StackFrame] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _FX_FRAME.match(line)
        if m is None or not _user_frame(m.group("path")):
            continue
        code = ""
        if i + 1 < len(lines) and not _FX_FRAME.match(lines[i + 1]):
            code = lines[i + 1].strip()
        frames.append(StackFrame(m.group("path"), int(m.group("line")), code))
    frames.reverse()
    return frames[:_MAX_STACK]


def current_stack() -> list[StackFrame]:
    """The calling Python stack without torch and tuidebug frames, innermost first."""
    frames: list[StackFrame] = []
    for summary in reversed(traceback.extract_stack()):
        if not _user_frame(summary.filename):
            continue
        code = summary.line
        if code is None:
            code = linecache.getline(summary.filename, summary.lineno or 0)
        frames.append(StackFrame(summary.filename, summary.lineno, (code or "").strip()))
        if len(frames) >= _MAX_STACK:
            break
    return frames


# ================================================================================= graph
def scope_of(modules: dict[str, nn.Module], root_class: str, qualname: str) -> str:
    """`Default/<Model>/<attr>-<Class>/…` for the module at `qualname` (MindSpore's
    `<attribute>-<Cell class>` scope components)."""
    parts = [f"Default/{root_class}"]
    path = ""
    for name in qualname.split(".") if qualname else ():
        path = f"{path}.{name}" if path else name
        module = modules.get(path)
        parts.append(f"{name}-{class_name(module)}" if module is not None else name)
    return "/".join(parts)


@dataclass
class OutputInfo:
    """Type of one output slot, once seen (`dtype` None: a type the protocol cannot carry)."""

    dtype: np.dtype | None
    shape: tuple[int, ...]


@dataclass
class GraphNode:
    """One operator node. `target` is the forward node an `output_grad` node differentiates,
    or the parameter a `param_grad` node holds the gradient of."""

    name: str
    op_type: str
    kind: NodeKind
    inputs: list[str] = field(default_factory=list)
    stack: list[StackFrame] = field(default_factory=list)
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    outputs: list[OutputInfo] | None = None  # None: not seen yet
    qualname: str = ""
    call_index: int = 0
    target: str = ""


@dataclass
class InputInfo:
    """A parameter node: a model parameter or a tensor input of the model (`args0`)."""

    name: str
    dtype: np.dtype | None
    shape: tuple[int, ...] | None
    is_data: bool = False


@dataclass
class _Call:
    """A leaf-module call found by a trace, before names are given."""

    qualname: str
    call_index: int
    module: nn.Module
    inputs: list[str]
    stack: list[StackFrame]
    outputs: list[OutputInfo] | None = None


class ModelGraph:
    """The debugger graph of one model: nodes in topological order plus lookup tables."""

    def __init__(
        self,
        model: nn.Module,
        calls: Sequence[_Call],
        data_inputs: Sequence[InputInfo],
        *,
        traced_with: str,
    ) -> None:
        self.root_class = class_name(model)
        self.traced_with = traced_with  # "fx" | "hooks"
        self.graph_name = f"kernel_graph{GRAPH_ID}"
        self._modules = dict(model.named_modules())
        self.parameters: dict[str, nn.Parameter] = {}
        self.inputs: dict[str, InputInfo] = {}
        for info in data_inputs:
            self.inputs[info.name] = info
        for name, param in model.named_parameters():
            dtype = numpy_dtype_of(param.dtype)
            if dtype is None:
                continue  # the protocol cannot carry it: leave it out of the graph
            self.parameters[name] = param
            self.inputs[name] = InputInfo(name, dtype, local_shape(param))
        self.nodes: list[GraphNode] = []
        self.by_name: dict[str, GraphNode] = {}
        self.by_call: dict[tuple[str, int], GraphNode] = {}
        self.output_grad_of: dict[str, GraphNode] = {}
        self.param_grad_of: dict[str, GraphNode] = {}
        self._build(calls)

    # ------------------------------------------------------------------ naming
    def scope_of(self, qualname: str) -> str:
        return scope_of(self._modules, self.root_class, qualname)

    def _class_of(self, qualname: str) -> str:
        module = self._modules.get(qualname)
        return class_name(module) if module is not None else "Module"

    def _grad_scope(self, qualname: str) -> str:
        return f"Gradients/{self.scope_of(qualname)}/grad{self._class_of(qualname)}"

    # ------------------------------------------------------------------- build
    def _build(self, calls: Sequence[_Call]) -> None:
        counter = 0

        def add(node: GraphNode) -> GraphNode:
            self.nodes.append(node)
            self.by_name[node.name] = node
            return node

        known_inputs = set(self.inputs)
        forward: list[GraphNode] = []
        for call in calls:
            counter += 1
            op_type = op_type_of(call.module)
            inputs = [
                i for i in dict.fromkeys(call.inputs) if i in known_inputs or i in self.by_name
            ]
            node = add(
                GraphNode(
                    name=f"{self.scope_of(call.qualname)}/{op_type}-op{counter}",
                    op_type=op_type,
                    kind="forward",
                    inputs=inputs,
                    stack=list(call.stack),
                    attributes=_module_attributes(call.qualname, call.module),
                    outputs=call.outputs,
                    qualname=call.qualname,
                    call_index=call.call_index,
                )
            )
            self.by_call[(call.qualname, call.call_index)] = node
            forward.append(node)

        # Backward, in the order autograd runs it: the last forward call first. A
        # parameter's gradient is complete after the *first* call that reads it.
        consumers: dict[str, list[GraphNode]] = {}
        for node in forward:
            for src in node.inputs:
                consumers.setdefault(src, []).append(node)
        first_user: dict[str, GraphNode] = {}
        for name in self.parameters:
            users = consumers.get(name)
            if users:
                first_user[name] = users[0]
        params_after: dict[str, list[str]] = {}
        for name, user in first_user.items():
            params_after.setdefault(user.name, []).append(name)

        for node in reversed(forward):
            counter += 1
            inputs = [node.name] + [
                self.output_grad_of[c.name].name
                for c in consumers.get(node.name, [])
                if c.name in self.output_grad_of
            ]
            grad = add(
                GraphNode(
                    name=f"{self._grad_scope(node.qualname)}/OutputGrad-op{counter}",
                    op_type="OutputGrad",
                    kind="output_grad",
                    inputs=list(dict.fromkeys(inputs)),
                    attributes={"of": node.name},
                    qualname=node.qualname,
                    call_index=node.call_index,
                    target=node.name,
                )
            )
            self.output_grad_of[node.name] = grad
            for pname in params_after.get(node.name, []):
                counter += 1
                self._add_param_grad(pname, counter, consumers, add)
        for pname, param in self.parameters.items():
            if pname not in self.param_grad_of and param.requires_grad:
                counter += 1
                self._add_param_grad(pname, counter, consumers, add)

    def _add_param_grad(
        self,
        pname: str,
        counter: int,
        consumers: dict[str, list[GraphNode]],
        add: Callable[[GraphNode], GraphNode],
    ) -> None:
        owner, _, local = pname.rpartition(".")
        inputs = [
            self.output_grad_of[c.name].name
            for c in consumers.get(pname, [])
            if c.name in self.output_grad_of
        ]
        inputs.append(pname)
        param = self.parameters[pname]
        attributes: dict[str, AttrValue] = {"of": pname}
        sharding = sharding_of(param)
        if sharding is not None:
            attributes["sharding"] = sharding
        grad = add(
            GraphNode(
                name=f"{self._grad_scope(owner)}/{local}.grad-op{counter}",
                op_type="ParameterGrad",
                kind="param_grad",
                inputs=list(dict.fromkeys(inputs)),
                attributes=attributes,
                outputs=[OutputInfo(numpy_dtype_of(param.dtype), local_shape(param))],
                qualname=owner,
                target=pname,
            )
        )
        self.param_grad_of[pname] = grad

    # ---------------------------------------------------------------- observe
    def observe(self, node: GraphNode, tensors: Sequence[torch.Tensor]) -> None:
        """Record output types from the first tensors seen for `node`."""
        if node.outputs is None:
            node.outputs = [OutputInfo(numpy_dtype_of(t.dtype), tuple(t.shape)) for t in tensors]

    def observe_input(self, name: str, tensor: torch.Tensor) -> None:
        info = self.inputs.get(name)
        if info is not None and info.shape is None:
            info.dtype = numpy_dtype_of(tensor.dtype)
            info.shape = tuple(tensor.shape)

    # -------------------------------------------------------------- exporting
    @property
    def data_inputs(self) -> list[str]:
        return [i.name for i in self.inputs.values() if i.is_data]

    def node_defs(self) -> tuple[list[NodeDef], list[ParamDef]]:
        """Nodes and parameters as the dump writer declares them (unknown types: no output
        / float32 placeholder, replaced by `graph_proto`'s cleanup for the wire)."""
        params = [
            ParamDef(i.name, i.dtype if i.dtype is not None else np.float32, i.shape or ())
            for i in self.inputs.values()
        ]
        nodes = []
        for node in self.nodes:
            outs = [TensorDef(o.dtype, o.shape) for o in node.outputs or () if o.dtype is not None]
            first = outs[0] if outs else None
            nodes.append(
                NodeDef(
                    full_name=node.name,
                    op_type=node.op_type,
                    inputs=node.inputs,
                    dtype=first.dtype if first is not None else None,
                    shape=first.shape if first is not None else (),
                    stack=node.stack,
                    attributes=node.attributes,
                    extra_outputs=outs[1:],
                )
            )
        return nodes, params

    def model_proto(self) -> graph_pb.ModelProto:
        nodes, params = self.node_defs()
        model = build_model_proto(GRAPH_ID, nodes, params)
        unknown = {i.name for i in self.inputs.values() if i.shape is None or i.dtype is None}
        for p in model.graph.parameters:
            if p.name in unknown:
                p.ClearField("type")  # the input was not seen yet: say nothing about it
        return model

    def graph_proto(self) -> graph_pb.GraphProto:
        """The `GraphProto` sent with SendGraph (spec §2.4); stacks included."""
        return self.model_proto().graph

    def graph(self) -> Graph:
        """The `core.Graph` the server would build from `graph_proto()`."""
        from tuidebug.core.graph_pb import graph_from_proto

        return graph_from_proto(self.graph_proto(), limit=None)


# ============================================================================ tracing
class _LeafTracer(torch.fx.Tracer):
    def __init__(self) -> None:
        super().__init__()
        self.record_stack_traces = True

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return is_leaf_module(m)


def trace_fx(model: nn.Module) -> tuple[list[_Call], list[InputInfo]]:
    """Leaf calls and data inputs from a symbolic trace; raises `TraceFailed`."""
    tracer = _LeafTracer()
    try:
        fx_graph = tracer.trace(model)
    except Exception as exc:  # any failure of symbolic tracing means "use hooks"
        raise TraceFailed(f"{type(exc).__name__}: {exc}") from None
    modules = dict(model.named_modules())
    params = {name for name, _ in model.named_parameters()}
    deps: dict[torch.fx.Node, list[str]] = {}
    calls: list[_Call] = []
    inputs: list[InputInfo] = []
    call_counts: dict[str, int] = {}
    for node in fx_graph.nodes:
        if node.op == "placeholder":
            name = f"args{len(inputs)}"
            inputs.append(InputInfo(name, None, None, is_data=True))
            deps[node] = [name]
        elif node.op == "get_attr":
            target = str(node.target)
            deps[node] = [target] if target in params else []
        elif node.op == "call_module":
            qualname = str(node.target)
            module = modules.get(qualname)
            if module is None:
                raise TraceFailed(f"fx named an unknown module {qualname!r}")
            upstream = _union(deps.get(n, []) for n in node.all_input_nodes)
            own = [f"{qualname}.{p}" if qualname else p for p, _ in module.named_parameters()]
            index = call_counts.get(qualname, 0)
            call_counts[qualname] = index + 1
            key = f"\0call:{qualname}#{index}"
            calls.append(
                _Call(qualname, index, module, upstream + own, parse_fx_stack(node.stack_trace))
            )
            deps[node] = [key]
        elif node.op in ("call_function", "call_method"):
            deps[node] = _union(deps.get(n, []) for n in node.all_input_nodes)
    return calls, inputs


def _union(lists: Iterable[list[str]]) -> list[str]:
    return list(dict.fromkeys(x for lst in lists for x in lst))


def trace_model(model: nn.Module, *, method: str = "auto") -> ModelGraph | None:
    """The model's graph by `torch.fx` (`method` "auto" or "fx"); None when "auto" cannot
    trace it (the caller then records a real forward pass). "fx" raises `TraceFailed`."""
    if method not in ("auto", "fx"):
        raise ValueError(f"unknown trace method {method!r}")
    if is_leaf_module(model):
        # fx traces *into* the root's forward, so a model that is itself a leaf (a bare
        # `nn.Linear`) would have no call at all: it is one call of the root, args0 in
        own = [p for p, _ in model.named_parameters()]
        call = _Call("", 0, model, ["args0", *own], [])
        return _graph_from_calls(model, [call], [InputInfo("args0", None, None, True)], "fx")
    try:
        calls, inputs = trace_fx(model)
    except TraceFailed:
        if method == "fx":
            raise
        return None
    return _graph_from_calls(model, calls, inputs, "fx")


def _graph_from_calls(
    model: nn.Module, calls: list[_Call], inputs: list[InputInfo], traced_with: str
) -> ModelGraph:
    """Name the calls: inputs given as call keys are rewritten to node names in order."""
    modules = dict(model.named_modules())
    root_class = class_name(model)
    key_to_name: dict[str, str] = {}
    named: list[_Call] = []
    for counter, call in enumerate(calls, start=1):
        op_type = op_type_of(call.module)
        key_to_name[f"\0call:{call.qualname}#{call.call_index}"] = (
            f"{scope_of(modules, root_class, call.qualname)}/{op_type}-op{counter}"
        )
        named.append(
            _Call(
                call.qualname,
                call.call_index,
                call.module,
                [key_to_name.get(i, i) for i in call.inputs],
                call.stack,
                call.outputs,
            )
        )
    return ModelGraph(model, named, inputs, traced_with=traced_with)


# ===================================================================== hooks recording
def _eager(hook: Callable[..., Any]) -> Callable[..., Any]:
    """The hook runs as it is, outside any `torch.compile` graph (as `capture.eager`)."""
    return torch.compiler.disable(hook, recursive=True)


def _force_eager() -> Any:
    """Compiled code runs eagerly until `.__exit__` (torch ≥ 2.6; None before: nothing to
    undo). Why: the recorder follows real tensors through a `TorchFunctionMode`, which
    dynamo cannot trace without breaking and recompiling at each call."""
    set_stance = getattr(torch.compiler, "set_stance", None)
    if set_stance is None:
        return None
    try:
        return set_stance("force_eager")
    except Exception:  # an older or unusual dynamo: recording still works, only slower
        return None


class _DataFlow(torch.overrides.TorchFunctionMode):
    """Follows tensors through the functional code *between* leaf modules (`flatten`,
    `x + y`, slicing…) so that recorded edges do not stop there; works without autograd."""

    def __init__(self, recorder: ForwardRecorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Iterable[type],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        rec = self.recorder
        if rec.depth == 0:  # inside a leaf module the hook records its output instead
            sources = _union(rec.producers(t) for t in flatten_tensors([args, kwargs or {}]))
            if sources:
                for t in flatten_tensors(out):
                    if id(t) not in rec.by_tensor:
                        rec.remember(t, sources)
        return out


class ForwardRecorder:
    """Records one real forward pass with hooks: the leaf calls in execution order, their
    output types, their stacks and data edges (by tensor identity, followed through
    functional code by a `TorchFunctionMode`)."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.leaves = leaf_modules(model)
        self.calls: list[_Call] = []
        self.inputs: list[InputInfo] = []
        self.depth = 0  # > 0 while a leaf module runs
        self.by_tensor: dict[int, list[str]] = {}  # id(tensor) → producer keys
        self._counts: dict[str, int] = {}
        self._keep: list[torch.Tensor] = []  # keeps ids valid while recording
        self._param_of: dict[int, str] = {id(p): n for n, p in model.named_parameters()}
        self._handles: list[Any] = []
        self._flow = _DataFlow(self)
        self._started = False
        self._flowing = False
        self._eager: Any = None  # the compiler stance in force while recording

    def __enter__(self) -> ForwardRecorder:
        # Every hook runs outside dynamo, and the recorded pass itself runs eagerly: under
        # `torch.compile` dynamo would trace into the recorder, whose state changes at each
        # call, and recompile until its limit (the recorder needs the real tensors anyway)
        self._eager = _force_eager()
        self._handles.append(self.model.register_forward_pre_hook(_eager(self._root_pre)))
        for qualname, module in self.leaves.items():
            self._handles.append(module.register_forward_pre_hook(_eager(self._enter_leaf)))
            hook = _eager(self._make_hook(qualname))
            self._handles.append(module.register_forward_hook(hook))
        # last, so that a model which is itself a leaf records its call before this runs
        self._handles.append(self.model.register_forward_hook(_eager(self._root_post)))
        return self

    def _end_eager(self) -> None:
        eager, self._eager = self._eager, None
        if eager is not None:
            eager.__exit__(None, None, None)

    def __exit__(self, *exc: object) -> None:
        self._end_eager()
        self._stop_flow()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._keep.clear()
        self.by_tensor.clear()

    @property
    def done(self) -> bool:
        return self._started and not self._flowing

    def _stop_flow(self) -> None:
        if self._flowing:
            self._flowing = False
            self._flow.__exit__(None, None, None)

    def _root_post(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        self._stop_flow()
        self._end_eager()  # compiled code compiles from the next pass on

    def _root_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if self._started:
            return  # only the first pass is recorded
        self._started = True
        # the data-flow mode is active only during the recorded pass, never in user code
        self._flow.__enter__()
        self._flowing = True
        for i, arg in enumerate(args):
            if isinstance(arg, torch.Tensor):
                name = f"args{i}"
                self.inputs.append(
                    InputInfo(name, numpy_dtype_of(arg.dtype), tuple(arg.shape), is_data=True)
                )
                self.remember(arg, [name])

    def _enter_leaf(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        self.depth += 1

    def remember(self, tensor: torch.Tensor, keys: list[str]) -> None:
        self._keep.append(tensor)
        self.by_tensor[id(tensor)] = keys

    def producers(self, tensor: torch.Tensor) -> list[str]:
        keys = self.by_tensor.get(id(tensor))
        if keys is not None:
            return keys
        param = self._param_of.get(id(tensor))
        return [param] if param is not None else []

    def _make_hook(self, qualname: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            self.depth = max(0, self.depth - 1)
            if self.depth or not self._flowing:
                return  # inside another leaf (part of the outer call), or not recording
            index = self._counts.get(qualname, 0)
            self._counts[qualname] = index + 1
            inputs = _union(self.producers(t) for t in flatten_tensors(list(args)))
            own = [f"{qualname}.{p}" if qualname else p for p, _ in module.named_parameters()]
            outs = flatten_tensors(output)
            key = f"\0call:{qualname}#{index}"
            self.calls.append(
                _Call(
                    qualname,
                    index,
                    module,
                    _union([inputs, own]),
                    current_stack(),
                    [OutputInfo(numpy_dtype_of(t.dtype), tuple(t.shape)) for t in outs],
                )
            )
            for t in outs:
                self.remember(t, [key])

        return hook

    def graph(self) -> ModelGraph:
        return _graph_from_calls(self.model, self.calls, self.inputs, "hooks")


def record_forward(model: nn.Module, run: Callable[[], object]) -> ModelGraph:
    """The graph of `model` from one forward pass performed by `run()`."""
    with ForwardRecorder(model) as recorder:
        run()
    return recorder.graph()


def build_graph(
    model: nn.Module,
    example_inputs: Sequence[Any] | Any | None = None,
    *,
    method: str = "auto",
) -> Graph:
    """The `core.Graph` of `model` without any server (for viewers and tests).

    With `example_inputs` the output types are filled in from one forward pass in eval mode
    without gradients (no parameter or buffer changes); the model's mode is restored."""
    model_graph = graph_for(model, example_inputs, method=method)
    return model_graph.graph()


def graph_for(
    model: nn.Module,
    example_inputs: Sequence[Any] | Any | None = None,
    *,
    method: str = "auto",
) -> ModelGraph:
    """`ModelGraph` by fx (or hooks on `example_inputs` when fx fails / `method="hooks"`)."""
    graph = trace_model(model, method=method) if method in ("auto", "fx") else None
    if example_inputs is None:
        if graph is None:
            raise TraceFailed(
                "The model cannot be traced symbolically; pass example_inputs to record it."
            )
        return graph
    args = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    with eval_no_grad(model):
        if graph is None:
            return record_forward(model, lambda: model(*args))
        fill_types(graph, model, lambda: model(*args))
    return graph


def fill_types(graph: ModelGraph, model: nn.Module, run: Callable[[], object]) -> None:
    """Output types of every call from one forward pass performed by `run()`."""
    with ForwardRecorder(model) as recorder:
        run()
    for call in recorder.calls:
        node = graph.by_call.get((call.qualname, call.call_index))
        if node is not None and node.outputs is None:
            node.outputs = call.outputs
    for info in recorder.inputs:
        target = graph.inputs.get(info.name)
        if target is not None and target.shape is None:
            target.dtype, target.shape = info.dtype, info.shape


class eval_no_grad:
    """Eval mode (no dropout, no batch-norm statistic updates) and no autograd for a probe
    pass; every module's training flag is restored afterwards."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.modes: list[tuple[nn.Module, bool]] = []
        self.grad = torch.no_grad()

    def __enter__(self) -> None:
        self.modes = [(m, m.training) for m in self.model.modules()]
        self.model.eval()
        self.grad.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.grad.__exit__(*exc)
        for module, mode in self.modes:
            module.training = mode
