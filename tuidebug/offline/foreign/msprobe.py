"""msprobe dumps (issue 29) through the foreign-dump seam: `MsprobeSource`.

What the dump model sees:

- ranks: the proc/rank folders (`files/msprobe.py` numbers them); iterations: the steps;
- one graph per rank, `msprobe`, built from the rank's first step's `dump.json` (each later
  step's calls are tied to it by name; a call the first step lacks is a blocker sentence of
  that step, so a check of it says it is incomplete): one node per dumped call in execution
  order, its output records its slots; a module's `parameters` are parameter nodes feeding
  the call (`Module.fc1.Linear.forward.0.parameters.weight`); a call's input records are
  edges from the call that produced the same tensor (same dtype, shape and statistics,
  the last such output before it); its `arguments` (`Graph.arguments`: each input and
  parameter as the (node, slot) holding it) are what the node details list with their
  statistics, and its attributes give each parameter's dtype and shape;
- scopes from `construct.json` (a module's calls under the module's own call, scopes named
  only there, like `optimizer`, as such); without it (level L1 writes `{}`) the calls are
  grouped by API family (`Functional/`, `Torch/`, `Tensor/`…). Backward calls and parameter
  gradients go under `Gradients/`, as MindSpore's do; the gradient category is the parameter
  gradients' (as `tuidebug check` on msprobe watches them);
- stacks from `stack.json`, on the forward calls it names;
- statistics: Max, Min, Mean, Norm as `StatisticRow` keys, the NaN/Inf counts from Max and
  Min only (`msprobe_stats`: msprobe's `overflow_check` rule; Norm overflows in the
  tensor's own dtype long before a value does), so TO/WO/GE never alarm on Norm alone;
- values: `dump_tensor_data/<data_name>` (`.pt` or `.npy`) when the task was `tensor`;
- msprobe overflow_check's own rule (`files.msprobe_rule`) for the origin trace: inputs
  nested in a list are unread (`Graph.unread_inputs`), a NaN weight is blamed on its module
  and the batch on no call (`Graph.blamed_for`), a module's output made by a call inside
  it is followed there (`Graph.passed_on`); `Torch.empty*`/`Torch.fill*` calls have no
  watchpoint category;
- the step's own data flow for the origin trace (`MsprobeSource.step_inputs`): the graph's
  edges come from the first step's statistics, where a fault may multiply by 1.0 or a call
  not run yet, so the trace re-links the traced step's inputs by that step's statistics
  (read again once per step, kept with the step's tensors); the graph never changes.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache

import numpy as np

from tuidebug.core.graph import (
    Category,
    Graph,
    Node,
    NodeKind,
    StackFrame,
    StepInputs,
    TensorSpec,
)
from tuidebug.core.tensor import (
    BFLOAT16,
    UnsupportedDataTypeError,
    data_type_of,
    dtype_from_dump_name,
)
from tuidebug.core.tensor_health import PRESENCE_ONLY
from tuidebug.offline.files import msprobe_rule
from tuidebug.offline.files.msprobe import (
    MsprobeCall,
    MsprobeDump,
    MsprobeError,
    MsprobeRoot,
    MsprobeTensor,
    call_from_record,
    find_msprobe_root,
    parse_call_name,
    read_construct,
    read_dump_json,
    read_stack,
    scan_dump_json,
)
from tuidebug.offline.foreign.source import (
    DumpSource,
    ForeignGraph,
    ForeignStep,
    ForeignTensor,
    StatValue,
)

__all__ = ["GRAPH", "MsprobeSource", "msprobe_stats"]

GRAPH = "msprobe"  # the one graph of a rank: its calls in execution order
GRADIENTS = "Gradients"
# dump.json bytes of the later steps scanned at opening for calls the first step lacks: tens
# of steps of a 7B model's 20 MB would cost minutes; past this the rest is said, not scanned
MAX_SCANNED_BYTES = 256 << 20
MAX_SCOPE_DEPTH = 64  # construct.json's parent chain is walked at most this far (loops)
_FRAME = re.compile(r"File (.*?), line (\d+), in (.*?),\s*\n?\s*(.*)", re.S)
_TORCH_DTYPES = {"bfloat16": BFLOAT16}


def msprobe_stats(t: MsprobeTensor) -> dict[str, StatValue]:
    """A record as a statistic.csv row (`StatisticRow.stats` keys) for `statistic.decide`:
    the NaN/Inf counts from Max and Min only (never Norm) as 0/1 flags (`PRESENCE_ONLY`
    says so), Max/Min/Mean as the values.
    (Called once per record of the step in view: plain comparisons, no generators.)"""
    stats: dict[str, StatValue] = {"count": t.count}
    if t.norm is not None:
        stats["l2norm"] = t.norm
    high, low = t.max, t.min
    if high is None or low is None:
        return stats  # no NaN/Inf counts: decide() says what is missing
    inf, ninf = math.inf, -math.inf
    stats["nan_count"] = 1 if (high != high or low != low) else 0  # NaN ≠ NaN
    stats["pos_inf_count"] = 1 if (high == inf or low == inf) else 0
    stats["neg_inf_count"] = 1 if (high == ninf or low == ninf) else 0
    stats[PRESENCE_ONLY] = 1  # those are flags, not counts: shown as "yes", never as "1"
    stats["max"], stats["min"], stats["avg"] = high, low, t.mean
    return stats


class _Stats(Mapping[str, StatValue]):
    """A record's `msprobe_stats`, made when first read: listing or opening a step of 10⁶
    records reads none of them, so none is built before the first frame."""

    __slots__ = ("_made", "_record")

    def __init__(self, record: MsprobeTensor) -> None:
        self._record = record
        self._made: dict[str, StatValue] | None = None

    def _stats(self) -> dict[str, StatValue]:
        # two threads may both build it: the same answer, one kept
        if self._made is None:
            self._made = msprobe_stats(self._record)
        return self._made

    def __getitem__(self, key: str) -> StatValue:
        return self._stats()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stats())

    def __len__(self) -> int:
        return len(self._stats())


@lru_cache(maxsize=256)  # a handful of dtypes, asked once per tensor of a big graph
def data_type(text: str) -> int | None:
    """MindSpore's DataType number of an msprobe dtype (`torch.float32`, `Float32`)."""
    name = text.removeprefix("torch.")
    try:
        dt = _TORCH_DTYPES.get(name) or dtype_from_dump_name(name) or np.dtype(name)
        return data_type_of(dt)
    except (TypeError, ValueError, UnsupportedDataTypeError):
        return None


def _frames(lines: list[str]) -> list[StackFrame]:
    out = []
    for line in lines[:200]:
        m = _FRAME.match(line)
        if m is None:
            out.append(StackFrame("", None, line.strip()))
        else:
            code = m.group(4).strip() or m.group(3)
            out.append(StackFrame(m.group(1), int(m.group(2)), code))
    return out


def _label(name: str) -> str:
    # a scope path component: "/" separates scopes, so a name cannot hold one
    return name.replace("/", "_")


def _signature(t: MsprobeTensor) -> tuple[object, ...] | None:
    """What identifies a tensor between calls: dtype, shape and its four statistics; None
    when they cannot tell it from others (no statistics, or a constant tensor). NaN is
    written as a word: NaN ≠ NaN (and hashes by identity), so a NaN tensor would otherwise
    match no call's output, not even the one that made it."""
    high, low = t.max, t.min
    if high is None or low is None or high == low or t.shape is None:
        return None
    return (t.dtype, t.shape, _word(high), _word(low), _word(t.mean), _word(t.norm))


def _word(value: float | None) -> object:
    return "NaN" if value != value else value  # NaN ≠ NaN


@lru_cache(maxsize=4096)  # frozen, so shared: a model's outputs repeat few (slot, dtype, shape)
def _spec(slot: int, dtype: str, shape: tuple[int, ...] | None) -> TensorSpec:
    return TensorSpec(slot, data_type(dtype), shape)


@lru_cache(maxsize=4096)  # `input.0`, `parameters.weight`: one string for every call's
def _argument_label(role: str, slot: str) -> str:
    return f"{role}.{slot}"


def _describe(t: MsprobeTensor) -> str:
    return _description(t.dtype, t.shape)


@lru_cache(maxsize=4096)  # a model's tensors share a few hundred (dtype, shape) pairs
def _description(dtype: str, shape: tuple[int, ...] | None) -> str:
    shown = "?" if shape is None else "[" + ", ".join(map(str, shape)) + "]"
    return f"{dtype} {shown}"


class _Built:
    """One rank's graph and how calls and tensors map to its nodes and slots."""

    def __init__(
        self,
        graph: Graph,
        nodes: dict[str, str],
        params: dict[str, str],
        aliases: dict[str, tuple[str, int]],
    ) -> None:
        self.graph = graph
        self.nodes = nodes  # call name → node name
        # msprobe tensor name → its own node: parameters, inputs no dumped call produced
        self.params = params
        self.aliases = aliases  # msprobe tensor name → (node, slot) holding it


class MsprobeSource(DumpSource):
    """An msprobe root (`files/msprobe.find_msprobe_root`) as a `DumpSource`."""

    kind = "msprobe"
    statistics_words = "msprobe statistics (Max, Min, Mean, Norm)"
    parameters_after_update = False  # recorded when the module's forward reads them

    def __init__(self, found: MsprobeRoot) -> None:
        super().__init__(found.root)
        self.found = found
        self.problems = list(found.problems)
        self._built: dict[int, _Built] = {}
        self._last: tuple[tuple[int, int], MsprobeDump] | None = None
        self.backend = ""

    def ranks(self) -> list[int]:
        return self.found.rank_ids

    def iterations(self, rank: int) -> list[int]:
        return [s for s, step in self.found.steps.items() if rank in step.ranks]

    def refresh(self) -> bool:
        again = find_msprobe_root(self.root)
        if again is None or set(again.steps) == set(self.found.steps):
            return False
        # the same ranks keep their graphs; a new rank is read on first use
        self.found = again
        self.problems = list(dict.fromkeys([*self.problems, *again.problems]))
        return True

    def _label(self, rank: int, step: int, name: str) -> str:
        folder = self.found.steps[step].ranks[rank]
        try:
            return os.path.relpath(folder / name, self.root)
        except ValueError:
            return str(folder / name)

    def _dump(self, rank: int, step: int) -> MsprobeDump:
        """A step's dump.json; the one the graph was built from is kept until its step is
        read (the first step in view), so opening reads it once."""
        if self._last is not None and self._last[0] == (rank, step):
            return self._last[1]
        folder = self.found.steps[step].ranks[rank]
        dump = read_dump_json(folder / "dump.json", self._label(rank, step, "dump.json"))
        self._last = ((rank, step), dump)
        if not self.backend and dump.framework:
            self.backend = dump.framework
            self.version = f"{dump.task} {dump.level}".strip()
        return dump

    # ------------------------------------------------------------------ the graph
    def graphs(self, rank: int) -> dict[str, Graph]:
        built = self._build(rank)
        return {} if built is None else {GRAPH: built.graph}

    def aliases(self, rank: int) -> Mapping[str, tuple[str, int]]:
        built = self._build(rank)
        return {} if built is None else built.aliases

    def _build(self, rank: int) -> _Built | None:
        """The rank's graph: the calls of all its steps (a fault, a new branch, a step's
        extra call shows in later steps only; a call a step adds goes after the call it
        followed there). The first readable step is read whole (and kept: it is the first
        in view); the others are only scanned for call names, a record built for the new
        ones alone, so opening costs one read and a scan per other step, one at a time."""
        if rank in self._built:
            return self._built[rank]
        calls: list[MsprobeCall] = []
        known: set[str] = set()
        after: dict[str | None, list[MsprobeCall]] = {}  # call → calls a later step added
        construct: dict[str, str | None] = {}
        stacks: dict[str, list[str]] = {}
        budget = MAX_SCANNED_BYTES
        for step in self.iterations(rank):
            if calls:
                size = self._size(rank, step)
                if size > budget:
                    self.problems.append(
                        f"Rank {rank}: the steps from step {step} on were not scanned for calls "
                        f"the earlier steps lack (more than {MAX_SCANNED_BYTES >> 20} MiB of "
                        "dump.json to scan at opening); such a call is said when its step is "
                        "read, and that step's check is then incomplete."
                    )
                    break
                budget -= size
            try:
                added = (
                    self._new_calls(rank, step, known, after)
                    if calls
                    else self._first_calls(rank, step, known, calls)
                )
            except MsprobeError as err:
                self.problems.append(str(err))
                continue
            if added:
                self._structure(rank, step, construct, stacks)
        if not calls and not after:
            calls = self._structure_only(rank, construct, stacks)
        if not calls and not after:
            return None
        built = _graph(_ordered(calls, after), construct, stacks)
        self._built[rank] = built
        return built

    def _size(self, rank: int, step: int) -> int:
        try:
            return os.stat(self.found.steps[step].ranks[rank] / "dump.json").st_size
        except OSError:
            return 0  # said when it is read

    def _structure_only(
        self, rank: int, construct: dict[str, str | None], stacks: dict[str, list[str]]
    ) -> list[MsprobeCall]:
        """Task `structure` dumps no record (dump.json's `data` is `{}`): the calls are those
        construct.json names, in its order, with no tensor; one sentence says so."""
        steps = self.iterations(rank)
        if not steps:
            return []
        self._structure(rank, steps[0], construct, stacks)
        calls = [
            call_from_record(name, {}, parsed)
            for name in construct
            if (parsed := parse_call_name(name)) is not None
        ]
        if calls:
            self.problems.append(
                f"Rank {rank} of {self.root.name} holds the call structure only (msprobe task "
                "structure: no tensor statistics or values), so nothing can be checked or shown "
                "but the calls, their scopes and stacks."
            )
        return calls

    def _first_calls(self, rank: int, step: int, known: set[str], calls: list[MsprobeCall]) -> bool:
        dump = self._dump(rank, step)
        self.problems.extend(dump.problems)
        for call in dump.calls:
            if call.name not in known:
                known.add(call.name)
                calls.append(call)
        return bool(calls)

    def _new_calls(
        self,
        rank: int,
        step: int,
        known: set[str],
        after: dict[str | None, list[MsprobeCall]],
    ) -> bool:
        """Scan a later step for calls no earlier step made; True when there were some."""
        folder = self.found.steps[step].ranks[rank]
        scan = scan_dump_json(folder / "dump.json", self._label(rank, step, "dump.json"))
        before: str | None = None
        added = False
        for name, parsed, record in scan:
            if name not in known:
                known.add(name)
                added = True
                after.setdefault(before, []).append(call_from_record(name, record, parsed))
            before = name
        self.problems.extend(scan.problems)
        return added

    def _structure(
        self,
        rank: int,
        step: int,
        construct: dict[str, str | None],
        stacks: dict[str, list[str]],
    ) -> None:
        """A step's construct.json and stack.json added to what earlier steps said."""
        folder = self.found.steps[step].ranks[rank]
        for name in ("construct.json", "stack.json"):
            path = folder / name
            if not path.exists():
                continue
            label = self._label(rank, step, name)
            try:
                if name == "construct.json":
                    for k, v in read_construct(path, label).items():
                        construct.setdefault(k, v)
                else:
                    for k, frames in read_stack(path, label).items():
                        stacks.setdefault(k, frames)
            except MsprobeError as err:
                self.problems.append(str(err))

    # ------------------------------------------------------------------ a step
    def step_inputs(self, rank: int, graph: str, iteration: int) -> dict[str, StepInputs]:
        """The step's own data flow: each call's inputs linked by this step's statistics
        (the graph's come from the first step's, where a fault may multiply by 1.0 and a
        call that begins a NaN later may not run yet). The step's dump.json is read again
        (once per step and trace: the dump keeps the answer with the step); only the calls
        whose edges differ are kept."""
        built = self._build(rank)
        if built is None or graph != GRAPH:
            return {}
        try:
            dump = self._dump(rank, iteration)
        except MsprobeError:
            return {}  # said when the step was read
        finally:
            self._last = None  # not kept twice: the step's tensors hold its records
        return _step_edges(built, dump.calls)

    def read_step(self, rank: int, graph: str, iteration: int) -> ForeignStep:
        built = self._build(rank)
        step = ForeignStep()
        if built is None or graph != GRAPH:
            return step
        try:
            dump = self._dump(rank, iteration)
        except MsprobeError as err:
            step.blockers.append(str(err))
            return step
        self._last = None  # its records become the step's tensors: not kept twice
        step.blockers.extend(dump.problems)
        folder = self.found.steps[iteration].ranks[rank]
        data_dir = folder / "dump_tensor_data"
        has_data = dump.task == "tensor" and data_dir.is_dir()
        unknown: list[str] = []
        for call in dump.calls:
            node = built.nodes.get(call.name)
            if node is None:
                unknown.append(call.name)
                continue
            slot = 0
            for t in call.tensors:
                if t.role in ("output", "parameters_grad"):
                    step.tensors[(node, slot)] = self._tensor(node, slot, t, data_dir, has_data)
                    slot += 1
                else:  # parameters, and inputs no dumped call produced (data nodes)
                    pnode = built.params.get(t.name)
                    if pnode is not None:
                        step.tensors[(pnode, 0)] = self._tensor(pnode, 0, t, data_dir, has_data)
        if unknown:
            step.blockers.append(
                f"{self._label(rank, iteration, 'dump.json')} has {len(unknown)} call(s) that "
                f"the steps of rank {rank} read when the dump was opened lack (the first: "
                f"{unknown[0][:200]!r}); "
                "they were not read."
            )
        return step

    @staticmethod
    def _tensor(
        node: str, slot: int, t: MsprobeTensor, data_dir: os.PathLike[str], has_data: bool
    ) -> ForeignTensor:
        path = None
        if has_data and t.data_name and os.path.basename(t.data_name) == t.data_name:
            candidate = os.path.join(data_dir, t.data_name)
            if t.data_name.endswith((".pt", ".npy")) and os.path.lexists(candidate):
                path = candidate
        return ForeignTensor(node, slot, t.name, t.dtype, t.shape, _Stats(t), path)


def _ordered(
    calls: list[MsprobeCall], after: dict[str | None, list[MsprobeCall]]
) -> list[MsprobeCall]:
    """The first step's calls with each later step's new calls after the call they followed
    there (before every call when they came first), without recursion."""
    out: list[MsprobeCall] = []
    pending = list(reversed(after.pop(None, [])))
    stack = [*reversed(calls), *pending]
    while stack:
        call = stack.pop()
        out.append(call)
        stack.extend(reversed(after.pop(call.name, [])))
    for rest in after.values():  # after a call that is nowhere (cannot happen): kept
        out.extend(rest)
    return out


def _scopes(call: MsprobeCall, construct: Mapping[str, str | None]) -> list[str]:
    """The scope path of a call: its construct.json ancestors (outermost first), else its
    API family; backward calls and parameter gradients under `Gradients`."""
    chain: list[str] = []
    parent = construct.get(call.name)
    seen = {call.name}
    while parent and parent not in seen and len(chain) < MAX_SCOPE_DEPTH:
        chain.append(_label(parent))
        seen.add(parent)
        parent = construct.get(parent)
    chain.reverse()
    parsed = call.parsed
    if not chain and call.name not in construct:
        chain = [_label(parsed.prefix if parsed is not None else "Other")]
    if parsed is not None and parsed.is_module and parsed.direction != "parameters_grad":
        chain.append(_label(call.name))  # a module's own call heads its calls
    backward = parsed is not None and parsed.direction in ("backward", "parameters_grad")
    return [GRADIENTS, *chain] if backward else chain


_PARAMETER_CATEGORIES = frozenset({Category.TENSOR, Category.PARAMETER, Category.WEIGHT})
_CALL_CATEGORIES = {
    "parameters_grad": frozenset({Category.TENSOR, Category.GRADIENT}),
    "forward": frozenset({Category.TENSOR, Category.ACTIVATION}),
}
_TENSOR_ONLY = frozenset({Category.TENSOR})


def _unique(name: str, taken: set[str]) -> str:
    """`name`, or it with `_` appended until no node has it (a hostile file may name two
    calls or tensors alike; each stays a node of its own)."""
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _graph(
    calls: list[MsprobeCall], construct: Mapping[str, str | None], stacks: Mapping[str, list[str]]
) -> _Built:
    nodes: list[Node] = []
    names: dict[str, str] = {}
    params: dict[str, str] = {}
    categories: dict[str, frozenset[Category]] = {}
    arguments: dict[str, list[tuple[str, str, int]]] = {}  # `Graph.arguments`
    # tensor signature → the (node, slot) of the first call making it
    producers: dict[tuple[object, ...], tuple[str, int]] = {}
    aliases: dict[str, tuple[str, int]] = {}
    taken: set[str] = set()
    # id of a stack.json frame list → (the list, kept alive so the id stays its; its frames)
    seen_frames: dict[int, tuple[list[str], list[StackFrame]]] = {}
    # msprobe overflow_check's rule, for the origin trace (`files.msprobe_rule`): input
    # positions it does not read (nested in a list) and the node it names for an origin
    unread: dict[str, frozenset[int]] = {}
    blamed: dict[str, str | None] = {}
    passes: dict[str, list[str]] = {}  # a module → the calls whose output it passes on
    # a module parameter's signature → the module's call: the calls inside it (written to
    # dump.json before the module) read it as an argument, a data node here, which the
    # trace blames on the module, as msprobe does (parameters are no inputs in its rule)
    owners = _parameter_owners(calls)
    owned: dict[str, str] = {}  # data node → the msprobe name of the module owning it
    for call in calls:
        scope = "/".join(_scopes(call, construct))
        name = _unique(f"{scope}/{_label(call.name)}" if scope else _label(call.name), taken)
        names[call.name] = name
        parsed = call.parsed
        inputs: list[str] = []
        args: list[tuple[str, str, int]] = []
        attributes: dict[str, str] = {"msprobe name": call.name}
        outputs: list[TensorSpec] = []
        read: set[str] = set()  # inputs with a top-level record (msprobe reads those)
        for t in call.tensors:
            tname = t.name  # a property (an f-string): made once per tensor
            if t.role == "input":
                sig = _signature(t)
                src = producers.get(sig) if sig is not None else None
                if src is None or src[0] == name:
                    # produced by no dumped call (the batch, labels, a gradient from
                    # outside): a data node of its own, so its values and statistics are
                    # reachable and the origin trace sees a NaN/Inf that came in with it.
                    # A constant: never watched (msprobe's rule never blames an input).
                    src = (_unique(_label(tname), taken), 0)
                    params[tname] = src[0]
                    nodes.append(
                        Node(
                            src[0],
                            NodeKind.CONSTANT,
                            "Input",
                            scope=scope,
                            outputs=[_spec(0, t.dtype, t.shape)],
                        )
                    )
                    # the batch, a label: msprobe's rule names no call for a NaN that
                    # came in with it (a module's parameter: that module, below)
                    blamed[src[0]] = None
                    if sig is not None:
                        producers.setdefault(sig, src)
                        if sig in owners:
                            owned[src[0]] = owners[sig]
                if "." not in t.slot:
                    read.add(src[0])
                # no attribute text per input: the node details list the call's arguments
                # (`Graph.arguments`) with dtype, shape and statistics, from this tuple
                aliases.setdefault(tname, src)  # the input is that output
                args.append((_argument_label("input", t.slot), src[0], src[1]))
                if src[0] not in inputs:
                    inputs.append(src[0])
            elif t.role == "parameters":
                # named without its scope (a parameter's scope is `Node.scope`), like `conv1.weight`
                pname = _unique(_label(tname), taken)
                attributes[f"parameter {t.slot}"] = _describe(t)
                params[tname] = pname
                aliases[tname] = (pname, 0)
                args.append((_argument_label("parameters", t.slot), pname, 0))
                inputs.append(pname)
                read.add(pname)
                blamed[pname] = name  # a NaN weight: msprobe names its module
                nodes.append(
                    Node(
                        pname,
                        NodeKind.PARAMETER,
                        "Parameter",
                        scope=scope,
                        outputs=[_spec(0, t.dtype, t.shape)],
                    )
                )
                categories[pname] = _PARAMETER_CATEGORIES
            else:
                slot = len(outputs)
                outputs.append(_spec(slot, t.dtype, t.shape))
                aliases[tname] = (name, slot)
                sig = _signature(t)
                if sig is not None:  # the first call making it: a module passes it on
                    made = producers.setdefault(sig, (name, slot))[0]
                    if made != name and parsed is not None and parsed.is_module:
                        # for the trace: a NaN here began in the call inside (msprobe
                        # names that call, written first, when its inputs were finite)
                        passes.setdefault(name, []).append(made)
        if args:
            arguments[name] = args
        if len(read) < len(inputs):
            unread[name] = frozenset(i for i, src in enumerate(inputs) if src not in read)
        direction = parsed.direction if parsed is not None else ""
        # gradients: the parameters' (`parameters_grad`), as `tuidebug check` on msprobe
        # watches them; a backward call's outputs are activations' gradients: tensor only
        categories[name] = _CALL_CATEGORIES.get(direction, _TENSOR_ONLY)
        if msprobe_rule.is_ignored(call.name):
            # uninitialised memory or a chosen fill: msprobe's rule never blames it, and no
            # watchpoint watches it (`check` says so when it holds NaN/Inf)
            categories[name] = frozenset()
            blamed[name] = None
        frames = stacks.get(call.name)
        stack: list[StackFrame] = []
        if frames:
            # 26.x shares one frame list among the calls of a stack: parsed once
            known = seen_frames.get(id(frames))
            if known is None:
                known = seen_frames[id(frames)] = (frames, _frames(frames))
            stack = list(known[1])
        nodes.append(
            Node(
                name,
                NodeKind.OPERATOR,
                parsed.op if parsed is not None else call.name,
                scope=scope,
                inputs=inputs,
                outputs=outputs,
                attributes=attributes,
                stack=stack,
                dump_name=call.name,
            )
        )
    for data, module in owned.items():
        if module in names:
            blamed[data] = names[module]
    graph = ForeignGraph(
        GRAPH,
        nodes,
        categories,
        arguments,
        unread=unread,
        blamed=blamed,
        passes={k: tuple(v) for k, v in passes.items()},
    )
    return _Built(graph, names, params, aliases)


def _step_edges(built: _Built, calls: list[MsprobeCall]) -> dict[str, StepInputs]:
    """`MsprobeSource.step_inputs` on a step's calls: an input is the latest output before
    it with the same signature (none: the graph's edge for that tensor name, a data node or
    a call), kept where that differs from the graph's edges. The latest, not the graph
    builder's first: once a NaN spreads, every NaN tensor of a shape has the same statistics,
    and the one written last before the call is the one data flow makes likeliest (a
    module's output is the latest before it, made by a call inside it: `passes`).
    A NaN/Inf input that matches no output exactly is matched without its dtype, Mean and
    Norm: an undumped cast (autocast's bfloat16 → float32 before a loss) keeps NaN and ±Inf
    and shape, and the trace must not stop at a data node there."""
    graph = built.graph
    producers: dict[tuple[object, ...], str] = {}
    cast: dict[tuple[object, ...], str] = {}  # (shape, Max, Min) of a NaN/Inf output → call
    out: dict[str, StepInputs] = {}
    for call in calls:
        node = built.nodes.get(call.name)
        if node is None:
            continue  # a call the graph lacks: the step's blocker says so
        inputs: list[str] = []
        read: set[str] = set()
        passes: list[str] = []
        module = call.parsed is not None and call.parsed.is_module
        for t in call.tensors:
            sig = _signature(t)
            if t.role == "input":
                src = producers.get(sig) if sig is not None else None
                if (src is None or src == node) and _nonfinite(t):
                    src = cast.get((t.shape, _word(t.max), _word(t.min)))
                if src is None or src == node:
                    data = built.params.get(t.name)  # the batch, a label: its data node
                    known = data or built.aliases.get(t.name, (None,))[0]
                    if known is None:
                        continue
                    src = known
                    if data is not None and sig is not None:
                        producers[sig] = data  # as the graph builder does
                if "." not in t.slot:
                    read.add(src)
                if src not in inputs:
                    inputs.append(src)
            elif t.role == "parameters":
                pname = built.params.get(t.name)
                if pname is not None:
                    inputs.append(pname)
                    read.add(pname)
            elif sig is not None:
                made = producers.get(sig)
                if made is not None and made != node and module:
                    passes.append(made)  # the call inside the module that made it
                producers[sig] = node
                if _nonfinite(t):
                    cast[(t.shape, _word(t.max), _word(t.min))] = node
        unread = frozenset(i for i, src in enumerate(inputs) if src not in read)
        was = graph.nodes.get(node)
        if was is None:
            continue
        if (
            tuple(inputs) != tuple(was.inputs)
            or unread != graph.unread_inputs(node)
            or tuple(passes) != graph.passed_on(node)
        ):
            out[node] = StepInputs(tuple(inputs), unread, tuple(passes))
    return out


def _nonfinite(t: MsprobeTensor) -> bool:
    """Whether the record's Max or Min is NaN or ±Inf (msprobe's rule's test)."""
    return any(v is not None and (v != v or v in (math.inf, -math.inf)) for v in (t.max, t.min))


def _parameter_owners(calls: list[MsprobeCall]) -> dict[tuple[object, ...], str]:
    """A module parameter's signature → the msprobe name of the first module call with it."""
    owners: dict[tuple[object, ...], str] = {}
    for call in calls:
        if call.parsed is None or not call.parsed.is_module:
            continue
        for t in call.tensors:
            if t.role == "parameters":
                sig = _signature(t)
                if sig is not None:
                    owners.setdefault(sig, call.name)
    return owners
