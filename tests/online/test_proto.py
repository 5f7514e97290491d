"""The generated protocol modules: fresh, wire-exact (spec §1), and able to read real dumps."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.descriptor_pb2 import FileDescriptorProto

from tests.conftest import REPO
from tests.dump_names import CONV1_2_0, CONV1_2_10
from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as grpc_pb

PROTO_PKG = REPO / "tuidebug" / "_proto"


def _label(field: FieldDescriptor) -> str:
    """The field's label as in the spec tables (protobuf 7 dropped `.label`)."""
    if hasattr(field, "is_repeated"):
        if field.is_repeated:
            return "repeated"
        return "required" if getattr(field, "is_required", False) else "optional"
    return {
        FieldDescriptor.LABEL_OPTIONAL: "optional",
        FieldDescriptor.LABEL_REPEATED: "repeated",
        FieldDescriptor.LABEL_REQUIRED: "required",
    }[field.label]


_SCALAR = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_FLOAT: "float",
    FieldDescriptor.TYPE_DOUBLE: "double",
}


def _load_gen_proto():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_proto", REPO / "scripts" / "gen_proto.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _serialized_descriptor(module_file: Path) -> FileDescriptorProto:
    text = module_file.read_text(encoding="utf-8")
    match = re.search(r"AddSerializedFile\((b'.*?')\)\n", text)
    assert match, f"no serialized descriptor in {module_file}"
    return FileDescriptorProto.FromString(ast.literal_eval(match.group(1)))


def _rpc_handlers(module_file: Path) -> dict[str, str]:
    text = module_file.read_text(encoding="utf-8")
    return dict(re.findall(r"'(\w+)': grpc\.(\w+)_rpc_method_handler", text))


def _fields(message: type) -> dict[str, tuple[int, str, str]]:
    """name → (number, label, type name) for a generated message class."""
    out = {}
    for f in message.DESCRIPTOR.fields:  # type: ignore[attr-defined]
        tname = f.message_type.name if f.message_type else f.enum_type.name if f.enum_type else ""
        out[f.name] = (f.number, _label(f), tname or _SCALAR[f.type])
    return out


# --------------------------------------------------------------------------- freshness


def test_committed_modules_match_the_proto_files(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    gen = _load_gen_proto()
    gen.generate(tmp_path)
    for name in ("debug_graph_pb2.py", "debug_grpc_pb2.py"):
        fresh = _serialized_descriptor(tmp_path / name)
        committed = _serialized_descriptor(PROTO_PKG / name)
        assert fresh == committed, f"{name} is stale: run scripts/gen_proto.py"
    grpc_name = "debug_grpc_pb2_grpc.py"
    assert _rpc_handlers(tmp_path / grpc_name) == _rpc_handlers(PROTO_PKG / grpc_name)
    if gen.installed_generator_version() == gen.GENERATOR_VERSION:
        # Same generator: the files must be byte-identical (catches hand edits too).
        for name in gen.GENERATED:
            assert (tmp_path / name).read_text() == (PROTO_PKG / name).read_text(), name


def test_generated_imports_are_package_relative() -> None:
    for path in PROTO_PKG.glob("*_pb2*.py*"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^import debug_", text, re.MULTILINE), path.name


def _floor(requirement: str) -> tuple[int, ...]:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(rf'"{requirement}>=([\d.]+)"', text)
    assert match, f"no {requirement} floor in pyproject.toml"
    return _version(match.group(1))


def _version(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def test_gencode_runs_on_the_oldest_allowed_runtimes() -> None:
    """Gencode newer than pyproject's floors would refuse to import there (fresh venv)."""
    text = (PROTO_PKG / "debug_graph_pb2.py").read_text(encoding="utf-8")
    match = re.search(r"# Protobuf Python Version: ([\d.]+)", text)
    assert match
    gencode = _version(match.group(1))
    if "ValidateProtobufRuntimeVersion" in text:
        # A checked gencode needs the same major and a runtime at least as new.
        assert gencode <= _floor("protobuf") and gencode[0] == _floor("protobuf")[0]
    else:
        assert gencode <= _floor("protobuf")
    grpc_text = (PROTO_PKG / "debug_grpc_pb2_grpc.py").read_text(encoding="utf-8")
    gmatch = re.search(r"GRPC_GENERATED_VERSION = '([\d.]+)'", grpc_text)
    assert gmatch
    assert _version(gmatch.group(1)) <= _floor("grpcio")


# --------------------------------------------------------------------------- debug_grpc.proto


def test_grpc_file_syntax_and_package() -> None:
    assert grpc_pb.DESCRIPTOR.package == "debugger"
    assert graph_pb.DESCRIPTOR.package == "debugger"
    fdp = _serialized_descriptor(PROTO_PKG / "debug_grpc_pb2.py")
    assert fdp.syntax == "proto3"
    assert list(fdp.dependency) == ["debug_graph.proto"]
    assert _serialized_descriptor(PROTO_PKG / "debug_graph_pb2.py").syntax in ("", "proto2")


def test_service_methods_and_streaming_kinds() -> None:
    service = grpc_pb.DESCRIPTOR.services_by_name["EventListener"]
    kinds = {
        m.name: (
            m.client_streaming if hasattr(m, "client_streaming") else None,
            m.input_type.name,
            m.output_type.name,
        )
        for m in service.methods
    }
    assert set(kinds) == {
        "WaitCMD",
        "SendMetadata",
        "SendGraph",
        "SendTensors",
        "SendTensorBase",
        "SendTensorStats",
        "SendWatchpointHits",
        "SendMultiGraphs",
        "SendHeartbeat",
    }
    assert {name: (i, o) for name, (_, i, o) in kinds.items()} == {
        "WaitCMD": ("Metadata", "EventReply"),
        "SendMetadata": ("Metadata", "EventReply"),
        "SendGraph": ("Chunk", "EventReply"),
        "SendTensors": ("TensorProto", "EventReply"),
        "SendTensorBase": ("TensorBase", "EventReply"),
        "SendTensorStats": ("TensorSummary", "EventReply"),
        "SendWatchpointHits": ("WatchpointHit", "EventReply"),
        "SendMultiGraphs": ("Chunk", "EventReply"),
        "SendHeartbeat": ("Heartbeat", "EventReply"),
    }
    # Streaming kinds from the generated server handlers (works on every protobuf runtime).
    assert _rpc_handlers(PROTO_PKG / "debug_grpc_pb2_grpc.py") == {
        "WaitCMD": "unary_unary",
        "SendMetadata": "unary_unary",
        "SendGraph": "stream_unary",
        "SendTensors": "stream_unary",
        "SendTensorBase": "stream_unary",
        "SendTensorStats": "stream_unary",
        "SendWatchpointHits": "stream_unary",
        "SendMultiGraphs": "stream_unary",
        "SendHeartbeat": "unary_unary",
    }


def test_metadata_fields() -> None:
    assert _fields(grpc_pb.Metadata) == {
        "device_name": (1, "optional", "string"),
        "cur_step": (2, "optional", "int32"),
        "backend": (3, "optional", "string"),
        "cur_node": (4, "optional", "string"),
        "training_done": (5, "optional", "bool"),
        "graph_num": (6, "optional", "int32"),
        "ms_version": (7, "optional", "string"),
    }


def test_event_reply_oneof_and_status() -> None:
    d = grpc_pb.EventReply.DESCRIPTOR
    assert d.fields_by_name["status"].number == 1
    assert d.fields_by_name["status"].containing_oneof is None
    cmd = d.oneofs_by_name["cmd"]
    assert {f.name: f.number for f in cmd.fields} == {
        "exit": 2,
        "run_cmd": 3,
        "set_cmd": 4,
        "view_cmd": 5,
        "version_matched": 6,
    }
    assert {v.name: v.number for v in d.enum_types_by_name["Status"].values} == {
        "OK": 0,
        "FAILED": 1,
        "PENDING": 2,
    }
    # A oneof bool set to False is still "present" on the wire (spec §1.6).
    reply = grpc_pb.EventReply.FromString(
        grpc_pb.EventReply(version_matched=False).SerializeToString()
    )
    assert reply.WhichOneof("cmd") == "version_matched"


def test_run_cmd_oneof() -> None:
    d = grpc_pb.RunCMD.DESCRIPTOR
    assert d.fields_by_name["run_level"].number == 1
    assert {f.name: f.number for f in d.oneofs_by_name["cmd"].fields} == {
        "run_steps": 2,
        "node_name": 3,
    }
    # An empty node_name is still "set" (= next kernel).
    cmd = grpc_pb.RunCMD.FromString(
        grpc_pb.RunCMD(run_level="node", node_name="").SerializeToString()
    )
    assert cmd.WhichOneof("cmd") == "node_name"


def test_set_view_watchnode_fields() -> None:
    assert _fields(grpc_pb.SetCMD) == {
        "watch_nodes": (1, "repeated", "WatchNode"),
        "watch_condition": (2, "optional", "WatchCondition"),
        "delete": (3, "optional", "bool"),
        "id": (4, "optional", "int32"),
    }
    assert _fields(grpc_pb.ViewCMD) == {
        "tensors": (1, "repeated", "TensorProto"),
        "level": (2, "optional", "Level"),
    }
    levels = grpc_pb.ViewCMD.DESCRIPTOR.enum_types_by_name["Level"]
    assert {v.name: v.number for v in levels.values} == {"value": 0, "statistics": 1, "base": 2}
    assert [(f.name, f.number) for f in grpc_pb.WatchNode.DESCRIPTOR.fields] == [
        ("node_name", 1),
        ("node_type", 2),
        ("graph_name", 3),
        ("rank_id", 4),
        ("device_id", 5),
    ]


def test_watch_condition_reserves_field_3() -> None:
    d = grpc_pb.WatchCondition.DESCRIPTOR
    assert {f.name: f.number for f in d.fields} == {"condition": 1, "value": 2, "params": 4}
    assert 3 not in d.fields_by_number
    fdp = _serialized_descriptor(PROTO_PKG / "debug_grpc_pb2.py")
    (wc,) = [m for m in fdp.message_type if m.name == "WatchCondition"]
    assert [(r.start, r.end) for r in wc.reserved_range] == [(3, 4)]  # end is exclusive
    assert d.fields_by_name["value"].type == FieldDescriptor.TYPE_FLOAT
    conditions = {v.name: v.number for v in d.enum_types_by_name["Condition"].values}
    assert conditions == {
        "nan": 0,
        "overflow": 2,
        "sd_gt": 11,
        "sd_lt": 12,
        "tensor_general_overflow": 13,
        "tensor_initialization": 14,
        "tensor_too_large": 15,
        "tensor_too_small": 16,
        "tensor_all_zero": 17,
        "tensor_change_too_large": 18,
        "tensor_change_too_small": 19,
        "tensor_not_changed": 20,
        "tensor_range": 21,
    }
    param = grpc_pb.WatchCondition.Parameter.DESCRIPTOR
    assert [(f.name, f.number, f.type) for f in param.fields] == [
        ("name", 1, FieldDescriptor.TYPE_STRING),
        ("disabled", 2, FieldDescriptor.TYPE_BOOL),
        ("value", 3, FieldDescriptor.TYPE_DOUBLE),
        ("hit", 4, FieldDescriptor.TYPE_BOOL),
        ("actual_value", 5, FieldDescriptor.TYPE_DOUBLE),
    ]


def test_hit_heartbeat_and_summary_messages() -> None:
    assert _fields(grpc_pb.WatchpointHit) == {
        "tensor": (1, "optional", "TensorProto"),
        "watch_condition": (2, "optional", "WatchCondition"),
        "id": (3, "optional", "int32"),
        "error_code": (4, "optional", "int32"),
    }
    assert [(f.name, f.number) for f in grpc_pb.Heartbeat.DESCRIPTOR.fields] == [
        ("message", 1),
        ("period", 2),
    ]
    assert [f.name for f in grpc_pb.Statistics.DESCRIPTOR.fields] == [
        "is_bool",
        "max_value",
        "min_value",
        "avg_value",
        "count",
        "neg_zero_count",
        "pos_zero_count",
        "nan_count",
        "neg_inf_count",
        "pos_inf_count",
        "zero_count",
    ]
    assert [f.number for f in grpc_pb.Statistics.DESCRIPTOR.fields] == list(range(1, 12))
    assert _fields(grpc_pb.TensorBase) == {
        "data_type": (1, "optional", "int32"),
        "shape": (2, "repeated", "int64"),
        "data_size": (3, "optional", "int64"),
    }
    assert _fields(grpc_pb.TensorSummary) == {
        "tensor_base": (1, "optional", "TensorBase"),
        "statistics": (2, "optional", "Statistics"),
    }
    assert _fields(grpc_pb.Chunk) == {
        "buffer": (1, "optional", "bytes"),
        "finished": (2, "optional", "bool"),
    }


# --------------------------------------------------------------------------- debug_graph.proto


def test_tensor_proto_fields() -> None:
    assert _fields(graph_pb.TensorProto) == {
        "node_name": (1, "optional", "string"),
        "slot": (2, "optional", "string"),
        "tensor_content": (3, "optional", "bytes"),
        "dims": (4, "repeated", "int64"),
        "data_type": (5, "optional", "DataType"),
        "finished": (6, "optional", "bool"),
        "iter": (7, "optional", "string"),
        "truncate": (8, "optional", "bool"),
    }
    # proto2 presence is what readers rely on (spec §1.6).
    assert not graph_pb.TensorProto().HasField("data_type")


def test_node_and_graph_proto_fields() -> None:
    assert _fields(graph_pb.NodeProto) == {
        "input": (1, "repeated", "InputProto"),
        "name": (2, "optional", "string"),
        "op_type": (3, "optional", "string"),
        "scope": (4, "optional", "string"),
        "attribute": (5, "repeated", "AttributeProto"),
        "output_type": (6, "optional", "TypeProto"),
        "output_i": (7, "optional", "uint64"),
        "full_name": (8, "optional", "string"),
        "source_address": (9, "optional", "string"),
    }
    assert _fields(graph_pb.GraphProto) == {
        "node": (1, "repeated", "NodeProto"),
        "name": (2, "optional", "string"),
        "parameters": (3, "repeated", "ParameterProto"),
        "outputs": (4, "repeated", "OutputProto"),
        "const_vals": (5, "repeated", "NamedValueProto"),
        "root_name": (6, "optional", "string"),
    }
    assert _fields(graph_pb.ModelProto) == {
        "ir_version": (1, "optional", "int64"),
        "domain": (2, "optional", "string"),
        "model_version": (3, "optional", "int64"),
        "graph": (4, "optional", "GraphProto"),
        "metadata_operators": (5, "optional", "OperatorSetProto"),
    }
    assert _fields(graph_pb.NamedValueProto) == {
        "key": (1, "optional", "string"),
        "value": (2, "optional", "ValueProto"),
        "full_name": (3, "optional", "string"),
    }
    edge = graph_pb.InputProto.DESCRIPTOR.enum_types_by_name["EdgeType"]
    assert {v.name: v.number for v in edge.values} == {"DATA_EDGE": 0, "CONTROL_EDGE": 1}


def test_value_and_type_proto_fields() -> None:
    value = graph_pb.ValueProto.DESCRIPTOR
    assert [f.number for f in value.fields] == list(range(1, 21))
    assert value.fields_by_name["values"].message_type.name == "ValueProto"
    assert value.fields_by_name["dict_val"].message_type.name == "NamedValueProto"
    assert _label(value.fields_by_name["str_vals"]) == "repeated"
    tp = graph_pb.TypeProto.DESCRIPTOR
    assert {f.name: f.number for f in tp.oneofs_by_name["value"].fields} == {
        "tensor_type": 2,
        "sequence_type": 3,
    }
    assert tp.fields_by_name["data_type"].number == 1
    dim = graph_pb.TensorShapeProto.Dimension.DESCRIPTOR
    assert [(f.name, f.number) for f in dim.fields] == [("size", 1), ("name", 2)]


def test_enums() -> None:
    names = {v.number: v.name for v in graph_pb.DESCRIPTOR.enum_types_by_name["DataType"].values}
    assert len(names) == 45 and sorted(names) == list(range(45))
    assert names[0] == "DT_UNDEFINED"
    assert names[11] == "DT_FLOAT32"
    assert names[14] == "DT_TENSOR"
    assert names[31] == "DT_TUPLE"
    assert names[34] == "DT_NONE"
    assert names[40] == "DT_ANYTHING"
    assert names[44] == "DT_IOMONAD"
    assert graph_pb.UNKNOWWN_VERSION == 0 and graph_pb.IR_VERSION == 1


# --------------------------------------------------------------------------- real dumps

# (graph name, nodes, kernels, parameters, constants, nodes with source_address, a kernel)
_EXPECTED = {
    "ms2_0_0": (
        "kernel_graph_0",
        68,
        37,
        20,
        5,
        46,
        CONV1_2_0,
    ),
    "ms2_10_0": (
        "kernel_graph0",
        77,
        45,
        21,
        9,
        57,
        CONV1_2_10,
    ),
}
# Graph plumbing that MindSpore keeps out of the execution order (not kernels).
_NON_KERNEL_OPS = {"Depend", "UpdateState", "Load", "MakeTuple"}


def test_fixture_graphs_parse_as_model_proto(lenet_dump: Path) -> None:
    pbs = sorted((lenet_dump / "rank_0" / "graphs").glob("*.pb"))
    assert pbs, f"no graph .pb under {lenet_dump}"
    name, n_nodes, n_kernels, n_params, n_consts, n_src, conv1 = _EXPECTED[lenet_dump.name]
    for pb in pbs:
        model = graph_pb.ModelProto.FromString(pb.read_bytes())
        graph = model.graph
        assert model.ir_version == 1
        assert graph.name == name
        assert graph.root_name == "0"
        assert len(graph.node) == n_nodes
        kernels = [n for n in graph.node if n.op_type not in _NON_KERNEL_OPS]
        assert len(kernels) == n_kernels
        assert len(graph.parameters) == n_params
        assert len(graph.const_vals) == n_consts
        params = {p.name for p in graph.parameters}
        assert {"conv1.weight", "fc3.bias", "moments.fc1.weight", "inputs0"} <= params
        assert [c.key for c in graph.const_vals] == [f"cst{i}" for i in range(1, n_consts + 1)]
        assert all(c.full_name.startswith("Default") for c in graph.const_vals)
        # Node names are the 1-based topological index.
        assert [n.name for n in graph.node] == [str(i) for i in range(1, n_nodes + 1)]
        by_full = {n.full_name: n for n in graph.node}
        assert conv1 in by_full
        node = by_full[conv1]
        assert node.op_type == "Conv2D"
        assert [i.name for i in node.input] == ["inputs0", "1"]
        assert node.output_type.tensor_type.elem_type == graph_pb.DT_FLOAT32
        assert [d.size for d in node.output_type.tensor_type.shape.dim] == [4, 6, 28, 28]
        with_src = [n for n in graph.node if n.source_address]
        assert len(with_src) == n_src
        assert "In file " in node.source_address
        assert "train_lenet.py:30" in node.source_address
        ops = Counter(n.op_type for n in graph.node)
        assert ops["ApplyMomentum"] == 8


def test_generated_modules_do_not_pull_in_textual() -> None:
    import subprocess

    code = (
        "import sys; import tuidebug._proto.debug_grpc_pb2_grpc; "
        "sys.exit(1 if 'textual' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0
