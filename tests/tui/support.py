"""An in-memory `DebugSession` for TUI tests and benchmarks.

Real dumps (OfflineSession) cover the offline flows; this one covers what a dump cannot:
a live session's capabilities and states, synthetic graphs of any size, and exact control
over hits. It follows the DebugSession contract: events are emitted from the caller's
thread, like the real sessions do from their workers.

It also holds the one way TUI tests wait: for the condition they need (`wait_until`,
`wait_for_screen`, `wait_for_notice`), or, where nothing observable marks the end, for
the app's pending work (`settled`). Never a fixed number of rounds: a slow machine only
makes a wait longer, and a wait that never ends fails its test with a sentence naming
what it waited for.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from time import monotonic
from typing import Any, TypeVar

import numpy as np
import pytest
from textual.app import App
from textual.css.query import NoMatches
from textual.screen import Screen

from tuidebug.core.condition_catalogue import ParamResult, get_condition
from tuidebug.core.graph import Graph, Node, NodeKind, StackFrame, TensorSpec
from tuidebug.core.session import (
    Capabilities,
    DebugSession,
    Ending,
    GraphRun,
    GraphsLoaded,
    HitsArrived,
    Metadata,
    MetadataChanged,
    SessionError,
    SessionState,
)
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watch_targets import watched_nodes
from tuidebug.core.watchpoint_book import WatchpointChange
from tuidebug.core.watchpoints import Watchpoint, WatchpointHit
from tuidebug.tui.app import DebuggerApp

# A bound on every wait, far above what any test needs on a loaded machine: reaching it
# means the condition will not come, and the test fails saying what it waited for.
WAIT_TIMEOUT = 30.0

ScreenT = TypeVar("ScreenT", bound=Screen[Any])


async def wait_until(
    pilot: Any,
    predicate: Callable[[], object],
    *,
    what: str,
    timeout: float = WAIT_TIMEOUT,
    explain: Callable[[], object] | None = None,
) -> None:
    """Let the app run (`pilot.pause()`, which handles pending messages) until
    `predicate()` is true; fail the test naming `what` after `timeout` seconds (and what
    `explain()` says then, e.g. the header's text).

    A widget not mounted yet (`NoMatches`) counts as "not yet"."""
    deadline = monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except NoMatches:
            pass
        if monotonic() > deadline:
            now = f" Now: {explain()}" if explain is not None else ""
            pytest.fail(f"Waited {timeout:g} s for {what}; it did not happen.{now}", pytrace=False)
        await pilot.pause()


@contextmanager
def first_frame_of(take: Callable[[Any], Sequence[object]]) -> Iterator[list[object]]:
    """What `take(app)` returns when an app sends its first frame to the terminal (the
    first `App._display` with an update), in the list this yields: empty until then."""
    first: list[object] = []
    display = App._display

    def first_frame(self: App[Any], screen: Screen[Any], renderable: Any) -> None:
        if renderable is not None and not first:
            first.extend(take(self))
        display(self, screen, renderable)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(App, "_display", first_frame)
        yield first


async def wait_for_screen(
    pilot: Any, screen_type: type[ScreenT], *, timeout: float = WAIT_TIMEOUT
) -> ScreenT:
    """Wait until the active screen is a `screen_type` with its widgets mounted (a screen
    is active before its compose has run), and return it."""
    await wait_until(
        pilot,
        lambda: isinstance(pilot.app.screen, screen_type) and pilot.app.screen.is_mounted,
        what=f"the {screen_type.__name__} to be shown",
        timeout=timeout,
    )
    screen = pilot.app.screen
    assert isinstance(screen, screen_type)
    return screen


def notices(app: Any) -> list[str]:
    """The texts of the toasts the app has shown (and still shows)."""
    return [n.message for n in app._notifications]


async def wait_for_notice(pilot: Any, fragment: str, *, timeout: float = WAIT_TIMEOUT) -> str:
    """Wait for a toast containing `fragment`, and return its whole text."""
    found: list[str] = []

    def shown() -> bool:
        found[:] = [m for m in notices(pilot.app) if fragment in m]
        return bool(found)

    await wait_until(pilot, shown, what=f"a notice saying {fragment!r}", timeout=timeout)
    return found[0]


def _pending_work(app: Any) -> list[str]:
    """What the app still has to do: unfinished workers, unhandled messages."""
    busy = [f"worker {w.name or w.group!r}" for w in app.workers if not w.is_finished]
    pumps = [app, *app.screen.walk_children(with_self=True)]
    queued = sum(pump.message_queue_size for pump in pumps)
    return busy + ([f"{queued} queued messages"] if queued else [])


async def settled(pilot: Any, *, timeout: float = WAIT_TIMEOUT) -> None:
    """Wait for the app's pending work: no worker running and no message queued, twice in
    a row (a worker's result is a message, whose handler may start the next worker).

    For the places where nothing observable marks the end (before asserting that
    something did *not* happen, or before the next key of a flow); where a test needs a
    particular outcome, wait for that outcome with `wait_until` instead."""
    deadline = monotonic() + timeout
    quiet = 0
    while quiet < 2:
        await pilot.pause()
        pending = _pending_work(pilot.app)
        quiet = 0 if pending else quiet + 1
        if pending and monotonic() > deadline:
            pytest.fail(
                f"Waited {timeout:g} s for the app to settle; still pending: "
                + ", ".join(pending)
                + ".",
                pytrace=False,
            )


async def run_palette(pilot: Any, query: str) -> None:
    """Ctrl+P, type `query`, Enter on the best match once the search is done, and wait
    for the palette to close."""
    from textual.command import CommandList, CommandPalette

    await pilot.press("ctrl+p")
    palette = await wait_for_screen(pilot, CommandPalette)
    await pilot.press(*query)
    results = palette.query_one(CommandList)
    await wait_until(pilot, lambda: results.option_count, what=f"palette matches for {query!r}")
    await settled(pilot)  # the search done: more matches may arrive and re-sort after the first
    await pilot.press("enter")
    await wait_until(
        pilot,
        lambda: not isinstance(pilot.app.screen, CommandPalette),
        what=f"the palette to run the match for {query!r} and close",
    )


async def tensor_shown(pilot: Any, view: Any, *, timeout: float = WAIT_TIMEOUT) -> None:
    """`view` (a TensorView) shows a tensor with its statistics (a worker started after
    the first paint), and nothing else is pending."""
    await wait_until(
        pilot,
        lambda: view.state == "tensor" and view.statistics_settled,
        what="the tensor and its statistics to be shown",
        timeout=timeout,
    )
    await settled(pilot, timeout=timeout)


# in synthetic_graph(): the first scope's first two operators
CONV = "Default/network-Net/layer0-Block/Conv2D-op0"
RELU = "Default/network-Net/layer0-Block/ReLU-op1"


def synthetic_graph(
    name: str = "kernel_graph_0", scopes: int = 4, per_scope: int = 5, *, wide: int = 0
) -> Graph:
    """`scopes` scopes under Default/network, `per_scope` operators each (Conv2D, ReLU…),
    one weight parameter per scope, and an optional scope `Default/wide` with `wide`
    children (for the lazy-expansion benchmark). Gradients mirror the first scope."""
    nodes: list[Node] = []
    op_types = ["Conv2D", "ReLU", "MatMul", "Add", "Tanh"]
    previous = ""
    counter = itertools.count()
    for s in range(scopes):
        scope = f"Default/network-Net/layer{s}-Block"
        weight = Node(
            name=f"layer{s}.weight",
            kind=NodeKind.PARAMETER,
            op_type="Parameter",
            outputs=[TensorSpec(0, 11, (4, 4))],
        )
        nodes.append(weight)
        for i in range(per_scope):
            op = op_types[i % len(op_types)]
            full = f"{scope}/{op}-op{next(counter)}"
            inputs = [previous] if previous else []
            if i == 0:
                inputs.append(weight.name)
            nodes.append(
                Node(
                    name=full,
                    kind=NodeKind.OPERATOR,
                    op_type=op,
                    scope=scope,
                    inputs=inputs,
                    outputs=[TensorSpec(0, 11, (4, 4))],
                    attributes={"format": "NCHW"},
                    stack=[
                        StackFrame("/src/train.py", 40, "model.train(epochs)"),
                        StackFrame("/src/net.py", 10 + s, f"x = self.layer{s}(x)"),
                    ],
                )
            )
            previous = full
    grad_scope = "Gradients/Default/network-Net/gradLayer0"
    nodes.append(
        Node(
            name=f"{grad_scope}/Conv2DBackpropFilter-op{next(counter)}",
            kind=NodeKind.OPERATOR,
            op_type="Conv2DBackpropFilter",
            scope=grad_scope,
            inputs=[previous] if previous else [],
            outputs=[TensorSpec(0, 11, (4, 4))],
        )
    )
    for _ in range(wide):
        nodes.append(
            Node(
                name=f"Default/wide/Add-op{next(counter)}",
                kind=NodeKind.OPERATOR,
                op_type="Add",
                scope="Default/wide",
                outputs=[TensorSpec(0, 11, (2,))],
            )
        )
    return Graph(name, nodes)


@dataclass
class FakeSession(DebugSession):
    """Offline-like by default; `live=True` gives an online session's capabilities."""

    graph_list: Sequence[Graph] = ()
    live: bool = False
    max_step: int = 4
    first_time: bool = True
    nan_node: str | None = None  # this node's tensors contain NaN and Inf
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        DebugSession.__init__(self)
        self._graphs = {g.name: g for g in (self.graph_list or [synthetic_graph()])}
        self.capabilities = Capabilities(
            live=self.live,
            can_pause=self.live,
            can_terminate=self.live,
            can_reset_step=not self.live,
            can_step_node=False,
            step_zero_has_values=self.live,
            weight_init_only_at_step_zero=self.live,
        )
        self._metadata = Metadata(
            mode="online" if self.live else "offline",
            source="10.0.0.7:50123" if self.live else "/dumps/fake",
            state=SessionState.PENDING,
            max_step=None if self.live else self.max_step,
            backend="GPU" if self.live else "",
            device="0" if self.live else "",
            ms_version="2.0.0" if self.live else "",
        )
        self._hits: list[WatchpointHit] = []
        self._call = ""  # the watchpoint call being made, for `calls`

    # ---------------------------------------------------------------- state
    @property
    def metadata(self) -> Metadata:
        return self._metadata

    @property
    def graphs(self) -> Mapping[str, Graph]:
        return self._graphs if self._metadata.state is not SessionState.PENDING else {}

    @property
    def hits(self) -> Sequence[WatchpointHit]:
        return tuple(self._hits)

    def graph_runs(self) -> Sequence[GraphRun]:
        name = next(iter(self._graphs))
        return tuple(GraphRun(i, name, True) for i in range(self.max_step))

    def _set(self, **changes: object) -> None:
        md = self._metadata.with_(**changes)
        if not self.live:  # offline: step s shows dump iteration s - 1, as OfflineSession
            md = md.with_(iteration=md.step - 1 if md.step > 0 else None)
        self._metadata = md
        self.emit(MetadataChanged(self._metadata))

    def step_of(self, ref: TensorRef) -> int:
        if ref.iteration is None:
            return self._metadata.step
        return ref.iteration + (0 if self.live else 1)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.calls.append("start")
        self._set(state=SessionState.LOADING, graph_names=tuple(self._graphs))
        self._set(state=SessionState.WAITING, step=1)
        self.emit(GraphsLoaded(self._graphs, first_time=self.first_time))

    def close(self) -> None:
        self.calls.append("close")

    # ----------------------------------------------------------- watchpoints
    # the book (ids, validation, events) is DebugSession's, as in the real sessions; the
    # fake records each call once its change is made (before its event goes out) and drops
    # a deleted watchpoint's hits
    def create_watchpoint(
        self,
        condition: str,
        params: Mapping[str, float],
        targets: Sequence[str] = (),
        graph_name: str | None = None,
    ) -> Watchpoint:
        self._call = f"create {get_condition(condition).abbr} {dict(params)} {tuple(targets)}"
        return super().create_watchpoint(condition, params, targets, graph_name)

    def update_watchpoint(
        self,
        watchpoint_id: int,
        params: Mapping[str, float] | None = None,
        targets: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> Watchpoint:
        self._call = f"update {watchpoint_id}"
        return super().update_watchpoint(watchpoint_id, params, targets, enabled)

    def delete_watchpoint(self, watchpoint_id: int) -> None:
        self._call = f"delete {watchpoint_id}"
        super().delete_watchpoint(watchpoint_id)

    def _watchpoints_changed(self, change: WatchpointChange) -> None:
        self.calls.append(self._call)
        super()._watchpoints_changed(change)

    def _forget_watchpoint(self, watchpoint_id: int) -> None:
        self._hits = [h for h in self._hits if h.watchpoint_id != watchpoint_id]
        self.emit(HitsArrived(tuple(self._hits), self._metadata.step))

    def apply_recommended(self) -> list[Watchpoint]:
        return [
            self.create_watchpoint("tensor_overflow", {}),
            self.create_watchpoint("weight_change_too_large", {"abs_mean_update_ratio_gt": 1.0}),
        ]

    # --------------------------------------------------------------- control
    def step(self, count: int = 1) -> None:
        self.calls.append(f"step {count}")
        target = self._metadata.step + count
        if self._metadata.max_step is not None and target > self._metadata.max_step:
            raise SessionError(f"There is no step {target}; the dump ends at step {self.max_step}.")
        self._set(step=target)
        self.recheck()

    def continue_(self) -> None:
        self.calls.append("continue")
        self._set(step=self._metadata.max_step or self._metadata.step + 1)
        self.recheck()

    def pause(self) -> None:
        self.calls.append("pause")
        self._set(state=SessionState.WAITING)

    def terminate(self) -> None:
        self.calls.append("terminate")
        self._set(state=SessionState.DONE, ending=Ending.TERMINATED)

    def reset_step(self, step: int) -> None:
        self.calls.append(f"reset {step}")
        if self.live:
            raise SessionError("Only offline sessions can jump to another step.")
        self._set(step=step)

    def recheck(self) -> None:
        """Every enabled watchpoint hits its first watched node (deterministic)."""
        self.calls.append("recheck")
        hits: list[WatchpointHit] = []
        # offline refs carry the dump iteration (step - 1), online ones the step itself
        iteration = self._metadata.step - (0 if self.live else 1)
        for wp in self.watchpoints:
            if not wp.enabled:
                continue
            graph = next(iter(self._graphs.values()))
            spec = wp.condition
            for node in watched_nodes(spec, wp.targets, graph, constants=True)[:2]:
                params = tuple(
                    ParamResult(k, v, False, hit=True, actual=v * 2 + 1)
                    for k, v in wp.params.items()
                )
                error = 4 if spec.needs_prev and iteration == 0 else 0
                ref = TensorRef(node.name, 0, iteration, 0, graph.name)
                hits.append(
                    WatchpointHit(
                        wp.id, spec, ref, error, () if error else params, step=self.step_of(ref)
                    )
                )
        self._hits = hits
        self.emit(HitsArrived(tuple(hits), self._metadata.step))

    # --------------------------------------------------------------- tensors
    def tensor(self, ref: TensorRef, previous: bool = False) -> np.ndarray | None:
        step = self._metadata.step - (1 if previous else 0)
        if step < 1:
            return None
        seed = (zlib.crc32(ref.node.encode()) + ref.slot * 7 + step) % (2**32)
        data = np.random.default_rng(seed).standard_normal((4, 4)).astype(np.float32)
        if ref.node == self.nan_node:
            data[0, 0] = np.nan
            data[1, 1] = np.inf
        return data


def make_app(**kwargs: Any) -> tuple[DebuggerApp, FakeSession]:
    """The debugger app on a new `FakeSession(**kwargs)`, which the app starts."""
    session = FakeSession(**kwargs)
    return DebuggerApp(session, start_session=True), session


_CSI = re.compile(r"\x1b\[(\d+);(\d+)H|\x1b\[[0-9;]*m")


def screen_text(app: Any) -> str:
    """What the app would write to the terminal for its whole screen now, with Textual's
    own cursor moves and colours taken out (a move becomes a line break): whatever control
    character is left came from a string the app showed."""
    update = app.screen._compositor.render_update(full=True)
    data = update.render_segments(app.console)
    return _CSI.sub(lambda m: "\n" if m.group(1) else "", data)
