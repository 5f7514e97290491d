"""Which hits the callbacks mark with a micro-batch (`TrainingLink.note_hits`): those found
while a micro-batch of an accumulated step runs, with its number and the step's count; not
those at the step end or the initial suspension (no micro-batch runs: a weight after the
update is of the whole step), nor any with one micro-batch a step."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.rank_fields import micro_batch_of
from tuidebug.torch.training_link import TrainingLink


def _marked(accumulation: int, micro_batch: int, tmp_path: Path) -> tuple[int, int | None] | None:
    link = TrainingLink(host=None, port=0, dump_dir=tmp_path, dump_steps=None, attach={})
    link.accumulation, link.micro_batch = accumulation, micro_batch
    hit = pb.WatchpointHit(id=1, tensor=graph_pb.TensorProto(node_name="fc.weight", slot="0"))
    link.note_hits([hit])
    return micro_batch_of(pb.WatchpointHit.FromString(hit.SerializeToString()))


def test_only_hits_inside_a_micro_batch_are_marked(tmp_path: Path) -> None:
    assert _marked(4, 2, tmp_path) == (2, 4)
    assert _marked(4, 0, tmp_path) is None  # the step end / initial suspension
    assert _marked(1, 1, tmp_path) is None  # one micro-batch a step: the step says it
    assert _marked(1, 3, tmp_path) == (3, None)  # forwards the framework did not announce
