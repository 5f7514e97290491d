from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TensorDebugMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNSPECIFIED: _ClassVar[TensorDebugMode]
    NO_TENSOR: _ClassVar[TensorDebugMode]
    CURT_HEALTH: _ClassVar[TensorDebugMode]
    CONCISE_HEALTH: _ClassVar[TensorDebugMode]
    FULL_HEALTH: _ClassVar[TensorDebugMode]
    SHAPE: _ClassVar[TensorDebugMode]
    FULL_NUMERICS: _ClassVar[TensorDebugMode]
    FULL_TENSOR: _ClassVar[TensorDebugMode]
    REDUCE_INF_NAN_THREE_SLOTS: _ClassVar[TensorDebugMode]
UNSPECIFIED: TensorDebugMode
NO_TENSOR: TensorDebugMode
CURT_HEALTH: TensorDebugMode
CONCISE_HEALTH: TensorDebugMode
FULL_HEALTH: TensorDebugMode
SHAPE: TensorDebugMode
FULL_NUMERICS: TensorDebugMode
FULL_TENSOR: TensorDebugMode
REDUCE_INF_NAN_THREE_SLOTS: TensorDebugMode

class DebugEvent(_message.Message):
    __slots__ = ("wall_time", "step", "debug_metadata", "source_file", "stack_frame_with_id", "graph_op_creation", "debugged_graph", "execution", "graph_execution_trace", "graph_id", "debugged_device")
    WALL_TIME_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    DEBUG_METADATA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_WITH_ID_FIELD_NUMBER: _ClassVar[int]
    GRAPH_OP_CREATION_FIELD_NUMBER: _ClassVar[int]
    DEBUGGED_GRAPH_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    GRAPH_EXECUTION_TRACE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    DEBUGGED_DEVICE_FIELD_NUMBER: _ClassVar[int]
    wall_time: float
    step: int
    debug_metadata: DebugMetadata
    source_file: SourceFile
    stack_frame_with_id: StackFrameWithId
    graph_op_creation: GraphOpCreation
    debugged_graph: DebuggedGraph
    execution: Execution
    graph_execution_trace: GraphExecutionTrace
    graph_id: str
    debugged_device: DebuggedDevice
    def __init__(self, wall_time: _Optional[float] = ..., step: _Optional[int] = ..., debug_metadata: _Optional[_Union[DebugMetadata, _Mapping]] = ..., source_file: _Optional[_Union[SourceFile, _Mapping]] = ..., stack_frame_with_id: _Optional[_Union[StackFrameWithId, _Mapping]] = ..., graph_op_creation: _Optional[_Union[GraphOpCreation, _Mapping]] = ..., debugged_graph: _Optional[_Union[DebuggedGraph, _Mapping]] = ..., execution: _Optional[_Union[Execution, _Mapping]] = ..., graph_execution_trace: _Optional[_Union[GraphExecutionTrace, _Mapping]] = ..., graph_id: _Optional[str] = ..., debugged_device: _Optional[_Union[DebuggedDevice, _Mapping]] = ...) -> None: ...

class DebugMetadata(_message.Message):
    __slots__ = ("tensorflow_version", "file_version", "tfdbg_run_id")
    TENSORFLOW_VERSION_FIELD_NUMBER: _ClassVar[int]
    FILE_VERSION_FIELD_NUMBER: _ClassVar[int]
    TFDBG_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    tensorflow_version: str
    file_version: str
    tfdbg_run_id: str
    def __init__(self, tensorflow_version: _Optional[str] = ..., file_version: _Optional[str] = ..., tfdbg_run_id: _Optional[str] = ...) -> None: ...

class SourceFile(_message.Message):
    __slots__ = ("file_path", "host_name", "lines")
    FILE_PATH_FIELD_NUMBER: _ClassVar[int]
    HOST_NAME_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    file_path: str
    host_name: str
    lines: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, file_path: _Optional[str] = ..., host_name: _Optional[str] = ..., lines: _Optional[_Iterable[str]] = ...) -> None: ...

class FileLineCol(_message.Message):
    __slots__ = ("file_index", "line", "col", "func", "code")
    FILE_INDEX_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    COL_FIELD_NUMBER: _ClassVar[int]
    FUNC_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    file_index: int
    line: int
    col: int
    func: str
    code: str
    def __init__(self, file_index: _Optional[int] = ..., line: _Optional[int] = ..., col: _Optional[int] = ..., func: _Optional[str] = ..., code: _Optional[str] = ...) -> None: ...

class StackFrameWithId(_message.Message):
    __slots__ = ("id", "file_line_col")
    ID_FIELD_NUMBER: _ClassVar[int]
    FILE_LINE_COL_FIELD_NUMBER: _ClassVar[int]
    id: str
    file_line_col: FileLineCol
    def __init__(self, id: _Optional[str] = ..., file_line_col: _Optional[_Union[FileLineCol, _Mapping]] = ...) -> None: ...

class CodeLocation(_message.Message):
    __slots__ = ("host_name", "stack_frame_ids")
    HOST_NAME_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_IDS_FIELD_NUMBER: _ClassVar[int]
    host_name: str
    stack_frame_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, host_name: _Optional[str] = ..., stack_frame_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GraphOpCreation(_message.Message):
    __slots__ = ("op_type", "op_name", "graph_name", "graph_id", "device_name", "input_names", "num_outputs", "code_location", "output_tensor_ids")
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    GRAPH_NAME_FIELD_NUMBER: _ClassVar[int]
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_NAMES_FIELD_NUMBER: _ClassVar[int]
    NUM_OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    CODE_LOCATION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TENSOR_IDS_FIELD_NUMBER: _ClassVar[int]
    op_type: str
    op_name: str
    graph_name: str
    graph_id: str
    device_name: str
    input_names: _containers.RepeatedScalarFieldContainer[str]
    num_outputs: int
    code_location: CodeLocation
    output_tensor_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, op_type: _Optional[str] = ..., op_name: _Optional[str] = ..., graph_name: _Optional[str] = ..., graph_id: _Optional[str] = ..., device_name: _Optional[str] = ..., input_names: _Optional[_Iterable[str]] = ..., num_outputs: _Optional[int] = ..., code_location: _Optional[_Union[CodeLocation, _Mapping]] = ..., output_tensor_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class DebuggedGraph(_message.Message):
    __slots__ = ("graph_id", "graph_name", "instrumented_ops", "original_graph_def", "instrumented_graph_def", "outer_context_id")
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    GRAPH_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUMENTED_OPS_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    INSTRUMENTED_GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    OUTER_CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    graph_id: str
    graph_name: str
    instrumented_ops: _containers.RepeatedScalarFieldContainer[str]
    original_graph_def: bytes
    instrumented_graph_def: bytes
    outer_context_id: str
    def __init__(self, graph_id: _Optional[str] = ..., graph_name: _Optional[str] = ..., instrumented_ops: _Optional[_Iterable[str]] = ..., original_graph_def: _Optional[bytes] = ..., instrumented_graph_def: _Optional[bytes] = ..., outer_context_id: _Optional[str] = ...) -> None: ...

class DebuggedDevice(_message.Message):
    __slots__ = ("device_name", "device_id")
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    device_name: str
    device_id: int
    def __init__(self, device_name: _Optional[str] = ..., device_id: _Optional[int] = ...) -> None: ...

class Execution(_message.Message):
    __slots__ = ("op_type", "num_outputs", "graph_id", "input_tensor_ids", "output_tensor_ids", "tensor_debug_mode", "tensor_protos", "code_location", "output_tensor_device_ids")
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    NUM_OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_TENSOR_IDS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TENSOR_IDS_FIELD_NUMBER: _ClassVar[int]
    TENSOR_DEBUG_MODE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PROTOS_FIELD_NUMBER: _ClassVar[int]
    CODE_LOCATION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TENSOR_DEVICE_IDS_FIELD_NUMBER: _ClassVar[int]
    op_type: str
    num_outputs: int
    graph_id: str
    input_tensor_ids: _containers.RepeatedScalarFieldContainer[int]
    output_tensor_ids: _containers.RepeatedScalarFieldContainer[int]
    tensor_debug_mode: TensorDebugMode
    tensor_protos: _containers.RepeatedCompositeFieldContainer[TensorProto]
    code_location: CodeLocation
    output_tensor_device_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, op_type: _Optional[str] = ..., num_outputs: _Optional[int] = ..., graph_id: _Optional[str] = ..., input_tensor_ids: _Optional[_Iterable[int]] = ..., output_tensor_ids: _Optional[_Iterable[int]] = ..., tensor_debug_mode: _Optional[_Union[TensorDebugMode, str]] = ..., tensor_protos: _Optional[_Iterable[_Union[TensorProto, _Mapping]]] = ..., code_location: _Optional[_Union[CodeLocation, _Mapping]] = ..., output_tensor_device_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class GraphExecutionTrace(_message.Message):
    __slots__ = ("tfdbg_context_id", "op_name", "output_slot", "tensor_debug_mode", "tensor_proto", "device_name")
    TFDBG_CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SLOT_FIELD_NUMBER: _ClassVar[int]
    TENSOR_DEBUG_MODE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PROTO_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    tfdbg_context_id: str
    op_name: str
    output_slot: int
    tensor_debug_mode: TensorDebugMode
    tensor_proto: TensorProto
    device_name: str
    def __init__(self, tfdbg_context_id: _Optional[str] = ..., op_name: _Optional[str] = ..., output_slot: _Optional[int] = ..., tensor_debug_mode: _Optional[_Union[TensorDebugMode, str]] = ..., tensor_proto: _Optional[_Union[TensorProto, _Mapping]] = ..., device_name: _Optional[str] = ...) -> None: ...

class TensorShapeProto(_message.Message):
    __slots__ = ("dim", "unknown_rank")
    class Dim(_message.Message):
        __slots__ = ("size", "name")
        SIZE_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        size: int
        name: str
        def __init__(self, size: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...
    DIM_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_RANK_FIELD_NUMBER: _ClassVar[int]
    dim: _containers.RepeatedCompositeFieldContainer[TensorShapeProto.Dim]
    unknown_rank: bool
    def __init__(self, dim: _Optional[_Iterable[_Union[TensorShapeProto.Dim, _Mapping]]] = ..., unknown_rank: bool = ...) -> None: ...

class TensorProto(_message.Message):
    __slots__ = ("dtype", "tensor_shape", "version_number", "tensor_content", "half_val", "float_val", "double_val", "int_val", "int64_val", "bool_val", "uint32_val", "uint64_val")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SHAPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TENSOR_CONTENT_FIELD_NUMBER: _ClassVar[int]
    HALF_VAL_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VAL_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VAL_FIELD_NUMBER: _ClassVar[int]
    INT_VAL_FIELD_NUMBER: _ClassVar[int]
    INT64_VAL_FIELD_NUMBER: _ClassVar[int]
    BOOL_VAL_FIELD_NUMBER: _ClassVar[int]
    UINT32_VAL_FIELD_NUMBER: _ClassVar[int]
    UINT64_VAL_FIELD_NUMBER: _ClassVar[int]
    dtype: int
    tensor_shape: TensorShapeProto
    version_number: int
    tensor_content: bytes
    half_val: _containers.RepeatedScalarFieldContainer[int]
    float_val: _containers.RepeatedScalarFieldContainer[float]
    double_val: _containers.RepeatedScalarFieldContainer[float]
    int_val: _containers.RepeatedScalarFieldContainer[int]
    int64_val: _containers.RepeatedScalarFieldContainer[int]
    bool_val: _containers.RepeatedScalarFieldContainer[bool]
    uint32_val: _containers.RepeatedScalarFieldContainer[int]
    uint64_val: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dtype: _Optional[int] = ..., tensor_shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., version_number: _Optional[int] = ..., tensor_content: _Optional[bytes] = ..., half_val: _Optional[_Iterable[int]] = ..., float_val: _Optional[_Iterable[float]] = ..., double_val: _Optional[_Iterable[float]] = ..., int_val: _Optional[_Iterable[int]] = ..., int64_val: _Optional[_Iterable[int]] = ..., bool_val: _Optional[_Iterable[bool]] = ..., uint32_val: _Optional[_Iterable[int]] = ..., uint64_val: _Optional[_Iterable[int]] = ...) -> None: ...
