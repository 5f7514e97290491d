"""`JobSession` on the wire, without torch: clients that say their rank (the fields of
`core.rank_fields`) join one job; the barrier holds a rank until every rank suspended; a
second job and a duplicate rank are refused with one sentence; a MindSpore client (no rank
fields) is served as one training, as before; the rank fields are parsed safely."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.online.support import RPC_TIMEOUT, TIMEOUT, fixture_graph, wait_until
from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug._proto import debug_grpc_pb2_grpc as pb_grpc
from tuidebug.core.rank_fields import MAX_WORLD, RankInfo, encode_rank_info, rank_info
from tuidebug.core.session import EventLog, Notice, SessionState
from tuidebug.online.job import JobSession
from tuidebug.online.server import ServerOptions


class RankClient:
    """One rank: a connection of its own (as a separate process has), stub calls only."""

    def __init__(self, address: str, info: RankInfo | None) -> None:
        self.info = info
        self.channel = grpc.insecure_channel(
            address, options=[("grpc.use_local_subchannel_pool", 1)]
        )
        self.stub = pb_grpc.EventListenerStub(self.channel)

    def metadata(self, step: int = 0) -> pb.Metadata:
        md = pb.Metadata(device_name="0:0", cur_step=step, backend="GPU", ms_version="torch-2.13.0")
        if self.info is not None:
            md.MergeFromString(encode_rank_info(self.info))
        return md

    def hello(self) -> pb.EventReply:
        return self.stub.SendMetadata(self.metadata(), timeout=RPC_TIMEOUT)

    def send_graph(self, graph: graph_pb.GraphProto) -> pb.EventReply:
        return self.stub.SendGraph(
            iter([pb.Chunk(buffer=graph.SerializeToString())]), timeout=RPC_TIMEOUT
        )

    def wait_future(self, step: int = 0) -> grpc.Future:
        return self.stub.WaitCMD.future(self.metadata(step), timeout=RPC_TIMEOUT)

    def close(self) -> None:
        self.channel.close()


@pytest.fixture
def job() -> Iterator[JobSession]:
    session = JobSession(
        "127.0.0.1",
        0,
        server_options=ServerOptions(max_workers=16),
        wait_slice=0.1,
        join_timeout=TIMEOUT,
    )
    session.start()
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def graph(dump_2_0: Path) -> graph_pb.GraphProto:
    return fixture_graph(dump_2_0)


def joined(
    job: JobSession, graph: graph_pb.GraphProto, world: int = 2, name: str = "a"
) -> list[RankClient]:
    clients = [RankClient(job.address, RankInfo(r, world, name)) for r in range(world)]
    for c in clients:
        assert c.hello().status == pb.EventReply.OK
        assert c.send_graph(graph).status == pb.EventReply.OK
    return clients


def test_the_barrier_holds_a_rank_until_every_rank_suspended(
    job: JobSession, graph: graph_pb.GraphProto
) -> None:
    clients = joined(job, graph)
    try:
        first = clients[0].wait_future(0)
        # rank 1 has not suspended: rank 0 is held, the job is not yet waiting
        assert not _done_within(first, 0.5)
        assert job.metadata.state is not SessionState.WAITING
        second = clients[1].wait_future(0)
        wait_until(lambda: job.metadata.state is SessionState.WAITING, what="the job waiting")
        assert job.metadata.ranks == (0, 1)
        job.step(1)
        # both get their step command in the same round
        replies = [first.result(TIMEOUT), second.result(TIMEOUT)]
        kinds = [r.WhichOneof("cmd") for r in replies]
        assert kinds == ["run_cmd", "run_cmd"]
        assert all(r.run_cmd.run_steps == 1 for r in replies)  # lockstep: one step a WaitCMD
        # rank 1 comes back first: held until rank 0 is at the step end too
        again = clients[1].wait_future(1)
        assert not _done_within(again, 0.5)
        also = clients[0].wait_future(1)  # kept: a dropped future cancels its call
        wait_until(lambda: job.metadata.state is SessionState.WAITING and job.metadata.step == 1)
        assert not again.done() and not also.done()  # both wait for the user now
    finally:
        for c in clients:
            c.close()


def test_a_hit_on_one_rank_halts_the_other(job: JobSession, graph: graph_pb.GraphProto) -> None:
    clients = joined(job, graph)
    try:
        futures = [c.wait_future(0) for c in clients]
        wait_until(lambda: job.metadata.state is SessionState.WAITING)
        job.continue_()
        for f in futures:
            assert f.result(TIMEOUT).WhichOneof("cmd") == "run_cmd"
        # rank 1 reports an (empty) hit message, which stops a run like any hit
        clients[1].stub.SendWatchpointHits(iter([]), timeout=RPC_TIMEOUT)
        held = [c.wait_future(1) for c in clients]
        wait_until(lambda: job.metadata.state is SessionState.WAITING, what="both halted")
        assert not any(f.done() for f in held)  # nobody got another step
    finally:
        for c in clients:
            c.close()


def test_a_rank_that_dies_releases_the_ranks_held_for_it(
    job: JobSession, graph: graph_pb.GraphProto
) -> None:
    events = EventLog()
    job.subscribe(events)
    clients = joined(job, graph)
    try:
        futures = [c.wait_future(0) for c in clients]
        wait_until(lambda: job.metadata.state is SessionState.WAITING)
        job.continue_()
        for f in futures:
            assert f.result(TIMEOUT).WhichOneof("cmd") == "run_cmd"
        held = clients[0].wait_future(1)  # rank 0 at the step end, rank 1 never comes
        assert not _done_within(held, 0.5)
        clients[1].close()  # rank 1 dies mid-step
        reply = held.result(TIMEOUT)  # rank 0 runs on: not held for a dead rank
        assert reply.WhichOneof("cmd") == "run_cmd"
        wait_until(
            lambda: any(
                isinstance(e, Notice) and e.message.startswith("Rank 1 is gone")
                for e in events.events
            ),
            what="the notice naming rank 1",
        )
    finally:
        for c in clients:
            c.close()


def test_a_second_job_and_a_duplicate_rank_are_refused(
    job: JobSession, graph: graph_pb.GraphProto
) -> None:
    clients = joined(job, graph)
    other = RankClient(job.address, RankInfo(0, 2, "b"))
    twin = RankClient(job.address, RankInfo(1, 2, "a"))
    try:
        with pytest.raises(grpc.RpcError) as refused:
            other.hello()
        assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        text = refused.value.details() or ""
        assert "serves one job at a time" in text and text.count(".") == 1
        with pytest.raises(grpc.RpcError) as twice:
            twin.hello()
        assert "already attached" in (twice.value.details() or "")
    finally:
        for c in [*clients, other, twin]:
            c.close()


def test_a_mindspore_client_is_one_training_as_before(
    job: JobSession, graph: graph_pb.GraphProto
) -> None:
    client = RankClient(job.address, None)
    try:
        assert client.hello().version_matched is True
        assert client.send_graph(graph).status == pb.EventReply.OK
        future = client.wait_future(0)
        wait_until(lambda: job.metadata.state is SessionState.WAITING)
        assert job.metadata.ranks == (0,) and not job.multi
        job.step(1)
        assert future.result(TIMEOUT).WhichOneof("cmd") == "run_cmd"
    finally:
        client.close()


def test_a_rank_that_never_suspends_is_not_waited_for_forever(graph: graph_pb.GraphProto) -> None:
    session = JobSession("127.0.0.1", 0, wait_slice=0.1, join_timeout=0.5)
    session.start()
    clients = [RankClient(session.address, RankInfo(r, 3, "c")) for r in range(2)]  # 2 of 3
    try:
        for c in clients:
            c.hello()
            c.send_graph(graph)
        futures = [c.wait_future(0) for c in clients]
        wait_until(
            lambda: session.metadata.state is SessionState.WAITING, what="going on with 2 of 3"
        )
        assert session.metadata.ranks == (0, 1)
        assert not any(f.done() for f in futures)
    finally:
        for c in clients:
            c.close()
        session.close()


def _done_within(future: grpc.Future, seconds: float) -> bool:
    event = threading.Event()
    future.add_done_callback(lambda _f: event.set())
    return event.wait(seconds)


# ------------------------------------------------------------------ the fields, untrusted
@given(st.integers(0, MAX_WORLD - 1), st.integers(1, MAX_WORLD), st.text(max_size=200))
@settings(max_examples=60, deadline=None)
def test_rank_fields_round_trip(rank: int, world: int, name: str) -> None:
    md = pb.Metadata(cur_step=3)
    md.MergeFromString(encode_rank_info(RankInfo(rank, world, name)))
    parsed = rank_info(pb.Metadata.FromString(md.SerializeToString()))
    assert parsed == (RankInfo(rank, world, name) if rank < world else None)


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_rank_fields_of_any_bytes_are_valid_or_none(data: bytes) -> None:
    try:
        md = pb.Metadata.FromString(data)
    except Exception:
        return  # not a message at all: the server refuses it before us
    info = rank_info(md)
    if info is not None:
        assert 0 <= info.rank < info.world_size <= MAX_WORLD and len(info.job) <= 200
