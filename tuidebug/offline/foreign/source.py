"""The seam between tuidebug's dump model and a dump written by another tool (msprobe,
TensorFlow Debugger V2, …): what such a tool's reader answers, in the dump model's words.

`OfflineDump` and everything above it (the session, the checker, the TUI, `exec`, the API)
speak of ranks, graphs per rank (`core.graph.Graph`), iterations, and tensors as output
slots of graph nodes. A `DumpSource` answers those questions for one foreign dump:

- `ranks()`, `iterations(rank)`: what was dumped;
- `graphs(rank)`: the rank's graphs, built once per rank (nodes in execution order, each
  node's `outputs` its slots with dtype and shape, `stack`, `attributes`, scopes in its
  name); `categories` (optional) says which watchpoint categories a node is in when the
  core's MindSpore naming rule would not (`ForeignGraph`);
- `read_step(rank, graph, iteration)`: one iteration's tensors as `ForeignTensor`s (their
  statistics under `StatisticRow.stats` keys, the value file when one exists) and its
  `blockers` (data of that iteration that exists and was not read: a check of it is then
  incomplete). The dump model keeps only the steps in view (`ForeignDump`), so a source
  need not cache: memory is bounded by the step being looked at;
- `aliases(rank)`: the tool's own tensor names → (node, slot), accepted wherever a tensor
  is named;
- `refresh()`: look again for iterations that appeared since (the TUI's `r`);
- `problems`: sentences about what discovery could not read;
- `graph_runs(rank)` (optional): the tool's own execution list for the history (`h`);
- `source_text(path)` (optional): the dump's own copy of a source file, for the source view;
- `statistics_words`: the tool's statistics in words, for the one sentence refusing a
  watchpoint they cannot decide (`check/checker.py` says it, not statistic.csv's wording).

Values are read from files by extension (`.npy` through `files/npy.py`, `.pt` through
`files/pt.py`): the checker's tasks carry a path, so a source whose values live in
another container gives each tensor a file of its own or a reference path with a reader
in `check/task.py` and `dump.read_value` (tfdbg: `files/tfdbg_values.py`, a record's
tensor proto by offset).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from tuidebug.core.graph import Category, Graph, Node, StepInputs, node_categories
from tuidebug.core.graph_run import GraphRun

__all__ = ["DumpSource", "ForeignGraph", "ForeignStep", "ForeignTensor", "StatValue"]

StatValue = float | int | str | None


# one per tensor of the step in view: not frozen (a frozen dataclass sets each field
# through object.__setattr__, ~7× the cost of building it); never mutated once read
@dataclass(slots=True, unsafe_hash=True)
class ForeignTensor:
    """One dumped tensor of an iteration: output `slot` of graph node `node`.

    `name` is the tool's own name of the tensor (`Functional.linear.0.forward.output.0`),
    accepted wherever a tensor is named; `dtype` the tool's dtype text (`torch.float32`,
    `Float32`); `stats` its statistics under `StatisticRow.stats` keys (`count`,
    `nan_count`, `pos_inf_count`, `neg_inf_count`, `max`, `min`, `avg`, …) as the tool's
    math gives them; `path` the file holding its value (`.npy`, `.pt`), None when only
    statistics were dumped."""

    node: str
    slot: int
    name: str
    dtype: str
    shape: tuple[int, ...] | None
    stats: Mapping[str, StatValue]
    path: str | None = None


@dataclass
class ForeignStep:
    """One rank's iteration of one graph: its tensors by (node, slot) in execution order,
    and sentences about its data that could not be read (the check is then incomplete)."""

    tensors: dict[tuple[str, int], ForeignTensor] = field(default_factory=dict)
    blockers: list[str] = field(default_factory=list)
    # node → its data edges at this step where they differ from the graph's
    # (`DumpSource.step_inputs`): made when the origin trace first asks, kept with the step
    inputs: dict[str, StepInputs] | None = None

    def by_name(self) -> dict[str, ForeignTensor]:
        return {t.name: t for t in self.tensors.values()}


class ForeignGraph(Graph):
    """A graph whose nodes' watchpoint categories the source states (`categories`: node
    name → its categories; nodes left out get the core's rule), because a foreign tool's
    names do not follow MindSpore's `Gradients/`, `.weight` and op-type conventions; and
    each call's arguments (`arguments`: node name → (label, producing node, slot)), which the
    node details show with their statistics; and where the tool's own NaN/Inf rule differs
    from reading every input (`unread`: node → input positions it does not read; `blamed`:
    node → the node it names for an origin found there, or None; `passes`: node → the nodes
    whose output it passes on as its own), which the origin trace follows."""

    def __init__(
        self,
        name: str,
        nodes: Iterable[Node],
        categories: Mapping[str, frozenset[Category]] | None = None,
        arguments: Mapping[str, Sequence[tuple[str, str, int]]] | None = None,
        unread: Mapping[str, frozenset[int]] | None = None,
        blamed: Mapping[str, str | None] | None = None,
        passes: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        super().__init__(name, nodes)
        self._given = dict(categories or {})
        # node → its arguments (`Graph.arguments`): (the tool's label, producer, slot)
        self._arguments = arguments or {}
        # the tool's own NaN/Inf rule (`Graph.unread_inputs`, `Graph.blamed_for`)
        self._unread = unread or {}
        self._blamed = blamed or {}
        self._passes = passes or {}

    def arguments(self, name: str) -> Sequence[tuple[str, str, int]]:
        return self._arguments.get(name, ())

    def unread_inputs(self, name: str) -> frozenset[int]:
        return self._unread.get(name, frozenset())

    def blamed_for(self, name: str) -> str | None:
        return self._blamed.get(name, name)

    def passed_on(self, name: str) -> tuple[str, ...]:
        return self._passes.get(name, ())

    @cached_property
    def _categories(self) -> dict[str, frozenset[Category]]:
        # an empty set given is kept: the tool's rule watches nothing there (msprobe's
        # Torch.empty*/Torch.fill*)
        given = self._given
        return {
            n.name: g if (g := given.get(n.name)) is not None else node_categories(n)
            for n in self.nodes.values()
        }


class DumpSource(ABC):
    """A foreign dump as the dump model reads it (module docstring). Thread safety: the
    dump model calls it under its lock."""

    #: short name of the tool, for sentences and the header (`msprobe`, `tfdbg`)
    kind: str = ""
    #: the tool's statistics in words ("msprobe statistics (Max, Min, Mean, Norm)")
    statistics_words: str = ""
    #: whether a parameter's dumped value is the one after the step's update (MindSpore's
    #: end-of-step dump) or the one the calls read (msprobe: False); the origin trace asks
    parameters_after_update: bool = True

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(os.fspath(root)))
        self.problems: list[str] = []
        # sentences on how the dump was read that are also in `problems` (the TUI shows
        # them) but mean no data was left unread (tfdbg's derived steps): a compare says
        # them as notes, not as an incomplete run
        self.notes: list[str] = []

    # what the header shows: the device or framework, the tool's version, the net's name
    backend: str = ""
    version: str = ""
    net_name: str = ""

    @abstractmethod
    def ranks(self) -> list[int]: ...

    @abstractmethod
    def iterations(self, rank: int) -> list[int]: ...

    @abstractmethod
    def graphs(self, rank: int) -> dict[str, Graph]:
        """The rank's graphs by name; damaged data is sentences in `problems`."""

    @abstractmethod
    def read_step(self, rank: int, graph: str, iteration: int) -> ForeignStep:
        """One iteration's tensors; an unreadable one is a `ForeignStep` with blockers."""

    def refresh(self) -> bool:
        """Look for iterations that appeared since; True when some did."""
        return False

    def graph_runs(self, rank: int) -> list[GraphRun] | None:
        """The tool's own execution list for the history (`h`): one `GraphRun` per graph
        run, or None to list every graph at every iteration (the dump model's default)."""
        return None

    def source_text(self, path: str) -> list[str] | None:
        """The dump's own copy of a source file a stack names (tfdbg's `.source_files`), as
        lines, or None when it holds none: the source view shows it with no local file."""
        return None

    def step_inputs(self, rank: int, graph: str, iteration: int) -> dict[str, StepInputs]:
        """Node → its data edges at `iteration` where that step's records say they differ
        from the graph's (msprobe: inputs matched to outputs by their statistics). Blocking
        (it may read the step's files again); the dump keeps it with the step. Default: the
        graph's edges hold at every step."""
        return {}

    def aliases(self, rank: int) -> Mapping[str, tuple[str, int]]:
        """The tool's own tensor names (`Functional.linear.0.forward.output.0`) → the (node,
        output slot) holding that tensor, for the rank's graphs: what `NAME:SLOT@STEP`
        commands accept besides node names."""
        return {}
