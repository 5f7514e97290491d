"""What the main screen shows of the session's hits: the hit list with its tab's count,
each watchpoint's count, the tree's badges, the header's "hits at this step", and the
"N watchpoint hits" toast; and a hit chosen in the list, opened where it is.

`HitsShown` is a helper object of the `DebuggerApp` (not a mixin: flows.py says why). The
app says when to show hits (a stopped check, the end of a run) and when the badges are
stale (new watchpoints, another graph); what the guards and the control bar make of the
count is the app's `state_changed`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tuidebug.core.session import SessionState
from tuidebug.tui.kit.labels import shown_lines
from tuidebug.tui.messages import HitChosen
from tuidebug.tui.panes.hit_list import hits_announcement

if TYPE_CHECKING:
    from textual.widgets import TabbedContent

    from tuidebug.core.watchpoints import WatchpointHit
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.panes.header import SessionHeader
    from tuidebug.tui.panes.hit_list import HitList
    from tuidebug.tui.panes.scope_tree import ScopeTree
    from tuidebug.tui.watchpoints.pane import WatchpointPane

# (graph, node, slot, iteration, hit) → open that tensor (the app's tensor request)
OpenTensor = Callable[[str, str, int, "int | None", "WatchpointHit | None"], None]

# A run is under way: the panes wait for its end (the header follows every step).
RUNNING = frozenset({SessionState.RUNNING, SessionState.SENDING})


class HitsShown:
    """The hits on one app's main screen (see the module docstring)."""

    def __init__(
        self,
        app: AppHost,
        *,
        header: SessionHeader,
        hits: HitList,
        tabs: TabbedContent,
        scope: ScopeTree,
        watchpoint_list: WatchpointPane,
        withdraw_toast: Callable[[str], None],
        open_tensor: OpenTensor,
    ) -> None:
        self._app = app
        self._header = header
        self._hits = hits
        self._tabs = tabs
        self._scope = scope
        self._watchpoint_list = watchpoint_list
        self._withdraw_toast = withdraw_toast
        self._open_tensor = open_tensor
        self._toast: str | None = None  # the hits toast up now

    def show(self, hits: Sequence[WatchpointHit], *, announce: bool = False) -> None:
        """The hit list, its counts and badges, the header (the caller: `state_changed`)."""
        before = self._hits.hit_count
        self._hits.set_hits(hits)
        self._watchpoint_list.set_hit_counts(self._hits.hit_counts())
        self._tabs.get_tab("hits-tab").label = f"2 Hits ({len(hits)})" if hits else "2 Hits"
        self.refresh_badges()
        self.update_header()
        if len(hits) != before or not hits:
            self._retract_toast()  # a count the list no longer shows must not stay up
        said = hits_announcement(hits, self._hits.shown_count)
        if announce and said is not None and len(hits) != before:
            text, real = said
            self._toast = shown_lines(text)
            self._app.notify(text, severity="warning" if real else "information")

    def open(self, hit: WatchpointHit) -> None:
        """A hit chosen in the list: its node in the tree and the details, its tensor in
        the tensor view; a hit of another rank (a session that checks every rank) switches
        to that rank first."""
        app = self._app
        ref = hit.tensor
        if ref.rank != app.metadata.rank and len(app.metadata.ranks) > 1:
            # show that rank, then open the hit (posted after the switch's events, so
            # handled after them)
            def switch() -> None:
                app.session.select_rank(ref.rank)
                with contextlib.suppress(RuntimeError):  # the app stopped meanwhile
                    app.post_message(HitChosen(hit))

            app.run_session_call(f"Switching to rank {ref.rank}", switch)
            return
        graph_name = ref.graph or app.current_graph or ""
        if graph_name not in app.graphs:
            graph_name = next(
                (name for name, graph in app.graphs.items() if graph.get(ref.node)), graph_name
            )
        # the hit list keeps the focus and its tab: the next hit is one ↓ away, and the
        # tree (behind its tab) and the tensor pane follow the hit
        if app.go_to_node(graph_name, ref.node, focus_tree=False):
            self._open_tensor(graph_name, ref.node, ref.slot, ref.iteration, hit)

    def _retract_toast(self) -> None:
        """Take down the last "N watchpoint hits" toast if it is still up."""
        text, self._toast = self._toast, None
        if text is not None:
            self._withdraw_toast(text)

    def update_header(self) -> None:
        app = self._app
        md = app.metadata
        hits_here = md.state is SessionState.WAITING and any(
            (hit.step if hit.step is not None else md.step) == md.step for hit in app.session.hits
        )
        stop_hint = ""
        if md.state in RUNNING and app.session.capabilities.can_stop_run:
            stop_hint = f"{app.key_hint('tuidebug.pause')} or {app.key_hint('tuidebug.back')} stops"
        self._header.set_metadata(md, hits_at_step=hits_here, stop_hint=stop_hint)

    def refresh_badges(self) -> None:
        app = self._app
        graph = app.graphs.get(app.current_graph or "")
        tree = self._scope.tree_view
        if graph is None:
            tree.set_badges((), (), {}, {})
            return
        # the tree is the shown rank's: other ranks' hits (a check of every rank) are
        # counted in the hit list, not on these nodes
        rank = app.metadata.rank
        hits = [h for h in app.session.hits if h.tensor.rank == rank]
        from tuidebug.tui.watchpoints.badges import watch_badges  # with the first graph

        watched_nodes, watched_scopes, node_hits, scope_hits = watch_badges(
            graph, app.session.watchpoints, hits
        )
        tree.set_badges(watched_nodes, watched_scopes, node_hits, scope_hits)


__all__ = ["RUNNING", "HitsShown"]
