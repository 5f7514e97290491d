"""What a session does with hits, the same offline and online: when hits stop a run, and how a
checker's outcome becomes a `WatchpointHit`.

The stop rule: any hit stops step N / continue / run-to-node (spec §2.6), except a batch whose
hits are *all* error code 4 only ("the previous step value cannot be found": a weight-change
watchpoint at the first step there is). Those say nothing about the training, only that there
is no earlier step to compare with yet, and stopping on them would halt every continue at its
first step. Sessions still publish them with their step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from tuidebug.core.condition_catalogue import CheckResult, ConditionSpec
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit

__all__ = ["CheckedTensor", "Outcome", "hit_from_outcome", "only_no_previous", "stops_run"]


class HasErrorCode(Protocol):
    @property
    def error_code(self) -> int: ...


def only_no_previous(hit: HasErrorCode) -> bool:
    """An error hit whose only error is "the previous step value cannot be found"."""
    return hit.error_code == ErrorCode.NO_PREV


def stops_run(hits: Iterable[HasErrorCode]) -> bool:
    """Whether these hits (of one step) stop a run: some hit that is not error 4 only.
    No hits never stop one."""
    return not all(only_no_previous(hit) for hit in hits)


class CheckedTensor(Protocol):
    """Where a checked tensor lives (the offline checker's `TensorKey`)."""

    @property
    def rank(self) -> int: ...
    @property
    def graph(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def slot(self) -> int: ...
    @property
    def iteration(self) -> int: ...


class Outcome(Protocol):
    """A reported check result (the offline checker's `CheckOutcome`)."""

    @property
    def key(self) -> CheckedTensor: ...
    @property
    def watchpoint_id(self) -> int: ...
    @property
    def result(self) -> CheckResult: ...


def hit_from_outcome(
    outcome: Outcome, condition: ConditionSpec, order: int = 0, step: int | None = None
) -> WatchpointHit:
    """The hit for a checker outcome of the watchpoint with `condition`; `order` is the
    execution position of its node (for sorting), `step` the one the user sees (sessions)."""
    k = outcome.key
    ref = TensorRef(k.node, k.slot, k.iteration, k.rank, k.graph)
    return WatchpointHit.from_result(
        outcome.watchpoint_id, condition, ref, outcome.result, order, step
    )
