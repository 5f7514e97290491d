from . import debug_graph_pb2 as _debug_graph_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Metadata(_message.Message):
    __slots__ = ("device_name", "cur_step", "backend", "cur_node", "training_done", "graph_num", "ms_version")
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    CUR_STEP_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    CUR_NODE_FIELD_NUMBER: _ClassVar[int]
    TRAINING_DONE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_NUM_FIELD_NUMBER: _ClassVar[int]
    MS_VERSION_FIELD_NUMBER: _ClassVar[int]
    device_name: str
    cur_step: int
    backend: str
    cur_node: str
    training_done: bool
    graph_num: int
    ms_version: str
    def __init__(self, device_name: _Optional[str] = ..., cur_step: _Optional[int] = ..., backend: _Optional[str] = ..., cur_node: _Optional[str] = ..., training_done: bool = ..., graph_num: _Optional[int] = ..., ms_version: _Optional[str] = ...) -> None: ...

class Chunk(_message.Message):
    __slots__ = ("buffer", "finished")
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    buffer: bytes
    finished: bool
    def __init__(self, buffer: _Optional[bytes] = ..., finished: bool = ...) -> None: ...

class EventReply(_message.Message):
    __slots__ = ("status", "exit", "run_cmd", "set_cmd", "view_cmd", "version_matched")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        OK: _ClassVar[EventReply.Status]
        FAILED: _ClassVar[EventReply.Status]
        PENDING: _ClassVar[EventReply.Status]
    OK: EventReply.Status
    FAILED: EventReply.Status
    PENDING: EventReply.Status
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EXIT_FIELD_NUMBER: _ClassVar[int]
    RUN_CMD_FIELD_NUMBER: _ClassVar[int]
    SET_CMD_FIELD_NUMBER: _ClassVar[int]
    VIEW_CMD_FIELD_NUMBER: _ClassVar[int]
    VERSION_MATCHED_FIELD_NUMBER: _ClassVar[int]
    status: EventReply.Status
    exit: bool
    run_cmd: RunCMD
    set_cmd: SetCMD
    view_cmd: ViewCMD
    version_matched: bool
    def __init__(self, status: _Optional[_Union[EventReply.Status, str]] = ..., exit: bool = ..., run_cmd: _Optional[_Union[RunCMD, _Mapping]] = ..., set_cmd: _Optional[_Union[SetCMD, _Mapping]] = ..., view_cmd: _Optional[_Union[ViewCMD, _Mapping]] = ..., version_matched: bool = ...) -> None: ...

class RunCMD(_message.Message):
    __slots__ = ("run_level", "run_steps", "node_name")
    RUN_LEVEL_FIELD_NUMBER: _ClassVar[int]
    RUN_STEPS_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    run_level: str
    run_steps: int
    node_name: str
    def __init__(self, run_level: _Optional[str] = ..., run_steps: _Optional[int] = ..., node_name: _Optional[str] = ...) -> None: ...

class SetCMD(_message.Message):
    __slots__ = ("watch_nodes", "watch_condition", "delete", "id")
    WATCH_NODES_FIELD_NUMBER: _ClassVar[int]
    WATCH_CONDITION_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    watch_nodes: _containers.RepeatedCompositeFieldContainer[WatchNode]
    watch_condition: WatchCondition
    delete: bool
    id: int
    def __init__(self, watch_nodes: _Optional[_Iterable[_Union[WatchNode, _Mapping]]] = ..., watch_condition: _Optional[_Union[WatchCondition, _Mapping]] = ..., delete: bool = ..., id: _Optional[int] = ...) -> None: ...

class ViewCMD(_message.Message):
    __slots__ = ("tensors", "level")
    class Level(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        value: _ClassVar[ViewCMD.Level]
        statistics: _ClassVar[ViewCMD.Level]
        base: _ClassVar[ViewCMD.Level]
    value: ViewCMD.Level
    statistics: ViewCMD.Level
    base: ViewCMD.Level
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    tensors: _containers.RepeatedCompositeFieldContainer[_debug_graph_pb2.TensorProto]
    level: ViewCMD.Level
    def __init__(self, tensors: _Optional[_Iterable[_Union[_debug_graph_pb2.TensorProto, _Mapping]]] = ..., level: _Optional[_Union[ViewCMD.Level, str]] = ...) -> None: ...

class WatchCondition(_message.Message):
    __slots__ = ("condition", "value", "params")
    class Condition(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        nan: _ClassVar[WatchCondition.Condition]
        overflow: _ClassVar[WatchCondition.Condition]
        sd_gt: _ClassVar[WatchCondition.Condition]
        sd_lt: _ClassVar[WatchCondition.Condition]
        tensor_general_overflow: _ClassVar[WatchCondition.Condition]
        tensor_initialization: _ClassVar[WatchCondition.Condition]
        tensor_too_large: _ClassVar[WatchCondition.Condition]
        tensor_too_small: _ClassVar[WatchCondition.Condition]
        tensor_all_zero: _ClassVar[WatchCondition.Condition]
        tensor_change_too_large: _ClassVar[WatchCondition.Condition]
        tensor_change_too_small: _ClassVar[WatchCondition.Condition]
        tensor_not_changed: _ClassVar[WatchCondition.Condition]
        tensor_range: _ClassVar[WatchCondition.Condition]
    nan: WatchCondition.Condition
    overflow: WatchCondition.Condition
    sd_gt: WatchCondition.Condition
    sd_lt: WatchCondition.Condition
    tensor_general_overflow: WatchCondition.Condition
    tensor_initialization: WatchCondition.Condition
    tensor_too_large: WatchCondition.Condition
    tensor_too_small: WatchCondition.Condition
    tensor_all_zero: WatchCondition.Condition
    tensor_change_too_large: WatchCondition.Condition
    tensor_change_too_small: WatchCondition.Condition
    tensor_not_changed: WatchCondition.Condition
    tensor_range: WatchCondition.Condition
    class Parameter(_message.Message):
        __slots__ = ("name", "disabled", "value", "hit", "actual_value")
        NAME_FIELD_NUMBER: _ClassVar[int]
        DISABLED_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        HIT_FIELD_NUMBER: _ClassVar[int]
        ACTUAL_VALUE_FIELD_NUMBER: _ClassVar[int]
        name: str
        disabled: bool
        value: float
        hit: bool
        actual_value: float
        def __init__(self, name: _Optional[str] = ..., disabled: bool = ..., value: _Optional[float] = ..., hit: bool = ..., actual_value: _Optional[float] = ...) -> None: ...
    CONDITION_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    condition: WatchCondition.Condition
    value: float
    params: _containers.RepeatedCompositeFieldContainer[WatchCondition.Parameter]
    def __init__(self, condition: _Optional[_Union[WatchCondition.Condition, str]] = ..., value: _Optional[float] = ..., params: _Optional[_Iterable[_Union[WatchCondition.Parameter, _Mapping]]] = ...) -> None: ...

class WatchNode(_message.Message):
    __slots__ = ("node_name", "node_type", "graph_name", "rank_id", "device_id")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_TYPE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_NAME_FIELD_NUMBER: _ClassVar[int]
    RANK_ID_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    node_type: str
    graph_name: str
    rank_id: int
    device_id: int
    def __init__(self, node_name: _Optional[str] = ..., node_type: _Optional[str] = ..., graph_name: _Optional[str] = ..., rank_id: _Optional[int] = ..., device_id: _Optional[int] = ...) -> None: ...

class WatchpointHit(_message.Message):
    __slots__ = ("tensor", "watch_condition", "id", "error_code")
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    WATCH_CONDITION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    tensor: _debug_graph_pb2.TensorProto
    watch_condition: WatchCondition
    id: int
    error_code: int
    def __init__(self, tensor: _Optional[_Union[_debug_graph_pb2.TensorProto, _Mapping]] = ..., watch_condition: _Optional[_Union[WatchCondition, _Mapping]] = ..., id: _Optional[int] = ..., error_code: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("message", "period")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    message: str
    period: int
    def __init__(self, message: _Optional[str] = ..., period: _Optional[int] = ...) -> None: ...

class TensorSummary(_message.Message):
    __slots__ = ("tensor_base", "statistics")
    TENSOR_BASE_FIELD_NUMBER: _ClassVar[int]
    STATISTICS_FIELD_NUMBER: _ClassVar[int]
    tensor_base: TensorBase
    statistics: Statistics
    def __init__(self, tensor_base: _Optional[_Union[TensorBase, _Mapping]] = ..., statistics: _Optional[_Union[Statistics, _Mapping]] = ...) -> None: ...

class Statistics(_message.Message):
    __slots__ = ("is_bool", "max_value", "min_value", "avg_value", "count", "neg_zero_count", "pos_zero_count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count")
    IS_BOOL_FIELD_NUMBER: _ClassVar[int]
    MAX_VALUE_FIELD_NUMBER: _ClassVar[int]
    MIN_VALUE_FIELD_NUMBER: _ClassVar[int]
    AVG_VALUE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    NEG_ZERO_COUNT_FIELD_NUMBER: _ClassVar[int]
    POS_ZERO_COUNT_FIELD_NUMBER: _ClassVar[int]
    NAN_COUNT_FIELD_NUMBER: _ClassVar[int]
    NEG_INF_COUNT_FIELD_NUMBER: _ClassVar[int]
    POS_INF_COUNT_FIELD_NUMBER: _ClassVar[int]
    ZERO_COUNT_FIELD_NUMBER: _ClassVar[int]
    is_bool: bool
    max_value: float
    min_value: float
    avg_value: float
    count: int
    neg_zero_count: int
    pos_zero_count: int
    nan_count: int
    neg_inf_count: int
    pos_inf_count: int
    zero_count: int
    def __init__(self, is_bool: bool = ..., max_value: _Optional[float] = ..., min_value: _Optional[float] = ..., avg_value: _Optional[float] = ..., count: _Optional[int] = ..., neg_zero_count: _Optional[int] = ..., pos_zero_count: _Optional[int] = ..., nan_count: _Optional[int] = ..., neg_inf_count: _Optional[int] = ..., pos_inf_count: _Optional[int] = ..., zero_count: _Optional[int] = ...) -> None: ...

class TensorBase(_message.Message):
    __slots__ = ("data_type", "shape", "data_size")
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_SIZE_FIELD_NUMBER: _ClassVar[int]
    data_type: int
    shape: _containers.RepeatedScalarFieldContainer[int]
    data_size: int
    def __init__(self, data_type: _Optional[int] = ..., shape: _Optional[_Iterable[int]] = ..., data_size: _Optional[int] = ...) -> None: ...
