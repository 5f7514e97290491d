from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OutputDataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DT_UNDEFINED: _ClassVar[OutputDataType]
    DT_FLOAT: _ClassVar[OutputDataType]
    DT_FLOAT16: _ClassVar[OutputDataType]
    DT_INT8: _ClassVar[OutputDataType]
    DT_UINT8: _ClassVar[OutputDataType]
    DT_INT16: _ClassVar[OutputDataType]
    DT_UINT16: _ClassVar[OutputDataType]
    DT_INT32: _ClassVar[OutputDataType]
    DT_INT64: _ClassVar[OutputDataType]
    DT_UINT32: _ClassVar[OutputDataType]
    DT_UINT64: _ClassVar[OutputDataType]
    DT_BOOL: _ClassVar[OutputDataType]
    DT_DOUBLE: _ClassVar[OutputDataType]
    DT_STRING: _ClassVar[OutputDataType]
    DT_DUAL_SUB_INT8: _ClassVar[OutputDataType]
    DT_DUAL_SUB_UINT8: _ClassVar[OutputDataType]
    DT_COMPLEX64: _ClassVar[OutputDataType]
    DT_COMPLEX128: _ClassVar[OutputDataType]
    DT_QINT8: _ClassVar[OutputDataType]
    DT_QINT16: _ClassVar[OutputDataType]
    DT_QINT32: _ClassVar[OutputDataType]
    DT_QUINT8: _ClassVar[OutputDataType]
    DT_QUINT16: _ClassVar[OutputDataType]
    DT_RESOURCE: _ClassVar[OutputDataType]
    DT_STRING_REF: _ClassVar[OutputDataType]
    DT_DUAL: _ClassVar[OutputDataType]
    DT_VARIANT: _ClassVar[OutputDataType]
    DT_BF16: _ClassVar[OutputDataType]

class OutputFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORMAT_NCHW: _ClassVar[OutputFormat]
    FORMAT_NHWC: _ClassVar[OutputFormat]
    FORMAT_ND: _ClassVar[OutputFormat]
    FORMAT_NC1HWC0: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_Z: _ClassVar[OutputFormat]
    FORMAT_NC1C0HWPAD: _ClassVar[OutputFormat]
    FORMAT_NHWC1C0: _ClassVar[OutputFormat]
    FORMAT_FSR_NCHW: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_DECONV: _ClassVar[OutputFormat]
    FORMAT_C1HWNC0: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_DECONV_TRANSPOSE: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS: _ClassVar[OutputFormat]
    FORMAT_NC1HWC0_C04: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_Z_C04: _ClassVar[OutputFormat]
    FORMAT_CHWN: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS: _ClassVar[OutputFormat]
    FORMAT_HWCN: _ClassVar[OutputFormat]
    FORMAT_NC1KHKWHWC0: _ClassVar[OutputFormat]
    FORMAT_BN_WEIGHT: _ClassVar[OutputFormat]
    FORMAT_FILTER_HWCK: _ClassVar[OutputFormat]
    FORMAT_HASHTABLE_LOOKUP_LOOKUPS: _ClassVar[OutputFormat]
    FORMAT_HASHTABLE_LOOKUP_KEYS: _ClassVar[OutputFormat]
    FORMAT_HASHTABLE_LOOKUP_VALUE: _ClassVar[OutputFormat]
    FORMAT_HASHTABLE_LOOKUP_OUTPUT: _ClassVar[OutputFormat]
    FORMAT_HASHTABLE_LOOKUP_HITS: _ClassVar[OutputFormat]
    FORMAT_C1HWNCoC0: _ClassVar[OutputFormat]
    FORMAT_MD: _ClassVar[OutputFormat]
    FORMAT_NDHWC: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_ZZ: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_NZ: _ClassVar[OutputFormat]
    FORMAT_NCDHW: _ClassVar[OutputFormat]
    FORMAT_DHWCN: _ClassVar[OutputFormat]
    FORMAT_NDC1HWC0: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_Z_3D: _ClassVar[OutputFormat]
    FORMAT_CN: _ClassVar[OutputFormat]
    FORMAT_NC: _ClassVar[OutputFormat]
    FORMAT_DHWNC: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_Z_3D_TRANSPOSE: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_ZN_LSTM: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_Z_G: _ClassVar[OutputFormat]
    FORMAT_RESERVED: _ClassVar[OutputFormat]
    FORMAT_ALL: _ClassVar[OutputFormat]
    FORMAT_NULL: _ClassVar[OutputFormat]
    FORMAT_ND_RNN_BIAS: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_ZN_RNN: _ClassVar[OutputFormat]
    FORMAT_YUV: _ClassVar[OutputFormat]
    FORMAT_YUV_A: _ClassVar[OutputFormat]
    FORMAT_NCL: _ClassVar[OutputFormat]
    FORMAT_FRACTAL_Z_WINO: _ClassVar[OutputFormat]
    FORMAT_C1HWC0: _ClassVar[OutputFormat]

class BufferType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    L1: _ClassVar[BufferType]
DT_UNDEFINED: OutputDataType
DT_FLOAT: OutputDataType
DT_FLOAT16: OutputDataType
DT_INT8: OutputDataType
DT_UINT8: OutputDataType
DT_INT16: OutputDataType
DT_UINT16: OutputDataType
DT_INT32: OutputDataType
DT_INT64: OutputDataType
DT_UINT32: OutputDataType
DT_UINT64: OutputDataType
DT_BOOL: OutputDataType
DT_DOUBLE: OutputDataType
DT_STRING: OutputDataType
DT_DUAL_SUB_INT8: OutputDataType
DT_DUAL_SUB_UINT8: OutputDataType
DT_COMPLEX64: OutputDataType
DT_COMPLEX128: OutputDataType
DT_QINT8: OutputDataType
DT_QINT16: OutputDataType
DT_QINT32: OutputDataType
DT_QUINT8: OutputDataType
DT_QUINT16: OutputDataType
DT_RESOURCE: OutputDataType
DT_STRING_REF: OutputDataType
DT_DUAL: OutputDataType
DT_VARIANT: OutputDataType
DT_BF16: OutputDataType
FORMAT_NCHW: OutputFormat
FORMAT_NHWC: OutputFormat
FORMAT_ND: OutputFormat
FORMAT_NC1HWC0: OutputFormat
FORMAT_FRACTAL_Z: OutputFormat
FORMAT_NC1C0HWPAD: OutputFormat
FORMAT_NHWC1C0: OutputFormat
FORMAT_FSR_NCHW: OutputFormat
FORMAT_FRACTAL_DECONV: OutputFormat
FORMAT_C1HWNC0: OutputFormat
FORMAT_FRACTAL_DECONV_TRANSPOSE: OutputFormat
FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS: OutputFormat
FORMAT_NC1HWC0_C04: OutputFormat
FORMAT_FRACTAL_Z_C04: OutputFormat
FORMAT_CHWN: OutputFormat
FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS: OutputFormat
FORMAT_HWCN: OutputFormat
FORMAT_NC1KHKWHWC0: OutputFormat
FORMAT_BN_WEIGHT: OutputFormat
FORMAT_FILTER_HWCK: OutputFormat
FORMAT_HASHTABLE_LOOKUP_LOOKUPS: OutputFormat
FORMAT_HASHTABLE_LOOKUP_KEYS: OutputFormat
FORMAT_HASHTABLE_LOOKUP_VALUE: OutputFormat
FORMAT_HASHTABLE_LOOKUP_OUTPUT: OutputFormat
FORMAT_HASHTABLE_LOOKUP_HITS: OutputFormat
FORMAT_C1HWNCoC0: OutputFormat
FORMAT_MD: OutputFormat
FORMAT_NDHWC: OutputFormat
FORMAT_FRACTAL_ZZ: OutputFormat
FORMAT_FRACTAL_NZ: OutputFormat
FORMAT_NCDHW: OutputFormat
FORMAT_DHWCN: OutputFormat
FORMAT_NDC1HWC0: OutputFormat
FORMAT_FRACTAL_Z_3D: OutputFormat
FORMAT_CN: OutputFormat
FORMAT_NC: OutputFormat
FORMAT_DHWNC: OutputFormat
FORMAT_FRACTAL_Z_3D_TRANSPOSE: OutputFormat
FORMAT_FRACTAL_ZN_LSTM: OutputFormat
FORMAT_FRACTAL_Z_G: OutputFormat
FORMAT_RESERVED: OutputFormat
FORMAT_ALL: OutputFormat
FORMAT_NULL: OutputFormat
FORMAT_ND_RNN_BIAS: OutputFormat
FORMAT_FRACTAL_ZN_RNN: OutputFormat
FORMAT_YUV: OutputFormat
FORMAT_YUV_A: OutputFormat
FORMAT_NCL: OutputFormat
FORMAT_FRACTAL_Z_WINO: OutputFormat
FORMAT_C1HWC0: OutputFormat
L1: BufferType

class Shape(_message.Message):
    __slots__ = ("dim",)
    DIM_FIELD_NUMBER: _ClassVar[int]
    dim: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dim: _Optional[_Iterable[int]] = ...) -> None: ...

class OpOutput(_message.Message):
    __slots__ = ("data_type", "format", "shape", "data", "size", "original_shape", "sub_format")
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_SHAPE_FIELD_NUMBER: _ClassVar[int]
    SUB_FORMAT_FIELD_NUMBER: _ClassVar[int]
    data_type: OutputDataType
    format: OutputFormat
    shape: Shape
    data: bytes
    size: int
    original_shape: Shape
    sub_format: int
    def __init__(self, data_type: _Optional[_Union[OutputDataType, str]] = ..., format: _Optional[_Union[OutputFormat, str]] = ..., shape: _Optional[_Union[Shape, _Mapping]] = ..., data: _Optional[bytes] = ..., size: _Optional[int] = ..., original_shape: _Optional[_Union[Shape, _Mapping]] = ..., sub_format: _Optional[int] = ...) -> None: ...

class OpInput(_message.Message):
    __slots__ = ("data_type", "format", "shape", "data", "size", "original_shape", "sub_format")
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_SHAPE_FIELD_NUMBER: _ClassVar[int]
    SUB_FORMAT_FIELD_NUMBER: _ClassVar[int]
    data_type: OutputDataType
    format: OutputFormat
    shape: Shape
    data: bytes
    size: int
    original_shape: Shape
    sub_format: int
    def __init__(self, data_type: _Optional[_Union[OutputDataType, str]] = ..., format: _Optional[_Union[OutputFormat, str]] = ..., shape: _Optional[_Union[Shape, _Mapping]] = ..., data: _Optional[bytes] = ..., size: _Optional[int] = ..., original_shape: _Optional[_Union[Shape, _Mapping]] = ..., sub_format: _Optional[int] = ...) -> None: ...

class OpBuffer(_message.Message):
    __slots__ = ("buffer_type", "data", "size")
    BUFFER_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    buffer_type: BufferType
    data: bytes
    size: int
    def __init__(self, buffer_type: _Optional[_Union[BufferType, str]] = ..., data: _Optional[bytes] = ..., size: _Optional[int] = ...) -> None: ...

class DumpData(_message.Message):
    __slots__ = ("version", "dump_time", "output", "input", "buffer", "op_name")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DUMP_TIME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    version: str
    dump_time: int
    output: _containers.RepeatedCompositeFieldContainer[OpOutput]
    input: _containers.RepeatedCompositeFieldContainer[OpInput]
    buffer: _containers.RepeatedCompositeFieldContainer[OpBuffer]
    op_name: str
    def __init__(self, version: _Optional[str] = ..., dump_time: _Optional[int] = ..., output: _Optional[_Iterable[_Union[OpOutput, _Mapping]]] = ..., input: _Optional[_Iterable[_Union[OpInput, _Mapping]]] = ..., buffer: _Optional[_Iterable[_Union[OpBuffer, _Mapping]]] = ..., op_name: _Optional[str] = ...) -> None: ...
