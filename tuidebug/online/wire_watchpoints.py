"""Watchpoints on the wire: the SetCMD batch that tells the training what to watch (spec §2.7),
and the hits it sends back (spec §2.9), as `WatchpointHit`s.

Watchpoint edits are not sent when they are made: the session's book reports each change
here (`changed`, `removed`), and the pending SetCMDs go out as one batch right before the next
run or recheck. A watchpoint's node list that would not fit in one reply is sent as `*`
(watch everything), and its hits are filtered here against the nodes it really watches.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.condition_catalogue import ParamResult
from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.core.rank_fields import micro_batch_of
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watch_targets import watched_nodes
from tuidebug.core.watchpoint_book import WatchpointBook
from tuidebug.core.watchpoints import Watchpoint, WatchpointHit

__all__ = [
    "MAX_SETCMD_BYTES",
    "SetCommands",
    "WireWatch",
    "find_node",
    "hit_from_wire",
    "set_cmd",
]

log = logging.getLogger("tuidebug.online")

# A SetCMD must fit in MindSpore's 4 MiB receive limit (spec §1.6) with room to spare.
MAX_SETCMD_BYTES = 3 * 1024 * 1024 + 512 * 1024

_OK = pb.EventReply.OK


@dataclass
class WireWatch:
    """What was last sent to the client for a watchpoint, to filter its hits."""

    star: bool  # the node list was too big: sent `*` and filter hits here
    names: frozenset[str]


def set_cmd(wp: Watchpoint, graph: Graph | None, rank: int) -> tuple[pb.SetCMD, WireWatch]:
    """The SetCMD that creates or replaces `wp` on the training, and what it watches."""
    params = list(wp.wire_params())
    enabled = [p for p in params if not p.disabled]
    condition = pb.WatchCondition(
        condition=wp.condition.proto,  # type: ignore[arg-type]
        value=enabled[-1].value if enabled else 0.0,  # MindInsight's legacy `value`
        params=[
            pb.WatchCondition.Parameter(
                name=p.name, disabled=p.disabled, value=0.0 if p.disabled else p.value
            )
            for p in params
        ],
    )
    nodes: list[Node] = []
    if graph is not None:  # MindSpore never checks constants
        nodes = watched_nodes(wp.condition, wp.targets, graph, constants=False)
    watch_nodes = [
        pb.WatchNode(
            node_name=n.ui_name,
            node_type="Parameter" if n.kind is NodeKind.PARAMETER else n.op_type,
            graph_name=n.graph_name,
            rank_id=rank,
        )
        for n in nodes
    ]
    command = pb.SetCMD(id=wp.id, watch_condition=condition, watch_nodes=watch_nodes)
    names = frozenset(n.name for n in nodes)
    if command.ByteSize() > MAX_SETCMD_BYTES:
        # too many nodes for one reply: watch everything and filter the hits here
        del command.watch_nodes[:]
        command.watch_nodes.append(pb.WatchNode(node_name="*", node_type="scope"))
        return command, WireWatch(True, names)
    return command, WireWatch(False, names)


def _delete(watchpoint_id: int) -> pb.EventReply:
    return pb.EventReply(status=_OK, set_cmd=pb.SetCMD(id=watchpoint_id, delete=True))


class SetCommands:
    """The SetCMDs still to send, and what the training watches now. Not thread-safe: the
    session calls it with its lock held."""

    def __init__(self) -> None:
        self._dirty: dict[int, None] = {}  # created/updated since the last batch (ordered)
        self._deleted: set[int] = set()
        self._on_client: dict[int, WireWatch] = {}

    def changed(self, watchpoint_id: int) -> None:
        """A watchpoint was created or updated."""
        self._dirty[watchpoint_id] = None

    def removed(self, watchpoint_id: int) -> None:
        """A watchpoint was deleted."""
        self._dirty.pop(watchpoint_id, None)
        self._deleted.add(watchpoint_id)

    def reset(self) -> None:
        """A new training: nothing is pending and it watches nothing yet."""
        self._dirty.clear()
        self._deleted.clear()
        self._on_client.clear()

    def batch(
        self, book: WatchpointBook, graphs: Mapping[str, Graph], rank: int
    ) -> list[pb.EventReply]:
        """Spec §2.7: the pending SetCMDs (deletes first), sent right before a run or
        recheck. A disabled watchpoint is deleted on the training."""
        replies: list[pb.EventReply] = []
        for wid in sorted(self._deleted):
            if self._on_client.pop(wid, None) is not None:
                replies.append(_delete(wid))
        self._deleted.clear()
        for wid in list(self._dirty):
            wp = book.find(wid)
            if wp is None:
                continue
            if not wp.enabled:
                if self._on_client.pop(wid, None) is not None:
                    replies.append(_delete(wid))
                continue
            graph = graphs.get(wp.graph_name) if wp.graph_name is not None else None
            command, wire = set_cmd(wp, graph, rank)
            self._on_client[wid] = wire
            replies.append(pb.EventReply(status=_OK, set_cmd=command))
        self._dirty.clear()
        return replies

    def hits(
        self,
        received: list[pb.WatchpointHit],
        book: WatchpointBook,
        graphs: Mapping[str, Graph],
        step: int,
        base: int,
    ) -> list[WatchpointHit]:
        """The training's hits at `step` as ours, numbered from `base`: a hit of a
        watchpoint or on a node we do not know is skipped (logged), and so is one a `*`
        watch reported on a node outside its real node list."""
        out: list[WatchpointHit] = []
        for hit in received:
            wp = book.find(hit.id)
            if wp is None:
                log.info("hit of unknown watchpoint %d skipped", hit.id)
                continue
            node = find_node(graphs, hit.tensor.node_name, wp.graph_name or "")
            if node is None:
                log.info("hit on unknown node %s skipped", hit.tensor.node_name)
                continue
            if not self.watches(wp.id, node):
                continue  # we watched everything because the node list was too long
            out.append(hit_from_wire(hit, wp, node, step, base + len(out)))
        return out

    def watches(self, watchpoint_id: int, node: Node) -> bool:
        """Whether a hit of this watchpoint on `node` is one it asked for (a `*` watch
        reports every node; only those of its node list count)."""
        wire = self._on_client.get(watchpoint_id)
        return wire is None or not wire.star or node.name in wire.names


def find_node(graphs: Mapping[str, Graph], name: str, graph_name: str = "") -> Node | None:
    """A node by full name or UI name (in `graph_name` first); a scoped parameter name also
    matches by its last path component (spec §2.7), as MindSpore reports the watch-node name
    we sent."""
    ordered = list(graphs.values())
    if graph_name and graph_name in graphs:
        ordered.sort(key=lambda g: g.name != graph_name)
    for graph in ordered:
        node = graph.get(name)
        if node is None and name.startswith(graph.name + "/"):
            node = graph.get(name[len(graph.name) + 1 :])
        if node is not None:
            return node
    if "/" in name:
        short = name.rsplit("/", 1)[1]
        for graph in ordered:
            node = graph.nodes.get(short)
            if node is not None and node.kind is not NodeKind.OPERATOR:
                return node
    return None


def hit_from_wire(
    hit: pb.WatchpointHit, wp: Watchpoint, node: Node, step: int, order: int
) -> WatchpointHit:
    """A training's hit on `node` (found in our graph) of watchpoint `wp`, at `step`."""
    try:
        slot = int(hit.tensor.slot or 0)
    except ValueError:
        slot = 0
    params = tuple(
        ParamResult(
            name=p.name,
            value=p.value,
            disabled=p.disabled,
            hit=p.hit,
            actual=p.actual_value if hit.error_code == 0 and not p.disabled else None,
        )
        for p in hit.watch_condition.params
    )
    micro = micro_batch_of(hit)  # a tuidebug client's gradient accumulation (else None)
    return WatchpointHit(
        watchpoint_id=wp.id,
        condition=wp.condition,
        tensor=TensorRef(node=node.name, slot=slot, iteration=step, graph=node.graph_name),
        error_code=hit.error_code,
        params=params,
        order=order,
        step=step,  # a live training's hits name its step
        micro_batch=micro[0] if micro else None,
        micro_batches=micro[1] if micro else None,
    )
