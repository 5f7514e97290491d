"""What a session does with hits, the same offline and online: when hits stop a run, how a
checker's outcome becomes a `WatchpointHit`, and which hits say a tensor holds NaN or ±Inf
(the hit list's "first NaN/Inf" line, the history's NaN/Inf steps).

The stop rule: any hit stops step N / continue / run-to-node (spec §2.6), except a batch whose
hits are *all* error code 4 only ("the previous step value cannot be found": a weight-change
watchpoint at the first step there is). Those say nothing about the training, only that there
is no earlier step to compare with yet, and stopping on them would halt every continue at its
first step. Sessions still publish them with their step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from tuidebug.core.condition_catalogue import CheckResult, ConditionSpec, ConditionType
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import WatchpointHit

__all__ = [
    "CheckedTensor",
    "NanInf",
    "NanInfSummary",
    "Outcome",
    "hit_from_outcome",
    "nan_inf_of",
    "nan_inf_summary",
    "only_no_previous",
    "stops_run",
]


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


# ------------------------------------------------------------------ NaN / Inf
@dataclass(frozen=True)
class NanInf:
    """What one hit says of its tensor's NaN/Inf: `nan`/`inf` when the hit names the kind,
    neither when it only says "NaN or ±Inf" (a tensor-overflow hit: MindSpore's
    GENERAL_OVERFLOW clears the error bits and answers one bool)."""

    nan: bool
    inf: bool


def nan_inf_of(hit: WatchpointHit) -> NanInf | None:
    """The NaN/Inf a hit reports, or None when it says nothing of them. Two ways a hit says
    it (spec §3.5): the error bits NAN/INF of any condition that could not evaluate its
    parameters, and a real hit of HAS_NAN, HAS_INF or GENERAL_OVERFLOW (error bits cleared)."""
    code = hit.error_code
    if code & (ErrorCode.NAN | ErrorCode.INF):
        return NanInf(bool(code & ErrorCode.NAN), bool(code & ErrorCode.INF))
    if code:
        return None  # another error (no previous value, no data…): nothing read
    kind = ConditionType(hit.condition.proto)
    if kind is ConditionType.HAS_NAN:
        return NanInf(True, False)
    if kind is ConditionType.HAS_INF:
        return NanInf(False, True)
    if kind is ConditionType.GENERAL_OVERFLOW:
        return NanInf(False, False)
    return None


@dataclass(frozen=True)
class NanInfSummary:
    """The tensors some hit says hold NaN or ±Inf, and the first of them to run.

    Tensors are counted once however many watchpoints hit them, in disjoint kinds: `nan`
    holds NaN (maybe ±Inf too), `inf` holds ±Inf and no NaN, `either` holds one of them but
    no hit on it said which."""

    first: WatchpointHit
    nan: int
    inf: int
    either: int
    ranks: int = 1  # how many ranks those tensors are on (a check of every rank: several)

    @property
    def tensors(self) -> int:
        return self.nan + self.inf + self.either


def nan_inf_summary(hits: Iterable[WatchpointHit]) -> NanInfSummary | None:
    """The NaN/Inf tensors of these hits (None: no hit says NaN or ±Inf). The first is the
    one that ran first: the earliest step, then execution order (parameters come after
    every kernel: they are read, not computed, in a step), as TensorBoard Debugger V2's
    alert names the first op with NaN/Inf — where the trouble began. Across ranks (a check
    of every rank) execution positions are compared as one clock: every rank runs the same
    program, so a collective that only carries another rank's Inf (an all_reduce) comes
    after the call that made it there, and that rank's call is named."""
    kinds: dict[tuple[int, str, int | None, str, int], tuple[bool, bool]] = {}
    first: WatchpointHit | None = None

    def when(hit: WatchpointHit) -> tuple[int, int, int]:
        step = hit.step if hit.step is not None else (hit.tensor.iteration or 0)
        return step, hit.order, hit.tensor.rank

    for hit in hits:
        said = nan_inf_of(hit)
        if said is None:
            continue
        ref = hit.tensor
        key = (ref.rank, ref.graph, ref.iteration, ref.node, ref.slot)
        had_nan, had_inf = kinds.get(key, (False, False))
        kinds[key] = (had_nan or said.nan, had_inf or said.inf)
        if first is None or when(hit) < when(first):
            first = hit
    if first is None:
        return None
    nans = sum(1 for n, _ in kinds.values() if n)
    infs = sum(1 for n, i in kinds.values() if i and not n)
    ranks = len({key[0] for key in kinds})
    return NanInfSummary(first, nans, infs, len(kinds) - nans - infs, ranks)
