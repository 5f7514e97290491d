"""Wire behaviour of the server, pinned with a hand-written client on the generated stubs
(spec §1–§2): what an independent MindSpore-protocol client sees, field by field."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from tests.online.support import (
    MIB,
    RawClient,
    connect_raw,
    fixture_graph,
    make_session,
    wait_state,
    wait_until,
)
from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.graph import NodeKind
from tuidebug.core.session import GraphsLoaded, HitsArrived, Notice, SessionError, SessionState
from tuidebug.core.tensor import TensorRef
from tuidebug.online.server import ServerOptions, ServerStartError, start_server
from tuidebug.online.session import OnlineSession
from tuidebug.online.versions import version_match

OK = pb.EventReply.OK
FAILED = pb.EventReply.FAILED
GARBAGE = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"  # an unterminated varint tag


@pytest.fixture
def graph(dump_2_0: Path) -> graph_pb.GraphProto:
    return fixture_graph(dump_2_0)


@pytest.fixture
def online() -> Iterator[tuple[OnlineSession, object]]:
    session, log = make_session()
    yield session, log
    session.close()


# ----------------------------------------------------------------------- SendMetadata
@pytest.mark.parametrize(
    ("ms_version", "strict", "matched"),
    [
        ("2.3.0", None, True),
        ("2.3.1", None, True),
        ("2.4.0", None, True),
        # every MindSpore is accepted (old or unreadable ones with a warning:
        # test_online_versions.py) ...
        ("2.2.0", None, True),
        ("1.10.1", None, True),
        ("3.0.0", None, True),
        ("", None, True),
        ("garbage", None, True),
        ("torch-2.1.0", None, True),  # our PyTorch client: no MindSpore version rule
        # ... and --strict-version 2.3 keeps MindInsight 2.3's refusal
        ("2.3.1", "2.3", True),
        ("2.4.0", "2.3", True),  # newer minor: a warning only (spec §2.3 result 1)
        ("2.2.0", "2.3", False),
        ("1.10.1", "2.3", False),
        ("3.0.0", "2.3", False),
        ("", "2.3", False),
        ("garbage", "2.3", False),
        ("torch-2.1.0", "2.3", True),
    ],
)
def test_version_matched_is_always_set(ms_version: str, strict: str | None, matched: bool) -> None:
    session, _ = make_session(strict_version=strict)
    client = RawClient(session.address)
    try:
        reply = client.hello(ms_version)
        assert reply.status == OK
        assert reply.WhichOneof("cmd") == "version_matched"
        assert reply.version_matched is matched
        # proto3 oneof: a set `false` is on the wire (field 6, varint 0)
        assert b"\x30\x00" in reply.SerializeToString() or matched
        expected = SessionState.PENDING if matched else SessionState.MISMATCH
        wait_state(session, expected)
    finally:
        client.close()
        session.close()


def test_version_match_rule() -> None:
    # MindInsight's own rule, kept for --strict-version
    assert version_match("2.3.0") == 0
    assert version_match("2.9") == 1
    assert version_match("2.1.0") == 2
    assert version_match("1.3.0") == 2
    assert version_match("2.2.14", "2.2") == 0
    assert version_match("1.10.1", "1.8") == 1


def test_training_done_has_no_version_handling(online, graph) -> None:
    session, _ = online
    client = connect_raw(session, graph)
    reply = client.stub.SendMetadata(
        client.metadata(step=3, training_done=True, ms_version="0.1"), timeout=20
    )
    assert reply.status == OK and reply.version_matched  # set on every reply (spec §1.6)
    wait_state(session, SessionState.DONE)
    assert session.metadata.step == 3
    client.close()


# -------------------------------------------------------------------------- WaitCMD
def test_waitcmd_fails_only_before_a_graph(online, graph) -> None:
    session, log = online
    client = RawClient(session.address)
    assert client.wait(timeout=5).status == FAILED  # no session at all
    client.hello()
    assert client.wait(timeout=5).status == FAILED  # session, but no graph yet
    assert client.send_graph(graph).status == OK
    future = client.wait_future()
    wait_state(session, SessionState.WAITING)  # a long poll: no reply yet
    assert not future.done()
    event = log.wait_for(GraphsLoaded)
    assert event.first_time and list(event.graphs) == [graph.name]
    session.terminate()
    reply = future.result(timeout=20)
    assert reply.status == OK and reply.WhichOneof("cmd") == "exit" and reply.exit
    client.close()


def test_step_n_is_sent_as_single_steps(online, graph) -> None:
    session, _ = online
    client = connect_raw(session, graph)
    future = client.wait_future(0)
    wait_state(session, SessionState.WAITING)
    session.step(3)
    replies = [future.result(timeout=20)]
    for step in (1, 2):
        replies.append(client.wait(step))
    for reply in replies:
        assert reply.WhichOneof("cmd") == "run_cmd"
        assert reply.run_cmd.run_level == "step"
        assert reply.run_cmd.WhichOneof("cmd") == "run_steps" and reply.run_cmd.run_steps == 1
    future = client.wait_future(3)
    wait_state(session, SessionState.WAITING)
    assert session.metadata.step == 3
    assert not future.done()
    # continue: steps until hits arrive; hits stop the run
    session.continue_()
    assert future.result(timeout=20).run_cmd.run_steps == 1
    assert client.wait(4).run_cmd.run_steps == 1
    reply = client.stub.SendWatchpointHits(iter([]), timeout=20)
    assert reply.status == OK
    # pause is never forwarded: the next suspension just waits
    session.pause()
    future = client.wait_future(5)
    wait_state(session, SessionState.WAITING)
    assert not future.done()
    session.terminate()
    assert future.result(timeout=20).exit
    client.close()


def test_node_stepping_on_gpu(online, graph) -> None:
    session, _ = online
    client = connect_raw(session, graph)
    future = client.wait_future(0)
    wait_state(session, SessionState.WAITING)
    g = next(iter(session.graphs.values()))
    kernels = [n.name for n in g.operators]
    assert session.capabilities.can_step_node
    session.step_node()
    reply = future.result(timeout=20)
    assert reply.run_cmd.run_level == "node"
    assert reply.run_cmd.WhichOneof("cmd") == "node_name" and reply.run_cmd.node_name == ""
    # run to the third kernel: one kernel at a time until cur_node equals the target
    future = client.wait_future(0, kernels[0])
    wait_state(session, SessionState.WAITING)
    session.step_node(kernels[2])
    assert future.result(timeout=20).run_cmd.node_name == ""
    assert client.wait(0, kernels[1]).run_cmd.node_name == ""
    future = client.wait_future(0, kernels[2])
    wait_state(session, SessionState.WAITING)
    assert session.metadata.cur_node == kernels[2]
    session.terminate()
    assert future.result(timeout=20).exit
    client.close()


def test_node_stepping_refused_on_ascend(online, graph) -> None:
    session, _ = online
    client = RawClient(session.address, backend="Ascend")
    client.hello()
    client.send_graph(graph)
    future = client.wait_future()
    wait_state(session, SessionState.WAITING)
    assert not session.capabilities.can_step_node
    with pytest.raises(SessionError):
        session.step_node()
    session.terminate()
    future.result(timeout=20)
    client.close()


def test_a_new_waitcmd_supersedes_a_stale_one(online, graph) -> None:
    session, _ = online
    client = connect_raw(session, graph)
    stale = client.wait_future(0)
    wait_state(session, SessionState.WAITING)
    fresh = client.wait_future(0)
    assert stale.result(timeout=20).status == FAILED
    session.step(1)
    assert fresh.result(timeout=20).run_cmd.run_level == "step"
    client.close()


# --------------------------------------------------------------------------- SetCMD
def _collect_until_run(client: RawClient, first: grpc.Future) -> list[pb.EventReply]:
    replies = [first.result(timeout=20)]
    while replies[-1].WhichOneof("cmd") != "run_cmd":
        replies.append(client.wait(0))
    return replies


def test_setcmd_batch_before_recheck(online, graph) -> None:
    session, _ = online
    client = connect_raw(session, graph)
    future = client.wait_future()
    wait_state(session, SessionState.WAITING)
    g = next(iter(session.graphs.values()))
    weight = next(n for n in g.parameters if n.name == "conv1.weight")
    conv_scope = next(n.scope for n in g.operators if n.op_type == "Conv2D")
    tl = session.create_watchpoint("TL", {"abs_mean_gt": 1.0, "mean_gt": 2.0}, [weight.name])
    wnc = session.create_watchpoint("WNC", {})
    to = session.create_watchpoint("TO", {}, [conv_scope])
    session.recheck()
    replies = _collect_until_run(client, future)
    assert [r.WhichOneof("cmd") for r in replies] == ["set_cmd"] * 3 + ["run_cmd"]
    assert replies[-1].run_cmd.run_level == "recheck"
    by_id = {r.set_cmd.id: r.set_cmd for r in replies[:3]}
    assert set(by_id) == {tl.id, wnc.id, to.id}

    cmd = by_id[tl.id]
    assert not cmd.delete
    cond = cmd.watch_condition
    assert cond.condition == pb.WatchCondition.tensor_too_large
    assert [(p.name, p.disabled, p.value) for p in cond.params] == [
        ("abs_mean_gt", False, 1.0),
        ("max_gt", True, 0.0),
        ("min_gt", True, 0.0),
        ("mean_gt", False, 2.0),
    ]
    assert cond.value == 2.0  # the last enabled parameter (MindInsight)
    (node,) = cmd.watch_nodes
    assert node.node_name == weight.ui_name and "/" in node.node_name
    assert node.node_type == "Parameter"
    assert node.graph_name == g.name and node.rank_id == 0

    cond = by_id[wnc.id].watch_condition
    assert cond.condition == pb.WatchCondition.tensor_not_changed
    assert [(p.name, p.disabled) for p in cond.params] == [
        ("rtol", True),
        ("atol", False),
        ("equal_nan", False),
    ]
    assert cond.params[1].value == pytest.approx(1e-8)
    weights = {n.ui_name for n in g.parameters if n.name.endswith((".weight", ".bias"))}
    sent = {n.node_name for n in by_id[wnc.id].watch_nodes}
    assert sent and sent <= weights | {n.ui_name for n in g.parameters}

    nodes = by_id[to.id].watch_nodes
    expected = {n.ui_name for n in g.leaves(conv_scope) if n.kind is not NodeKind.CONSTANT}
    assert {n.node_name for n in nodes} == expected
    assert all(n.node_type != "scope" for n in nodes)  # scopes expanded to leaves

    # edits are pending until the next run: update + delete travel together
    future = client.wait_future(0)
    wait_state(session, SessionState.WAITING)
    session.update_watchpoint(tl.id, enabled=False)
    session.delete_watchpoint(to.id)
    session.step(1)
    replies = _collect_until_run(client, future)
    deletes = sorted(r.set_cmd.id for r in replies if r.WhichOneof("cmd") == "set_cmd")
    assert deletes == sorted([tl.id, to.id])
    assert all(r.set_cmd.delete for r in replies[:-1])
    # still the initial suspension: watchpoints changed, so a recheck precedes the step
    assert replies[-1].run_cmd.run_level == "recheck"
    assert client.wait(0).run_cmd.run_level == "step"
    client.close()


def test_initial_step_sends_recheck_after_new_watchpoints(online, graph) -> None:
    session, _ = online
    client = connect_raw(session, graph)
    future = client.wait_future()
    wait_state(session, SessionState.WAITING)
    session.create_watchpoint("WI", {"zero_percentage_ge": 100})
    session.continue_()
    kinds = [(r.WhichOneof("cmd"), r.run_cmd.run_level) for r in _collect_until_run(client, future)]
    assert kinds == [("set_cmd", ""), ("run_cmd", "recheck")]
    assert client.wait(0).run_cmd.run_level == "step"
    client.close()


def test_hits_are_published_at_the_next_waitcmd(online, graph) -> None:
    session, log = online
    client = connect_raw(session, graph)
    future = client.wait_future()
    wait_state(session, SessionState.WAITING)
    g = next(iter(session.graphs.values()))
    weight = next(n for n in g.parameters if n.name == "conv1.weight")
    wp = session.create_watchpoint("TL", {"max_gt": 0.0})
    session.continue_()
    _collect_until_run(client, future)
    hit = pb.WatchpointHit(
        id=wp.id,
        error_code=0,
        tensor=graph_pb.TensorProto(node_name=weight.ui_name, slot="0", finished=True),
        watch_condition=pb.WatchCondition(
            condition=15,
            params=[
                pb.WatchCondition.Parameter(name="abs_mean_gt", disabled=True),
                pb.WatchCondition.Parameter(name="max_gt", value=0.0, hit=True, actual_value=0.25),
            ],
        ),
    )
    unknown = pb.WatchpointHit(id=99, tensor=graph_pb.TensorProto(node_name="nope", slot="0"))
    assert client.stub.SendWatchpointHits(iter([hit, unknown]), timeout=20).status == OK
    future = client.wait_future(1)
    event = log.wait_for(HitsArrived, after=0)
    wait_until(lambda: any(e.hits for e in log.events if isinstance(e, HitsArrived)))
    event = next(e for e in log.events if isinstance(e, HitsArrived) and e.hits)
    (got,) = event.hits
    assert got.watchpoint_id == wp.id and got.tensor.node == "conv1.weight"
    assert got.tensor.slot == 0 and got.tensor.iteration == 1
    # a live training's hit is at its step, and steps are iterations here
    assert got.step == 1 and session.step_of(got.tensor) == 1 and session.metadata.iteration is None
    assert session.capabilities.weight_init_only_at_step_zero
    assert [p.actual for p in got.params] == [None, 0.25]
    wait_state(session, SessionState.WAITING)  # the hit stopped "continue"
    assert not future.done()
    session.terminate()
    future.result(timeout=20)
    client.close()


# -------------------------------------------------------------------------- ViewCMD
def _fetch_in_thread(fn, *args) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn(*args)
        except Exception as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_view_value_levels_and_pairing(online, graph) -> None:
    session, _ = online
    client = connect_raw(session, graph)
    future = client.wait_future()
    wait_state(session, SessionState.WAITING)
    g = next(iter(session.graphs.values()))
    weight = next(n for n in g.parameters if n.name == "conv1.weight")
    kernel = next(n for n in g.operators if n.op_type == "Conv2D")

    # value of a parameter's previous step: scoped name, truncate, iter="prev"
    thread, out = _fetch_in_thread(session.tensor, TensorRef(weight.name), True)
    reply = future.result(timeout=20)
    assert reply.WhichOneof("cmd") == "view_cmd"
    assert reply.view_cmd.level == pb.ViewCMD.value
    (req,) = reply.view_cmd.tensors
    assert (req.node_name, req.slot, req.iter, req.truncate) == (weight.ui_name, "0", "prev", True)
    value = np.arange(6 * 1024 * 1024 // 4 + 3, dtype=np.float32)  # > 6 MiB: three pieces
    data = value.tobytes()
    pieces = [data[i : i + 3 * MIB] for i in range(0, len(data), 3 * MIB)]
    stream = [
        graph_pb.TensorProto(
            node_name=req.node_name,
            slot=req.slot,
            iter=req.iter,
            truncate=True,
            tensor_content=piece,
            data_type=11,
            dims=[value.size],
            finished=i == len(pieces) - 1,
        )
        for i, piece in enumerate(pieces)
    ]
    assert client.stub.SendTensors(iter(stream), timeout=20).status == OK
    thread.join(20)
    np.testing.assert_array_equal(out["value"], value)

    # a kernel output: full name, no truncate, current step; not found → None
    future = client.wait_future()
    thread, out = _fetch_in_thread(session.tensor, TensorRef(kernel.name))
    (req,) = future.result(timeout=20).view_cmd.tensors
    assert (req.node_name, req.iter, req.truncate) == (kernel.name, "", False)
    not_found = graph_pb.TensorProto(node_name=req.node_name, slot="0", iter="", finished=True)
    client.stub.SendTensors(iter([not_found]), timeout=20)
    thread.join(20)
    assert out == {"value": None}

    # statistics and base carry no names: paired by position
    future = client.wait_future()
    thread, out = _fetch_in_thread(session.tensor_statistics, TensorRef(kernel.name))
    reply = future.result(timeout=20)
    assert reply.view_cmd.level == pb.ViewCMD.statistics
    summary = pb.TensorSummary(
        tensor_base=pb.TensorBase(data_type=11, shape=[2, 3], data_size=24),
        statistics=pb.Statistics(max_value=3, min_value=-1, avg_value=1, count=6, zero_count=1),
    )
    client.stub.SendTensorStats(iter([summary]), timeout=20)
    thread.join(20)
    stats = out["value"]
    assert stats.base.shape == (2, 3) and stats.max_value == 3 and stats.zero_count == 1

    future = client.wait_future()
    thread, out = _fetch_in_thread(session.tensor_base, TensorRef(kernel.name))
    assert future.result(timeout=20).view_cmd.level == pb.ViewCMD.base
    client.stub.SendTensorBase(iter([pb.TensorBase(data_size=0, shape=[0])]), timeout=20)
    thread.join(20)
    assert out == {"value": None}  # spec §2.8 not-found form
    client.close()


def test_tensor_over_the_cap_is_refused(graph) -> None:
    session, _ = make_session(server_options=ServerOptions(max_tensor_bytes=MIB))
    try:
        client = connect_raw(session, graph)
        future = client.wait_future()
        wait_state(session, SessionState.WAITING)
        kernel = next(n for n in session.graphs[graph.name].operators)
        thread, out = _fetch_in_thread(session.tensor, TensorRef(kernel.name))
        (req,) = future.result(timeout=20).view_cmd.tensors
        pieces = [
            graph_pb.TensorProto(
                node_name=req.node_name,
                slot="0",
                tensor_content=b"\0" * MIB,
                data_type=6,
                dims=[2 * MIB],
                finished=i == 1,
            )
            for i in range(2)
        ]
        client.stub.SendTensors(iter(pieces), timeout=20)
        thread.join(20)
        assert isinstance(out["error"], SessionError)
        assert str(out["error"]) == f"Tensor {kernel.ui_name}:0 is larger than the 1 MiB limit."
        client.close()
    finally:
        session.close()


def test_an_over_cap_tensor_is_named_by_its_node_not_its_internal_id() -> None:
    """A training's graph may name nodes by internal ids (`2`): the sentence names the node
    as the user sees it (issue 27 §7)."""
    from tuidebug.online.server import ReceivedTensor
    from tuidebug.online.views import decode_tensor

    received = ReceivedTensor("2", "0", "", False, data_type=11, dims=(4,), oversize=True)
    with pytest.raises(SessionError) as err:
        decode_tensor(received, TensorRef("2"), MIB, "Default/network/Add-op1")
    assert str(err.value) == "Tensor Default/network/Add-op1:0 is larger than the 1 MiB limit."


def test_tensor_request_needs_a_suspended_training(online, graph) -> None:
    session, _ = online
    client = connect_raw(session, graph)
    with pytest.raises(SessionError):
        session.tensor(TensorRef("anything"))  # graph received, client not waiting yet
    client.close()


# ------------------------------------------------------------------------- graphs
def _big_graph(nodes: int) -> graph_pb.GraphProto:
    g = graph_pb.GraphProto(name="kernel_graph_7")
    g.parameters.add(name="w")
    for i in range(1, nodes + 1):
        n = g.node.add(name=str(i), op_type="Add", scope="Default/" + "s" * 200)
        n.full_name = f"Default/{'s' * 200}/Add-op{i}"
        n.input.add(name="w" if i == 1 else str(i - 1))
    return g


def test_large_graph_arrives_in_chunks(online) -> None:
    session, log = online
    big = _big_graph(20_000)
    assert big.ByteSize() > 4 * MIB  # more than one 3 MiB chunk, more than a message
    client = RawClient(session.address)
    client.hello()
    assert client.send_graph(big).status == OK
    future = client.wait_future()
    event = log.wait_for(GraphsLoaded)
    assert len(event.graphs["kernel_graph_7"]) == 20_001
    session.terminate()
    future.result(timeout=20)
    client.close()


def test_multi_graphs_split_on_finished(online, graph) -> None:
    session, log = online
    big = _big_graph(20_000)
    chunks = []
    data = big.SerializeToString()
    for i in range(0, len(data), 3 * MIB):
        chunks.append(pb.Chunk(buffer=data[i : i + 3 * MIB], finished=i + 3 * MIB >= len(data)))
    chunks.append(pb.Chunk(buffer=graph.SerializeToString(), finished=True))
    client = RawClient(session.address)
    client.hello()
    assert client.stub.SendMultiGraphs(iter(chunks), timeout=20).status == OK
    future = client.wait_future()
    event = log.wait_for(GraphsLoaded)
    assert sorted(event.graphs) == sorted(["kernel_graph_7", graph.name])
    session.terminate()
    future.result(timeout=20)
    client.close()


def test_graph_over_the_cap_is_refused(graph) -> None:
    session, log = make_session(server_options=ServerOptions(max_graph_bytes=MIB))
    try:
        client = RawClient(session.address)
        client.hello()
        chunks = iter([pb.Chunk(buffer=b"\0" * (MIB // 2 + 1))] * 3)
        assert client.stub.SendGraph(chunks, timeout=20).status == FAILED
        notice = log.wait_for(Notice)
        assert "larger than 1 MiB" in notice.message
        assert client.wait(timeout=5).status == FAILED  # still no graph
        client.close()
    finally:
        session.close()


# ---------------------------------------------------------------- untrusted bytes
@pytest.mark.parametrize("method", ["WaitCMD", "SendMetadata", "SendHeartbeat"])
def test_garbage_unary_gets_failed(online, method: str) -> None:
    session, _ = online
    client = RawClient(session.address)
    reply = pb.EventReply.FromString(client.raw_unary(method, GARBAGE))
    assert reply.status == FAILED
    assert client.hello().version_matched  # the server is still fine
    client.close()


@pytest.mark.parametrize(
    "method",
    [
        "SendGraph",
        "SendMultiGraphs",
        "SendTensors",
        "SendTensorBase",
        "SendTensorStats",
        "SendWatchpointHits",
    ],
)
def test_garbage_stream_gets_failed(online, method: str) -> None:
    session, _ = online
    client = RawClient(session.address)
    client.hello()
    reply = pb.EventReply.FromString(client.raw_stream(method, iter([b"", GARBAGE])))
    assert reply.status == FAILED
    assert client.hello().version_matched
    client.close()


def test_graph_bytes_that_are_no_graph(online) -> None:
    session, _ = online
    client = RawClient(session.address)
    client.hello()
    chunks = iter([pb.Chunk(buffer=GARBAGE)])
    assert client.stub.SendGraph(chunks, timeout=20).status == FAILED
    client.close()


def test_oversized_message_is_rejected_by_grpc(online) -> None:
    session, _ = online
    client = RawClient(session.address)
    with pytest.raises(grpc.RpcError) as info:
        client.raw_unary("SendMetadata", b"\x0a" + b"\xff\xff\xff\x02" + b"x" * (6 * MIB))
    assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert client.hello().version_matched
    client.close()


def test_a_3mib_chunk_fits_the_receive_limit(online) -> None:
    session, _ = online
    client = RawClient(session.address)
    client.hello()
    data = b"\0" * (3 * MIB)
    # a valid-size chunk of zeros is not a graph, but it must reach the handler
    reply = client.stub.SendGraph(iter([pb.Chunk(buffer=data)]), timeout=20)
    assert reply.status == FAILED  # refused by parsing, not by gRPC
    client.close()


# ----------------------------------------------------------------------- heartbeat
@pytest.mark.parametrize(("period", "status"), [(4, FAILED), (3601, FAILED), (5, OK), (30, OK)])
def test_heartbeat_period_validation(period: int, status: int) -> None:
    session, _ = make_session()
    try:
        client = RawClient(session.address)
        reply = client.stub.SendHeartbeat(
            pb.Heartbeat(message="Debugger is alive", period=period), timeout=20
        )
        assert reply.status == status
        client.close()
    finally:
        session.close()


# ----------------------------------------------------------------------- listening
def test_busy_port_is_one_sentence(online) -> None:
    session, _ = online
    other = OnlineSession("127.0.0.1", session.port)
    with pytest.raises(ServerStartError) as info:
        start_server(other, "127.0.0.1", session.port)
    message = str(info.value)
    assert "already in use" in message and message.count(".") == 4  # "127.0.0.1" + end
    other.close()


def test_garbage_is_one_log_line(online, caplog: pytest.LogCaptureFixture) -> None:
    session, _ = online
    client = RawClient(session.address)
    client.hello()  # streams other than graphs are read only from the attached training
    with caplog.at_level("DEBUG"):
        client.raw_unary("WaitCMD", GARBAGE)
        client.raw_stream("SendWatchpointHits", iter([GARBAGE]))
    ours = [r for r in caplog.records if r.levelname in ("WARNING", "ERROR", "CRITICAL")]
    assert len(ours) == 2, [r.getMessage() for r in ours]
    assert all(r.name == "tuidebug.online" and not r.exc_info for r in ours)
    assert all("\n" not in r.getMessage() for r in ours)
    client.close()


def test_unanswered_tensor_request_times_out(graph) -> None:
    session, _ = make_session(tensor_timeout=0.5)
    try:
        client = connect_raw(session, graph)
        future = client.wait_future()
        wait_state(session, SessionState.WAITING)
        kernel = session.graphs[graph.name].operators[0].name
        with pytest.raises(SessionError, match="did not send"):
            session.tensor(TensorRef(kernel))  # the client gets the ViewCMD but never answers
        assert future.result(timeout=20).WhichOneof("cmd") == "view_cmd"
        # a late answer is ignored; the next suspension is ordinary
        client.stub.SendTensors(iter([graph_pb.TensorProto(node_name=kernel, slot="0")]))
        future = client.wait_future()
        wait_state(session, SessionState.WAITING)
        session.terminate()
        assert future.result(timeout=20).exit
        client.close()
    finally:
        session.close()


def test_graph_with_too_many_nodes(graph) -> None:
    session, log = make_session(max_graph_nodes=50)
    try:
        client = RawClient(session.address)
        client.hello()
        assert client.send_graph(graph).status == OK
        wait_state(session, SessionState.NODE_TOO_LARGE)
        assert "more than the 50" in log.wait_for(Notice).message
        future = client.wait_future()  # suspended until terminate, not failed into an exit
        with pytest.raises(SessionError, match="too large"):
            session.step()
        session.terminate()
        assert future.result(timeout=20).exit
        client.close()
    finally:
        session.close()


def test_new_metadata_starts_a_new_session(online, graph) -> None:
    session, log = online
    client = connect_raw(session, graph)
    stale = client.wait_future()
    wait_state(session, SessionState.WAITING)
    session.create_watchpoint("TO", {})
    other = RawClient(session.address)
    assert other.hello().version_matched  # a new training process
    assert stale.result(timeout=20).status == FAILED  # the old one's long poll ends
    wait_state(session, SessionState.PENDING)
    assert session.watchpoints == () and session.graphs == {}
    start = len(log.events)
    assert other.send_graph(graph).status == OK
    future = other.wait_future()
    assert log.wait_for(GraphsLoaded, after=start).first_time
    session.terminate()
    assert future.result(timeout=20).exit
    client.close()
    other.close()


def test_huge_node_list_falls_back_to_star_and_filters_hits(online) -> None:
    session, _ = online
    big = _big_graph(20_000)
    outside = "Other/Mul-op0"
    big.node.add(name="0", op_type="Mul", scope="Other", full_name=outside)
    client = RawClient(session.address)
    client.hello()
    client.send_graph(big)
    future = client.wait_future()
    wait_state(session, SessionState.WAITING)
    scope = "Default/" + "s" * 200
    wp = session.create_watchpoint("TO", {}, [scope])  # every Add and w, not Other/
    session.recheck()
    set_reply = future.result(timeout=20)
    assert set_reply.ByteSize() < 4 * MIB  # MindSpore's receive limit (spec §1.6)
    (node,) = set_reply.set_cmd.watch_nodes
    assert (node.node_name, node.node_type) == ("*", "scope")
    assert client.wait(0).run_cmd.run_level == "recheck"

    def hit(name: str) -> pb.WatchpointHit:
        return pb.WatchpointHit(
            id=wp.id,
            tensor=graph_pb.TensorProto(node_name=name, slot="0", finished=True),
            watch_condition=pb.WatchCondition(condition=13),
        )

    inside = f"{scope}/Add-op7"
    client.stub.SendWatchpointHits(iter([hit(outside), hit(inside)]), timeout=20)
    future = client.wait_future()
    wait_until(lambda: session.hits != ())
    assert [h.tensor.node for h in session.hits] == [inside]
    session.terminate()
    future.result(timeout=20)
    client.close()
