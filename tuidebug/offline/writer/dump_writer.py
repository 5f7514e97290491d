"""Writing dumps in the MindSpore 2.10 synchronous ("e2e") layout.

Used by `tuidebug demo`, the offline benchmark and the PyTorch dump mode, so that every one of
them is read by exactly the code that reads real MindSpore dumps. The layout reproduces the
real 2.10.0 CPU dump in `fixtures/mindspore_lenet_dump/ms2_10_0` (spec §5.1, §5.4):

    {root}/rank_{r}/
      .dump_metadata/{data_dump.json, config.json}
      graphs/ms_output_trace_code_graph_{id}.pb            serialized ModelProto (spec §1.3)
      execution_order/ms_execution_order_graph_{id}.csv     header + kernels in run order
      execution_order/ms_global_execution_order_graph_{id}.csv   iterations that ran
      {net}/{id}/{iteration}/{op_type}.{full name, / → _}.0.0.{ts}.{input|output}.{slot}.DefaultFormat.{Dtype}.npy
      {net}/{id}/{iteration}/Parameter.{name, . → _}.0.0.{ts}.output.0.DefaultFormat.{Dtype}.npy

Timestamps only ever increase (the reader's "latest file wins" rule and hit ordering rely on
it); node stacks are written to `NodeProto.source_address` in the newer location form
`In file <path>:<line>, <col>~<end_col>/<code>/` (spec §5.6).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal

import numpy as np
from numpy.lib import format as npy_format
from numpy.typing import DTypeLike

from tuidebug._proto import debug_graph_pb2 as pb
from tuidebug.core.graph import StackFrame
from tuidebug.core.graph_pb import put_raw_enum
from tuidebug.core.tensor import (
    data_type_of,
    dump_name_of,
    storage_dtype,
)

# a graph name as MindSpore ≥ 2.4 writes it into file names (the reader's own encoding)
from tuidebug.offline.files.names import encode_dump_name as encode_name

IO = Literal["input", "output"]
TensorKey = tuple[str, IO, int]
AttrValue = bool | int | float | str

EXECUTION_ORDER_HEADER = "NodeExecutionOrder-FullNameWithScope"
DEFAULT_MS_VERSION = "2.10.0"
_TIMESTAMP_STEP = 37  # real dumps advance a few tens of microseconds per file


class DumpWriterError(Exception):
    """Wrong use of the writer or an unwritable destination; the message is one sentence."""


@dataclass(frozen=True)
class TensorDef:
    """Type of one output slot as the graph declares it."""

    dtype: DTypeLike
    shape: tuple[int, ...]


@dataclass(frozen=True)
class NodeDef:
    """One kernel of a graph.

    `inputs` name producers: other nodes' full names or parameter names. `dtype`/`shape`
    describe output slot 0 (`dtype=None`: no tensor output, like MindSpore's Depend or
    UpdateState); `extra_outputs` add slots 1, 2…. `executed=False` keeps a node out of the
    execution order (virtual nodes such as MakeTuple). `stack` is innermost frame first, as
    MindSpore writes it.
    """

    full_name: str
    op_type: str
    inputs: Sequence[str] = ()
    dtype: DTypeLike | None = np.float32
    shape: tuple[int, ...] = ()
    stack: Sequence[StackFrame] = ()
    attributes: Mapping[str, AttrValue] = field(default_factory=dict)
    extra_outputs: Sequence[TensorDef] = ()
    executed: bool = True

    @property
    def outputs(self) -> list[TensorDef]:
        if self.dtype is None:
            return []
        return [TensorDef(self.dtype, tuple(self.shape)), *self.extra_outputs]

    @property
    def scope(self) -> str:
        return self.full_name.rsplit("/", 1)[0] if "/" in self.full_name else ""


@dataclass(frozen=True)
class ParamDef:
    """A graph parameter (weight, optimizer moment, data input…)."""

    name: str
    dtype: DTypeLike
    shape: tuple[int, ...]


@dataclass
class _Graph:
    graph_id: int
    nodes: list[NodeDef]
    parameters: list[ParamDef]
    execution_order: list[str]
    by_name: dict[str, NodeDef]
    param_names: set[str]
    iterations: list[int] = field(default_factory=list)


def format_source_address(stack: Iterable[StackFrame]) -> str:
    """`NodeProto.source_address` in the newer MindSpore form (spec §5.6): per frame
    `      # In file <path>:<line>, <col>~<end_col>/<code>/`, one frame per line. A frame
    without a file (e.g. a `Corresponding forward node candidate:` header) is written as its
    bare text, which is how readers keep such lines."""
    lines = []
    for frame in stack:
        code = frame.code_line.rstrip("\n").replace("\n", "/")
        if not frame.file_path:
            lines.append(f"      # {code}\n")
        elif frame.line_no is None:
            lines.append(f"      # In file {frame.file_path}/{code}/\n")
        else:
            col = len(code) - len(code.lstrip())
            where = f"In file {frame.file_path}:{frame.line_no}, {col}~{len(code.rstrip())}"
            lines.append(f"      # {where}/{code}/\n")
    return "".join(lines)


class DumpWriter:
    """Builds one rank of a MindSpore 2.10-layout dump.

        writer = DumpWriter(out, net_name="MLP")
        writer.add_graph(0, nodes, parameters)
        writer.write_iteration(0, 0, {("…/MatMul-op0", "output", 0): array, ("fc1.weight", "output", 0): w})
        writer.finish()

    Graph files are written by `add_graph`; tensors by `write_iteration`; execution order,
    history and `.dump_metadata` are (re)written by `finish` and also kept current after
    every iteration, so a reader can open the dump while it is being written.
    """

    def __init__(
        self,
        root: Path,
        net_name: str = "Net",
        rank: int = 0,
        *,
        start_timestamp: int | None = None,
        ms_version: str = DEFAULT_MS_VERSION,
        device_target: str = "CPU",
        exist_ok: bool = False,
    ) -> None:
        if not net_name or any(c in net_name for c in "/\\") or net_name in (".", ".."):
            raise DumpWriterError(f"{net_name!r} cannot be used as a network name.")
        if rank < 0:
            raise DumpWriterError(f"The rank must not be negative (got {rank}).")
        self.root = Path(root)
        self.net_name = net_name
        self.rank = rank
        self.rank_dir = self.root / f"rank_{rank}"
        self.ms_version = ms_version
        self.device_target = device_target
        # microseconds like MindSpore's; a fixed start makes the output reproducible
        self._timestamp = time.time_ns() // 1000 if start_timestamp is None else start_timestamp
        self._graphs: dict[int, _Graph] = {}
        if self.rank_dir.exists() and not exist_ok and any(self.rank_dir.iterdir()):
            raise DumpWriterError(f"{self.rank_dir} already holds a dump; choose an empty folder.")
        try:
            self.rank_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise DumpWriterError(f"{self.rank_dir} cannot be created: {_reason(err)}.") from None

    # ------------------------------------------------------------------ graphs
    def add_graph(
        self,
        graph_id: int,
        nodes: Sequence[NodeDef],
        parameters: Sequence[ParamDef],
        *,
        execution_order: Sequence[str] | None = None,
    ) -> Path:
        """Declare a graph and write its `.pb`. `nodes` must be in topological order (each
        input defined before use); `execution_order` defaults to the executed nodes in that
        order. Returns the `.pb` path."""
        if graph_id < 0:
            raise DumpWriterError(f"The graph id must not be negative (got {graph_id}).")
        if graph_id in self._graphs:
            raise DumpWriterError(f"Graph {graph_id} was already added.")
        by_name: dict[str, NodeDef] = {}
        param_names: set[str] = set()
        for param in parameters:
            if param.name in param_names:
                raise DumpWriterError(f"Parameter {param.name!r} is declared twice.")
            param_names.add(param.name)
        for node in nodes:
            if node.full_name in by_name or node.full_name in param_names:
                raise DumpWriterError(f"Node {node.full_name!r} is declared twice.")
            for src in node.inputs:
                if src not in by_name and src not in param_names:
                    raise DumpWriterError(
                        f"Node {node.full_name!r} reads {src!r}, which is neither an earlier "
                        "node nor a parameter."
                    )
            by_name[node.full_name] = node
        order = (
            [n.full_name for n in nodes if n.executed]
            if execution_order is None
            else list(execution_order)
        )
        for name in order:
            if name not in by_name:
                raise DumpWriterError(f"The execution order names {name!r}, which is not a node.")
        graph = _Graph(graph_id, list(nodes), list(parameters), order, by_name, param_names)
        self._graphs[graph_id] = graph
        model = build_model_proto(graph_id, graph.nodes, graph.parameters)
        path = self.rank_dir / "graphs" / f"ms_output_trace_code_graph_{graph_id}.pb"
        self._write_bytes(path, model.SerializeToString())
        self._write_execution_order(graph)
        self._write_metadata()
        return path

    # ----------------------------------------------------------------- tensors
    def write_iteration(
        self, graph_id: int, iteration: int, tensors: Mapping[TensorKey, np.ndarray]
    ) -> Path:
        """Write the tensors of one run of a graph: kernels in execution order (inputs, then
        outputs, slots ascending), then parameters, each file with a later timestamp.
        Keys are `(node full name or parameter name, "input"|"output", slot)`. Returns the
        iteration folder."""
        graph = self._graphs.get(graph_id)
        if graph is None:
            raise DumpWriterError(f"Graph {graph_id} was not added before writing tensors.")
        if iteration < 0:
            raise DumpWriterError(f"The iteration must not be negative (got {iteration}).")
        for name, io, slot in tensors:
            if io not in ("input", "output") or slot < 0:
                raise DumpWriterError(f"{(name, io, slot)!r} is not a (name, io, slot) key.")
            if name in graph.param_names:
                if (io, slot) != ("output", 0):
                    raise DumpWriterError(f"Parameter {name!r} only has output slot 0.")
            elif name not in graph.by_name:
                raise DumpWriterError(f"{name!r} is not a node or parameter of graph {graph_id}.")
        folder = self.rank_dir / self.net_name / str(graph_id) / str(iteration)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise DumpWriterError(f"{folder} cannot be created: {_reason(err)}.") from None
        ordered = _ordered_keys(graph, tensors)
        for name, io, slot in ordered:
            array = np.asarray(tensors[(name, io, slot)])
            if name in graph.param_names:
                stem = f"Parameter.{encode_name(name)}"
            else:
                stem = f"{graph.by_name[name].op_type}.{encode_name(name)}"
            file_name = (
                f"{stem}.0.0.{self._next_timestamp()}.{io}.{slot}.DefaultFormat."
                f"{dump_name_of(array.dtype)}.npy"
            )
            self._write_array(folder / file_name, array)
        if iteration not in graph.iterations:
            graph.iterations.append(iteration)
            self._write_history(graph)
        return folder

    def _next_timestamp(self) -> int:
        self._timestamp += _TIMESTAMP_STEP
        return self._timestamp

    # ------------------------------------------------------------------ finish
    def finish(self) -> Path:
        """Write execution orders, histories and `.dump_metadata`; returns the dump root."""
        for graph in self._graphs.values():
            self._write_execution_order(graph)
            self._write_history(graph)
        self._write_metadata()
        return self.root

    def __enter__(self) -> DumpWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.finish()

    # ------------------------------------------------------------------ files
    def _write_execution_order(self, graph: _Graph) -> None:
        text = "\n".join([EXECUTION_ORDER_HEADER, *graph.execution_order]) + "\n"
        name = f"ms_execution_order_graph_{graph.graph_id}.csv"
        self._write_bytes(self.rank_dir / "execution_order" / name, text.encode())

    def _write_history(self, graph: _Graph) -> None:
        text = "".join(f"{i}\n" for i in graph.iterations)
        name = f"ms_global_execution_order_graph_{graph.graph_id}.csv"
        self._write_bytes(self.rank_dir / "execution_order" / name, text.encode())

    def _write_metadata(self) -> None:
        # what MindSpore copies into .dump_metadata (spec §5.1); MindInsight-era discovery
        # requires the folder, 2.10 readers must not (the real 2.10 CPU dump lacks it)
        settings = {
            "common_dump_settings": {
                "op_debug_mode": 0,
                "dump_mode": 0,
                "path": str(self.root.resolve()),
                "net_name": self.net_name,
                "iteration": "all",
                "saved_data": "tensor",
                "input_output": 0,
                "kernels": [],
                "support_device": [0, 1, 2, 3, 4, 5, 6, 7],
            },
            "e2e_dump_settings": {"enable": True, "trans_flag": True},
        }
        config = {"device_target": self.device_target, "ms_version": self.ms_version}
        meta = self.rank_dir / ".dump_metadata"
        self._write_bytes(meta / "data_dump.json", (json.dumps(settings, indent=4) + "\n").encode())
        self._write_bytes(meta / "config.json", json.dumps(config).encode())

    def _write_bytes(self, path: Path, data: bytes) -> None:
        # write-then-rename: a reader never sees a half-written graph or csv
        tmp = path.with_name(path.name + ".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError as err:
            raise DumpWriterError(f"{path} cannot be written: {_reason(err)}.") from None

    def _write_array(self, path: Path, array: np.ndarray) -> None:
        # 2.4+ keeps the original type in the name but stores bfloat16 as float32
        stored = array.astype(storage_dtype(array.dtype), copy=False)
        # not np.ascontiguousarray: it would turn a 0-d scalar into shape (1,)
        stored = np.require(stored, requirements="C")
        try:
            with open(path, "wb") as fp:
                npy_format.write_array(fp, stored, allow_pickle=False)
        except OSError as err:
            raise DumpWriterError(f"{path} cannot be written: {_reason(err)}.") from None


def _ordered_keys(graph: _Graph, tensors: Mapping[TensorKey, np.ndarray]) -> list[TensorKey]:
    """Kernels in execution order (then any non-executed node), inputs before outputs,
    then parameters in declaration order: the order MindSpore's dump writes them."""
    rank: dict[str, int] = {}
    for name in graph.execution_order:
        rank.setdefault(name, len(rank))
    for node in graph.nodes:
        rank.setdefault(node.full_name, len(rank))
    for param in graph.parameters:
        rank.setdefault(param.name, len(rank))
    return sorted(tensors, key=lambda k: (rank[k[0]], k[1] != "input", k[2]))


def _reason(err: OSError) -> str:
    return (err.strerror or str(err)).rstrip(".").lower()


# ------------------------------------------------------------------- protobuf
def _tensor_type(out: TensorDef) -> pb.TypeProto:
    t = pb.TypeProto(data_type=pb.DT_TENSOR)
    # bfloat16 is declared with tuidebug's own number (MindSpore's is unknown and the proto2
    # enum closed), so that the graph agrees with the files' `.bfloat16.npy` names, as a real
    # 2.4+ graph does; the files themselves hold float32, as MindSpore stores bfloat16
    put_raw_enum(t.tensor_type, "elem_type", 1, data_type_of(np.dtype(out.dtype)))
    shape = t.tensor_type.shape
    shape.SetInParent()  # a scalar still has an (empty) shape, as MindSpore writes it
    for size in out.shape:
        shape.dim.add(size=int(size))
    return t


def _output_type(node: NodeDef) -> pb.TypeProto:
    outputs = node.outputs
    if not outputs:
        return pb.TypeProto(data_type=pb.DT_NONE)
    if len(outputs) == 1:
        return _tensor_type(outputs[0])
    t = pb.TypeProto(data_type=pb.DT_TUPLE)
    for out in outputs:
        t.sequence_type.elem_types.append(_tensor_type(out))
    return t


def _value(value: AttrValue) -> pb.ValueProto:
    if isinstance(value, bool):
        return pb.ValueProto(dtype=pb.DT_BOOL, bool_val=value)
    if isinstance(value, int):
        return pb.ValueProto(dtype=pb.DT_INT64, int_val=value)
    if isinstance(value, float):
        return pb.ValueProto(dtype=pb.DT_FLOAT64, double_val=value)
    return pb.ValueProto(dtype=pb.DT_STRING, str_val=str(value))


def build_model_proto(
    graph_id: int, nodes: Sequence[NodeDef], parameters: Sequence[ParamDef]
) -> pb.ModelProto:
    """The `ModelProto` MindSpore's exporter would write for this graph (spec §1.3):
    nodes named by their 1-based index, inputs by producer index or parameter name."""
    model = pb.ModelProto(ir_version=1)
    graph = model.graph
    graph.name = f"kernel_graph{graph_id}"  # 2.10 spelling (2.0 wrote kernel_graph_0)
    graph.root_name = str(graph_id)
    index: dict[str, str] = {}
    for i, node in enumerate(nodes, start=1):
        index[node.full_name] = str(i)
        proto = graph.node.add()
        proto.name = str(i)
        proto.op_type = node.op_type
        proto.scope = node.scope
        proto.full_name = node.full_name
        for src in node.inputs:
            proto.input.add(name=index.get(src, src), type=pb.InputProto.DATA_EDGE)
        for key, value in node.attributes.items():
            proto.attribute.add(name=key, value=_value(value))
        proto.output_type.CopyFrom(_output_type(node))
        proto.source_address = format_source_address(node.stack)
    for param in parameters:
        p = graph.parameters.add(name=param.name)
        p.type.CopyFrom(_tensor_type(TensorDef(param.dtype, tuple(param.shape))))
    if nodes:
        last = nodes[-1]
        graph.outputs.add(name=index[last.full_name], type=_output_type(last))
    return model
