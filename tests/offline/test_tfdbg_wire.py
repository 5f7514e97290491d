"""`tfdbg_wire.clean_health_trace`, the byte-level shortcut of `check --watch TO` (issue 32),
against protobuf's decoding: it may only ever say "clean" where `DebugEvent.FromString`
decodes the record to a health-summary trace whose NaN/Inf counts are all 0.0, and it must
say so for the traces TensorFlow writes (real fixtures), else it saves nothing."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from tuidebug._proto import tfdbg_event_pb2 as pb
from tuidebug.offline.check.tfdbg import _FAST, _WIRE
from tuidebug.offline.files.tfdbg import CONCISE, CURT, FULL_HEALTH, TfdbgDump, read_records
from tuidebug.offline.files.tfdbg_wire import clean_health_trace

DATA = REPO / "tests" / "data" / "tfdbg"
PREFIX = "tfdbg_events.1700000000.fixture"
_SLOTS = {CURT: 2, CONCISE: 5, FULL_HEALTH: 11}
_COUNTS = {CURT: range(1, 2), CONCISE: range(2, 5), FULL_HEALTH: range(5, 8)}  # NaN/Inf


def _decoded_clean(data: bytes) -> bool:
    """What the check's protobuf path answers: a trace of a health mode whose float64
    summary has every NaN/Inf count slot equal to 0.0."""
    try:
        event = pb.DebugEvent.FromString(data)
    except Exception:  # any refusal of protobuf's is "not clean"
        return False
    if not event.HasField("graph_execution_trace"):
        return False
    trace = event.graph_execution_trace
    layout = _FAST.get(trace.tensor_debug_mode)
    tp = trace.tensor_proto
    return (
        layout is not None
        and tp.dtype == 2
        and len(tp.tensor_content) == layout[0]
        and layout[1](tp.tensor_content) == layout[2]
    )


_SEEN: dict[bytes, Any] = {}  # one memory of walked layouts for the whole module's records


def _agrees(data: bytes) -> bool:
    """The shortcut's "clean" implies protobuf's, and it answers the same with the memory
    of the layouts it walked before (every record tried so far) as without; returns the
    shortcut's answer."""
    wire = clean_health_trace(data, _WIRE)
    assert clean_health_trace(data, _WIRE, _SEEN) == wire, data.hex(" ")
    if wire:
        assert _decoded_clean(data), data.hex(" ")
    return wire


_VALUES = st.sampled_from([0.0, -0.0, 1.0, 3.0, float("nan"), float("inf"), -float("inf")])
_ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


@st.composite
def _traces(draw: st.DrawFn) -> tuple[bytes, bool]:
    """A trace as TensorFlow serializes it (the canonical layout when the names are
    ASCII and short), and whether the shortcut must recognise it."""
    mode = draw(st.sampled_from([CURT, CONCISE, FULL_HEALTH, 1, 5, 6]))
    slots = _SLOTS.get(mode, 3)
    values = draw(st.lists(_VALUES, min_size=slots, max_size=slots))
    names = st.one_of(_ASCII, st.text(max_size=200))
    event = pb.DebugEvent(wall_time=draw(st.floats(allow_nan=False)))
    t = event.graph_execution_trace
    t.tfdbg_context_id = draw(names)
    t.op_name = draw(names)
    t.output_slot = draw(st.integers(0, 300))
    t.tensor_debug_mode = mode  # type: ignore[assignment]
    t.device_name = draw(st.one_of(st.just(""), names))
    tp = t.tensor_proto
    tp.dtype = draw(st.sampled_from([2, 2, 2, 1]))
    tp.tensor_shape.dim.add().size = slots
    tp.tensor_content = struct.pack(f"<{slots}d", *values)
    data = event.SerializeToString()
    canonical = bool(
        all(len(s) < 128 and s.isascii() for s in (t.tfdbg_context_id, t.op_name, t.device_name))
        and t.output_slot < 128
        and data[:1] == b"\x09"  # proto3 leaves out a 0.0 wall time, and empty names
        and t.tfdbg_context_id
        and t.op_name
        and tp.dtype == 2
        and len(t.SerializeToString()) < 1 << 14
    )
    counts = _COUNTS.get(mode, range(0))
    zero_bytes = all(struct.pack("<d", values[i]) == bytes(8) for i in counts)  # not -0.0
    return data, canonical and zero_bytes and _decoded_clean(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces())
def test_agrees_with_protobuf_on_written_traces(case: tuple[bytes, bool]) -> None:
    data, recognised = case
    # (-0.0 in a count slot is clean to protobuf, and left to it by the shortcut)
    assert _agrees(data) == recognised


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces(), st.data())
def test_never_clean_where_protobuf_is_not_on_mutated_traces(
    case: tuple[bytes, bool], data: st.DataObject
) -> None:
    _agrees(case[0])  # its layout remembered, so a mutation is looked up by it too
    raw = bytearray(case[0])
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate", "append"]))
        at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        byte = data.draw(st.integers(0, 255))
        if kind == "flip" and raw:
            raw[at] = byte
        elif kind == "insert":
            raw.insert(at, byte)
        elif kind == "delete" and raw:
            del raw[at]
        elif kind == "truncate":
            del raw[at:]
        else:
            raw += bytes([byte, data.draw(st.integers(0, 255))])
    _agrees(bytes(raw))


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_never_clean_where_protobuf_is_not_on_random_bytes(data: bytes) -> None:
    _agrees(data)


def test_recognises_tensorflows_own_clean_traces() -> None:
    """Every trace of the real health-mode dumps: the same answer as protobuf's, and the
    clean ones recognised (the shortcut is what makes the check fast)."""
    for mode in ("curt_health", "concise_health", "full_health", "keras_fit"):
        records = read_records(DATA / mode / f"{PREFIX}.graph_execution_traces")[0]
        assert records
        clean = [d for d in records if _decoded_clean(d)]
        assert clean, mode
        assert all(_agrees(d) for d in clean), mode
        assert not any(_agrees(d) for d in records if not _decoded_clean(d)), mode


def test_check_answers_the_same_with_and_without_the_shortcut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real Keras `fit` dump (clean traces and NaN ones interleaved, eager ops between):
    the same hits at the same trace indices and steps, the same counts and origin, when
    every trace is decoded by protobuf."""
    from tuidebug.core.watchpoints import Watchpoint, parse_watch_spec
    from tuidebug.offline.check import tfdbg as check

    condition, params = parse_watch_spec("TO")
    watch = [(Watchpoint(0, condition, params).request(), condition.target)]

    def answer() -> tuple[object, ...]:
        dump = TfdbgDump(DATA / "keras_fit")
        r = check.check_tfdbg(dump, watch)
        hits = [(h.index, h.op_name, h.output_slot, h.step, h.counts, h.eager) for h in r.hits]
        return hits, r.checked, r.eager_checked, r.step_count, r.origin, dump.problems

    fast = answer()
    monkeypatch.setattr(check, "_WIRE", {})
    assert answer() == fast
    assert fast[0] and fast[4] is not None  # it has hits and an origin to agree on
