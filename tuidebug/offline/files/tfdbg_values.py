"""A tfdbg dump's recorded tensor values (FULL_TENSOR) read by offset from its own records,
for the dump model's `pt`, tensor view, `L` and the checker's tasks (issue 32).

Everything above the dump model names a tensor's value by a path (the checker's tasks carry
one to its threads), but a tfdbg value is no file of its own: it is the tensor proto of one
record in `.graph_execution_traces` (a graph op's output) or `.execution` (an eager op's
output `slot`). So its path is a reference into that file:

    <prefix>.graph_execution_traces#tfdbg@OFFSET:LENGTH:SLOT[,OFFSET:LENGTH:SLOT…]

(the data offset and length `TfdbgDump.trace_index` found; several places when an output
ran more than once in a step, a loop: their values are concatenated, flat, so a NaN in any
run is seen). Nothing is read until the value is asked for; then only those records, each
CRC-checked, each refused before it is read when it is longer than the reader's budget
(`TensorTooLargeError`, the checker's error 8). Anything wrong is one sentence naming the
file and the record (`TensorFileError`), never an exception of another kind.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable
from typing import BinaryIO

import numpy as np
from google.protobuf.message import DecodeError

from tuidebug._proto import tfdbg_event_pb2 as pb
from tuidebug.offline.files.npy import TensorFileError, TensorTooLargeError
from tuidebug.offline.files.regular_file import open_regular
from tuidebug.offline.files.tfdbg import FULL_TENSOR, masked_crc32c, tensor_values

__all__ = ["MARK", "is_value_ref", "read_value_ref", "value_ref"]

MARK = "#tfdbg@"
# places one reference may name (a loop of this many runs in one step is far past a real
# one; a reference is made by the dump model, so this only bounds a hostile record count)
_MAX_PLACES = 4096
_FOOTER = struct.Struct("<I")


def value_ref(path: str, places: Iterable[tuple[int, int, int]]) -> str:
    """The reference to the values at these (data offset, length, output slot) places."""
    return path + MARK + ",".join(f"{o}:{n}:{s}" for o, n, s in places)


# a reference's tail: what `value_ref` writes, at the very end (a folder or host name of
# the dump may hold the mark too, and an `.npy` path of another dump may, by chance)
_TAIL = re.compile(r"\.(?:graph_execution_traces|execution)#tfdbg@\d+:\d+:\d+(?:,\d+:\d+:\d+)*\Z")


def is_value_ref(path: str) -> bool:
    return MARK in path and _TAIL.search(path) is not None


def _parse(ref: str) -> tuple[str, list[tuple[int, int, int]]]:
    path, _, tail = ref.rpartition(MARK)
    try:
        places = [tuple(int(x) for x in p.split(":")) for p in tail.split(",")]
    except ValueError:
        places = []
    if not places or len(places) > _MAX_PLACES or any(len(p) != 3 for p in places):
        raise TensorFileError(path, f"{os.path.basename(path)}: {ref!r} names no record.")
    return path, [(p[0], p[1], p[2]) for p in places]


def read_value_ref(ref: str, max_bytes: int | None = None) -> np.ndarray:
    """The values `ref` names (module docstring), shaped as recorded when one place, flat
    when several; `TensorTooLargeError` past `max_bytes`, else `TensorFileError`."""
    path, places = _parse(ref)
    name = os.path.basename(path)
    total = sum(n for _o, n, _s in places)
    if max_bytes is not None and total > max_bytes:
        raise TensorTooLargeError(
            path,
            f"{name}: the recorded values take {total:,} bytes, more than the "
            f"{max_bytes:,} allowed.",
            total,
            max_bytes,
        )
    try:
        handle = open_regular(path)
    except OSError as err:
        raise TensorFileError(path, f"{name} cannot be read: {err}.") from None
    arrays: list[np.ndarray] = []
    with handle:
        for offset, length, slot in places:
            arrays.append(_one(handle, name, offset, length, slot))
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate([a.reshape(-1) for a in arrays])


def _one(f: BinaryIO, name: str, offset: int, length: int, slot: int) -> np.ndarray:
    where = f"{name}: the record at byte {offset - 12:,}"
    if offset < 12 or length < 0:
        raise TensorFileError(name, f"{where} is not in the file.")
    f.seek(offset)
    data = f.read(length)
    stored = f.read(_FOOTER.size)
    if len(data) != length or len(stored) != _FOOTER.size:
        raise TensorFileError(name, f"{where} is cut short.")
    if masked_crc32c(data) != _FOOTER.unpack(stored)[0]:
        raise TensorFileError(name, f"{where} is corrupt (its CRC does not match).")
    try:
        event = pb.DebugEvent.FromString(data)
    except (DecodeError, RecursionError, ValueError) as err:
        raise TensorFileError(name, f"{where} is no DebugEvent ({err or 'undecodable'}).") from None
    if event.HasField("graph_execution_trace"):
        mode = event.graph_execution_trace.tensor_debug_mode
        protos = [event.graph_execution_trace.tensor_proto]
    elif event.HasField("execution"):
        mode = event.execution.tensor_debug_mode
        protos = list(event.execution.tensor_protos)
    else:
        raise TensorFileError(name, f"{where} holds no trace or execution.")
    if mode != FULL_TENSOR or not 0 <= slot < len(protos):
        raise TensorFileError(name, f"{where} records no value of output {slot}.")
    tp = protos[slot]
    values = tensor_values(tp)
    if isinstance(values, str):
        raise TensorFileError(name, f"{where} holds a value tuidebug cannot read: {values}.")
    shape = tuple(max(d.size, 0) for d in tp.tensor_shape.dim)
    if tp.tensor_content and int(np.prod(shape, dtype=np.int64)) == values.size:
        return values.reshape(shape)
    return values
