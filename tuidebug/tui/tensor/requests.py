"""Opening a tensor in the tensor view and reading the selected node's output summaries,
each in a thread worker of its own exclusive group (`tensor`, `summaries`), so a newer
request cancels the older one's work.

`TensorRequests` is a helper object of the `DebuggerApp` (not a mixin: watchpoints/flows.py
says why). It keeps which tensor is open (back and forward, compare and a new step read
it) and which request is the latest: a worker's answer to an older one is dropped. The
app keeps the `@on` handlers of the workers' messages and hands them over. The reads
(tensor/reads.py, and the session's tensor modules it loads) are imported by the workers,
not with the app: nothing is read before the first frame (issue 28).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.worker import get_current_worker

from tuidebug.core.tensor import TensorRef
from tuidebug.tui.messages import SummaryRead, TensorRead
from tuidebug.tui.tensor.files import file_stem

if TYPE_CHECKING:
    from tuidebug.core.graph import Node
    from tuidebug.core.watchpoints import WatchpointHit
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.panes.node_details import NodeDetails
    from tuidebug.tui.tensor.reads import TensorAnswer
    from tuidebug.tui.tensor.view import TensorView

# graph, node, slot, iteration (None: the current step)
OpenTensor = tuple[str, str, int, "int | None"]


class TensorRequests:
    """The tensor view's and the node details' reads of one app."""

    def __init__(
        self,
        app: AppHost,
        tensor: TensorView,
        details: NodeDetails,
        opened: Callable[[str, str, int, int | None], None],
    ) -> None:
        self._app = app
        self._tensor = tensor
        self._details = details
        self._opened = opened  # a tensor is opened: a visit for back and forward
        self.open: OpenTensor | None = None  # the tensor the view shows or loads
        # (trip shown, trips) of the open tensor, when a control-flow loop wrote one file
        # per trip in its step; None: one value (`( / )` say so)
        self.trip: tuple[int, int] | None = None
        self._refocus = False  # give the tensor view the focus back once the trip shows
        self._latest = 0  # the latest request; an older answer is dropped

    def _post(self, message: SummaryRead | TensorRead) -> None:
        """Post from a worker; dropped once the app has stopped (its loop is closed)."""
        with contextlib.suppress(RuntimeError):
            self._app.post_message(message)

    # -------------------------------------------------------------- summaries
    def fetch_summaries(self, graph: str, node: Node) -> None:
        shown = self._details.graph
        # a foreign call's arguments (inputs, parameters: other nodes' outputs), read here
        # on the UI thread from the graph the details show
        args = list(shown.arguments(node.name)) if shown is not None and shown.name == graph else []
        if node.outputs or args:
            work = partial(self._summaries, graph, node, self._app.metadata.rank, args)
            self._run(work, "summaries")

    def _run(self, work: Callable[[], None], group: str) -> None:
        self._app.run_worker(work, group=group, exit_on_error=False, exclusive=True, thread=True)

    def _summaries(
        self, graph: str, node: Node, rank: int, args: list[tuple[str, str, int]]
    ) -> None:
        from tuidebug.tui.tensor.reads import summarize

        worker = get_current_worker()
        session = self._app.session
        for spec in node.outputs:
            if worker.is_cancelled:
                return
            summary = summarize(session, TensorRef(node.name, spec.slot, None, rank, graph))
            if worker.is_cancelled:
                return
            self._post(SummaryRead(node.name, spec.slot, summary))
        for index, (_label, source, slot) in enumerate(args):
            if worker.is_cancelled:
                return
            summary = summarize(session, TensorRef(source, slot, None, rank, graph))
            if worker.is_cancelled:
                return
            self._post(SummaryRead(node.name, slot, summary, argument=index))

    def summary_read(self, message: SummaryRead) -> None:
        if message.argument is not None:
            self._details.set_argument_summary(message.node, message.argument, message.summary)
            return
        self._details.set_summary(message.node, message.slot, message.summary)

    # ---------------------------------------------------------------- tensors
    def request(
        self,
        graph_name: str,
        node_name: str,
        slot: int,
        iteration: int | None,
        hit: WatchpointHit | None = None,
        trip: int | None = None,
    ) -> None:
        """Open a tensor in the tensor view (`hit`: the hit it is opened from, shown
        above it with its condition and what to try; `trip`: which loop trip, 1 the
        first, None the last — the value the checks read)."""
        app = self._app
        graph = app.graphs.get(graph_name)
        node = graph.get(node_name) if graph else None
        if node is None:
            app.notify(f"There is no node {node_name} in {graph_name}.", severity="warning")
            return
        if node.outputs and slot not in {spec.slot for spec in node.outputs}:
            app.notify(f"{node.short_name} has no output slot {slot}.", severity="warning")
            return
        if trip is None:  # another trip of the same tensor is not a visit of its own
            self._opened(graph_name, node.name, slot, iteration)
        self.open = (graph_name, node.name, slot, iteration)
        self.trip = None
        ref = TensorRef(node.name, slot, iteration, app.metadata.rank, graph_name)
        title = f"{node.short_name}:{slot}  ({node.op_type}, {app.session.step_label(ref)})"
        self._tensor.show_loading(title)
        capabilities = app.session.capabilities
        # Offline every tensor has its previous run in the dump; a live training keeps
        # only the parameters' (asking it for any other costs a round trip for nothing).
        want_previous = capabilities.can_compare_previous and (
            node.is_parameter or not capabilities.live
        )
        context = ""
        if hit is not None:  # its module loads numpy, which the app's start does without
            from tuidebug.tui.tensor.text import hit_context

            context = hit_context(hit)
        self._latest += 1
        work = partial(self._read, self._latest, node, ref, title, want_previous, context, trip)
        self._run(work, "tensor")

    def move_trip(self, delta: int) -> None:
        """`(` / `)`: the open tensor's earlier or later loop trip, or why there is none."""
        if self.open is None:
            return
        graph, node, slot, iteration = self.open
        if self.trip is None:
            short = node.rsplit("/", 1)[-1]
            self._app.notify(
                f"{short}:{slot} has one value in this step: only a control-flow loop "
                "dumps a tensor once per trip.",
                timeout=5,
            )
            return
        shown, trips = self.trip
        wanted = shown + delta
        if not 1 <= wanted <= trips:
            edge = "first" if wanted < 1 else "last"
            self._app.notify(f"Trip {shown} is the {edge} of {trips}.", timeout=3)
            return
        self._refocus = True  # the view keeps the keys: ( ( walks back two trips
        self.request(graph, node, slot, iteration, trip=wanted)

    def _read(
        self,
        request: int,
        node: Node,
        ref: TensorRef,
        title: str,
        previous: bool,
        context: str,
        trip: int | None,
    ) -> None:
        from tuidebug.tui.tensor.reads import read_tensor, read_trip, trip_count

        worker = get_current_worker()
        app = self._app
        trips = trip_count(app.session, ref)
        shown = trips if trip is None else min(max(trip, 1), trips)
        answer: TensorAnswer | None
        if shown != trips:  # an earlier trip: its own file; the previous step has no match
            answer = read_trip(app.session, node, ref, shown)
        else:
            answer = read_tensor(
                app.session,
                node,
                ref,
                want_previous=previous,
                shown_step=app.metadata.step,
                cancelled=lambda: worker.is_cancelled,
            )
        if answer is None or worker.is_cancelled:
            return
        if trips > 1:
            title = f"{title} · trip {shown}/{trips}"
        if answer.error:
            self._post(TensorRead(request, error=answer.error))
            return
        ranks = len(app.metadata.ranks)
        stem = file_stem(
            node.name, ref.slot, app.session.step_of(ref), ref.rank if ranks > 1 else None
        )
        self._post(
            TensorRead(
                request,
                title=title,
                array=answer.array,
                previous=answer.previous,
                note=answer.note,
                short_name=node.short_name,
                slot=ref.slot,
                file_stem=stem,
                context=context,
                trip=(shown, trips) if trips > 1 else None,
            )
        )

    def tensor_read(self, message: TensorRead) -> None:
        if message.request != self._latest:
            return  # a later request is open now
        refocus, self._refocus = self._refocus, False
        if message.error:
            self._tensor.show_error(message.error)
            return
        assert message.array is not None
        self.trip = message.trip
        self._tensor.show(
            message.title,
            message.array,
            message.previous,
            note=message.note,
            short_name=message.short_name,
            slot=message.slot,
            file_stem=message.file_stem,
            context=message.context,
        )
        if refocus:  # once the grid is shown again (until then the focus would go elsewhere)
            self._tensor.call_after_refresh(self._tensor.focus)


__all__ = ["OpenTensor", "TensorRequests"]
