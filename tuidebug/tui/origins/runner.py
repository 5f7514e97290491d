"""Running a NaN/Inf trace for the app: its thread worker, its progress in the header,
Esc to cancel it, and the origin screen when it ends.

`OriginTracing` is a helper object of the `DebuggerApp` (not a mixin: see
watchpoint_flows.py); the app decides where a trace starts (`action_trace_origin`) and
hands the trace's messages (`TraceProgress`, `TraceEnded`) over to it. What to trace and
what to count is origin_trace.py's (no Textual there); the walk is core.origins'.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.worker import Worker, get_current_worker

from tuidebug.core.text import step_text
from tuidebug.tui.kit.session_text import is_user_error
from tuidebug.tui.messages import TraceEnded, TraceProgress
from tuidebug.tui.panes.header import SessionHeader

if TYPE_CHECKING:
    from tuidebug.core.graph import Graph
    from tuidebug.tui.host import AppHost

# The walk (core.origins, tui.origin_trace) and the origin screen (a DataTable) are
# imported when a trace runs or ends, not with the app: the first frame never needs them.

# (graph, node, slot, iteration) → show that tensor (the app's tensor request)
OpenTensor = Callable[[str, str, int, "int | None"], None]


class OriginTracing:
    """At most one trace at a time (a new one replaces the running one)."""

    def __init__(self, app: AppHost, header: SessionHeader, open_tensor: OpenTensor) -> None:
        self._app = app
        self._header = header
        self._open_tensor = open_tensor
        self.running = False  # a trace runs (Esc cancels it)
        self._worker: Worker[None] | None = None

    def start(self, graph: Graph, start: str, iteration: int | None, rank: int, step: int) -> None:
        """Trace from node `start` at dump `iteration` (None: the current step), which
        the user knows as `step`."""
        self.running = True
        self._worker = self._app.run_worker(
            partial(self._trace, graph, start, iteration, rank, step),
            thread=True,
            exclusive=True,
            group="origins",
            exit_on_error=False,
        )

    def cancel(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
        self._finished()
        self._app.notify("Trace cancelled.")

    def _post(self, message: TraceProgress | TraceEnded) -> None:
        """Post from the worker; dropped once the app has stopped (its loop is closed)."""
        with contextlib.suppress(RuntimeError):
            self._app.post_message(message)

    def _trace(self, graph: Graph, start: str, iteration: int | None, rank: int, step: int) -> None:
        """(worker) The walk and the counts of the origins, reported as one TraceEnded."""
        from tuidebug.core.origins import TraceCancelled, trace_in_session
        from tuidebug.tui.origins.trace import origin_counts, throttled_progress

        worker = get_current_worker()
        session = self._app.session
        try:
            trace = trace_in_session(
                session,
                graph,
                start,
                iteration=iteration,
                rank=rank,
                cancelled=lambda: worker.is_cancelled,
                progress=throttled_progress(lambda read: self._post(TraceProgress(read))),
            )
            counts = origin_counts(
                session, trace, graph, iteration, rank, lambda: worker.is_cancelled
            )
        except TraceCancelled:
            return  # Esc said so, and said it already
        except Exception as exc:
            if not worker.is_cancelled:
                message = str(exc) if is_user_error(exc) else f"The trace failed: {exc}"
                self._post(TraceEnded(error=message))
            return
        if worker.is_cancelled:
            return
        self._post(TraceEnded(trace, graph=graph, iteration=iteration, step=step, counts=counts))

    def progress(self, message: TraceProgress) -> None:
        if self.running:
            read = message.read
            self._header.set_progress(f"Tracing… {read} tensors read (Esc cancels)", read, 0)

    def _finished(self) -> None:
        self.running = False
        self._header.set_progress("", 1, 1)

    def ended(self, message: TraceEnded) -> None:
        """The origin screen (Enter opens an origin's tensor), or why there is none."""
        from tuidebug.tui.origins.screen import OriginScreen
        from tuidebug.tui.origins.trace import nothing_found

        self._finished()
        app = self._app
        trace, graph, iteration = message.trace, message.graph, message.iteration
        if trace is None or graph is None:
            app.notify(message.error, severity="error")
            return
        # the step the trace read (the current one may have moved since)
        step = step_text(message.step, app.session.iteration_of_step(message.step))
        sentence = nothing_found(trace, graph, step)
        if sentence is not None:
            app.notify(sentence)
            return

        def chosen(answer: tuple[str, int] | None) -> None:
            if answer is None:
                return
            origin, slot = answer
            if app.go_to_node(graph.name, origin):
                self._open_tensor(graph.name, origin, slot, iteration)

        app.push_screen(OriginScreen(trace, graph, step, message.counts), chosen)


__all__ = ["OriginTracing"]
