"""Watchpoints: user-level objects over the condition catalogue, their wire form, hits, targets
and MindInsight's recommended set (spec §2.7, §3, §4, §6.4).

A `Watchpoint` stores only what the user set; `wire_params()` expands it to the full SetCMD
parameter list MindSpore expects. Checking goes through `scan_engine.evaluate`, which is shared
by the online recheck, the offline checker, the API and the headless CLI.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from tuidebug.core.condition_catalogue import (
    CheckRequest,
    CheckResult,
    ConditionSpec,
    ConditionType,
    Param,
    ParamResult,
    ParamSpec,
    WatchpointError,
    condition_available,
    get_condition,
)
from tuidebug.core.error_codes import error_messages
from tuidebug.core.graph import Category, Graph, Node, NodeKind
from tuidebug.core.tensor import TensorRef

if TYPE_CHECKING:
    import numpy as np  # the checks load it (scan_engine); the start does not (issue 28)

__all__ = [
    "RecommendedWatchpoint",
    "TensorPlace",
    "Watchpoint",
    "WatchpointError",
    "WatchpointHit",
    "check_watchpoints",
    "format_value",
    "hit_record",
    "is_optimizer_state",
    "merge_recommended",
    "parse_watch_spec",
    "recommended_watchpoints",
    "resolve_targets",
    "result_detail",
    "result_record",
    "validate_params",
    "watch_file_specs",
]

# ------------------------------------------------------------------------------ formatting
_SYMBOL = {"gt": ">", "lt": "<", "ge": ">=", "le": "<="}


def format_value(value: float) -> str:
    """Short but lossless: `1e+10`, `0.1`, `100`; full precision only when `%g` would round."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def _format_actual(value: float) -> str:
    return f"{value:.5g}"


# ------------------------------------------------------------------------------ validation
def _is_bool(value: object) -> bool:
    """A bool, or numpy's bool_ (a value read from an array). numpy is asked only when it is
    loaded: no numpy value exists before, and a watchpoint built at the start must not load
    it (issue 28)."""
    numpy = sys.modules.get("numpy")
    return isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_))


def _coerce(spec: ParamSpec, value: object) -> float:
    if spec.is_bool:
        if _is_bool(value):
            return 1.0 if value else 0.0
        # validated params come back as floats (the wire form): accept them again
        if isinstance(value, numbers.Real) and value in (0, 1):
            return float(value)
        raise WatchpointError(f"Parameter {spec.name} must be true or false, got {value!r}.")
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise WatchpointError(f"Parameter {spec.name} must be a number, got {value!r}.")
    try:
        return float(value)
    except OverflowError:
        raise WatchpointError(
            f"Parameter {spec.name} must satisfy {spec.range_text}, got {value!r}."
        ) from None


def _names(specs: Iterable[ParamSpec]) -> str:
    return ", ".join(p.name for p in specs)


def validate_params(
    condition: ConditionSpec | str,
    params: Mapping[str, object],
    *,
    ui_rules: bool = False,
) -> dict[str, float]:
    """Check user parameters and return them as floats in the condition's declared order.

    API rules (spec §6.4): known names, numbers (not bool) within the ranges of §3.1, at
    least one threshold (except `weight_not_changed`, whose rtol has a default), both range
    bounds whenever a range percentage is given, start ≤ end. Several thresholds may be set.
    `ui_rules=True` adds MindInsight's UI rules (§3.1): at most one threshold, range bounds
    only together with a percentage, and no hidden parameter (those are sent automatically).
    """
    cond = get_condition(condition)
    if params and not cond.params:
        raise WatchpointError(f"{cond.abbr} ({cond.id}) takes no parameters.")
    given: dict[str, float] = {}
    for name, value in params.items():
        spec = cond.param(name)
        number = _coerce(spec, value)
        problem = spec.check(number)
        if problem:
            raise WatchpointError(problem)
        given[name] = number
    values = {p.name: given[p.name] for p in cond.params if p.name in given}

    thresholds = [p for p in cond.params if p.kind == "check" and p.visible]
    checks = [cond.param(n) for n in values if cond.param(n) in thresholds]
    if thresholds and not checks and cond.proto != ConditionType.NOT_CHANGED:
        raise WatchpointError(
            f"{cond.abbr} ({cond.id}) needs at least one threshold: {_names(thresholds)}."
        )
    for check in checks:
        missing = [r for r in check.requires if r not in values]
        if missing:
            raise WatchpointError(f"Parameter {check.name} also needs {' and '.join(missing)}.")
    start, end = values.get("range_start_inclusive"), values.get("range_end_inclusive")
    if start is not None and end is not None and start > end:
        raise WatchpointError(
            f"range_start_inclusive ({format_value(start)}) must not exceed "
            f"range_end_inclusive ({format_value(end)})."
        )
    if ui_rules:
        hidden = [cond.param(n) for n in values if not cond.param(n).visible]
        if hidden:
            raise WatchpointError(
                f"Parameter {hidden[0].name} of {cond.abbr} is set automatically and cannot be given."
            )
        if len(checks) > 1:
            raise WatchpointError(
                f"{cond.abbr} takes one threshold at a time, got {_names(checks)}."
            )
        supports = {n for n in values if cond.param(n).kind == "support"}
        wanted = set(checks[0].requires) if checks else set()
        if supports != wanted:
            what = checks[0].name if checks else "no threshold"
            raise WatchpointError(f"Range bounds go only with a range percentage, not with {what}.")
    return values


def parse_watch_spec(spec: str) -> tuple[ConditionSpec, dict[str, float]]:
    """Parse the CLI form `ABBR[:name=value,...]`, e.g. `TL:abs_mean_gt=1e10`, and validate it
    with the API rules. Raises `WatchpointError` with one sentence on any problem."""
    text = spec.strip()
    if not text:
        raise WatchpointError("Empty watch spec; expected e.g. TL:abs_mean_gt=1e10.")
    head, sep, tail = text.partition(":")
    cond = get_condition(head)
    params: dict[str, object] = {}
    if sep and not tail.strip():
        raise WatchpointError(f"Watch spec {spec!r} has a ':' but no parameters.")
    for item in tail.split(",") if tail.strip() else []:
        name, eq, raw = (s.strip() for s in item.partition("="))
        if not eq or not name or not raw:
            raise WatchpointError(
                f"Bad parameter {item.strip()!r} in watch spec {spec!r}; expected name=value."
            )
        param = cond.param(name)
        if name in params:
            raise WatchpointError(f"Parameter {name} is given twice in watch spec {spec!r}.")
        if param.is_bool:
            lowered = raw.lower()
            if lowered not in ("true", "false", "1", "0"):
                raise WatchpointError(f"Parameter {name} must be true or false, got {raw!r}.")
            params[name] = lowered in ("true", "1")
            continue
        try:
            params[name] = float(raw)
        except ValueError:
            raise WatchpointError(f"Parameter {name} needs a number, got {raw!r}.") from None
    return cond, validate_params(cond, params)


def watch_file_specs(text: str) -> list[tuple[int, str]]:
    """The specs of a watch file (`--watch-file`), as (line number, spec): one spec a line;
    blank lines and `#` comments, whole lines or after a spec, are skipped. The specs are
    not parsed here: hand each to `parse_watch_spec`."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        spec = line.split("#", 1)[0].strip()
        if spec:
            found.append((number, spec))
    return found


# ------------------------------------------------------------------------------ watchpoint
@dataclass
class Watchpoint:
    """A watchpoint as the user set it. `params` holds only the user-set parameters;
    `targets` are node names or scope paths (empty = the condition's whole category)."""

    id: int
    condition: ConditionSpec
    params: dict[str, float] = field(default_factory=dict)
    targets: tuple[str, ...] = ()
    graph_name: str | None = None
    enabled: bool = True
    name: str = ""

    def __post_init__(self) -> None:
        # accept an id/abbreviation and any mapping; validation keeps wire_params() sound
        self.condition = get_condition(self.condition)
        self.params = validate_params(self.condition, self.params)
        self.targets = tuple(self.targets)

    def changed(
        self,
        *,
        params: Mapping[str, float] | None = None,
        targets: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> Watchpoint:
        """This watchpoint with new parameters, targets or enabled state (None = keep);
        the parameters are validated as a new watchpoint's are."""
        changes: dict[str, Any] = {}
        if params is not None:
            changes["params"] = dict(params)
        if targets is not None:
            changes["targets"] = tuple(targets)
        if enabled is not None:
            changes["enabled"] = enabled
        return replace(self, **changes)

    def wire_params(self) -> tuple[Param, ...]:
        """Every parameter in declared order (spec §2.7): user-set ones enabled, hidden ones
        enabled with their defaults, the rest disabled with value 0."""
        out = []
        for spec in self.condition.params:
            if spec.name in self.params:
                out.append(Param(spec.name, float(self.params[spec.name]), False))
            elif not spec.support_disable:
                out.append(Param(spec.name, float(spec.default or 0.0), False))
            else:
                out.append(Param(spec.name, 0.0, True))
        return tuple(out)

    def request(self) -> CheckRequest:
        return CheckRequest(self.condition.proto, self.wire_params())

    @property
    def spec(self) -> str:
        """The CLI form, e.g. `TL:abs_mean_gt=1e+10`; `parse_watch_spec` reads it back."""
        if not self.params:
            return self.condition.abbr
        items = ",".join(f"{k}={format_value(v)}" for k, v in self.params.items())
        return f"{self.condition.abbr}:{items}"

    def describe(self) -> str:
        """Short human text, e.g. `TL  abs_mean > 1e+10`."""
        parts: list[str] = []
        bounds = ""
        if "range_start_inclusive" in self.params or "range_end_inclusive" in self.params:
            lo = self.params.get("range_start_inclusive", -math.inf)
            hi = self.params.get("range_end_inclusive", math.inf)
            bounds = f"[{format_value(lo)}, {format_value(hi)}]"
        for name, value in self.params.items():
            spec = self.condition.param(name)
            if spec.kind == "support":
                continue
            if spec.comparison:
                text = f"{spec.statistic} {_SYMBOL[spec.comparison]} {format_value(value)}"
                if spec.statistic == "range_percentage" and bounds:
                    text += f" in {bounds}"
                    bounds = ""
                parts.append(text)
            elif spec.visible:
                parts.append(f"{name}={format_value(value)}")
        if bounds:
            parts.append(f"range {bounds}")
        body = ", ".join(parts) if parts else self.condition.name
        return f"{self.condition.abbr}  {body}"


# ------------------------------------------------------------------------------------ hits
_VALUE_HIT_TEXT = {
    ConditionType.GENERAL_OVERFLOW: "contains NaN or +/-Inf",
    ConditionType.HAS_NAN: "contains NaN",
    ConditionType.HAS_INF: "contains +/-Inf",
    ConditionType.IS_OVERFLOW: "operator overflow",
    ConditionType.NOT_CHANGED: "unchanged since the previous step",
}


@dataclass(frozen=True)
class WatchpointHit:
    """A reported check: the tensor hit the watchpoint, or checking it produced an error."""

    watchpoint_id: int
    condition: ConditionSpec
    tensor: TensorRef
    error_code: int
    params: tuple[ParamResult, ...] = ()
    order: int = 0  # execution-order index of the tensor's node, for sorting
    # the step the user sees for this hit, set by the session (`DebugSession.step_of`);
    # None outside a session (`check`, the API), where hits name dump iterations
    step: int | None = None
    # gradient accumulation: the micro-batch (1-based) of the optimizer step the hit happened
    # in, and how many the step has (None: not said), as a tuidebug client sends them
    # (`core.rank_fields.micro_batch_of`); None for MindSpore and dumps
    micro_batch: int | None = None
    micro_batches: int | None = None

    @classmethod
    def from_result(
        cls,
        watchpoint_id: int,
        condition: ConditionSpec,
        tensor: TensorRef,
        result: CheckResult,
        order: int = 0,
        step: int | None = None,
    ) -> WatchpointHit:
        return cls(watchpoint_id, condition, tensor, result.error_code, result.params, order, step)

    @property
    def step_label(self) -> str:
        """`core.text.step_text` of the hit's step (its dump iteration where it has one),
        the same words the header and the tensor's title use; "" outside a session.
        A session sets `step` from `tensor.iteration`: offline `iteration + 1`, online the
        step itself (`TensorRef.iteration` is the step there), so an iteration that differs
        from the step is a dump iteration."""
        from tuidebug.core.text import step_text

        if self.step is None:
            return ""
        iteration = self.tensor.iteration
        return step_text(self.step, iteration if iteration != self.step else None)

    @property
    def is_error(self) -> bool:
        return self.error_code != 0

    @property
    def error_messages(self) -> list[str]:
        return error_messages(self.error_code)

    @property
    def hit_params(self) -> tuple[ParamResult, ...]:
        return tuple(p for p in self.params if p.hit and not p.disabled)

    def summary(self) -> str:
        """One line for the hit list: `TL abs_mean_gt: 2.3025 > 1`, or the error text."""
        return f"{self.condition.abbr} {self.detail()}"

    def detail(self) -> str:
        """`summary()` without the abbreviation, for views that show the condition in a
        column of its own: `abs_mean_gt: 2.3025 > 1`, or the error text."""
        return result_detail(self.condition, self.error_code, self.params)


class TensorPlace(Protocol):
    """Where a checked tensor lives: a `TensorRef`, or the offline checker's `TensorKey`."""

    @property
    def rank(self) -> int: ...
    @property
    def graph(self) -> str: ...
    @property
    def iteration(self) -> int | None: ...
    @property
    def node(self) -> str: ...
    @property
    def slot(self) -> int: ...


def result_detail(condition: ConditionSpec, error_code: int, params: Sequence[ParamResult]) -> str:
    """`WatchpointHit.detail()` of a check result, for callers that hold the checker's
    result and not a hit (`tuidebug check` prints one row per result)."""
    if error_code:
        return " ".join(error_messages(error_code))
    shown = []
    for p in params:
        if not p.hit or p.disabled:
            continue
        op = _SYMBOL.get(p.name.rsplit("_", 1)[-1], "vs")
        actual = _format_actual(p.actual) if p.actual is not None else "?"
        shown.append(f"{p.name}: {actual} {op} {format_value(p.value)}")
    if shown:
        return ", ".join(shown)
    return _VALUE_HIT_TEXT.get(ConditionType(condition.proto), condition.name)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def hit_record(hit: WatchpointHit, spec: str, params: Mapping[str, float]) -> dict[str, Any]:
    """A hit as one object of `tuidebug check --json`'s array; `spec` and `params` are those
    of the hit's watchpoint (`Watchpoint.spec`, or the spec as the user wrote it)."""
    return result_record(
        spec, params, hit.condition, hit.tensor, hit.error_code, hit.params, step=hit.step
    )


def result_record(
    spec: str,
    params: Mapping[str, Any],
    condition: ConditionSpec,
    tensor: TensorPlace,
    error_code: int,
    results: Sequence[ParamResult],
    step: int | None = None,
) -> dict[str, Any]:
    """`hit_record` of a check result on `tensor`, for callers that hold the checker's
    result and not a hit (`tuidebug check --json` writes one object per result). `step`:
    the step the TUI shows the tensor at (a dump's iteration `i` is step `i + 1`; online
    the step is the iteration); added beside `iteration` so older readers keep working."""
    if step is None and tensor.iteration is not None:
        step = tensor.iteration + 1  # a dump's iteration (check, the API)
    return {
        "watchpoint": spec,
        "condition": condition.id,
        "rank": tensor.rank,
        "graph": tensor.graph,
        "iteration": tensor.iteration,
        "step": step,
        "node": tensor.node,
        "slot": tensor.slot,
        "error_code": error_code,
        "error_messages": error_messages(error_code),
        # what the user set, plus the visible parameters; not the hidden ones sent with
        # their defaults (atol, epsilon, equal_nan) unless the user set them
        "params": [
            {"name": p.name, "value": p.value, "actual": _finite(p.actual), "hit": p.hit}
            for p in results
            if not p.disabled and (p.name in params or condition.param(p.name).visible)
        ],
    }


def check_watchpoints(
    watchpoints: Sequence[Watchpoint],
    value: np.ndarray | None,
    previous: np.ndarray | None,
    tensor: TensorRef,
    order: int = 0,
) -> list[WatchpointHit]:
    """Check several watchpoints on one tensor in one pass; only reported results come back.
    `value` None means the tensor has no value (no hits; callers decide about error 32)."""
    active = [wp for wp in watchpoints if wp.enabled]
    if value is None or not active:
        return []
    # the engine (threads, its scan buffers) loads with the first check, not with this module
    from tuidebug.core.scan_engine import evaluate

    results = evaluate(value, [wp.request() for wp in active], previous)
    return [
        WatchpointHit.from_result(wp.id, wp.condition, tensor, res, order)
        for wp, res in zip(active, results, strict=True)
        if res.reported
    ]


# ---------------------------------------------------------------------------------- targets
def resolve_targets(
    condition: ConditionSpec | str, targets: Sequence[str], graph: Graph
) -> list[Node]:
    """The leaf nodes a watchpoint watches, in graph order, without duplicates.

    A scope expands to its leaves of the condition's category (every non-constant node for
    tensor conditions), as MindInsight sends them (spec §2.7); a node named explicitly is
    kept as given. No targets = the whole category: weight / gradient / activation nodes, or
    every operator and parameter for tensor conditions.
    """
    cond = get_condition(condition)

    def in_category(node: Node) -> bool:
        # every non-constant node is a tensor's, unless its dump's rule says it watches
        # nothing there (a foreign graph's empty categories: msprobe's Torch.empty*)
        if cond.target is Category.TENSOR and node.kind is NodeKind.CONSTANT:
            return False
        return cond.target in graph.categories(node)

    chosen: set[str] = set()
    if not targets:
        if cond.target is Category.TENSOR:
            chosen = {n.name for n in graph if in_category(n)}
        else:
            chosen = {n.name for n in graph.nodes_in(cond.target)}
    for target in targets:
        node = graph.get(target)
        if node is not None:
            chosen.add(node.name)
            continue
        if target != "" and not graph.is_scope(target):
            raise WatchpointError(f"No node or scope named {target!r} in graph {graph.name}.")
        chosen.update(n.name for n in graph.leaves(target) if in_category(n))
    return [n for n in graph if n.name in chosen]


# ------------------------------------------------------------------------------ recommended
# Optimizer state: the moments, accumulators and step counters an optimizer keeps per
# weight. They start at zero (TZ would stop every step) and are not the network's tensors;
# MindInsight's weight rule leaves them out by their `optimizer-` scope (spec §3.2), and the
# recommended tensor checks leave them out too, by that scope or by the names optimizers
# give them (MindSpore's Momentum `moments.*`, Adagrad `accum.*`, Adam `adam_m`/`adam_v`
# and `moment1`/`moment2`, PyTorch's `exp_avg`/`exp_avg_sq`, `global_step`, `beta1_power`).
# `re` compiles (and caches) it at the first use, not at the TUI's start (issue 28).
_OPTIMIZER_STATE = (
    r"^(?:moments?|moment[12]|accum|adam_[mv]|mean_grad|mean_square|exp_avg(?:_sq)?)[._]"
    r"|[._](?:moments?|moment[12]|accum|adam_[mv]|exp_avg(?:_sq)?)$"
    r"|^(?:global_step|beta[12]_power)$"
)


def is_optimizer_state(node: Node) -> bool:
    """A parameter an optimizer keeps (see `_OPTIMIZER_STATE`), not a weight or an input."""
    if node.kind is not NodeKind.PARAMETER:
        return False
    full = node.ui_name.lower()
    leaf = full.rsplit("/", 1)[-1]
    return "optimizer-" in full or re.search(_OPTIMIZER_STATE, leaf) is not None


@dataclass(frozen=True)
class RecommendedWatchpoint:
    """One of MindInsight's recommended watchpoints (spec §4) for one graph."""

    name: str
    condition: str
    params: dict[str, float]
    targets: tuple[str, ...]


def _merge_into_scopes(graph: Graph, nodes: Sequence[Node]) -> tuple[str, ...]:
    """Selected leaves as MindInsight's recommender sends them: a scope whose leaves are all
    selected stands for them; other selected leaves stay named one by one. Tree order."""
    selected = {n.ui_name for n in nodes}
    per_scope: dict[str, int] = {}
    for path in selected:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            key = "/".join(parts[:i])
            per_scope[key] = per_scope.get(key, 0) + 1
    out: list[str] = []

    def walk(path: str) -> None:
        for entry in graph.children(path):
            if entry.is_scope:
                count = per_scope.get(entry.path, 0)
                if count and count == graph.leaf_count(entry.path):
                    out.append(entry.path)
                elif count:
                    walk(entry.path)
            elif entry.path in selected and entry.node is not None:
                out.append(entry.node)

    walk("")
    return tuple(out)


def _top_entries(graph: Graph) -> tuple[str, ...]:
    """The graph's top-level entries but constants (never watched)."""
    return tuple(
        entry.node or entry.path
        for entry in (graph.children("") if len(graph) else [])
        if entry.node is None or graph.nodes[entry.node].kind is not NodeKind.CONSTANT
    )


def _tensor_targets(graph: Graph) -> tuple[str, ...]:
    """The recommended tensor checks' targets: the top-level entries (`Default`,
    `Gradients`), as MindInsight sends them, when no optimizer state is among their nodes;
    else every non-constant node but the optimizer state, merged into scopes."""
    left_out = [n for n in graph if is_optimizer_state(n)]
    if not left_out:
        return _top_entries(graph)
    # constants count as selected, so a scope is still named whole for holding one (it is
    # never checked); a constant left named on its own is dropped
    out = {n.name for n in left_out}
    merged = _merge_into_scopes(graph, [n for n in graph if n.name not in out])
    return tuple(
        t for t in merged if t not in graph.nodes or graph.nodes[t].kind is not NodeKind.CONSTANT
    )


def merge_recommended(
    per_graph: Iterable[Sequence[RecommendedWatchpoint]],
) -> list[RecommendedWatchpoint]:
    """One recommended watchpoint per name across graphs: each graph's targets, in order,
    without repeats (`Default` is in every graph). For a session whose watchpoints watch
    every graph (offline): a 22-graph dump gets 7 watchpoints, not 61 unlabelled ones."""
    by_name: dict[str, RecommendedWatchpoint] = {}
    for recs in per_graph:
        for rec in recs:
            had = by_name.get(rec.name)
            if had is None:
                by_name[rec.name] = rec
                continue
            targets = had.targets + tuple(t for t in rec.targets if t not in had.targets)
            by_name[rec.name] = RecommendedWatchpoint(had.name, had.condition, had.params, targets)
    return list(by_name.values())


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# Range bounds of the activation recommendations. MindInsight's own helper computes
# 1/(1+exp(x)), i.e. sigmoid(-x), which swaps the sigmoid bounds (start > end, so its
# watchpoint always hits); we use the bounds spec §4 states: sigmoid(∓16.2).
_ACTIVATION_RANGES: tuple[tuple[str, frozenset[str], dict[str, float]], ...] = (
    (
        "tanh",
        frozenset({"tanh"}),
        {
            "range_start_inclusive": math.tanh(-8.8),
            "range_end_inclusive": math.tanh(8.8),
            "range_percentage_lt": 0.1,
        },
    ),
    (
        "sigmoid",
        frozenset({"sigmoid"}),
        {
            "range_start_inclusive": _sigmoid(-16.2),
            "range_end_inclusive": _sigmoid(16.2),
            "range_percentage_lt": 0.1,
        },
    ),
    (
        "relu",
        frozenset({"relu", "reluv2"}),
        {
            "range_start_inclusive": -1.0,
            "range_end_inclusive": 0.0,
            "range_percentage_gt": 99.9,
        },
    ),
)


# A PyTorch training (`ms_version` "torch-…", online or dumped by `tuidebug.torch`): its
# recommended set differs from MindInsight's in two rules, because PyTorch's conventions do
# (see `recommended_watchpoints`).
TORCH = "torch"
# tensor_too_large's bounds in the PyTorch set: far above any healthy fp32/bf16 activation
# or gradient (fp16 overflows at 65504, a GradScaler scales by 2**16), far below the 1e30s
# that end in Inf/NaN a few modules later
HUGE_VALUE = 1e10


def framework_of(ms_version: str) -> str:
    """`TORCH` for a training of `tuidebug.torch` (its `ms_version` is "torch-<version>"),
    "" for MindSpore."""
    return TORCH if ms_version.startswith("torch-") else ""


def _initialised_by_value(node: Node) -> bool:
    """A parameter of at most one dimension: a bias or a normalisation scale/shift, which
    PyTorch (and transformers, torchvision) initialise to a constant — biases and LayerNorm
    shifts to 0 — rather than to random values."""
    shape = node.outputs[0].shape if node.outputs else None
    return shape is not None and len(shape) <= 1


def recommended_watchpoints(
    graph: Graph, backend: str = "", step: int = 0, framework: str = ""
) -> list[RecommendedWatchpoint]:
    """MindInsight's recommended watchpoints for `graph`, in its creation order (spec §4).

    Weight initialisation only at step 0, operator overflow only on Ascend; a watchpoint
    whose node set is empty is not created. Weight targets are merged into scopes; tensor
    conditions watch the top-level entries; gradients and activations are listed one by one.
    WNC and WCS are never recommended (MindInsight cannot tell trainable weights).

    `framework=TORCH` (a PyTorch training, `framework_of(ms_version)`) changes two rules,
    MindSpore's set stays MindInsight's exactly:
    * weight initialisation and weight change too large watch only weights of two or more
      dimensions: a bias or norm parameter starts at a constant (0 for biases), so "all zero
      at initialisation" is how it should be, and its first update ratio against a previous
      value of 0 is infinite — both stopped every healthy GPT-2 at steps 0 and 1;
    * tensor too large (`max_gt` or `abs_mean_gt` `HUGE_VALUE`) on every tensor, after
      tensor overflow: a module that produces 1e30 is named itself, not the module a few
      steps on where the 1e30s first turn into Inf or NaN.
    """
    recs: list[RecommendedWatchpoint] = []
    torch_rules = framework == TORCH

    def add(name: str, condition: str, params: dict[str, float], targets: Sequence[str]) -> None:
        if targets and condition_available(get_condition(condition), backend, step):
            recs.append(RecommendedWatchpoint(name, condition, params, tuple(targets)))

    weight_nodes = graph.nodes_in(Category.WEIGHT)
    if torch_rules:
        weight_nodes = [n for n in weight_nodes if not _initialised_by_value(n)]
    weights = _merge_into_scopes(graph, weight_nodes)
    add(
        "recommend_weight_initialization_watchpoint",
        "weight_initialization",
        {"zero_percentage_ge": 100.0},
        weights,
    )
    add(
        "recommend_weight_change_too_large_watchpoint",
        "weight_change_too_large",
        {"abs_mean_update_ratio_gt": 1.0},
        weights,
    )
    add(
        "recommend_gradient_vanishing_watchpoint",
        "gradient_vanishing",
        {"abs_mean_lt": 1e-9},
        [n.name for n in graph.nodes_in(Category.GRADIENT)],
    )
    # every node merges into the top-level entries (constants are never watched), optimizer
    # state left out: a scope holding some is named by its other entries instead
    top = _tensor_targets(graph)
    # operator overflow is read from Ascend's overflow records of kernels, never of
    # parameters: MindInsight's top-level entries as they are
    add("recommend_operator_overflow_watchpoint", "operator_overflow", {}, _top_entries(graph))
    add("recommend_tensor_overflow_watchpoint", "tensor_overflow", {}, top)
    if torch_rules:
        add(
            "recommend_tensor_too_large_watchpoint",
            "tensor_too_large",
            {"max_gt": HUGE_VALUE, "abs_mean_gt": HUGE_VALUE},
            top,
        )
    add(
        "recommend_tensor_all_zero_watchpoint",
        "tensor_all_zero",
        {"zero_percentage_ge": 100.0},
        top,
    )
    activations = graph.nodes_in(Category.ACTIVATION)
    for label, op_types, params in _ACTIVATION_RANGES:
        add(
            f"recommend_{label}_activation_range_watchpoint",
            "activation_range",
            dict(params),
            [n.name for n in activations if n.op_type.lower() in op_types],
        )
    return recs
