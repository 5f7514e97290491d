"""A fake training that replays a MindSpore dump over the debugger protocol.

Each dumped iteration becomes one training step: the graph comes from the dump's `.pb`, the
tensors of a step from that iteration's `.npy` files. The simulator behaves like MindSpore's
client (spec §2): handshake, graph, initial suspension, then one suspension per step (GPU:
also per kernel when node stepping or when a kernel's watchpoints hit), watchpoints checked
at each step end, `training_done` at the end.

Parameter values: a dump holds each parameter *after* the step's update. The value before
the first step (the initial suspension, and the "previous" value at step 1) is read from the
input file of the parameter's first consumer at the first iteration, when the dump has
inputs; otherwise the first iteration's value stands in for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from tuidebug.client.protocol import CheckItem, ClientError, ProtocolClient, RunCommand
from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.core.graph_pb import GraphFileError, graph_from_proto, parse_model_proto
from tuidebug.offline.files.names_24 import kernel_dump_names
from tuidebug.offline.files.npy import TensorFileError, load_npy
from tuidebug.offline.layout.root import DumpLayout
from tuidebug.offline.layout.sync_rank import RankLayout
from tuidebug.offline.layout.tensor_index import TensorIndex

log = logging.getLogger("tuidebug.client")


class SimulatorError(Exception):
    """The dump cannot be replayed; the message is one sentence."""


@dataclass
class _GraphReplay:
    graph: Graph
    serialized: bytes
    index: TensorIndex
    order: list[str]  # kernels in execution order


class DumpReplay:
    """The dump opened for replay: graphs, tensor indexes and the iteration list."""

    def __init__(self, dump_dir: str | Path, rank: int | None = None) -> None:
        try:
            layout = DumpLayout.open(dump_dir)
        except Exception as exc:  # DumpError and friends carry one sentence
            raise SimulatorError(str(exc)) from None
        rank_ids = layout.rank_ids
        if not rank_ids:
            raise SimulatorError(f"{dump_dir} has no rank_N folder to replay.")
        rank_id = rank_ids[0] if rank is None else rank
        if rank_id not in rank_ids:
            raise SimulatorError(
                f"{dump_dir} has no rank {rank_id}; it has {', '.join(map(str, rank_ids))}."
            )
        self.root = layout.root
        self.rank: RankLayout = layout.rank(rank_id)
        self.graphs: list[_GraphReplay] = []
        parsed: list[tuple[int, Graph, bytes]] = []
        for gid, files in sorted(self.rank.graph_files.items()):
            if files.pb is None:
                continue
            try:
                model = parse_model_proto(files.pb.read_bytes(), f"Graph file {files.pb}")
                graph = graph_from_proto(model.graph)
            except (OSError, GraphFileError) as exc:
                raise SimulatorError(str(exc).rstrip(".") + ".") from None
            parsed.append((gid, graph, model.graph.SerializeToString()))
        dump_names = kernel_dump_names(graph for _, graph, _ in parsed)
        for gid, graph, proto_bytes in parsed:
            index = TensorIndex(self.rank, graph, graph.root_graph_id, dump_names[graph.name])
            order = [n for n in self.rank.execution_order(gid) if n in graph.nodes]
            if not order:
                order = [n.name for n in graph.operators]
            self.graphs.append(_GraphReplay(graph, proto_bytes, index, order))
        if not self.graphs:
            raise SimulatorError(f"{dump_dir} has no graph file (.pb) to send.")
        self.iterations: list[int] = sorted({i for g in self.graphs for i in g.index.iterations})
        self._initial_cache: dict[tuple[str, str], np.ndarray | None] = {}

    # --------------------------------------------------------------- tensors
    def load(
        self, g: _GraphReplay, node: str, slot: int, iteration: int, output: bool = True
    ) -> np.ndarray | None:
        f = g.index.lookup(node, slot, iteration, is_output=output)
        if f is None:
            return None
        try:
            return load_npy(f.path, root=self.root)
        except TensorFileError as exc:
            log.warning("%s", exc)
            return None

    def initial_parameter(self, g: _GraphReplay, node: Node) -> np.ndarray | None:
        """The value before the first step (see the module docstring): an input file at the
        first iteration that reads the parameter, directly or through `Load`/`Depend`.
        In-place optimizer kernels dump their input equal to the updated value, so a
        reader whose value differs from the first iteration's parameter file is preferred."""
        key = (g.graph.name, node.name)
        if key in self._initial_cache:
            return self._initial_cache[key]
        value = None
        if self.iterations:
            first = self.iterations[0]
            after = self.load(g, node.name, 0, first)
            fallback = None
            for reader, slot in _readers(g.graph, node.name):
                candidate = self.load(g, reader, slot, first, output=False)
                if candidate is None or (after is not None and candidate.shape != after.shape):
                    continue
                if after is None or not np.array_equal(candidate, after):
                    value = candidate
                    break
                if fallback is None:
                    fallback = candidate
            if value is None:
                value = fallback if fallback is not None else after
        self._initial_cache[key] = value
        return value


_PASS_THROUGH = frozenset({"Load", "Depend"})


def _readers(graph: Graph, name: str, depth: int = 3) -> Iterable[tuple[str, int]]:
    """(kernel, input slot) pairs that read `name`'s value, looking through the
    pass-through kernels MindSpore inserts before a parameter's real consumers."""
    for consumer in graph.consumers(name):
        for slot, src in enumerate(consumer.inputs):
            if src == name:
                yield consumer.name, slot
        if consumer.op_type in _PASS_THROUGH and depth > 0:
            yield from _readers(graph, consumer.name, depth - 1)


class StepTensors:
    """The `TensorProvider` of one suspension point of the replay."""

    def __init__(
        self, replay: DumpReplay, iteration: int | None, executed: set[str] | None = None
    ) -> None:
        self.replay = replay
        self.iteration = iteration  # None = initial suspension (before the first step)
        self.executed = executed  # kernels run so far in this step; None = all

    def _find(self, name: str) -> tuple[_GraphReplay, Node] | None:
        for g in self.replay.graphs:
            node = g.graph.nodes.get(name)
            if node is not None:
                return g, node
        return None

    def _previous_iteration(self) -> int | None:
        its = self.replay.iterations
        if self.iteration is None or self.iteration not in its:
            return None
        at = its.index(self.iteration)
        return its[at - 1] if at > 0 else None

    def parameter(self, g: _GraphReplay, node: Node, previous: bool) -> np.ndarray | None:
        if self.iteration is None:
            return None if previous else self.replay.initial_parameter(g, node)
        if not previous:
            value = self.replay.load(g, node.name, 0, self.iteration)
            return value if value is not None else self.replay.initial_parameter(g, node)
        prev = self._previous_iteration()
        if prev is None:
            return self.replay.initial_parameter(g, node)
        return self.replay.load(g, node.name, 0, prev)

    def lookup(self, name: str, slot: str, iter: str) -> np.ndarray | None:
        found = self._find(name)
        if found is None:
            return None
        g, node = found
        try:
            index = int(slot or 0)
        except ValueError:
            return None
        if node.kind is NodeKind.PARAMETER:
            return self.parameter(g, node, previous=iter == "prev") if index == 0 else None
        if iter:
            return None  # only parameters keep a previous value
        its = self.replay.iterations
        if node.kind is NodeKind.CONSTANT:
            return self.replay.load(g, node.name, index, its[0]) if its else None
        if self.iteration is None:
            return None
        if self.executed is not None and node.name not in self.executed:
            return None
        return self.replay.load(g, node.name, index, self.iteration)

    def kernel_items(self, g: _GraphReplay, kernel: str) -> list[CheckItem]:
        node = g.graph.nodes.get(kernel)
        if node is None or self.iteration is None:
            return []
        it = self.iteration
        order = g.index.execution_position(kernel)
        slots = range(max(len(node.outputs), 1))
        return [
            CheckItem(
                kernel,
                slot,
                order,
                False,
                load=partial(self.replay.load, g, kernel, slot, it),  # bound now, per slot
            )
            for slot in slots
            if g.index.lookup(kernel, slot, it) is not None
        ]

    def check_items(self) -> Iterable[CheckItem]:
        items: list[CheckItem] = []
        for g in self.replay.graphs:
            if self.iteration is not None:
                for kernel in g.order:
                    if self.executed is None or kernel in self.executed:
                        items.extend(self.kernel_items(g, kernel))
            for node in g.graph.parameters:
                items.append(
                    CheckItem(
                        node.name,
                        0,
                        g.index.execution_position(node.name),
                        True,
                        load=partial(self.parameter, g, node, previous=False),
                        load_previous=partial(self.parameter, g, node, previous=True),
                    )
                )
        items.sort(key=lambda i: i.order)
        return items


class DumpSimulator:
    """Replays a dump as a training connected to `target` ("host:port")."""

    def __init__(
        self,
        dump: str | Path | DumpReplay,
        target: str,
        *,
        backend: str = "Ascend",
        ms_version: str = "2.3.0",
        heartbeat_period: int = 30,
        rank: int | None = None,
        **client_options: object,
    ) -> None:
        if backend not in ("GPU", "Ascend"):
            raise SimulatorError(f"Unknown backend {backend!r}; use GPU or Ascend.")
        self.replay = dump if isinstance(dump, DumpReplay) else DumpReplay(dump, rank)
        self.backend = backend
        root_graph = self.replay.graphs[0].graph.root_graph_id
        self.client = ProtocolClient(
            target,
            backend=backend,
            ms_version=ms_version,
            heartbeat_period=heartbeat_period,
            root_graph_id=root_graph,
            **client_options,  # type: ignore[arg-type]
        )
        self.cur_step = 0
        self.finished = threading.Event()
        self.error: str = ""
        self._aborted = False
        # how the replay ended, for the CLI's last line: "finished" (every iteration
        # replayed), "terminated" (the debugger sent exit), "" (refused, lost, interrupted)
        self.ending = ""

    # ---------------------------------------------------------------- control
    def run(self) -> None:
        """The whole replay (blocking). Raises `ClientError` when the debugger is
        unreachable at the start."""
        client = self.client
        try:
            matched = client.connect(0, graph_num=len(self.replay.graphs))
            if matched is None:
                return
            if not matched:
                # spec §2.3: suspend before sending any graph; only exit is useful
                client.command_loop(StepTensors(self.replay, None, set()), 0)
                return
            if not client.send_graphs([g.serialized for g in self.replay.graphs]):
                raise ClientError("The debugger did not accept the graph.")
            self._train()
            if client.connection_lost and not self._aborted:
                raise ClientError(
                    f"The debugger at {client.target} stopped answering (WaitCMD failed "
                    f"{client.max_failures + 1} times in a row), so the replay stopped after "
                    f"{self.cur_step} steps."
                )
        finally:
            if not self._aborted:
                client.finish(self.cur_step)
            self.finished.set()

    def _train(self) -> None:
        client = self.client
        replay = self.replay
        cmd: RunCommand | None = client.command_loop(StepTensors(replay, None), 0)
        for epoch, iteration in enumerate(replay.iterations, start=1):
            if cmd is None:
                self._ended_early()
                return
            executed: set[str] = set()
            if self.backend == "GPU":
                cmd = self._run_kernels(iteration, epoch, executed, cmd)
                if cmd is None:
                    return
            self.cur_step += 1
            tensors = StepTensors(replay, iteration)
            hits = client.check(tensors, epoch)
            if hits:
                client.send_hits(hits)
            cmd = client.command_loop(tensors, self.cur_step)
        if cmd is None:
            self._ended_early()
            return
        # the dump is over: the training ends when the debugger lets it go on
        self.ending = "finished"
        log.info("replay finished after %d steps", self.cur_step)

    def _ended_early(self) -> None:
        """The command loop gave up: the debugger's exit command (a terminate), unless
        the connection was lost or the replay was stopped."""
        client = self.client
        if client.terminated and not client.connection_lost and not self._aborted:
            self.ending = "terminated"

    def _run_kernels(
        self, iteration: int, epoch: int, executed: set[str], cmd: RunCommand
    ) -> RunCommand | None:
        """GPU: kernels run one by one; suspend after a kernel whose watchpoints hit, and
        after every kernel (or the target one) while node stepping (spec §2.6)."""
        client = self.client
        for g in self.replay.graphs:
            for kernel in g.order:
                executed.add(kernel)
                tensors = StepTensors(self.replay, iteration, executed)
                hits = client.check(
                    tensors, epoch, per_kernel=True, items=tensors.kernel_items(g, kernel)
                )
                if hits:
                    client.send_hits(hits)
                stop_here = cmd.level == "node" and cmd.node_name in ("", kernel)
                if hits or stop_here:
                    next_cmd = client.command_loop(tensors, self.cur_step, kernel)
                    if next_cmd is None:
                        return None
                    cmd = next_cmd
        return cmd

    def stop(self) -> None:
        """Leave the command loop as if told to exit; `run` then says `training_done`."""
        self.client.stop()

    def abort(self) -> None:
        """Vanish without a goodbye, like a killed training process."""
        self._aborted = True
        self.client.close()

    def start_thread(self) -> threading.Thread:
        """Run in a daemon thread; errors end up in `self.error`."""

        def target() -> None:
            try:
                self.run()
            except ClientError as exc:
                self.error = str(exc)
            except Exception as exc:  # a replay bug must not go unnoticed in a thread
                self.error = f"{type(exc).__name__}: {exc}"
                log.exception("simulator failed")

        thread = threading.Thread(target=target, name="tuidebug-simulator", daemon=True)
        thread.start()
        return thread
