"""TensorFlow Debugger V2 dumps (issue 32): the six TFRecord files of one run, read bounded
and safely with protobuf alone (no TensorFlow).

A dump folder holds `tfdbg_events.<ts>.<host>.{metadata, source_files, stack_frames, graphs,
execution, graph_execution_traces}`. Each is a TFRecord stream: per record a little-endian
`uint64` length, the masked CRC32C of those 8 bytes, the data (a serialized
`tensorflow.DebugEvent`, declared in `proto/tfdbg_event.proto`) and the masked CRC32C of the
data. Every file is untrusted:

* opened through `regular_file.open_regular` (a FIFO or device is one sentence, no hang);
* the length's CRC is always checked before the length is believed, so a lying length is
  caught at once and the rest of that file is skipped with one sentence (framing is lost);
* a record longer than `MAX_RECORD_BYTES` is skipped by seeking, never read into memory;
* a last record cut short (a training still writing, or killed) is a note, not an error;
* the data's CRC is checked for every record we parse (CRC32C by `google-crc32c`'s C code,
  a dependency with wheels for every common platform; where it is missing or has no C build
  a table-driven pure-Python CRC32C stands in, about 5 MB/s, fine for small dumps);
  `.source_files` records are not read when indexed (only their offsets and file paths are
  kept, 94–98 % of a dump is source text), so their CRC is checked when one file's text is
  read (`TfdbgDump.source_lines`);
* a record that is no DebugEvent (protobuf's DecodeError, which also stops a deep nesting)
  is skipped with one sentence.

Problems are collected as sentences (`TfdbgDump.problems`, `notes`), never raised past the
reader, except `TfdbgError` for a folder that cannot be a dump at all.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from google.protobuf.message import DecodeError

from tuidebug._proto import tfdbg_event_pb2 as pb
from tuidebug.core.graph import ACTIVATION_TYPES, Category
from tuidebug.offline.files.regular_file import open_regular
from tuidebug.offline.files.tfdbg_wire import WireLayout, clean_health_trace

__all__ = [
    "CONCISE",
    "CURT",
    "FULL_HEALTH",
    "FULL_TENSOR",
    "HEALTH_MODES",
    "KINDS",
    "MAX_RECORD_BYTES",
    "MODE_NAMES",
    "HealthCounts",
    "TfdbgDump",
    "TfdbgError",
    "TfdbgOp",
    "categories",
    "crc32c",
    "crc32c_python",
    "find_tfdbg_prefix",
    "health_counts",
    "masked_crc32c",
    "read_records",
    "tensor_values",
]

KINDS = (
    "metadata",
    "source_files",
    "stack_frames",
    "graphs",
    "execution",
    "graph_execution_traces",
)
# One record is one DebugEvent. A FULL_TENSOR trace holds a whole tensor, and a source file
# a whole Python file; 256 MiB is far above either in a real run, and what one record may
# cost in memory before it is refused.
MAX_RECORD_BYTES = 256 << 20
# Entries of the dump folder looked at while finding the files: a real dump has six.
MAX_LISTED = 10_000
# Graphs whose ids are searched for in `.execution`'s bytes (`called_graph_ids`); past this
# many (a real run has tens) the file is parsed instead, one pass rather than one per graph
_MAX_SEARCHED_GRAPHS = 256
# The head of a `.source_files` record read to index it: the file path is its first field.
_SOURCE_HEAD = 4096

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_WALL = struct.Struct("<d")


class TfdbgError(ValueError):
    """A folder that cannot be read as a tfdbg dump; the message is one sentence."""


# ------------------------------------------------------------------------------ CRC32C


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1  # Castagnoli, reflected
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c_python(data: bytes) -> int:
    """CRC-32C (Castagnoli) of `data`, table-driven in pure Python (about 5 MB/s): the
    stand-in where `google_crc32c` has no C build (see the module docstring)."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _fast_crc32c() -> Callable[[bytes], int] | None:
    try:
        import google_crc32c
    except ImportError:
        return None
    # its own fallback is pure Python too (and warns on import); ours is as good
    if getattr(google_crc32c, "implementation", "") != "c":
        return None
    return google_crc32c.value


crc32c: Callable[[bytes], int] = _fast_crc32c() or crc32c_python
"""CRC-32C (Castagnoli) of some bytes: `google_crc32c`'s C code, or `crc32c_python`."""


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC: rotated right by 15 and offset, so CRCs of CRCs differ."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ------------------------------------------------------------------------------ records


@dataclass
class _Log:
    """Problems and notes in the order found, each said once (a file read twice, as the
    executions and traces may be, finds the same ones again)."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _said: set[str] = field(default_factory=set)

    def problem(self, sentence: str) -> None:
        if sentence not in self._said:
            self._said.add(sentence)
            self.problems.append(sentence)

    def note(self, sentence: str) -> None:
        if sentence not in self._said:
            self._said.add(sentence)
            self.notes.append(sentence)


_CHUNK = 1 << 20  # bytes read at a time: one read call per many small records


def _records(
    handle: BinaryIO,
    path: str,
    log: _Log,
    *,
    read_data: bool = True,
    parse: Callable[[bytes], Any] | None = None,
    clean: Mapping[int, WireLayout] | None = None,
    tally: list[int] | None = None,
) -> Iterator[Any]:
    """(offset of the data, its length, the data or b"" when not `read_data`) per record,
    or with `parse` what it makes of the data (a DebugEvent: the parse is done here, not
    in a generator of its own around this one, which cost a tenth of the loop; data it
    cannot parse is one problem, skipped).
    With `clean` (graph execution traces, for the check), a record `clean_health_trace`
    finds clean under those layouts is only counted, in `tally[0]`: here, not in the
    caller's loop, as the commonest record of a long run costs least.
    The data's CRC is checked when it is read; see the module docstring for the rest.
    Small records are cut from 1 MiB reads (a read call per record cost as much as the
    CRCs); one larger than that is read on its own. This loop runs once per record of a
    dump (millions): the CRC masking is inlined, and what it looks up is local."""
    size = os.fstat(handle.fileno()).st_size
    unpack = _HEADER.unpack_from
    footer = _FOOTER.unpack_from
    crc = crc32c
    clean_trace = clean_health_trace
    seen: dict[bytes, Any] = {}  # the layouts clean_health_trace walked, for the next ones
    read = handle.read
    buf = b""
    buf_len = 0
    at = 0  # position of `buf[0]` in the file; the handle is at `at + buf_len`
    pos = 0
    while True:
        rel = pos - at
        if rel + 16 > buf_len:
            buf = buf[rel:] + read(_CHUNK)
            buf_len = len(buf)
            at, rel = pos, 0
            if not buf_len:
                return
            if buf_len < _HEADER.size:
                log.note(_cut_short(path, pos))
                return
        length, length_crc = unpack(buf, rel)
        c = crc(buf[rel : rel + 8])
        if (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF != length_crc:
            log.problem(
                f"{path}: the record at byte {pos:,} has a corrupt length "
                "(its CRC does not match), so the rest of the file is skipped."
            )
            return
        start = pos + 12
        end = start + length + 4
        if end > size:
            log.note(_cut_short(path, pos))
            return
        if length > MAX_RECORD_BYTES:
            log.problem(
                f"{path}: the record at byte {pos:,} is {length:,} bytes, more "
                f"than the {MAX_RECORD_BYTES:,} a record may have; it is skipped."
            )
        elif not read_data:
            yield start, length, b""
        else:
            if end - at > buf_len:
                if length + 4 > _CHUNK:  # a large record: read on its own
                    handle.seek(start)
                    buf, at = read(length + 4), start
                else:
                    buf = buf[pos - at :] + read(_CHUNK)
                    at = pos
                buf_len = len(buf)
            rel = start - at
            if rel + length + 4 > buf_len:  # the file shrank while being read
                log.note(_cut_short(path, pos))
                return
            data = buf[rel : rel + length]
            c = crc(data)
            if (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF != footer(buf, rel + length)[0]:
                log.problem(
                    f"{path}: the record at byte {pos:,} is corrupt (its "
                    "CRC does not match); it is skipped."
                )
            elif clean and clean_trace(data, clean, seen):  # (empty until a mode is known)
                tally[0] += 1  # type: ignore[index]
            elif parse is None:
                yield start, length, data
            else:
                try:
                    event = parse(data)
                except (DecodeError, RecursionError, ValueError) as err:
                    log.problem(_undecodable(path, pos, err))
                else:
                    yield event
        pos = end
        if pos - at > buf_len:  # skipped past the buffer: read on from there
            handle.seek(pos)
            buf, buf_len, at = b"", 0, pos


def _undecodable(path: str, pos: int, err: Exception) -> str:
    return f"{path}: the record at byte {pos:,} is no DebugEvent ({err or 'undecodable'}); it is skipped."


def _cut_short(path: str, pos: int) -> str:
    return (
        f"{path}: the last record is cut short at byte {pos:,} (a training still writing, "
        "or killed); it is left out."
    )


def read_records(path: str | os.PathLike[str]) -> tuple[list[bytes], list[str], list[str]]:
    """Every intact record of one TFRecord file, with the problems and notes (sentences).
    For tests and small files; the dump streams its files instead."""
    log = _Log()
    with open_regular(path) as handle:
        data = [d for _o, _n, d in _records(handle, os.fspath(path), log)]
    return data, log.problems, log.notes


def _event(data: bytes, where: str, log: _Log) -> pb.DebugEvent | None:
    try:
        return pb.DebugEvent.FromString(data)
    except (DecodeError, RecursionError, ValueError) as err:
        log.problem(f"{where} is no DebugEvent ({err or 'undecodable'}); it is skipped.")
        return None


# ------------------------------------------------------------------------------ tensors

# tensorflow.DataType → numpy dtype; bfloat16 (14) is widened from its 16 bits below
_DTYPES: dict[int, str] = {
    1: "<f4",
    2: "<f8",
    3: "<i4",
    4: "u1",
    5: "<i2",
    6: "i1",
    9: "<i8",
    10: "?",
    17: "<u2",
    19: "<f2",
    22: "<u4",
    23: "<u8",
}
_BFLOAT16 = 14


def tensor_values(tp: pb.TensorProto) -> np.ndarray | str:
    """The values a TensorProto holds, flat (a `*_val` short form is not broadcast to its
    shape: every value it holds is there, which is all a NaN/Inf check needs), or a sentence
    saying why they cannot be read (a dtype not numeric, a content of the wrong size)."""
    dtype = _DTYPES.get(tp.dtype)
    if tp.dtype == _BFLOAT16:
        if tp.tensor_content:
            if len(tp.tensor_content) % 2:
                return "a bfloat16 tensor content of an odd number of bytes"
            bits = np.frombuffer(tp.tensor_content, "<u2")
        else:
            bits = np.asarray(tp.half_val, dtype=np.uint32).astype(np.uint16)
        return (bits.astype(np.uint32) << 16).view(np.float32)
    if dtype is None:
        return f"tensorflow dtype {tp.dtype}, not a numeric one tuidebug reads"
    np_dtype = np.dtype(dtype)
    if tp.tensor_content:
        count = 1
        for dim in tp.tensor_shape.dim:
            count *= max(dim.size, 0)
        if len(tp.tensor_content) != count * np_dtype.itemsize:
            return (
                f"{len(tp.tensor_content):,} bytes of content for {count:,} elements of "
                f"{np_dtype.name}"
            )
        return np.frombuffer(tp.tensor_content, np_dtype)
    if tp.dtype == 19:
        return np.asarray(tp.half_val, dtype=np.uint16).view(np.float16)
    source = {
        1: tp.float_val,
        2: tp.double_val,
        9: tp.int64_val,
        10: tp.bool_val,
        22: tp.uint32_val,
        23: tp.uint64_val,
    }.get(tp.dtype, tp.int_val)
    return np.asarray(source, dtype=np_dtype)


# ------------------------------------------------------------------------------ summaries
# (shared by the check and the dump model: `check/tfdbg.py`, `foreign/tfdbg.py`)

MODE_NAMES = {
    0: "UNSPECIFIED",
    1: "NO_TENSOR",
    2: "CURT_HEALTH",
    3: "CONCISE_HEALTH",
    4: "FULL_HEALTH",
    5: "SHAPE",
    6: "FULL_NUMERICS",
    7: "FULL_TENSOR",
    8: "REDUCE_INF_NAN_THREE_SLOTS",
}
CURT, CONCISE, FULL_HEALTH, FULL_TENSOR = 2, 3, 4, 7
HEALTH_MODES = (CURT, CONCISE, FULL_HEALTH)
# DebugNumericSummaryV2's layouts: slots a summary must have, and where (elements, -Inf,
# +Inf, NaN, zeros) are; -1: absent
_LAYOUT = {
    CURT: (2, -1, -1, -1, -1, -1),
    CONCISE: (5, 1, 2, 3, 4, -1),
    FULL_HEALTH: (11, 4, 5, 6, 7, 9),
}
_GRADIENT_SCOPES = ("gradient_tape", "gradients")
_PARAMETER_READS = {"ReadVariableOp"}


def categories(op_name: str, op_type: str) -> frozenset[Category]:
    """The watchpoint categories an op's outputs belong to, by TensorFlow's conventions
    (it names no weights or gradients): weights / parameters the `ReadVariableOp` outputs
    (a variable's value as read); gradients the ops under a `gradient_tape/` or
    `gradients/` name scope (TF 2's GradientTape and TF 1's `tf.gradients` name them so);
    activations the activation op types; tensors all."""
    cats = {Category.TENSOR}
    if op_type in _PARAMETER_READS:
        cats.update((Category.WEIGHT, Category.PARAMETER))
    if any(part in _GRADIENT_SCOPES for part in op_name.split("/")[:-1]):
        cats.add(Category.GRADIENT)
    elif op_type.lower() in ACTIVATION_TYPES:
        cats.add(Category.ACTIVATION)
    return frozenset(cats)


@dataclass
class HealthCounts:
    """One health summary's counts; `count`/`zero` None where the mode has no such slot
    (CURT_HEALTH has a flag only: `bad`)."""

    bad: bool
    count: float | None
    nan: float
    neg: float
    pos: float
    zero: float | None


def _slots(tp: pb.TensorProto) -> tuple[float, ...] | str:
    content = tp.tensor_content
    # the common case (float64 or float32 summaries as tensor content) without numpy
    if content and tp.dtype == 2 and not len(content) % 8:
        return struct.unpack(f"<{len(content) // 8}d", content)
    if content and tp.dtype == 1 and not len(content) % 4:
        return struct.unpack(f"<{len(content) // 4}f", content)
    values = tensor_values(tp)
    if isinstance(values, str):
        return values
    return tuple(float(x) for x in values.astype(np.float64)[:16])


def health_counts(mode: int, tp: pb.TensorProto) -> HealthCounts | str:
    """A CURT/CONCISE/FULL_HEALTH summary's counts, or a sentence saying why they cannot
    be read (too few slots; a count that is NaN, infinite or negative)."""
    slots = _slots(tp)
    if isinstance(slots, str):
        return slots
    need, at_count, at_neg, at_pos, at_nan, at_zero = _LAYOUT[mode]
    if len(slots) < need:
        return f"a {MODE_NAMES[mode]} summary of {len(slots)} values, not {need}"
    used = [slots[1]] if mode == CURT else [slots[i] for i in (at_count, at_neg, at_pos, at_nan)]
    if at_zero >= 0:
        used.append(slots[at_zero])
    # a damaged summary: a NaN or negative is no count (`not x >= 0` is true for NaN)
    if any(not x >= 0 or x == float("inf") for x in used):
        return f"a {MODE_NAMES[mode]} summary whose counts are not counts"
    if mode == CURT:
        return HealthCounts(slots[1] > 0, None, 0.0, 0.0, 0.0, None)
    neg, pos, nan = slots[at_neg], slots[at_pos], slots[at_nan]
    zero = slots[at_zero] if at_zero >= 0 else None
    return HealthCounts(neg + pos + nan > 0, slots[at_count], nan, neg, pos, zero)


# ------------------------------------------------------------------------------ the dump


@dataclass(frozen=True)
class TfdbgOp:
    """One `graph_op_creation` record: an op of a graph, as TensorFlow built it."""

    op_type: str
    op_name: str
    graph_id: str
    graph_name: str
    input_names: tuple[str, ...]
    num_outputs: int
    stack_frame_ids: tuple[str, ...]


@dataclass(frozen=True)
class TfdbgExecution:
    """One `execution` record: an eager op or a `tf.function` call (then `graph_id` names
    its graph), in execution order."""

    index: int
    op_type: str
    graph_id: str
    wall_time: float
    tensor_debug_mode: int
    tensor_protos: tuple[pb.TensorProto, ...]
    # eager tensor ids (unique in a run): how an eager op's inputs are earlier ops' outputs
    input_tensor_ids: tuple[int, ...] = ()
    output_tensor_ids: tuple[int, ...] = ()
    stack_frame_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class TfdbgGraph:
    graph_id: str
    name: str
    outer_context_id: str


def find_tfdbg_prefix(folder: str | os.PathLike[str]) -> str | None:
    """The common prefix of the dump files in `folder` (`…/tfdbg_events.<ts>.<host>`), found
    by its `.metadata` file; None when `folder` holds no tfdbg dump. Two runs in one folder
    are a `TfdbgError` (which files belong together cannot be told)."""
    path = os.fspath(folder)
    if not os.path.isdir(path):
        return None
    found = []
    try:
        with os.scandir(path) as entries:
            for n, entry in enumerate(entries):
                if n >= MAX_LISTED:
                    break
                if entry.name.startswith("tfdbg_events.") and entry.name.endswith(".metadata"):
                    found.append(entry.name[: -len(".metadata")])
    except OSError:
        return None
    if not found:
        return None
    if len(found) > 1:
        raise TfdbgError(
            f"{path} holds {len(found)} tfdbg runs ({', '.join(sorted(found)[:3])}"
            "…); give the folder of one run."
        )
    return os.path.join(path, found[0])


class TfdbgDump:
    """One tfdbg run: metadata, devices, graphs and op records, stack frames and executions
    read at once (they are small); graph execution traces streamed (`traces()`), source text
    read per file on demand (`source_lines`)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        prefix = find_tfdbg_prefix(folder)
        if prefix is None:
            raise TfdbgError(
                f"{os.fspath(folder)} holds no tfdbg dump (no tfdbg_events.*.metadata file)."
            )
        self.folder = Path(folder)
        self.prefix = prefix
        self._log = _Log()
        self.tensorflow_version = ""
        self.run_id = ""
        self.devices: dict[int, str] = {}
        self.graphs: dict[str, TfdbgGraph] = {}
        self.ops: dict[tuple[str, str], TfdbgOp] = {}  # (graph id, op name) → op
        # id → (file index in `.source_files`, line, function)
        self.stack_frames: dict[str, tuple[int, int, str]] = {}
        self._executions: list[TfdbgExecution] | None = None  # read on first use
        self._sources: dict[str, tuple[int, int]] = {}  # file path → (offset, length)
        # file paths in record order: a stack frame's `file_index` indexes this list
        self.source_order: list[str] = []
        self._read_metadata()
        self._read_graphs()
        self._read_stack_frames()
        self._index_sources()

    @property
    def problems(self) -> list[str]:
        return self._log.problems

    @property
    def notes(self) -> list[str]:
        return self._log.notes

    def path(self, kind: str) -> str:
        return f"{self.prefix}.{kind}"

    def _events(self, kind: str) -> Iterator[pb.DebugEvent]:
        path = self.path(kind)
        try:
            handle = open_regular(path)
        except FileNotFoundError:
            self._log.problem(f"{path} is missing, so the dump's {kind} are unknown.")
            return
        except OSError as err:
            self._log.problem(f"{path} cannot be read: {err}.")
            return
        with handle:
            yield from _records(handle, path, self._log, parse=pb.DebugEvent.FromString)

    def _read_metadata(self) -> None:
        for event in self._events("metadata"):
            if event.HasField("debug_metadata"):
                self.tensorflow_version = event.debug_metadata.tensorflow_version
                self.run_id = event.debug_metadata.tfdbg_run_id

    def _read_graphs(self) -> None:
        for event in self._events("graphs"):
            what = event.WhichOneof("what")
            if what == "debugged_device":
                self.devices[event.debugged_device.device_id] = event.debugged_device.device_name
            elif what == "debugged_graph":
                g = event.debugged_graph
                self.graphs[g.graph_id] = TfdbgGraph(g.graph_id, g.graph_name, g.outer_context_id)
            elif what == "graph_op_creation":
                o = event.graph_op_creation
                self.ops[(o.graph_id, o.op_name)] = TfdbgOp(
                    o.op_type,
                    o.op_name,
                    o.graph_id,
                    o.graph_name,
                    tuple(o.input_names),
                    o.num_outputs,
                    tuple(o.code_location.stack_frame_ids),
                )

    def _read_stack_frames(self) -> None:
        for event in self._events("stack_frames"):
            if event.HasField("stack_frame_with_id"):
                f = event.stack_frame_with_id
                flc = f.file_line_col
                self.stack_frames[f.id] = (flc.file_index, flc.line, flc.func)

    @property
    def executions(self) -> list[TfdbgExecution]:
        """Every `.execution` record, read on first use (a long run has hundreds of
        thousands; the check streams them with `iter_executions` instead)."""
        if self._executions is None:
            self._executions = list(self.iter_executions())
        return self._executions

    def called_graph_ids(self) -> set[str]:
        """The ids of the graphs some `.execution` record calls, found without parsing the
        file (the check needs them before its one pass, which streams the executions):
        each known graph id searched for as an `Execution.graph_id` field (its tag, length
        and text) in the file's bytes. A hostile file can
        only make a graph look called (its steps then count calls it does not have)."""
        if not self.graphs:
            return set()
        if len(self.graphs) > _MAX_SEARCHED_GRAPHS:
            return {e.graph_id for e in self.iter_executions() if e.graph_id}
        try:
            handle = open_regular(self.path("execution"))
        except OSError:
            return set()  # said when the executions are read
        needles = {
            graph_id: b"\x1a" + _encode_varint(len(graph_id.encode())) + graph_id.encode()
            for graph_id in self.graphs
        }
        overlap = max(len(n) for n in needles.values()) - 1
        found: set[str] = set()
        tail = b""
        with handle:
            # read in chunks (a mapping would count the whole file in the process's RSS),
            # each searched with the end of the one before, so no id is cut in two
            while len(found) < len(needles):
                chunk = handle.read(_CHUNK * 8)
                if not chunk:
                    break
                window = tail + chunk
                for graph_id, needle in needles.items():
                    if graph_id not in found and needle in window:
                        found.add(graph_id)
                tail = window[-overlap:] if overlap else b""
        return found

    def iter_executions(self) -> Iterator[TfdbgExecution]:
        """The `.execution` records in file (execution) order, streamed; the problems
        reading them are said once however often they are read."""
        index = 0
        for event in self._events("execution"):
            if event.HasField("execution"):
                e = event.execution
                yield TfdbgExecution(
                    index,
                    e.op_type,
                    e.graph_id,
                    event.wall_time,
                    e.tensor_debug_mode,
                    tuple(e.tensor_protos),
                    tuple(e.input_tensor_ids),
                    tuple(e.output_tensor_ids),
                    tuple(e.code_location.stack_frame_ids),
                )
                index += 1

    def _index_sources(self) -> None:
        path = self.path("source_files")
        try:
            handle = open_regular(path)
        except OSError as err:
            self._log.note(f"{path} cannot be read ({err}); stacks show no source text.")
            return
        with handle:
            for offset, length, _d in list(_records(handle, path, self._log, read_data=False)):
                handle.seek(offset)
                name = _source_path(handle.read(min(length, _SOURCE_HEAD)))
                self.source_order.append(name or "")
                if name is not None:
                    self._sources.setdefault(name, (offset, length))

    @property
    def source_paths(self) -> list[str]:
        return list(self._sources)

    def source_lines(self, file_path: str) -> list[str] | None:
        """The text of one source file as the dump holds it (its CRC checked now), or None
        when the dump has none or its record is corrupt (then a problem says so)."""
        where = self._sources.get(file_path)
        if where is None:
            return None
        offset, length = where
        path = self.path("source_files")
        with open_regular(path) as handle:
            handle.seek(offset)
            data = handle.read(length)
            (data_crc,) = _FOOTER.unpack(handle.read(_FOOTER.size).ljust(4, b"\0"))
        if len(data) != length or masked_crc32c(data) != data_crc:
            self._log.problem(
                f"{path}: the text of {file_path} is corrupt (its CRC does not match)."
            )
            return None
        event = _event(data, f"{path}: the record at byte {offset - 12:,}", self._log)
        return list(event.source_file.lines) if event is not None else None

    def traces(self) -> Iterator[tuple[pb.GraphExecutionTrace, float]]:
        """The graph execution traces in file (execution) order, with their wall times
        (`DebugEvent.wall_time`, set as each was written), streamed; the problems reading
        them are said once however often they are read."""
        for event in self._events("graph_execution_traces"):
            trace = event.graph_execution_trace  # an empty one when the event is another
            # a trace has a mode: HasField, which costs as much, only where it has none
            if trace.tensor_debug_mode or event.HasField("graph_execution_trace"):
                yield trace, event.wall_time

    def trace_index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(data offset, length, wall time) of every `.graph_execution_traces` record, in
        file order: one pass of framing and CRCs, no parse (TensorFlow writes `wall_time`
        first: a record that does not start with it is parsed for it). 20 bytes a trace,
        so the dump model can read one step's traces without the rest."""
        offsets: array[int] = array("q")
        lengths: array[int] = array("q")
        walls: array[float] = array("d")
        path = self.path("graph_execution_traces")
        try:
            handle = open_regular(path)
        except OSError:
            handle = None  # said when the traces are read
        if handle is not None:
            with handle:
                for start, length, data in _records(handle, path, self._log):
                    if length >= 9 and data[0] == 0x09:
                        wall = _WALL.unpack_from(data, 1)[0]
                    else:
                        try:
                            wall = pb.DebugEvent.FromString(data).wall_time
                        except (DecodeError, RecursionError, ValueError):
                            continue  # said when the step holding it is read
                    offsets.append(start)
                    lengths.append(length)
                    walls.append(wall)
        return (
            np.frombuffer(offsets, np.int64).copy(),
            np.frombuffer(lengths, np.int64).copy(),
            np.frombuffer(walls, np.float64).copy(),
        )

    def read_events(
        self, kind: str, places: Iterable[tuple[int, int]]
    ) -> Iterator[pb.DebugEvent | str]:
        """The records of `kind` at these (data offset, length) places (from
        `trace_index`), one file open for all, each CRC checked: a DebugEvent, or a
        sentence saying why that one cannot be read."""
        path = self.path(kind)
        try:
            handle = open_regular(path)
        except OSError as err:
            yield f"{path} cannot be read: {err}"
            return
        with handle:
            for offset, length in places:
                where = f"{path}: the record at byte {offset - 12:,}"
                handle.seek(offset)
                data = handle.read(length)
                stored = handle.read(_FOOTER.size)
                if len(data) != length or len(stored) != _FOOTER.size:
                    yield f"{where} is cut short"
                elif masked_crc32c(data) != _FOOTER.unpack(stored)[0]:
                    yield f"{where} is corrupt (its CRC does not match)"
                else:
                    try:
                        yield pb.DebugEvent.FromString(data)
                    except (DecodeError, RecursionError, ValueError) as err:
                        yield f"{where} is no DebugEvent ({err or 'undecodable'})"

    def trace_events(self) -> Iterator[pb.DebugEvent]:
        """The `.graph_execution_traces` records as DebugEvents, streamed with nothing made
        per record (the check's loop, which runs a million times, reads what it needs);
        one that is no trace has no `graph_execution_trace` field."""
        return self._events("graph_execution_traces")

    def trace_records(
        self, clean: Mapping[int, WireLayout], tally: list[int]
    ) -> Iterator[tuple[int, int, bytes]]:
        """(data offset, length, data) per `.graph_execution_traces` record, CRC checked,
        not decoded, but those `tfdbg_wire.clean_health_trace` finds clean under `clean`
        (a dict the caller may fill as it goes), which are only counted in `tally[0]`.
        The check decodes the rest, saying why one cannot be with `undecodable_trace`."""
        path = self.path("graph_execution_traces")
        try:
            handle = open_regular(path)
        except FileNotFoundError:
            self._log.problem(
                f"{path} is missing, so the dump's graph_execution_traces are unknown."
            )
            return
        except OSError as err:
            self._log.problem(f"{path} cannot be read: {err}.")
            return
        with handle:
            yield from _records(handle, path, self._log, clean=clean, tally=tally)

    def undecodable_trace(self, offset: int, err: Exception) -> None:
        """The sentence for a `trace_records` record at data `offset` that is no
        DebugEvent, as every reader of the dump says it."""
        self._log.problem(_undecodable(self.path("graph_execution_traces"), offset - 12, err))

    def execution_records(self) -> Iterator[tuple[int, int, pb.Execution, float]]:
        """(data offset, length, execution, wall time) per `.execution` record, streamed:
        `execution_events` with where each record is, so an eager op's recorded values can
        be read again by offset (`files/tfdbg_values`)."""
        path = self.path("execution")
        try:
            handle = open_regular(path)
        except FileNotFoundError:
            self._log.problem(f"{path} is missing, so the dump's execution are unknown.")
            return
        except OSError as err:
            self._log.problem(f"{path} cannot be read: {err}.")
            return
        with handle:
            for start, length, data in _records(handle, path, self._log):
                event = _event(data, f"{path}: the record at byte {start - 12:,}", self._log)
                if event is not None and event.HasField("execution"):
                    yield start, length, event.execution, event.wall_time

    def execution_events(self) -> Iterator[tuple[pb.Execution, float]]:
        """The `.execution` records as protos with their wall times, streamed: what the
        check reads (a function call's graph id costs no conversion); `index` of
        `TfdbgExecution` is the position in this sequence."""
        for event in self._events("execution"):
            if event.HasField("execution"):
                yield event.execution, event.wall_time


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise ValueError("a varint runs past its record")


def _source_path(head: bytes) -> str | None:
    """`DebugEvent.source_file.file_path` from the head of a record, without parsing the
    file's text: a hand walk of the wire format over the first fields only."""
    try:
        pos = 0
        while pos < len(head):
            key, pos = _varint(head, pos)
            number, wire = key >> 3, key & 7
            if wire == 1:
                pos += 8
            elif wire == 0:
                _v, pos = _varint(head, pos)
            elif wire == 2:
                size, pos = _varint(head, pos)
                if number != 4:
                    pos += size
                    continue
                inner = head[pos:]
                key, at = _varint(inner, 0)
                if key != 0x0A:
                    return None
                size, at = _varint(inner, at)
                if at + size > len(inner):
                    return None  # a path longer than the head: not a real source record
                return inner[at : at + size].decode("utf-8", "replace")
            else:
                return None
    except ValueError:
        return None
    return None
