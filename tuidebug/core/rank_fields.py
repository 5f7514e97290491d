"""Which rank of which job a training process is, on the wire.

MindSpore's `Metadata` has no rank and no world size (`device_name` is "<device_id>:<graph
id>", spec §1.2), so a tuidebug client (the PyTorch adapter) adds three fields of its own to
its SendMetadata: numbers that MindSpore's and MindInsight's schema do not have, which a
protobuf reader of that schema keeps as unknown fields and otherwise ignores. A message
without them (every MindSpore training) is a job of one rank.

The same way, a hit (`WatchpointHit`) of a training with gradient accumulation carries the
micro-batch it happened in and the number of micro-batches of its optimizer step (fields
`MICRO_BATCH_FIELD`, `MICRO_BATCHES_FIELD`): `encode_micro_batch` / `micro_batch_of`.

The fields come from the network: `rank_info` bounds them (a job name of at most
`MAX_JOB_CHARS` characters, at most `MAX_WORLD` ranks, 0 <= rank < world size) and treats a
message whose fields are malformed as one without them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import unknown_fields

__all__ = [
    "MAX_JOB_CHARS",
    "MAX_MICRO_BATCHES",
    "MAX_WORLD",
    "RankInfo",
    "encode_micro_batch",
    "encode_rank_info",
    "micro_batch_of",
    "rank_info",
]

RANK_FIELD = 101
WORLD_FIELD = 102
JOB_FIELD = 103
MAX_WORLD = 65536
MAX_JOB_CHARS = 200
MICRO_BATCH_FIELD = 101  # of a WatchpointHit (its own numbering: another message)
MICRO_BATCHES_FIELD = 102
MAX_MICRO_BATCHES = 1 << 20


@dataclass(frozen=True)
class RankInfo:
    """A training's place in its job: `job` names the job (torchrun's run id, or the
    rendezvous address), the same for every rank of it."""

    rank: int
    world_size: int
    job: str = ""


def encode_rank_info(info: RankInfo) -> bytes:
    """The three fields as protobuf wire bytes, to merge into a `Metadata`."""
    job = info.job.encode("utf-8")[: MAX_JOB_CHARS * 4]
    return (
        _varint(RANK_FIELD << 3)
        + _varint(info.rank)
        + _varint(WORLD_FIELD << 3)
        + _varint(info.world_size)
        + _varint(JOB_FIELD << 3 | 2)
        + _varint(len(job))
        + job
    )


def rank_info(message: Any) -> RankInfo | None:
    """The rank fields of a parsed `Metadata`, None when it has none (MindSpore) or they do
    not make sense (a rank outside the world, a world of 0 or too many ranks, a job name
    that is not text or too long)."""
    fields = unknown_fields.UnknownFieldSet(message)
    rank = world = None
    job = ""
    for i in range(len(fields)):
        field = fields[i]
        if field.field_number == RANK_FIELD and field.wire_type == 0:
            rank = int(field.data)
        elif field.field_number == WORLD_FIELD and field.wire_type == 0:
            world = int(field.data)
        elif field.field_number == JOB_FIELD and field.wire_type == 2:
            data = field.data
            if not isinstance(data, bytes) or len(data) > MAX_JOB_CHARS * 4:
                return None
            try:
                job = data.decode("utf-8")
            except UnicodeDecodeError:
                return None
            if len(job) > MAX_JOB_CHARS:
                return None
    if rank is None or world is None or not 1 <= world <= MAX_WORLD or not 0 <= rank < world:
        return None
    return RankInfo(rank, world, job)


def encode_micro_batch(micro_batch: int, micro_batches: int | None) -> bytes:
    """The micro-batch fields as protobuf wire bytes, to merge into a `WatchpointHit`;
    `micro_batches` None or 0: the training does not say how many its step has."""
    out = _varint(MICRO_BATCH_FIELD << 3) + _varint(max(0, micro_batch))
    if micro_batches:
        out += _varint(MICRO_BATCHES_FIELD << 3) + _varint(micro_batches)
    return out


def micro_batch_of(message: Any) -> tuple[int, int | None] | None:
    """(micro-batch, micro-batches or None) of a parsed `WatchpointHit`; None when it has
    none (MindSpore) or they do not make sense (0, more than `MAX_MICRO_BATCHES`, a
    micro-batch past the count)."""
    fields = unknown_fields.UnknownFieldSet(message)
    micro = count = None
    for i in range(len(fields)):
        field = fields[i]
        if field.wire_type != 0:
            continue
        if field.field_number == MICRO_BATCH_FIELD:
            micro = int(field.data)
        elif field.field_number == MICRO_BATCHES_FIELD:
            count = int(field.data)
    if micro is None or not 1 <= micro <= MAX_MICRO_BATCHES:
        return None
    if count is not None and not micro <= count <= MAX_MICRO_BATCHES:
        count = None
    return micro, count


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)
