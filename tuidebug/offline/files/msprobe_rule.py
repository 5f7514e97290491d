"""msprobe `overflow_check`'s own anomaly rule on one raw `dump.json` record (issue 29),
written from what msprobe 26.2's analyzer reads (`DataNode.is_anomaly`), so that
`tuidebug check` and the origin trace name the call msprobe names, edge cases included.

A call is an anomaly when all of these hold:

* its name contains none of `Torch.empty` and `Torch.fill` (a substring test, so
  `Torch.empty_like`, `Torch.fill_` and their backward calls too): their outputs are
  uninitialised memory or a value the code chose (a `-inf` mask), never a fault;
* no *top-level* record of its inputs (`input_args` and `input` items, `input_kwargs`
  values) has a Max or Min that is NaN or ±Inf. Records nested in a list argument
  (`torch.einsum(eq, [a, b])`, `multi_dot([a, b])`) are not read, nor are a module's
  `parameters`: a module whose weight is NaN while its input is finite is the anomaly, not
  the `Functional.linear` inside it that read the weight as an argument;
* a top-level record of its `output` has a Max or Min that is NaN or ±Inf.

So `parameters_grad` entries (no `output` key) are never anomalies; backward calls are
judged like forward ones (`input`: the incoming gradients); integer and boolean tensors
(finite Max/Min) never are; non-tensor arguments carry no Max/Min and are skipped. msprobe
compares `str(value).lower()` with `nan`/`inf`/`-inf`, so a Max written as the string
`"inf"` counts as its float would.

Across ranks (`RankTrail`, `first_anomalies`) msprobe names at most the calls its
analyzer's three passes name, over all ranks of one step:

1. before communication: each rank's first anomaly before its first `Distributed.*`
   communication call (`is_communication`); if any rank has one, those are the answer
   (one per rank) and the NaN/Inf a collective then carries to other ranks is blamed on
   nobody there: rank 0's `all_reduce` whose output is Inf from rank 1's data is no
   anomaly, because rank 1's compute call came first;
2. during communication: the k-th communication calls of the ranks meet (msprobe links them
   by API and call order; here by their position in each rank's sequence of communication
   calls, the same for collectives every rank calls in the same order). At the first k where
   anything is blamed, it names one call over all ranks, the least (k, calls since the
   previous communication; a compute call before a communication call on a tie): a communication call that is itself an anomaly (inputs finite,
   output NaN/Inf), or an anomalous compute call before a sending or collective
   communication call whose `input_args`/`input_kwargs` hold NaN/Inf (a receiver's,
   `src` naming another rank, is not blamed for what it receives);
3. after communication: each rank's first anomaly after its last communication call.

msprobe also drops, before pass 2, communication calls with neither NaN/Inf nor anomalies
before them, and walks them in rounds of one call per rank; this module walks positions in
order, which names the same call unless ranks make different numbers of clean calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "IGNORED_NAMES",
    "RankTrail",
    "first_anomalies",
    "is_anomaly",
    "is_communication",
    "is_ignored",
    "record_overflows",
]

# msprobe's analyzer skips every call whose name contains one of these
IGNORED_NAMES = ("Torch.empty", "Torch.fill")
_NONFINITE = frozenset({"nan", "inf", "-inf", "nan\t", "inf\t", "-inf\t"})
_INPUT_KEYS = ("input", "input_args", "input_kwargs")


def is_ignored(name: str) -> bool:
    """Whether msprobe's rule never blames the call `name` (uninitialised memory, fills)."""
    return any(word in name for word in IGNORED_NAMES)


def _bad(value: object) -> bool:
    if type(value) is float:
        return value != value or value in (float("inf"), float("-inf"))  # NaN ≠ NaN
    if isinstance(value, str):
        return value.lower() in _NONFINITE
    return False


def record_overflows(part: object) -> bool:
    """Whether a role's raw JSON (`output`, `input_args`…) has a top-level record whose Max
    or Min is NaN or ±Inf: list items or dict values that are records; nothing nested."""
    if isinstance(part, list):
        items: object = part
    elif isinstance(part, dict):
        items = part.values()
    else:
        return False
    for item in items:  # type: ignore[attr-defined]
        if isinstance(item, dict) and (_bad(item.get("Max")) or _bad(item.get("Min"))):
            return True
    return False


def is_anomaly(name: str, record: object) -> bool:
    """msprobe's rule on the call `name` with its raw record (module docstring)."""
    if not isinstance(record, dict) or is_ignored(name):
        return False
    if any(record_overflows(record.get(key)) for key in _INPUT_KEYS):
        return False
    return record_overflows(record.get("output"))


# msprobe's communication keywords (substrings of a `Distributed.*` name); the longer ones
# (`all_reduce`, `reduce_scatter_tensor`…) contain one of these
_COMM_WORDS = ("send", "recv", "broadcast", "reduce", "gather", "scatter", "all_to_all")
# who sends in a directed call whose peer rank is a positional int: "src" when that int is
# the caller's own rank (its opposite otherwise)
_DIRECTED = {
    "send": "dst",
    "recv": "src",
    "isend": "dst",
    "irecv": "src",
    "broadcast": "src",
    "scatter": "src",
    "gather": "dst",
    "send_object_list": "dst",
    "recv_object_list": "src",
}


def is_communication(name: str) -> bool:
    """Whether msprobe's analyzer treats the call `name` as communication between ranks."""
    return name.startswith("Distributed.") and any(word in name for word in _COMM_WORDS)


def _peer(kwargs: dict[str, object], keys: tuple[str, str]) -> object:
    """The `value` of the first of `keys` present in `kwargs` (None when absent/empty)."""
    for key in keys:
        if key in kwargs:
            item = kwargs[key]
            return item.get("value") if isinstance(item, dict) else None
    return None


def _receives(name: str, record: dict[str, object], rank: int) -> bool:
    """Whether the communication call only receives on `rank` (msprobe's `dst` type), so
    NaN/Inf in its input is not blamed on this rank's earlier compute calls."""
    kwargs = record.get("input_kwargs")
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    src = _peer(kwargs, ("src", "src_group"))
    if src is not None:
        return src != rank
    dst = _peer(kwargs, ("dst", "dst_group"))
    if dst is not None:
        return dst == rank
    parts = name.split(".")
    kind = _DIRECTED.get(parts[1]) if len(parts) > 1 else None
    args = record.get("input_args")
    if kind is not None and isinstance(args, list):
        for item in args:
            if isinstance(item, dict) and item.get("type") == "int":
                own = item.get("value") == rank
                return (kind == "dst") == own
    return False


@dataclass
class _Comm:
    name: str
    blames: bool  # input NaN/Inf on a sending or collective call: its compute calls blamed
    anomaly: bool  # the call itself: inputs finite, output NaN/Inf
    sub: int  # compute calls since the previous communication call
    before: list[tuple[int, str]]  # anomalous compute calls since then: (position, name)


@dataclass
class RankTrail:
    """What msprobe's cross-rank pass reads of one rank's step: fed every call in dump.json
    order (`add`), kept small (the anomalies and communication calls, never the records)."""

    rank: int
    pre: str | None = None  # first anomaly before any communication call
    comms: list[_Comm] = field(default_factory=list)
    after: list[tuple[int, str]] = field(default_factory=list)  # since the last comm
    _sub: int = 0

    def add(self, name: str, record: object, anomaly: bool | None = None) -> None:
        """One call; `anomaly` is `is_anomaly(name, record)` when the caller knows it."""
        if is_communication(name):
            rec = record if isinstance(record, dict) else {}
            inputs = record_overflows(rec.get("input_args")) or record_overflows(
                rec.get("input_kwargs")
            )
            blames = inputs and not _receives(name, rec, self.rank)
            comm = _Comm(name, blames, is_anomaly(name, rec), self._sub, self.after)
            self.comms.append(comm)
            self.after, self._sub = [], 0
            return
        if anomaly is None:
            anomaly = is_anomaly(name, record)
        if not self.comms:
            if self.pre is None and anomaly:
                self.pre = name
            return
        if is_ignored(name):
            return  # msprobe neither blames nor counts them between communication calls
        if anomaly:
            self.after.append((self._sub, name))
        self._sub += 1


def first_anomalies(trails: list[RankTrail]) -> dict[int, str]:
    """The call msprobe `overflow_check` names on each rank of one step (module docstring):
    rank → call name, ranks it names nothing on left out."""
    pre = {t.rank: t.pre for t in trails if t.pre is not None}
    if pre:
        return pre
    depth = max((len(t.comms) for t in trails), default=0)
    for k in range(depth):
        # (calls since the previous communication, 0 compute / 1 communication, rank, name):
        # msprobe lists a group's blamed compute calls before its communication calls and
        # keeps the first least, so on a tie the compute call wins (then, here, the rank)
        found: list[tuple[int, int, int, str]] = []
        for t in sorted(trails, key=lambda t: t.rank):
            if k >= len(t.comms):
                continue
            comm = t.comms[k]
            if comm.blames:
                found.extend((sub, 0, t.rank, name) for sub, name in comm.before)
            if comm.anomaly:
                found.append((comm.sub, 1, t.rank, comm.name))
        if found:
            _, _, rank, name = min(found)
            return {rank: name}
    return {t.rank: t.after[0][1] for t in trails if t.comms and t.after}
