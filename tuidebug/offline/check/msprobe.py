"""Watchpoints checked on an msprobe dump's statistics (issue 29): each tensor record's Max,
Min and Mean decided with MindSpore's math, as a statistic.csv row is (`check.statistic`).

What a record decides, and why:

* NaN and ±Inf: msprobe's own rule (its `overflow_check`) reads Max and Min only. Its
  statistics are computed in the tensor's dtype, so Norm overflows to Infinity in float32 or
  bfloat16 long before any value does: a TensorOverflow from Norm would be a false alarm on
  every large-weight step. Max/Min are NaN when any value is (torch's max propagates NaN),
  +Inf / -Inf when one is, so they stand for statistic.csv's NaN and Inf counts;
* `max_*`, `min_*`, `mean_*`, `max_min_*`: Max, Min, Mean, read where MindSpore evaluates a
  threshold (no NaN/Inf), through the same `decide` as statistic.csv;
* refused per watchpoint in one sentence: `abs_mean_*`, `range_percentage_*`,
  `zero_percentage_*` (TZ, WI), the legacy `sd_*` and the change conditions, which no
  msprobe statistic gives.

Which tensors a category watches: tensor conditions every output, parameter and parameter
gradient of every call; weights the modules' `parameters`; gradients the `parameters_grad`
records; activations the outputs of forward calls. Hits come in execution order (dump.json
order) within a step, steps in order, ranks in order.

msprobe's own first anomaly (`files.msprobe_rule`): each hit says whether its call is the
one msprobe `overflow_check` names on its step and rank (`MsprobeHit.anomaly`: top-level
inputs finite, a top-level output NaN/±Inf, and msprobe's cross-rank pass blames it, not
the rank where the NaN/Inf began before a collective carried it here), so the first such
hit of a step and rank is msprobe's answer even where NaN reached it first through a
weight, a nested argument or the batch. Every rank of a step is read for that pass, those
the rank filter leaves out included (read, not checked). Calls
msprobe's rule ignores by name (`Torch.empty*`, `Torch.fill*`: uninitialised memory, chosen
fills such as `-inf` masks) are watched by no watchpoint; those holding NaN/Inf are listed
in `MsprobeReport.ignored`, for `check` to say.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from tuidebug.core.condition_catalogue import (
    CHANGE_CONDITIONS,
    LEGACY_STAT,
    CheckRequest,
    CheckResult,
    ConditionSpec,
    ConditionType,
)
from tuidebug.core.graph import Category, Node
from tuidebug.offline.check.statistic import Missing, condition_label, decide
from tuidebug.offline.files import msprobe_rule
from tuidebug.offline.files.msprobe import (
    MAX_DEPTH,
    MsprobeCall,
    MsprobeError,
    MsprobeRoot,
    MsprobeScan,
    MsprobeTensor,
    call_from_record,
    scan_dump_json,
    too_deep_sentence,
)
from tuidebug.offline.foreign.msprobe import msprobe_stats  # one rule: Max/Min, never Norm

__all__ = ["MsprobeHit", "MsprobePlace", "MsprobeReport", "check_msprobe", "msprobe_stats"]

GRAPH = "msprobe"  # the one "graph" of a step: its calls in execution order

# statistics no msprobe record holds, in words for the refusal
_UNDERIVABLE: dict[str, str] = {
    "abs_mean": "the mean of absolute values (abs_mean)",
    "range_percentage": "the percentage of values in a range (range_percentage)",
    "zero_percentage": "the count of zeros (zero_percentage)",
    "sd": "the standard deviation (sd)",
}


@dataclass(frozen=True)
class MsprobePlace:
    """Where a checked tensor lives (a `core.watchpoints.TensorPlace`): `node` is the call,
    `slot` the tensor's position among the call's watched tensors of its role, `tensor`
    msprobe's own name (`Functional.linear.0.forward.output.0`)."""

    rank: int
    graph: str
    iteration: int | None
    node: str
    slot: int
    tensor: str


@dataclass(frozen=True)
class MsprobeHit:
    watchpoint_id: int
    place: MsprobePlace
    result: CheckResult
    # the call is the one msprobe overflow_check names on its step and rank
    # (`files.msprobe_rule.first_anomalies`)
    anomaly: bool = False


@dataclass
class MsprobeReport:
    hits: list[MsprobeHit] = field(default_factory=list)
    # one sentence per watchpoint that the statistics cannot decide
    refusals: dict[int, str] = field(default_factory=dict)
    # dump files that could not be read, one sentence each
    problems: list[str] = field(default_factory=list)
    checked: int = 0
    # "step N rank R: CALL" of each call msprobe's rule ignores by name (Torch.empty*,
    # Torch.fill*) that holds NaN/Inf: watched by no watchpoint, said by `check`
    ignored: list[str] = field(default_factory=list)


def _refusal(req: CheckRequest) -> str | None:
    """The sentence refusing a watchpoint no msprobe statistic decides, else None."""
    what = ""
    if req.condition in CHANGE_CONDITIONS:
        what = "the previous step's values, which msprobe statistics do not hold"
    else:
        for p in req.params:
            if p.disabled:
                continue
            stat = LEGACY_STAT.get(req.condition, "") if p.name == "param" else p.name
            stat = stat.rsplit("_", 1)[0] if "_" in stat else stat
            if stat in _UNDERIVABLE:
                what = f"{_UNDERIVABLE[stat]}, which no msprobe statistic holds"
                break
    if not what:
        return None
    return (
        f"The watchpoint {condition_label(req)} cannot be checked on msprobe statistics "
        f"(Max, Min, Mean, Norm; values not read): it needs {what}."
    )


def _watched(call: MsprobeCall, category: Category) -> list[MsprobeTensor]:
    if category in (Category.WEIGHT, Category.PARAMETER):
        return call.role("parameters")
    if category == Category.GRADIENT:
        return call.role("parameters_grad")
    if category == Category.ACTIVATION:
        forward = call.parsed is not None and call.parsed.direction == "forward"
        return call.role("output") if forward else []
    return [t for t in call.tensors if t.role != "input"]


def check_msprobe(
    root: MsprobeRoot,
    watches: Sequence[tuple[CheckRequest, Category]],
    steps: Callable[[int], bool] | None = None,
    ranks: Callable[[int], bool] | None = None,
    node_filter: re.Pattern[str] | None = None,
) -> MsprobeReport:
    """Check `watches` (watchpoint id = position) on every selected step and rank of `root`,
    one dump.json at a time (memory bounded by one step of one rank)."""
    report = MsprobeReport()
    live: list[tuple[int, CheckRequest, Category]] = []
    for wp_id, (req, category) in enumerate(watches):
        sentence = _refusal(req)
        if sentence is not None:
            report.refusals[wp_id] = sentence
        else:
            live.append((wp_id, req, category))
    for step_id, step in root.steps.items():
        if steps is not None and not steps(step_id):
            continue
        if not live:
            continue
        start = len(report.hits)
        trails: list[msprobe_rule.RankTrail] = []
        for rank, folder in sorted(step.ranks.items()):
            trail = msprobe_rule.RankTrail(rank)
            trails.append(trail)
            try:
                scan = scan_dump_json(folder / "dump.json")
                if ranks is not None and not ranks(rank):
                    for name, _parsed, record in scan:  # msprobe's cross-rank pass only
                        trail.add(name, record)
                    continue
                _check_rank(report, live, scan, trail, step_id, node_filter)
            except MsprobeError as err:
                if ranks is None or ranks(rank):
                    report.problems.append(str(err))
        _mark_named(report.hits, start, msprobe_rule.first_anomalies(trails))
    return report


def _mark_named(hits: list[MsprobeHit], start: int, named: dict[int, str]) -> None:
    """Set `anomaly` on `hits[start:]` (one step): the call msprobe names on its rank."""
    for i in range(start, len(hits)):
        hit = hits[i]
        anomaly = named.get(hit.place.rank) == hit.place.node
        if anomaly != hit.anomaly:
            hits[i] = replace(hit, anomaly=anomaly)


# conditions whose outcome on a tensor with no NaN/Inf is "not reported" when they read no
# threshold: a call whose watched records all have finite float Max/Min is skipped for them
# without building a record object (the common case by far: a 300 MB step in ~1× its parse)
_OVERFLOW_ONLY = frozenset(
    {ConditionType.GENERAL_OVERFLOW, ConditionType.HAS_NAN, ConditionType.HAS_INF}
)


def _overflow_only(req: CheckRequest) -> bool:
    return req.condition in _OVERFLOW_ONLY and all(p.disabled for p in req.params)


def _finite(value: object, depth: int = 0) -> int:
    """How many tensor records `value` (a role's raw JSON) holds when each has float Max and
    Min that are finite; -1 when any has not (or nests past MAX_DEPTH): the full path then
    decides. A non-tensor leaf counts 0, as `_tensors` skips it."""
    if depth > MAX_DEPTH:
        return -1  # never recursing as deep as the JSON nests (the interpreter's limit)
    if type(value) is list:
        n = 0
        for item in value:
            k = _finite(item, depth + 1)
            if k < 0:
                return -1
            n += k
        return n
    if type(value) is dict:
        if "dtype" in value and "shape" in value:
            hi, lo = value.get("Max"), value.get("Min")
            # x - x is 0.0 for a finite float, NaN for NaN and ±Inf
            ok = type(hi) is float and type(lo) is float and hi - hi == 0.0 and lo - lo == 0.0
            return 1 if ok else -1
        if "type" in value:
            return 0
        return _finite(list(value.values()), depth)
    return 0


def _check_rank(
    report: MsprobeReport,
    live: list[tuple[int, CheckRequest, Category]],
    scan: MsprobeScan,
    trail: msprobe_rule.RankTrail,
    step_id: int,
    node_filter: re.Pattern[str] | None,
) -> None:
    """Check one rank's dump.json of one step, streamed a call at a time, feeding `trail`
    every call (msprobe's cross-rank pass reads calls the filter leaves out too)."""
    rank = trail.rank
    fast = all(_overflow_only(req) for _, req, _ in live)
    deep: list[str] = []
    for name, parsed, record in scan:
        if node_filter is not None and not node_filter.search(name):
            trail.add(name, record)
            continue
        if msprobe_rule.is_ignored(name):
            trail.add(name, record, False)
            # never a fault in msprobe's rule: not watched, and said when it holds NaN/Inf
            if type(record) is dict and any(
                msprobe_rule.record_overflows(v) for v in record.values()
            ):
                report.ignored.append(f"step {step_id} rank {rank}: {name}")
            continue
        if (
            fast
            and type(record) is dict
            and (parsed is None or parsed.direction != "parameters_grad")
        ):
            params = _finite(record.get("parameters"))
            outputs = _finite(record.get("output")) if params >= 0 else -1
            if outputs >= 0:
                trail.add(name, record, False)  # finite outputs: never an anomaly
                forward = parsed is not None and parsed.direction == "forward"
                for _, _, category in live:
                    report.checked += _fast_count(category, params, outputs, forward)
                continue
        call = call_from_record(name, record, parsed)
        if call.too_deep:
            deep.append(name)
        anomaly = msprobe_rule.is_anomaly(name, record)
        trail.add(name, record, anomaly)
        # `anomaly` here is msprobe's per-call rule; `_mark_named` narrows it to the call
        # msprobe's cross-rank pass names once every rank of the step is read
        _check_call(report, live, call, rank, step_id, anomaly)
    report.problems.extend(scan.problems)
    if deep:
        report.problems.append(too_deep_sentence(scan.label, len(deep), deep[0]))
    if scan.text("task") == "structure":
        report.problems.append(
            f"{scan.label} is from msprobe's structure task, which records no statistics, so "
            "nothing in it was checked."
        )


def _fast_count(category: Category, params: int, outputs: int, forward: bool) -> int:
    """How many tensors `_watched` gives for `category` on a call that is not a parameter
    gradient, from its counts of parameters and outputs."""
    if category in (Category.WEIGHT, Category.PARAMETER):
        return params
    if category == Category.GRADIENT:
        return 0
    if category == Category.ACTIVATION:
        return outputs if forward else 0
    return params + outputs


def _check_call(
    report: MsprobeReport,
    live: list[tuple[int, CheckRequest, Category]],
    call: MsprobeCall,
    rank: int,
    step_id: int,
    anomaly: bool,
) -> None:
    for wp_id, req, category in live:
        if wp_id in report.refusals:
            continue
        for slot, tensor in enumerate(_watched(call, category)):
            report.checked += 1
            outcome = decide(req, msprobe_stats(tensor))
            if isinstance(outcome, Missing):
                # a record without Max/Min (a non-float tensor msprobe gave no
                # statistics): said once per watchpoint, as statistic.csv does
                report.refusals[wp_id] = (
                    f"The watchpoint {condition_label(req)} cannot be checked on "
                    f"{tensor.name}: its msprobe record has no Max/Min statistics."
                )
                break
            if outcome.reported:
                place = MsprobePlace(rank, GRAPH, step_id, call.name, slot, tensor.name)
                report.hits.append(MsprobeHit(wp_id, place, outcome, anomaly))


# ---------------------------------------------------------------------- on the values


def has_tensor_files(root: MsprobeRoot, steps: Callable[[int], bool] | None = None) -> bool:
    """Whether a selected step of `root` holds msprobe's tensor files (task tensor: a real
    `dump_tensor_data/` folder beside a dump.json), so every condition can be checked on the
    values instead of being refused on the statistics."""
    for step_id, step in root.steps.items():
        if steps is not None and not steps(step_id):
            continue
        for folder in step.ranks.values():
            data = folder / "dump_tensor_data"
            if data.is_dir() and not data.is_symlink():
                return True
    return False


def check_msprobe_values(
    root: MsprobeRoot,
    watches: Sequence[tuple[ConditionSpec, CheckRequest]],
    steps: Callable[[int], bool] | None = None,
    ranks: Callable[[int], bool] | None = None,
    node_filter: re.Pattern[str] | None = None,
    *,
    mem_limit: int | None = None,
    workers: int | None = None,
) -> MsprobeReport:
    """Check `watches` (watchpoint id = position) on the values of a tensor dump, through
    the foreign-dump seam (`offline/foreign`) and the checker, as the TUI and the API do:
    every condition, change conditions against the previous step; hits ordered by step,
    rank and execution order. A tensor without a value file is decided from its record."""
    from tuidebug.core.watch_targets import watched_tensors
    from tuidebug.offline.check.checker import Checker, Watch, needs_previous
    from tuidebug.offline.foreign.dump import ForeignDump
    from tuidebug.offline.foreign.msprobe import MsprobeSource

    report = MsprobeReport()
    dump = ForeignDump(MsprobeSource(root), mem_limit=mem_limit)
    chosen = [r for r in dump.ranks if ranks is None or ranks(r)]

    def keep(node: Node) -> bool:
        return node_filter is None or bool(node_filter.search(node.dump_name or node.name))

    plan: list[Watch] = []
    for wp_id, (condition, request) in enumerate(watches):
        tensors: dict[tuple[int, str], list[tuple[str, int]]] = {}
        for rank in chosen:
            found = watched_tensors(
                condition, [], dump.graphs(rank).values(), constants=False, node_filter=keep
            )
            tensors.update({(rank, graph): pairs for graph, pairs in found.items()})
        plan.append(Watch(wp_id, request, needs_previous(request.condition), tensors))
    iterations = sorted(
        {i for r in chosen for i in dump.iterations(r) if steps is None or steps(i)}
    )
    with Checker(dump, workers=workers) as checker:
        checked = checker.check(plan, iterations)
    report.problems.extend(dict.fromkeys([*dump.problems, *checked.problems]))
    report.checked = checked.tensors_checked
    named: dict[int, dict[int, str]] = {}
    for outcome in checked.outcomes:
        k = outcome.key
        node = dump.graph(k.rank, k.graph).node(k.node)
        record = dump.foreign_tensor(k.rank, k.graph, k.node, k.slot, k.iteration)
        tensor = record.name if record is not None else f"{node.dump_name}:{k.slot}"
        place = MsprobePlace(k.rank, k.graph, k.iteration, node.dump_name or k.node, k.slot, tensor)
        if k.iteration is not None and k.iteration not in named:
            named[k.iteration] = _named(root, k.iteration)
        anomaly = named.get(k.iteration or 0, {}).get(k.rank) == place.node
        report.hits.append(MsprobeHit(outcome.watchpoint_id, place, outcome.result, anomaly))
    return report


def _named(root: MsprobeRoot, step: int) -> dict[int, str]:
    """The call msprobe names on each rank of one step (`files.msprobe_rule`), one
    streamed read of each rank's dump.json (asked only for a step with hits)."""
    trails: list[msprobe_rule.RankTrail] = []
    for rank, folder in sorted(root.steps[step].ranks.items() if step in root.steps else []):
        trail = msprobe_rule.RankTrail(rank)
        trails.append(trail)
        try:
            for name, _parsed, record in scan_dump_json(folder / "dump.json"):
                trail.add(name, record)
        except MsprobeError:
            pass  # the checker said it already; the other ranks still decide
    return msprobe_rule.first_anomalies(trails)
