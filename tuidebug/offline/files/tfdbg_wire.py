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
record or raises IndexError, which answers False. A pass remembers the layouts it walked
(`seen`): a record whose bytes around its summary are those of one walked is laid out
the same, and only its NaN/Inf slots are read (about 0.7 µs a trace rather than 1.2).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["WireLayout", "clean_health_trace", "wire_layout"]

# per tensor_debug_mode (`wire_layout`): the 14 bytes from the trace's mode field to its
# tensor content, the content's size, and where its NaN/Inf count slots are in it
WireLayout = tuple[bytes, int, int, int]
_ZEROS = bytes(64)
# a walked record's layout (`clean_health_trace`'s `seen`): the bytes from its summary to
# its end, the NaN/Inf slots' place in the summary, what follows the summary, its mode
_Seen = tuple[int, int, int, bytes, int]
_MAX_SEEN = 65_536  # layouts remembered (a real run has one per op output it traces)
# the last walked record's bytes from its summary on: where the next is looked up (one
# number, the same for every trace of a mode on a device, so a guess that is nearly always
# right; a wrong one only misses)
_LAST_TOTAL = [0]


def wire_layout(mode: int, slots: int, nan_inf: range) -> WireLayout:
    """The layout of a `mode` summary of `slots` float64 values whose NaN/Inf counts are
    the slots in `nan_inf`: mode, then a DT_DOUBLE tensor proto of shape [slots]."""
    size = 8 * slots
    head = bytes([0x20, mode, 0x2A, size + 10, 8, 2, 0x12, 4, 0x12, 2, 8, slots, 0x22, size])
    return head, size, 8 * nan_inf.start, 8 * nan_inf.stop


def clean_health_trace(
    data: bytes, layouts: Mapping[int, WireLayout], seen: dict[bytes, _Seen] | None = None
) -> bool:
    """True when `data` is a DebugEvent holding a graph execution trace laid out as
    TensorFlow writes it (module docstring) whose mode is in `layouts` and whose summary's
    NaN/Inf count slots are all +0.0: a trace with no NaN/Inf. False says nothing: decode
    the record. Kept to few steps: it runs once per trace.

    `seen` (one dict per pass, bounded) remembers the records already walked by their
    bytes from the trace's tag to the summary (its op, slot, mode and layout; only the
    wall time before and the values after change from one step to the next) and by what
    follows the summary: a record whose bytes there are the same as one walked is laid
    out the same, so only its NaN/Inf slots are read."""
    end = len(data)
    total = _LAST_TOTAL[0]  # read once: another thread's pass may set it meanwhile
    c = end - total
    if seen is not None and c > 9:
        hit = seen.get(data[9:c])
        if (
            hit is not None
            and data[0] == 0x09
            and hit[0] == total
            and hit[4] in layouts
            and data[end - len(hit[3]) :] == hit[3]
        ):
            return data[c + hit[1] : c + hit[2]] == _ZEROS[: hit[2] - hit[1]]
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
        mode = data[r + 1]
        layout = layouts.get(mode)
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
    except IndexError:
        return False
    if seen is not None:
        if len(seen) >= _MAX_SEEN:
            seen.clear()
        total = end - c
        _LAST_TOTAL[0] = total
        seen[data[9:c]] = (total, layout[2], layout[3], data[e:], mode)
    return data[c + layout[2] : c + layout[3]] == _ZEROS[: layout[3] - layout[2]]
