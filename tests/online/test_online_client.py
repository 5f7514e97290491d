"""The training side (`tuidebug.client.protocol`): ViewCMD answers at the three levels, the
watch-node matching and check rules, and the command loop's reactions to what a server can
answer (spec §2.5–§2.9), against a scripted fake server on 127.0.0.1."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from concurrent import futures

import grpc
import numpy as np
import pytest

from tests.online.support import TIMEOUT, make_session, wait_state
from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug._proto import debug_grpc_pb2_grpc as pb_grpc
from tuidebug.client.protocol import (
    CHUNK_SIZE,
    CheckItem,
    ClientWatchpoint,
    ProtocolClient,
    RunCommand,
    _base,
    _summary,
    watchpoint_from_set_cmd,
)
from tuidebug.core.condition_catalogue import Param
from tuidebug.core.session import GraphsLoaded, SessionState


class Provider:
    def __init__(self, tensors: dict[str, np.ndarray], items: list[CheckItem] | None = None):
        self.tensors = tensors
        self.items = items or []
        self.asked: list[tuple[str, str, str]] = []

    def lookup(self, name: str, slot: str, iter: str) -> np.ndarray | None:
        self.asked.append((name, slot, iter))
        return self.tensors.get(f"{name}:{slot}:{iter}" if iter else f"{name}:{slot}")

    def check_items(self) -> list[CheckItem]:
        return self.items


class Scripted(pb_grpc.EventListenerServicer):
    """A fake debugger that answers WaitCMD from a script and records the streams."""

    def __init__(self, replies: list[pb.EventReply], metadata_reply: pb.EventReply) -> None:
        self.replies = deque(replies)
        self.metadata_reply = metadata_reply
        self.waits = 0
        self.tensors: list[graph_pb.TensorProto] = []
        self.stats: list[pb.TensorSummary] = []
        self.bases: list[pb.TensorBase] = []
        self.hits: list[pb.WatchpointHit] = []
        self.graphs: list[pb.Chunk] = []

    def SendMetadata(self, request, context):
        return self.metadata_reply

    def SendGraph(self, request_iterator, context):
        self.graphs.extend(request_iterator)
        return pb.EventReply()

    def SendMultiGraphs(self, request_iterator, context):
        self.graphs.extend(request_iterator)
        return pb.EventReply()

    def WaitCMD(self, request, context):
        self.waits += 1
        if not self.replies:
            return pb.EventReply(exit=True)
        return self.replies.popleft()

    def SendTensors(self, request_iterator, context):
        self.tensors.extend(request_iterator)
        return pb.EventReply()

    def SendTensorStats(self, request_iterator, context):
        self.stats.extend(request_iterator)
        return pb.EventReply()

    def SendTensorBase(self, request_iterator, context):
        self.bases.extend(request_iterator)
        return pb.EventReply()

    def SendWatchpointHits(self, request_iterator, context):
        self.hits.extend(request_iterator)
        return pb.EventReply()

    def SendHeartbeat(self, request, context):
        return pb.EventReply()


@pytest.fixture
def fake() -> Iterator[tuple[Scripted, str]]:
    servicer = Scripted([], pb.EventReply(version_matched=True))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_EventListenerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, f"127.0.0.1:{port}"
    server.stop(0)


def _client(address: str, **kw) -> ProtocolClient:
    kw.setdefault("heartbeat", False)
    kw.setdefault("retry_delay", 0.001)
    return ProtocolClient(address, **kw)


def _view(level: int, *requests: graph_pb.TensorProto) -> pb.EventReply:
    return pb.EventReply(view_cmd=pb.ViewCMD(tensors=requests, level=level))


def test_value_answers_are_chunked_and_named(fake) -> None:
    servicer, address = fake
    big = np.arange(7 * 1024 * 1024 // 4, dtype=np.float32).reshape(-1, 4)
    scalar = np.array(3.5, dtype=np.float64)
    provider = Provider({"Default/k-op1:0": big, "conv1.weight:0:prev": scalar})
    requests = [
        graph_pb.TensorProto(node_name="Default/k-op1", slot="0"),
        graph_pb.TensorProto(
            node_name="Default/s/conv1.weight", slot="0", iter="prev", truncate=True
        ),
        graph_pb.TensorProto(node_name="missing", slot="1"),
    ]
    servicer.replies.extend([_view(pb.ViewCMD.value, *requests)])
    client = _client(address)
    assert client.command_loop(provider, 0) is None  # the script ends with exit
    assert ("conv1.weight", "0", "prev") in provider.asked  # truncated before lookup
    pieces = [t for t in servicer.tensors if t.node_name == "Default/k-op1"]
    assert len(pieces) == 3
    assert all(len(p.tensor_content) <= CHUNK_SIZE for p in pieces)
    assert [p.finished for p in pieces] == [False, False, True]
    assert all(p.data_type == 11 and list(p.dims) == list(big.shape) for p in pieces)
    data = b"".join(p.tensor_content for p in pieces)
    np.testing.assert_array_equal(np.frombuffer(data, np.float32).reshape(big.shape), big)
    (prev,) = [t for t in servicer.tensors if t.iter == "prev"]
    assert prev.node_name == "Default/s/conv1.weight" and prev.truncate and prev.finished
    assert prev.data_type == 12 and list(prev.dims) == []
    (missing,) = [t for t in servicer.tensors if t.node_name == "missing"]
    assert missing.finished and missing.slot == "1"
    assert not missing.tensor_content and not missing.HasField("data_type") and not missing.dims
    client.close()


def test_statistics_and_base_answers(fake) -> None:
    servicer, address = fake
    x = np.array([-np.inf, -2.0, 0.0, 0.0, 1.0, 3.0, np.inf, np.nan], dtype=np.float32)
    provider = Provider({"k:0": x})
    req = [
        graph_pb.TensorProto(node_name="k", slot="0"),
        graph_pb.TensorProto(node_name="no", slot="0"),
    ]
    servicer.replies.extend([_view(pb.ViewCMD.statistics, *req), _view(pb.ViewCMD.base, *req)])
    client = _client(address)
    client.command_loop(provider, 0)
    found, missing = servicer.stats
    s = found.statistics
    assert (s.count, s.nan_count, s.pos_inf_count, s.neg_inf_count, s.zero_count) == (8, 1, 1, 1, 2)
    assert s.neg_zero_count == 2 and s.pos_zero_count == 3  # negatives / positives, ±inf in
    assert s.max_value == 3.0 and s.min_value == -2.0 and not s.is_bool
    assert list(found.tensor_base.shape) == [8] and found.tensor_base.data_size == 32
    assert missing.tensor_base.data_size == 0 and list(missing.tensor_base.shape) == []
    assert missing.statistics.max_value == -np.inf and missing.statistics.min_value == np.inf
    found_base, missing_base = servicer.bases
    assert found_base.data_type == 11 and list(found_base.shape) == [8]
    assert (missing_base.data_size, missing_base.data_type, list(missing_base.shape)) == (0, 0, [0])
    client.close()


def test_bool_statistics() -> None:
    s = _summary(np.array([True, False, True])).statistics
    assert s.is_bool and s.pos_zero_count == 2 and s.zero_count == 1
    assert _base(np.zeros((2, 3), np.int64)).data_type == 5


def test_watch_node_matching() -> None:
    wp = ClientWatchpoint(
        1,
        15,
        (),
        (
            ("Default/a/Conv2D-op1", "Conv2D"),
            ("Default/b/conv1.weight", "Parameter"),
            ("Default/x", "scope"),
        ),
    )
    assert wp.match("Default/a/Conv2D-op1") == "Default/a/Conv2D-op1"
    assert wp.match("conv1.weight") == "Default/b/conv1.weight"  # last path component
    assert wp.match("Default/x/Add-op3") is None  # like MindSpore 2.x: prefixes never hit
    star = ClientWatchpoint(2, 13, (), (("*", "scope"),))
    assert star.match("anything") == "anything"


def _item(name: str, order: int, value: np.ndarray, prev: np.ndarray | None = None) -> CheckItem:
    return CheckItem(name, 0, order, prev is not None, lambda: value, lambda: prev)


def _set(wid: int, condition: int, params: list[tuple[str, float, bool]], *names: str) -> pb.SetCMD:
    return pb.SetCMD(
        id=wid,
        watch_condition=pb.WatchCondition(
            condition=condition,
            params=[pb.WatchCondition.Parameter(name=n, value=v, disabled=d) for n, v, d in params],
        ),
        watch_nodes=[pb.WatchNode(node_name=n, node_type="Conv2D") for n in names],
    )


def test_check_rules() -> None:
    client = ProtocolClient("127.0.0.1:1", heartbeat=False)  # never connects
    zeros = np.zeros(4, np.float32)
    big = np.full(4, 5.0, np.float32)
    items = [_item("b", 2, big, prev=zeros), _item("a", 1, zeros, prev=zeros)]
    provider = Provider({}, items)
    init = [("zero_percentage_ge", 100.0, False), ("max_gt", 0, True), ("min_lt", 0, True)]
    large = [
        ("abs_mean_gt", 1.0, False),
        ("max_gt", 0, True),
        ("min_gt", 0, True),
        ("mean_gt", 0, True),
    ]
    ratio = [("abs_mean_update_ratio_gt", 0.5, False), ("epsilon", 1e-9, False)]
    for cmd in (_set(1, 14, init, "a", "b"), _set(2, 15, large, "a", "b"), _set(3, 18, ratio, "b")):
        client._apply_set_cmd(cmd)
    assert isinstance(client.watchpoints[1], ClientWatchpoint)

    # initial suspension: only INIT
    hits = client.check(provider, 0, recheck=True)
    assert [(h.id, h.tensor.node_name) for h in hits] == [(1, "a")]
    client.initial_suspension = False
    # then never INIT; change conditions skipped per kernel; sorted by execution order
    hits = client.check(provider, 1, per_kernel=True)
    assert [(h.id, h.tensor.node_name) for h in hits] == [(2, "b")]
    hits = client.check(provider, 1)  # step end: only the pairs not checked yet this step
    assert [(h.id, h.tensor.node_name) for h in hits] == [(3, "b")]
    assert client.check(provider, 1) == []
    hits = client.check(provider, 1, recheck=True)
    assert [(h.id, h.tensor.node_name) for h in hits] == [(2, "b"), (3, "b")]
    (hit,) = [h for h in hits if h.id == 2]
    assert hit.tensor.slot == "0" and hit.tensor.finished and hit.error_code == 0
    assert next((p.name, p.hit, p.actual_value) for p in hit.watch_condition.params) == (
        "abs_mean_gt",
        True,
        5.0,
    )
    # delete, replace by id, negative ids ignored
    client._apply_set_cmd(pb.SetCMD(id=3, delete=True))
    client._apply_set_cmd(_set(-4, 15, large, "a"))
    assert sorted(client.watchpoints) == [1, 2]
    assert watchpoint_from_set_cmd(_set(2, 15, large, "a")).params[0] == Param(
        "abs_mean_gt", 1.0, False
    )
    client.close()


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ([pb.EventReply(run_cmd=pb.RunCMD(run_level="step", run_steps=7))], RunCommand("step")),
        (
            [pb.EventReply(), pb.EventReply(run_cmd=pb.RunCMD(run_level="node", node_name="K"))],
            RunCommand("node", "K"),
        ),  # an empty reply: ask again at once
        ([pb.EventReply(run_cmd=pb.RunCMD(run_level="dance"))], None),
        ([pb.EventReply(version_matched=True)], None),  # not valid inside the loop
        ([pb.EventReply(exit=True)], None),
    ],
)
def test_command_loop_reactions(fake, script, expected) -> None:
    servicer, address = fake
    servicer.replies.extend(script)
    client = _client(address)
    assert client.command_loop(Provider({}), 0) == expected
    assert client.terminated is (expected is None)
    assert client.initial_suspension is (expected is None)
    client.close()


def test_failed_replies_back_off_then_exit(fake) -> None:
    servicer, address = fake
    servicer.replies.extend([pb.EventReply(status=pb.EventReply.FAILED)] * 10)
    client = _client(address)
    assert client.command_loop(Provider({}), 0) is None
    assert servicer.waits == 6  # more than 5 consecutive failures → exit
    assert client.terminated
    client.close()


def test_handshake_without_version_field_means_exit(fake) -> None:
    servicer, address = fake
    servicer.metadata_reply = pb.EventReply()  # "MindInsight too old"
    client = _client(address)
    assert client.connect() is None and client.terminated
    client.close()


def test_multi_graphs_reach_the_session() -> None:
    session, log = make_session()
    client = ProtocolClient(session.address, heartbeat=False, chunk_size=1024)
    try:
        assert client.connect()
        graphs = []
        for gid in (0, 1):
            g = graph_pb.GraphProto(name=f"kernel_graph_{gid}", root_name=str(gid))
            for i in range(1, 60):
                g.node.add(name=str(i), op_type="Add", full_name=f"Default/g{gid}/Add-op{i}")
            graphs.append(g)
        assert client.send_graphs(graphs)  # several graphs: SendMultiGraphs, 1 KiB chunks
        thread = threading.Thread(target=client.command_loop, args=(Provider({}), 0), daemon=True)
        thread.start()
        event = log.wait_for(GraphsLoaded, TIMEOUT)
        assert sorted(event.graphs) == ["kernel_graph_0", "kernel_graph_1"]
        assert all(len(g) == 59 for g in event.graphs.values())
        wait_state(session, SessionState.WAITING)
        session.terminate()
        thread.join(TIMEOUT)
        assert client.terminated
    finally:
        client.close()
        session.close()


def test_close_does_not_wait_for_a_channel_that_never_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call interrupted by Ctrl+C can leave gRPC's `Channel.close()` waiting for it
    forever (seen under load: `tuidebug simulate` then never exited); `close` gives the
    channel CLOSE_TIMEOUT seconds and leaves the rest to the process's exit."""
    import time

    from tuidebug.client import protocol

    client = protocol.ProtocolClient("127.0.0.1:9", heartbeat=False)
    real_channel = client._channel
    stuck = threading.Event()

    class StuckChannel:
        def close(self) -> None:
            stuck.wait()  # what the interrupted call's channel did

    monkeypatch.setattr(protocol, "CLOSE_TIMEOUT", 0.2)
    client._channel = StuckChannel()  # type: ignore[assignment]
    try:
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 5.0
    finally:
        stuck.set()
        real_channel.close()
