"""A clean health-summary trace told from its serialized bytes, without protobuf (issue 32).

`check --watch TO` on a long run reads millions of `.graph_execution_traces` records, and
nearly all of them are health summaries with no NaN or Inf. Decoding each with protobuf
and reading its fields cost as much again as reading the file; this walk of the bytes
costs less than half of that. It accepts only the exact layout TensorFlow writes, field by
field in order, and only what protobuf would decode to the same values:

    DebugEvent:          09 wall_time(8)  52 len  graph_execution_trace
    GraphExecutionTrace: 0a len tfdbg_context_id  12 len op_name  [18 output_slot]
                         20 tensor_debug_mode  2a len tensor_proto  [32 len device_name]
    TensorProto:         08 02 (DT_DOUBLE)  12 04 12 02 08 n (one dimension)
                         22 len tensor_content

Strings must be ASCII (so valid UTF-8, which protobuf checks) and under 128 bytes, every
length a one-byte varint but the trace's (one or two), and the lengths must add up to the
record. Anything else — another field, another order, a longer name, a summary that is not
float64 — answers False and the caller decodes the record with protobuf as before: this is
only ever a shortcut to the answer protobuf gives (tests/offline/test_tfdbg_wire.py fuzzes
that against `DebugEvent.FromString`). The bytes are untrusted: every index is inside the
record or raises IndexError, which answers False.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["WireLayout", "clean_health_trace", "wire_layout"]

# per tensor_debug_mode (`wire_layout`): the 14 bytes from the trace's mode field to its
# tensor content, the content's size, and where its NaN/Inf count slots are in it
WireLayout = tuple[bytes, int, int, int]
_ZEROS = bytes(64)


def wire_layout(mode: int, slots: int, nan_inf: range) -> WireLayout:
    """The layout of a `mode` summary of `slots` float64 values whose NaN/Inf counts are
    the slots in `nan_inf`: mode, then a DT_DOUBLE tensor proto of shape [slots]."""
    size = 8 * slots
    head = bytes([0x20, mode, 0x2A, size + 10, 8, 2, 0x12, 4, 0x12, 2, 8, slots, 0x22, size])
    return head, size, 8 * nan_inf.start, 8 * nan_inf.stop


def clean_health_trace(data: bytes, layouts: Mapping[int, WireLayout]) -> bool:
    """True when `data` is a DebugEvent holding a graph execution trace laid out as
    TensorFlow writes it (module docstring) whose mode is in `layouts` and whose summary's
    NaN/Inf count slots are all +0.0: a trace with no NaN/Inf. False says nothing: decode
    the record. Kept to few steps: it runs once per trace."""
    try:
        size = data[10]  # the trace's length: a one- or two-byte varint
        if size < 0x80:
            p = 11
        else:
            high = data[11]
            if not 0 < high < 0x80:
                return False
            size = (size & 0x7F) | high << 7
            p = 12
        end = len(data)
        if data[0] != 0x09 or data[9] != 0x52 or p + size != end or data[p] != 0x0A:
            return False
        q = p + 2 + data[p + 1]  # past tfdbg_context_id
        r = q + 2 + data[q + 1]  # past op_name
        # both strings ASCII, and so their lengths under 0x80 (one-byte varints)
        if data[q] != 0x12 or not data[p:r].isascii():
            return False
        if data[r] == 0x18:  # output_slot (absent when 0)
            if data[r + 1] & 0x80:
                return False
            r += 2
        layout = layouts.get(data[r + 1])
        if layout is None or data[r : r + 14] != layout[0]:
            return False
        c = r + 14
        e = c + layout[1]
        if e > end:
            return False
        if e < end:  # device_name, ASCII (so its length is one byte) to the record's end
            tail = data[e:]
            if tail[0] != 0x32 or tail[1] + 2 != end - e or not tail.isascii():
                return False
        return data[c + layout[2] : c + layout[3]] == _ZEROS[: layout[3] - layout[2]]
    except IndexError:
        return False
