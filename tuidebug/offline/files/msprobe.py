"""msprobe dumps (MindStudio Training Tools, issue 29): the root, `dump.json`, `stack.json`
and `construct.json`, read bounded and safely.

The layout (msprobe 26.x and 8.x, from real files): `<root>/step<N>/<proc<pid> | rank<N> |
rank>/{dump.json, stack.json, construct.json[, dump_tensor_data/]}`. The user may name the
root of step folders, one step folder, or one proc/rank folder; all three are found by
`msprobe_root` (which the start of `tuidebug offline` loads alone), and
`find_msprobe_root` makes an `MsprobeRoot` of what it finds.
Steps are the iterations; `rank<N>` is rank N, `rank` (8.x, one process) is rank 0, and
`proc<pid>` folders (26.x without torch.distributed) are numbered in pid order, because a
pid says nothing of a rank and the same process keeps its pid across steps.

`dump.json`'s `data` maps a call name to its tensors in execution order (Python dicts keep
the file's order). A call name is one of two grammars: APIs put the call index before the
direction (`Functional.linear.0.forward`), modules and cells after it
(`Module.fc1.Linear.forward.0`, `Module.fc1.Linear.parameters_grad.0`; 8.x writes
`parameters_grad` with no index). Every file here is untrusted: each is opened through
`regular_file.read_regular` with a size cap, and any failure is one sentence (`MsprobeError`).
NaN and ±Inf are the bare tokens `NaN`/`Infinity`/`-Infinity`, which Python's `json` reads
as floats; no other non-JSON token is admitted.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tuidebug.offline.files.msprobe_json import (
    JsonText,
    MsprobeError,
    NotAnObject,
    file_source,
    no_constant,
    text_source,
    top_level,
)
from tuidebug.offline.files.msprobe_root import (
    is_msprobe_root,  # re-exported (__all__)
    msprobe_steps,
)
from tuidebug.offline.files.regular_file import (
    FileTooLargeError,
    NotRegularFileError,
    open_regular,
    read_regular,
)

__all__ = [
    "MAX_CONSTRUCT_BYTES",
    "MAX_DUMP_JSON_BYTES",
    "MAX_STACK_BYTES",
    "CallName",
    "MsprobeCall",
    "MsprobeDump",
    "MsprobeError",
    "MsprobeRoot",
    "MsprobeScan",
    "MsprobeStep",
    "MsprobeTensor",
    "MsprobeValue",
    "call_from_record",
    "find_msprobe_root",
    "is_msprobe_root",
    "iter_tensors",
    "parse_call_name",
    "parse_dump_json",
    "read_construct",
    "read_dump_json",
    "read_stack",
    "scan_dump_json",
    "too_deep_sentence",
]

# A 7B model's L1 statistics dump is ~20 MB per step and rank, and the benchmark of issue 29
# has 1M tensor records in ~300 MB; json.loads needs ~8× the file in Python objects, so
# 512 MiB (~4 GiB read) is the most one rank's step may cost before it is refused.
MAX_DUMP_JSON_BYTES = 512 << 20
# stack.json repeats ~10 frames per forward call: a few times dump.json's calls, not its size
MAX_STACK_BYTES = 256 << 20
# construct.json is one short line per call
MAX_CONSTRUCT_BYTES = 128 << 20
# msprobe nests arguments a few levels deep (lists of lists of tensors): records deeper than
# this are not walked. (json's own decoder stops a hostile nesting with RecursionError.)
MAX_DEPTH = 64

_DIRECTIONS = ("forward", "backward")
_MODULE_PREFIXES = ("Module", "Cell")
_STATS = ("Max", "Min", "Mean", "Norm")


# ---------------------------------------------------------------------------------- names


@dataclass(slots=True, unsafe_hash=True)  # one per call: not frozen (see MsprobeTensor)
class CallName:
    """A dumped call's name, split: `prefix` (Functional, Torch, Tensor, Primitive, Module,
    Cell, …), `op` (`linear`, `matmul.MatMul`, `fc1.Linear`), `index` (the call count; None
    for 8.x's `parameters_grad`), `direction` (`forward`, `backward`, `parameters_grad`) and
    `is_module` (a module or cell, whose index follows the direction)."""

    name: str
    prefix: str
    op: str
    index: int | None
    direction: str
    is_module: bool


def _is_index(part: str) -> bool:
    # ASCII digits only, and few: str.isdigit() admits "²", which int() refuses, and int()
    # refuses more than 4,300 digits; either would escape as a traceback
    return part.isascii() and part.isdigit() and len(part) <= 18


def parse_call_name(name: str) -> CallName | None:
    """`Functional.linear.0.forward`, `Module.fc1.Linear.forward.0`,
    `Module.fc1.Linear.parameters_grad[.0]` → their parts; None for any other name."""
    parts = name.split(".")
    if len(parts) < 3 or not all(parts):
        return None
    prefix = parts[0]
    last = parts[-1]
    if last == "parameters_grad":  # 8.x: no call index
        return CallName(name, prefix, ".".join(parts[1:-1]), None, last, True)
    if last in _DIRECTIONS and _is_index(parts[-2]) and len(parts) >= 4:
        return CallName(
            name, prefix, ".".join(parts[1:-2]), int(parts[-2]), last, prefix in _MODULE_PREFIXES
        )
    if _is_index(last) and parts[-2] in (*_DIRECTIONS, "parameters_grad") and len(parts) >= 4:
        return CallName(name, prefix, ".".join(parts[1:-2]), int(last), parts[-2], True)
    return None


# ---------------------------------------------------------------------------------- records


# One per record of a step (a million in a big one): slots, and not frozen, because a
# frozen dataclass sets each field through object.__setattr__ (~7 µs a record against
# ~0.8). Nothing mutates a record once read; unsafe_hash keeps it hashable as before.
@dataclass(slots=True, unsafe_hash=True)
class MsprobeTensor:
    """One tensor record of a call. `role` is `input`, `output`, `parameters` or
    `parameters_grad`; `slot` is msprobe's own path under it (`0`, `1.0` for a list in an
    argument, `weight` for a parameter, a keyword's name), so `name` is msprobe's tensor name
    (`Functional.linear.0.forward.output.0`, the `data_name` without its extension).
    Statistics are floats (NaN and ±Inf as read) or None when the record has none."""

    call: str
    role: str
    slot: str
    dtype: str
    shape: tuple[int, ...] | None
    max: float | None
    min: float | None
    mean: float | None
    norm: float | None
    data_name: str | None = None
    requires_grad: bool | None = None

    @property
    def name(self) -> str:
        if self.role == "parameters_grad":
            # the call's own name already says it: `Module.fc1.Linear.parameters_grad.0.weight`
            return f"{self.call}.{self.slot}"
        return f"{self.call}.{self.role}.{self.slot}"

    @property
    def count(self) -> int | None:
        """How many elements the shape says (None without a shape)."""
        if self.shape is None:
            return None
        return math.prod(self.shape)

    @property
    def overflows(self) -> bool:
        """msprobe's rule (its `overflow_check`): Max or Min is NaN or ±Inf. Never Norm: the
        statistics are computed in the tensor's dtype, so Norm overflows to Infinity in
        float32/bf16 long before any value does, and would be a false alarm."""
        return any(v is not None and not math.isfinite(v) for v in (self.max, self.min))


@dataclass
class MsprobeCall:
    """One dumped call: its name (split when it follows the grammar), its tensors (inputs
    first, then parameters, outputs, parameter gradients, as msprobe orders the record) and
    the count of non-tensor arguments (ints, floats, None… which no condition reads)."""

    name: str
    parsed: CallName | None
    tensors: list[MsprobeTensor]
    scalars: int = 0
    # the non-tensor arguments themselves, each with its place among the tensors (compare
    # shows them as msprobe compare does: `<class 'int'>`, the value in the statistics)
    values: list[MsprobeValue] = field(default_factory=list)
    # records nested deeper than MAX_DEPTH, left unread (the dump says so in its problems)
    too_deep: int = 0

    def role(self, role: str) -> list[MsprobeTensor]:
        return [t for t in self.tensors if t.role == role]

    def records(self) -> Iterator[MsprobeTensor | MsprobeValue]:
        """The call's tensors and non-tensor arguments in the record's order."""
        values = iter(self.values)
        pending = next(values, None)
        for i, tensor in enumerate(self.tensors):
            while pending is not None and pending.before <= i:
                yield pending
                pending = next(values, None)
            yield tensor
        while pending is not None:
            yield pending
            pending = next(values, None)


@dataclass(slots=True, unsafe_hash=True)  # one per non-tensor argument (see MsprobeTensor)
class MsprobeValue:
    """A non-tensor argument or output: `{"type": "int", "value": 24}` or a `null` in a
    list. `kind` is msprobe's type word (`int`, `float`, `bool`, `str`…; `None` for null),
    `value` the JSON value as read; `before` is the index in the call's tensors of the first
    tensor that follows it (its place in the record)."""

    call: str
    role: str
    slot: str
    kind: str | None
    value: object
    before: int

    @property
    def name(self) -> str:
        return f"{self.call}.{self.role}.{self.slot}"


@dataclass
class MsprobeDump:
    """One `dump.json`: its header fields and its calls in execution order."""

    task: str
    level: str
    framework: str
    dump_data_dir: str | None
    calls: list[MsprobeCall]
    problems: list[str] = field(default_factory=list)


def _stat(value: object) -> float | None:
    # a bool tensor's Max/Min are true/false; a string or a list is no statistic
    if type(value) is float:  # the common case first: called four times per record
        return value
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return None


def _shape(value: object) -> tuple[int, ...] | None:
    if not isinstance(value, list):
        return None
    # `type(d) is int` refuses bools (and int subclasses) in one test; a loop, not a
    # generator, because this runs once per record of a million-record step
    for d in value:
        if type(d) is not int or d < 0:
            return None
    return tuple(value)


def _is_tensor(value: dict[str, Any]) -> bool:
    # a tensor record has a dtype and a shape; `{"type": "int", "value": 1}` has neither
    return "dtype" in value and "shape" in value


def _tensors(
    call: str,
    role: str,
    slot: str,
    value: object,
    out: list[MsprobeTensor],
    depth: int = 0,
    values: list[MsprobeValue] | None = None,
    deep: list[int] | None = None,
) -> int:
    """Append the tensor records under `value` (a record, a list, a dict, null) to `out`
    (and the non-tensor leaves to `values`, when given); return how many non-tensor leaves
    were met."""
    if depth > MAX_DEPTH:
        # not walked; counted, so that the dump says what it did not read
        if deep is not None:
            deep[0] += 1
        return 0
    if isinstance(value, dict):
        if "dtype" in value and "shape" in value:  # a tensor record (`_is_tensor`), inlined
            get = value.get
            data_name = get("data_name")
            grad = get("requires_grad")
            dtype = get("dtype")
            # positional: the hottest constructor of opening a step (one per record)
            out.append(
                MsprobeTensor(
                    call,
                    role,
                    slot,
                    dtype if type(dtype) is str else str(dtype),
                    _shape(get("shape")),
                    _stat(get("Max")),
                    _stat(get("Min")),
                    _stat(get("Mean")),
                    _stat(get("Norm")),
                    data_name if isinstance(data_name, str) else None,
                    grad if isinstance(grad, bool) else None,
                )
            )
            return 0
        if "type" in value:
            if values is not None:
                kind = value.get("type")
                values.append(
                    MsprobeValue(call, role, slot, str(kind), value.get("value"), before=len(out))
                )
            return 1
        scalars = 0
        for key, item in value.items():
            scalars += _tensors(
                call,
                role,
                f"{slot}.{key}" if slot else str(key),
                item,
                out,
                depth + 1,
                values,
                deep,
            )
        return scalars
    if isinstance(value, list):
        scalars = 0
        for i, item in enumerate(value):
            item_slot = f"{slot}.{i}" if slot else str(i)
            if item is None and values is not None:
                # a None in a list (a missing gradient): msprobe compare shows it as a row
                values.append(MsprobeValue(call, role, item_slot, None, None, before=len(out)))
                continue
            scalars += _tensors(call, role, item_slot, item, out, depth + 1, values, deep)
        return scalars
    return 0 if value is None else 1


def _call(name: str, record: object, parsed: CallName | bool | None = False) -> MsprobeCall:
    # `parsed` is the name's parse when the caller has it already (False: not yet parsed)
    if parsed is False:
        parsed = parse_call_name(name)
    assert not isinstance(parsed, bool)
    tensors: list[MsprobeTensor] = []
    values: list[MsprobeValue] = []
    deep = [0]
    scalars = 0
    if isinstance(record, dict):
        if parsed is not None and parsed.direction == "parameters_grad":
            # `{"weight": [record], "bias": [record]}`: msprobe names them `…parameters_grad.0.weight`
            for key, value in record.items():
                found: list[MsprobeTensor] = []
                scalars += _tensors(name, "parameters_grad", str(key), value, found, deep=deep)
                # a one-tensor list is the parameter itself, named without the list index
                tensors.extend(replace(t, slot=str(key)) if len(found) == 1 else t for t in found)
        else:
            for key, role in (
                ("input_args", "input"),
                ("input", "input"),
                ("input_kwargs", "input"),
                ("parameters", "parameters"),
                ("output", "output"),
            ):
                if key in record:
                    scalars += _tensors(
                        name, role, "", record[key], tensors, values=values, deep=deep
                    )
    return MsprobeCall(name, parsed, tensors, scalars, values, too_deep=deep[0])


def _loads(data: bytes, label: str) -> object:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MsprobeError(f"{label} is not UTF-8 text, so it was not read.") from None
    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as err:
        raise MsprobeError(
            f"{label} is not valid JSON ({err.msg} at line {err.lineno} column {err.colno}), "
            "so it was not read."
        ) from None
    except RecursionError:
        # the C decoder counts its nesting: a file of a million `[` ends here, not in a crash
        raise MsprobeError(f"{label} nests too deeply to be JSON from msprobe.") from None


def _read(path: Path, limit: int, what: str, label: str) -> bytes:
    try:
        return read_regular(path, limit)
    except FileTooLargeError:
        raise MsprobeError(
            f"{label} is larger than the {limit:,}-byte limit for {what}, so it was not read."
        ) from None
    except NotRegularFileError as err:
        raise MsprobeError(f"{label} is {err.strerror}; it was not read.") from None
    except OSError as err:
        reason = (err.strerror or type(err).__name__).rstrip(".")
        raise MsprobeError(f"cannot read {label}: {reason[:1].lower() + reason[1:]}.") from None


class MsprobeScan:
    """One dump.json read as a stream (`msprobe_json`): iterating yields each call as
    `(name, parsed name, raw record)` in execution order, one at a time, so memory is one
    record whatever the file's size. `header` holds the top-level fields met so far (msprobe
    writes them before `data`); `problems` (one sentence each) is complete once the
    iteration ended. Iterate once."""

    def __init__(self, read: Callable[[int], str], label: str, whole: Callable[[], object]):
        self.label = label
        self.header: dict[str, object] = {}
        self.problems: list[str] = []
        self._read = read
        self._whole = whole  # the document read at once, for a text that is no object

    def _entries(self) -> Iterator[tuple[str, object]]:
        try:
            yield from top_level(JsonText(self._read, self.label), self.header)
        except NotAnObject:
            doc = self._whole()
            if not isinstance(doc, dict):
                self.header["data"] = doc
            else:  # unreachable for real JSON (an object starts with `{`); kept total
                self.header.update(doc)
                yield from (doc["data"].items() if isinstance(doc.get("data"), dict) else ())
        if self.header.get("data") is not True and not isinstance(self.header.get("data"), dict):
            raise MsprobeError(
                f'{self.label} has no "data" object, so it is not an msprobe dump.json.'
            )

    def __iter__(self) -> Iterator[tuple[str, CallName | None, object]]:
        unnamed: list[str] = []  # the first only: a hostile dump may have millions
        count = 0
        # 8.x writes a module's `parameters_grad` (no call index) into dump.json when the
        # module runs forward and fills it in at backward: its place in the file is not when
        # it was computed. It is given its backward place: before the module's first
        # backward call (where 26.x writes `parameters_grad.N`), or at the end of the step.
        pending: dict[str, list[tuple[str, CallName | None, object]]] = {}
        for name, record in self._entries():
            parsed = parse_call_name(name)
            if parsed is None:
                count += 1
                unnamed[:] = unnamed or [name]
            elif parsed.direction == "parameters_grad" and parsed.index is None:
                pending.setdefault(parsed.op, []).append((name, parsed, record))
                continue
            elif pending and parsed.is_module and parsed.direction == "backward":
                yield from pending.pop(parsed.op, ())
            yield name, parsed, record
        for grads in pending.values():
            yield from grads
        if unnamed:
            # still listed (their tensors are real); only their grammar is unknown
            self.problems.append(
                f"{self.label}: {count} call name(s) follow neither msprobe grammar "
                f"(the first: {unnamed[0][:200]!r})."
            )

    def text(self, key: str) -> str:
        value = self.header.get(key)
        return str(value) if value is not None and not isinstance(value, dict | list) else ""


def call_from_record(
    name: str, record: object, parsed: CallName | bool | None = False
) -> MsprobeCall:
    """One call of a `MsprobeScan` (its name, parsed name and raw record) as a `MsprobeCall`."""
    return _call(name, record, parsed)


def too_deep_sentence(label: str, calls: int, first: str) -> str:
    """The problem said when `calls` calls of `label` (the first named) nest past MAX_DEPTH."""
    return _too_deep(label, calls, first)


def _too_deep(label: str, calls: int, first: str) -> str:
    return (
        f"{label}: {calls} call(s) nest records deeper than {MAX_DEPTH} levels (the first: "
        f"{first[:200]!r}); what lies deeper was not read."
    )


def _dump(scan: MsprobeScan) -> MsprobeDump:
    calls: list[MsprobeCall] = []
    deep: list[str] = []
    for name, parsed, record in scan:
        call = _call(name, record, parsed)
        if call.too_deep:
            deep.append(name)
        calls.append(call)
    problems = list(scan.problems)
    if deep:
        problems.append(_too_deep(scan.label, len(deep), deep[0]))
    ddir = scan.header.get("dump_data_dir")
    return MsprobeDump(
        task=scan.text("task"),
        level=scan.text("level"),
        framework=scan.text("framework"),
        dump_data_dir=ddir if isinstance(ddir, str) else None,
        calls=calls,
        problems=problems,
    )


def parse_dump_json(data: bytes, label: str) -> MsprobeDump:
    """A `dump.json`'s bytes → its calls in execution order; `label` names the file in
    sentences."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MsprobeError(f"{label} is not UTF-8 text, so it was not read.") from None
    return _dump(MsprobeScan(text_source(text), label, lambda: _loads(data, label)))


def scan_dump_json(path: Path, label: str | None = None) -> MsprobeScan:
    """`path` (a dump.json) opened for a streamed read (see `MsprobeScan`): refused at once,
    in one sentence, when it is no regular file or is larger than MAX_DUMP_JSON_BYTES."""
    shown = label or str(path)
    limit = MAX_DUMP_JSON_BYTES
    try:
        handle = open_regular(path)
    except NotRegularFileError as err:
        raise MsprobeError(f"{shown} is {err.strerror}; it was not read.") from None
    except OSError as err:
        reason = (err.strerror or type(err).__name__).rstrip(".")
        raise MsprobeError(f"cannot read {shown}: {reason[:1].lower() + reason[1:]}.") from None
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        handle.close()
        raise MsprobeError(
            f"{shown} is larger than the {limit:,}-byte limit for an msprobe dump.json, so it "
            "was not read."
        )
    read = file_source(handle, shown, limit)

    def chunks(n: int) -> str:
        try:
            text = read(n)
        except OSError as err:
            handle.close()
            reason = (err.strerror or type(err).__name__).rstrip(".")
            raise MsprobeError(f"cannot read {shown}: {reason[:1].lower() + reason[1:]}.") from None
        except BaseException:
            handle.close()
            raise
        if not text:
            handle.close()
        return text

    def whole() -> object:
        handle.close()
        return _loads(_read(path, limit, "an msprobe dump.json", shown), shown)

    return MsprobeScan(chunks, shown, whole)


def read_dump_json(path: Path, label: str | None = None) -> MsprobeDump:
    """`path` (a dump.json) → its calls in execution order, read in chunks."""
    return _dump(scan_dump_json(path, label))


def read_stack(path: Path, label: str | None = None) -> dict[str, list[str]]:
    """`stack.json` → call name → its frames, innermost first as written. 26.x writes
    `{"0": [[names…], [frames…]]}` (calls sharing one stack); 8.x writes `{name: [frames]}`."""
    shown = label or str(path)
    doc = _loads(_read(path, MAX_STACK_BYTES, "an msprobe stack.json", shown), shown)
    if not isinstance(doc, dict):
        raise MsprobeError(f"{shown} is not a JSON object, so it is not an msprobe stack.json.")
    out: dict[str, list[str]] = {}
    for key, value in doc.items():
        if (
            isinstance(value, list)
            and len(value) == 2
            and isinstance(value[0], list)
            and isinstance(value[1], list)
        ):
            frames = [f for f in value[1] if isinstance(f, str)]
            for name in value[0]:
                if isinstance(name, str):
                    out[name] = frames
        elif isinstance(value, list):
            out[key] = [f for f in value if isinstance(f, str)]
    return out


def read_construct(path: Path, label: str | None = None) -> dict[str, str | None]:
    """`construct.json` → call or module name → its parent (None: a top scope). `{}` at L1."""
    shown = label or str(path)
    doc = _loads(_read(path, MAX_CONSTRUCT_BYTES, "an msprobe construct.json", shown), shown)
    if not isinstance(doc, dict):
        raise MsprobeError(f"{shown} is not a JSON object, so it is not an msprobe construct.json.")
    return {k: v if isinstance(v, str) else None for k, v in doc.items()}


# ---------------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class MsprobeStep:
    """One step's ranks: rank → its folder (holding dump.json)."""

    step: int
    ranks: dict[int, Path]


@dataclass
class MsprobeRoot:
    """An msprobe dump: its steps in order, and problems met while finding them."""

    root: Path
    steps: dict[int, MsprobeStep]
    problems: list[str] = field(default_factory=list)

    @property
    def rank_ids(self) -> list[int]:
        return sorted({r for s in self.steps.values() for r in s.ranks})


def find_msprobe_root(root: str | os.PathLike[str]) -> MsprobeRoot | None:
    """The msprobe dump at `root`: a folder of `step<N>/`, one step folder (its proc/rank
    folders are step 0's ranks… named by the folder's number when it is `step<N>`), or one
    proc/rank folder (a dump.json in it). None when `root` is none of these (the search is
    `msprobe_root.msprobe_steps`, which the start of `tuidebug offline` loads alone)."""
    found = msprobe_steps(root)
    if found is None:
        return None
    path, steps, problems = found
    return MsprobeRoot(
        Path(path), {step: MsprobeStep(step, ranks) for step, ranks in steps.items()}, problems
    )


def iter_tensors(dump: MsprobeDump) -> Iterator[MsprobeTensor]:
    for call in dump.calls:
        yield from call.tensors
