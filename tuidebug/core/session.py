"""The one interface the TUI talks to: `DebugSession`, and the events it pushes.

`OfflineSession` (offline/session.py) and `OnlineSession` (online/session.py) implement it.
The TUI never asks which one it has; it reads `capabilities` instead. Sessions push events
through one thread-safe callback (`subscribe`); the TUI turns them into Textual messages.
Blocking calls (`tensor`, `load`) are called from TUI workers, never from the UI thread.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING

from tuidebug.core.graph_run import GraphRun
from tuidebug.core.session_error import SessionError
from tuidebug.core.watchpoint_book import WatchpointBook, WatchpointChange

if TYPE_CHECKING:
    import numpy as np

    from tuidebug.core.graph import Graph, StepInputs
    from tuidebug.core.tensor import TensorRef
    from tuidebug.core.tensor_listing import TensorEntry
    from tuidebug.core.watchpoints import Watchpoint, WatchpointHit

__all__ = [
    "Capabilities",
    "ClientDisconnected",
    "DebugSession",
    "EventLog",
    "GraphRun",
    "GraphsLoaded",
    "HitsArrived",
    "Listener",
    "Metadata",
    "MetadataChanged",
    "Notice",
    "Progress",
    "SessionError",
    "SessionEvent",
    "SessionState",
    "WatchpointsChanged",
]


class SessionState(str, Enum):
    """Spec §2.13 states, plus the ones a terminal UI needs to say what is going on."""

    PENDING = "pending"  # online: waiting for a training to connect; offline: nothing loaded
    LOADING = "loading"  # reading a dump / receiving a graph
    WAITING = "waiting"  # suspended: ready for commands
    SENDING = "sending"  # a command is queued but not delivered yet
    RUNNING = "running"  # training (or offline continue) in progress
    MISMATCH = "mismatch"  # version mismatch: only terminate is allowed
    NODE_TOO_LARGE = "node_too_large"
    DISCONNECTED = "disconnected"  # the client went away (heartbeat loss, exit)
    DONE = "done"  # training finished (`training_done`) or terminated


class Ending(Enum):
    """How a live training ended (`Metadata.ending` once the state is DONE or
    DISCONNECTED), each named for what it was: a terminate, a goodbye, a closed connection
    and missed heartbeats ask different things of the user (nothing, nothing, look at the
    training's log, look at the machine). The value is the header's label."""

    NONE = ""
    TERMINATED = "terminated by you"  # `T`: the debugger sent the exit command
    FINISHED = "finished its steps"  # the training's goodbye (`training_done`)
    CLOSED = "connection closed"  # its connection closed without a goodbye
    LOST = "lost: no heartbeat"  # its heartbeats stopped (a hung or killed process)

    @property
    def sentence(self) -> str:
        """The banner's sentence for this ending ("" for none)."""
        return _ENDING_SENTENCES[self]


_ENDING_SENTENCES = {
    Ending.NONE: "",
    Ending.TERMINATED: "Terminated by you: the training was told to exit.",
    Ending.FINISHED: "The training finished its steps and said goodbye.",
    Ending.CLOSED: "The training closed its connection: disconnected without a goodbye.",
    Ending.LOST: "Lost: no heartbeat from the training, so it is taken as disconnected.",
}


@dataclass(frozen=True)
class Capabilities:
    """What the session can do; the TUI enables keys and panes from this alone."""

    live: bool = False  # online session with a training process behind it
    can_step: bool = True
    can_continue: bool = True
    can_pause: bool = False
    # a running step, continue or recheck can be stopped part-way with `pause()` (offline:
    # at the next tensor, the hits found so far kept); `can_pause` is a live training's
    can_stop_run: bool = False
    can_terminate: bool = False
    can_step_node: bool = False  # GPU-style "next node" / "run to node"
    can_reset_step: bool = False  # offline: jump to any step
    can_compare_previous: bool = True
    # step 0 holds tensor values (online: the initial suspension). Offline it does not:
    # MindInsight's offline steps start at 1 and step 0 means nothing is loaded yet.
    step_zero_has_values: bool = True
    # weight_initialization is checked only at step 0 (online: MindSpore evaluates it at
    # the initial suspension only, spec §2.6); elsewhere it may be set at any step
    weight_init_only_at_step_zero: bool = False
    # a watchpoint without a graph watches every graph (offline): the recommended set is one
    # watchpoint per condition across graphs, not one per condition per graph
    watch_across_graphs: bool = False
    # a parameter's dumped value is the one after the step's update (MindSpore dumps it
    # at the end of the step), so what the step's kernels read is the previous step's; an
    # msprobe dump records it when the call reads it (False): the origin trace reads it as is
    parameters_after_update: bool = True


@dataclass(frozen=True)
class Metadata:
    """The header line: where the data comes from and where the run stands."""

    mode: str  # "offline" | "online": the header's badge, nothing else depends on it
    source: str  # dump path, or client address
    state: SessionState = SessionState.PENDING
    step: int = (
        0  # offline: 1-based step (iteration = step - 1; 0 = nothing loaded); online: cur_step
    )
    max_step: int | None = None
    rank: int = 0
    ranks: tuple[int, ...] = (0,)
    backend: str = ""
    device: str = ""
    ms_version: str = ""
    cur_node: str = ""
    graph_names: tuple[str, ...] = ()
    # where a step shows a dump iteration (offline), the one the current step shows; None
    # where steps are not iterations (online) or nothing is loaded (offline step 0)
    iteration: int | None = None
    message: str = ""  # a banner line (e.g. version mismatch, disconnected)
    # how a live training ended (state DONE or DISCONNECTED); NONE while it runs
    ending: Ending = Ending.NONE

    def with_(self, **changes: object) -> Metadata:
        return replace(self, **changes)  # type: ignore[arg-type]


# ------------------------------------------------------------------ events
@dataclass(frozen=True)
class SessionEvent:
    """Base of everything a session pushes to its subscribers."""


@dataclass(frozen=True)
class GraphsLoaded(SessionEvent):
    graphs: Mapping[str, Graph]
    first_time: bool = True  # offer the recommended watchpoints when true


@dataclass(frozen=True)
class MetadataChanged(SessionEvent):
    metadata: Metadata


@dataclass(frozen=True)
class WatchpointsChanged(SessionEvent):
    watchpoints: tuple[Watchpoint, ...]


@dataclass(frozen=True)
class HitsArrived(SessionEvent):
    hits: tuple[WatchpointHit, ...]  # the complete current hit list, in execution order
    step: int = 0
    # the check of `step` was stopped part-way (`pause()` during a run): `hits` are the
    # ones it found before it stopped
    partial: bool = False


@dataclass(frozen=True)
class Progress(SessionEvent):
    label: str
    done: int
    total: int  # 0 = unknown


@dataclass(frozen=True)
class ClientDisconnected(SessionEvent):
    reason: str


@dataclass(frozen=True)
class Notice(SessionEvent):
    """A one-sentence message for the user (a bad file, a refused command)."""

    message: str
    severity: str = "information"  # "information" | "warning" | "error"


Listener = Callable[[SessionEvent], None]


class DebugSession(ABC):
    """Shared behaviour: subscribers and the event fan-out, and the watchpoints (one
    `WatchpointBook`: create/update/delete are written once, here). Subclasses hold the
    rest of the state and say, through three small hooks, what differs: which graph a new
    watchpoint lives in (`_watch_graph`), whether its targets resolve (`_check_targets`),
    and what a deleted watchpoint takes with it (`_forget_watchpoint`: its hits)."""

    capabilities: Capabilities = Capabilities()

    def __init__(self, *, lock: threading.RLock | None = None) -> None:
        """`lock`: the one the session guards its state with, when the watchpoint hooks read
        that state (the book holds it during each change)."""
        self._listeners: list[Listener] = []
        self._listeners_lock = threading.Lock()
        self.watchpoint_book = WatchpointBook(self._watchpoints_changed, lock=lock)

    # ------------------------------------------------------------- events
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Register a callback (called from any thread); returns an unsubscribe function."""
        with self._listeners_lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._listeners_lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def emit(self, event: SessionEvent) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(event)

    # -------------------------------------------------------------- state
    @property
    @abstractmethod
    def metadata(self) -> Metadata: ...

    @property
    @abstractmethod
    def graphs(self) -> Mapping[str, Graph]:
        """Graphs of the current rank, by graph name."""

    @property
    def watchpoints(self) -> Sequence[Watchpoint]:
        return self.watchpoint_book.all()

    @property
    @abstractmethod
    def hits(self) -> Sequence[WatchpointHit]: ...

    def graph_runs(self) -> Sequence[GraphRun]:
        """The graph execution history; empty when the session has none."""
        return ()

    def step_of(self, ref: TensorRef) -> int:
        """The step the user sees for a tensor: `ref.iteration` read the session's way
        (what a title or a hit row says), the current step when the ref names none.
        Default: iterations are steps (online)."""
        return self.metadata.step if ref.iteration is None else ref.iteration

    def tensor_trips(self, ref: TensorRef) -> int:
        """How many values one tensor has in one step: a control-flow loop runs a kernel
        once per trip, and a dump keeps a file per trip. Default: one (online)."""
        return 1

    def tensor_trip(self, ref: TensorRef, trip: int) -> np.ndarray | None:
        """The tensor's value at loop trip `trip` (1-based, 1 the first) of its step; None
        when it has no such trip. Default: the one value is trip 1."""
        return self.tensor(ref) if trip == 1 else None

    def iteration_of_step(self, step: int) -> int | None:
        """The dump iteration step `step` shows, None where steps are not dump iterations.
        Default: none (online)."""
        return None

    def step_label(self, ref: TensorRef | None = None) -> str:
        """`core.text.step_text` of a tensor's step (the current step when `ref` or its
        iteration is None): what every title and sentence about the tensor says."""
        from tuidebug.core.tensor import TensorRef
        from tuidebug.core.text import step_text

        step = self.step_of(ref if ref is not None else TensorRef(""))
        return step_text(step, self.iteration_of_step(step))

    def tensor_entries(self, iteration: int | None = None) -> list[TensorEntry]:
        """The output tensors of a step (`iteration` as `TensorRef.iteration` reads it; None
        = the current one) in execution order, without reading any value. Default: every
        declared output of every graph, in graph order (all a live training has)."""
        from tuidebug.core.tensor_listing import entries_of_graph

        step = self.metadata.step if iteration is None else iteration
        out: list[TensorEntry] = []
        for graph in self.graphs.values():
            out.extend(entries_of_graph(graph, step))
        return out

    def dumped_iterations(self, graph_name: str, node: str) -> list[int]:
        """The iterations holding data of `node` (offline), empty when the session keeps no
        history of values."""
        return []

    def tensor_alias(self, name: str) -> tuple[str, str, int] | None:
        """(graph, node, slot) of a tensor named by its dump tool's own name (an msprobe
        dump's `Functional.linear.0.forward.output.0`) on the shown rank; None when `name`
        is no such name. Default: None (MindSpore names tensors by node and slot)."""
        return None

    def source_text(self, path: str) -> list[str] | None:
        """The dump's own copy of a source file a stack names, as lines (a tfdbg dump's
        `.source_files`), None when it holds none: the source view shows it then, with no
        local file needed. Blocking (call it from a worker). Default: None."""
        return None

    def dumped_statistics(self, ref: TensorRef) -> Mapping[str, float] | None:
        """The statistics a dump wrote for a tensor (a MindSpore `statistic.csv` row: keys of
        `offline.statistic_csv.STAT_COLUMNS` such as "max", "nan_count"), None when it has
        none. What the tensor view shows for a statistic-only dump, whose values were not
        dumped. Blocking, like `tensor`. Default: None (a live session dumps nothing)."""
        return None

    def step_inputs(
        self, graph: str, iteration: int | None = None, rank: int | None = None
    ) -> Mapping[str, StepInputs]:
        """Node → its data edges at `iteration` (the current step's when None) where that
        step's own records say they differ from the graph's (an msprobe dump links inputs
        to outputs by their statistics, step by step); the origin trace walks these.
        Blocking, like `tensor`. Default: none differ."""
        return {}

    # ---------------------------------------------------------- lifecycle
    @abstractmethod
    def start(self) -> None:
        """Begin (offline: load the dump; online: start listening). May block: call it from a
        worker. Progress and results arrive as events."""

    @abstractmethod
    def close(self) -> None: ...

    def select_rank(self, rank: int) -> None:
        raise SessionError("This session has a single rank.")

    # -------------------------------------------------------- watchpoints
    def create_watchpoint(
        self,
        condition: str,
        params: Mapping[str, float],
        targets: Sequence[str] = (),
        graph_name: str | None = None,
    ) -> Watchpoint:
        """`condition` is an id or abbreviation (spec §3.1). `targets` are node names or scope
        paths of `graph_name`; empty = the condition's whole category (weight, gradient,
        activation) or every node (tensor conditions). Invalid parameters raise
        `WatchpointError` with one sentence."""
        return self.watchpoint_book.create(
            condition,
            params,
            targets,
            graph_name,
            place=self._watch_graph,
            check=self._check_targets,
        )

    def update_watchpoint(
        self,
        watchpoint_id: int,
        params: Mapping[str, float] | None = None,
        targets: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> Watchpoint:
        return self.watchpoint_book.update(
            watchpoint_id, params, targets, enabled, check=self._check_targets
        )

    def delete_watchpoint(self, watchpoint_id: int) -> None:
        with self.watchpoint_book.lock:
            self.watchpoint_book.delete(watchpoint_id)
            self._forget_watchpoint(watchpoint_id)

    def _watch_graph(self, graph_name: str | None) -> str | None:
        """The graph a new watchpoint lives in (None = every graph); refuse an unknown one
        with one sentence. Default: as given."""
        return graph_name

    def _check_targets(self, watchpoint: Watchpoint, targets_changed: bool) -> None:
        """Raise `WatchpointError` when the watchpoint's targets name nothing (called before
        a create, and before an update with `targets_changed` telling whether its targets
        are new). Default: accept."""
        return None

    @abstractmethod
    def _forget_watchpoint(self, watchpoint_id: int) -> None:
        """A watchpoint was deleted (called under the book's lock): drop its hits and
        publish the list when it changed."""

    def _watchpoints_changed(self, change: WatchpointChange) -> None:
        """The book changed (called under its lock). Default: publish the new list."""
        self.emit(WatchpointsChanged(change.watchpoints))

    def apply_recommended(self) -> list[Watchpoint]:
        """Create the recommended watchpoints of spec §4 for the loaded graphs: one per
        condition across graphs where a watchpoint can watch every graph
        (`watch_across_graphs`), else one per condition per graph, as MindInsight does."""
        from tuidebug.core.watchpoints import (
            framework_of,
            merge_recommended,
            recommended_watchpoints,
        )

        backend = self.metadata.backend
        # a PyTorch training gets PyTorch's rules; MindSpore's set is MindInsight's exactly
        framework = framework_of(self.metadata.ms_version)
        graphs = list(self.graphs.values())
        if self.capabilities.watch_across_graphs and len(graphs) > 1:
            merged = merge_recommended(
                recommended_watchpoints(g, backend=backend, framework=framework) for g in graphs
            )
            return [self.create_watchpoint(r.condition, r.params, r.targets) for r in merged]
        created = []
        for graph in graphs:
            for rec in recommended_watchpoints(graph, backend=backend, framework=framework):
                created.append(
                    self.create_watchpoint(
                        rec.condition, rec.params, rec.targets, graph_name=graph.name
                    )
                )
        return created

    # ------------------------------------------------------------ control
    @abstractmethod
    def step(self, count: int = 1) -> None:
        """Run `count` steps (offline: advance and check the next iteration(s))."""

    @abstractmethod
    def continue_(self) -> None:
        """Run until a watchpoint hits (offline: or the last step)."""

    def pause(self) -> None:
        """Pause a live training (`can_pause`), or stop a running step or continue
        (`can_stop_run`: offline, at the next tensor)."""
        raise SessionError("Pause is only possible while a live training is running.")

    def terminate(self) -> None:
        raise SessionError("There is no training to terminate.")

    def step_node(self, target: str | None = None) -> None:
        """Next kernel (`target=None`) or run to a kernel; GPU-style node stepping."""
        raise SessionError("Node stepping is not supported by this backend.")

    def reset_step(self, step: int) -> None:
        raise SessionError("Only offline sessions can jump to another step.")

    @abstractmethod
    def recheck(self) -> None:
        """Evaluate every enabled watchpoint again at the current step."""

    # ------------------------------------------------------------ tensors
    @abstractmethod
    def tensor(self, ref: TensorRef, previous: bool = False) -> np.ndarray | None:
        """The value of a tensor (blocking; call from a worker). `previous=True` asks for the
        previous step's value. None when the tensor has no value at that step; unreadable
        data raises `SessionError` with one sentence."""


@dataclass
class EventLog:
    """A subscriber that records events; handy for headless use and tests."""

    events: list[SessionEvent] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cond: threading.Condition = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cond = threading.Condition(self._lock)

    def __call__(self, event: SessionEvent) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def wait_for(
        self, kind: type[SessionEvent], timeout: float = 10.0, after: int = 0
    ) -> SessionEvent:
        """Block until an event of `kind` (at index ≥ `after`) has arrived."""
        with self._cond:
            found = self._cond.wait_for(
                lambda: any(isinstance(e, kind) for e in self.events[after:]), timeout
            )
            if not found:
                raise TimeoutError(f"no {kind.__name__} within {timeout} s")
            return next(e for e in self.events[after:] if isinstance(e, kind))
