"""The micro-batch of a hit on the wire (`core.rank_fields.encode_micro_batch`): extra
fields of a `WatchpointHit` that MindSpore's schema ignores, read back by `hit_from_wire`
(a MindSpore hit has none: None), bounded when they come from the network, and shown by the
hit list's row and details."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.condition_catalogue import get_condition
from tuidebug.core.graph import Node, NodeKind
from tuidebug.core.rank_fields import MAX_MICRO_BATCHES, encode_micro_batch, micro_batch_of
from tuidebug.core.watchpoints import Watchpoint
from tuidebug.online.wire_watchpoints import hit_from_wire


def _wire_hit(extra: bytes = b"") -> pb.WatchpointHit:
    hit = pb.WatchpointHit(
        id=1, error_code=0, tensor=graph_pb.TensorProto(node_name="fc.weight", slot="0")
    )
    hit.MergeFromString(extra)
    return pb.WatchpointHit.FromString(hit.SerializeToString())  # as the server parses it


def _node() -> Node:
    return Node(name="fc.weight", op_type="Parameter", kind=NodeKind.PARAMETER, graph_name="g")


def test_a_hit_carries_its_micro_batch_and_a_mindspore_hit_none() -> None:
    wp = Watchpoint(1, get_condition("TO"))
    marked = hit_from_wire(_wire_hit(encode_micro_batch(2, 4)), wp, _node(), 7, 0)
    assert (marked.micro_batch, marked.micro_batches) == (2, 4)
    plain = hit_from_wire(_wire_hit(), wp, _node(), 7, 0)
    assert (plain.micro_batch, plain.micro_batches) == (None, None)
    unknown_count = hit_from_wire(_wire_hit(encode_micro_batch(3, None)), wp, _node(), 7, 0)
    assert (unknown_count.micro_batch, unknown_count.micro_batches) == (3, None)


def test_the_hit_list_names_the_micro_batch() -> None:
    from tuidebug.tui.panes.hit_list import HitList

    hit = hit_from_wire(
        _wire_hit(encode_micro_batch(2, 4)), Watchpoint(1, get_condition("TO")), _node(), 7, 0
    )
    assert "mb2" in HitList._row(hit, False, False).plain
    assert "micro-batch 2 of 4" in HitList.full_text(hit).plain
    plain = hit_from_wire(_wire_hit(), Watchpoint(1, get_condition("TO")), _node(), 7, 0)
    assert "micro" not in HitList.full_text(plain).plain


@given(st.binary(max_size=200))
@settings(max_examples=300, deadline=None)
def test_micro_batch_fields_of_any_bytes_are_valid_or_none(data: bytes) -> None:
    try:
        hit = pb.WatchpointHit.FromString(data)
    except Exception:
        return  # not a message at all: the server refuses it before us
    found = micro_batch_of(hit)
    if found is not None:
        micro, count = found
        assert 1 <= micro <= MAX_MICRO_BATCHES
        assert count is None or micro <= count <= MAX_MICRO_BATCHES


@given(st.integers(1, MAX_MICRO_BATCHES), st.integers(0, MAX_MICRO_BATCHES))
@settings(max_examples=60, deadline=None)
def test_micro_batch_fields_round_trip(micro: int, count: int) -> None:
    found = micro_batch_of(_wire_hit(encode_micro_batch(micro, count)))
    assert found == (micro, count if count and count >= micro else None)
