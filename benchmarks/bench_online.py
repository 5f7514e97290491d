"""Benchmark the online debugger over loopback gRPC.

    python benchmarks/bench_online.py [--steps 2000] [--mb 256] [--nodes 50000]

1. Step round trip: a client in its command loop (WaitCMD → RunCMD step → next WaitCMD)
   while the session is continuing; p50/p99 of the whole RPC seen by the client and of the
   server-side time inside `OnlineSession.wire_wait` (target: server overhead < 2 ms p50).
2. A `--mb` MiB float32 tensor fetched with `OnlineSession.tensor()` from our protocol client
   (ViewCMD → SendTensors in 3 MiB pieces → reassembly → numpy), next to the raw gRPC
   throughput of a trivial client-streaming echo of the same 3 MiB byte chunks measured in
   the same run (target: ≥ 300 MB/s).
3. A `--nodes`-node graph sent with SendGraph (3 MiB chunks) and converted to a `Graph`
   before the reply (target: < 3 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures

import grpc
import numpy as np

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug._proto import debug_grpc_pb2_grpc as pb_grpc
from tuidebug.client.protocol import CheckItem, ProtocolClient
from tuidebug.core.session import EventLog, GraphsLoaded, SessionState
from tuidebug.core.tensor import TensorRef
from tuidebug.online.session import OnlineSession

MIB = 1024 * 1024
CHUNK = 3 * MIB


def _wait(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark setup timed out")
        time.sleep(0.005)


def _graph(nodes: int, name: str = "kernel_graph_0") -> graph_pb.GraphProto:
    """A MindSpore-like kernel graph: scoped names, a weight per 4 kernels, output types."""
    g = graph_pb.GraphProto(name=name, root_name="0")
    for i in range(nodes // 4):
        p = g.parameters.add(name=f"layer{i}.weight")
        p.type.data_type = graph_pb.DT_TENSOR
        p.type.tensor_type.elem_type = graph_pb.DT_FLOAT32
        p.type.tensor_type.shape.dim.add(size=64)
        p.type.tensor_type.shape.dim.add(size=64)
    for i in range(1, nodes + 1):
        layer = (i - 1) // 4
        scope = f"Default/network-WithLossCell/_backbone-Net/block{layer // 8}/layer{layer}-Dense"
        n = g.node.add(name=str(i), op_type="MatMul" if i % 4 == 1 else "Add", scope=scope)
        n.full_name = f"{scope}/{n.op_type}-op{i}"
        n.input.add(name=str(i - 1) if i > 1 else "x")
        if i % 4 == 1:
            n.input.add(name=f"layer{layer}.weight")
        n.output_type.data_type = graph_pb.DT_TENSOR
        n.output_type.tensor_type.elem_type = graph_pb.DT_FLOAT32
        n.output_type.tensor_type.shape.dim.add(size=32)
        n.output_type.tensor_type.shape.dim.add(size=64)
    return g


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --------------------------------------------------------------------------- 1. steps
def bench_steps(steps: int) -> dict[str, float]:
    session = OnlineSession("127.0.0.1", 0, wait_slice=0.5)
    server_times: list[float] = []
    wire_wait = session.wire_wait

    def timed_wait(md, is_active):  # server-side time of each WaitCMD
        t0 = time.perf_counter()
        try:
            return wire_wait(md, is_active)
        finally:
            server_times.append(time.perf_counter() - t0)

    session.wire_wait = timed_wait  # type: ignore[method-assign]
    session.start()
    try:
        channel = grpc.insecure_channel(session.address)
        stub = pb_grpc.EventListenerStub(channel)
        stub.SendMetadata(pb.Metadata(backend="GPU", ms_version="2.3.0"))
        data = _graph(200).SerializeToString()
        stub.SendGraph(iter([pb.Chunk(buffer=data)]))
        first = stub.WaitCMD.future(pb.Metadata(backend="GPU", cur_step=0))
        _wait(lambda: session.metadata.state is SessionState.WAITING)
        session.continue_()  # every later WaitCMD is answered with one more step
        first.result()
        server_times.clear()
        client_times = []
        for step in range(1, steps + 1):
            md = pb.Metadata(device_name="0:0", backend="GPU", cur_step=step)
            t0 = time.perf_counter()
            reply = stub.WaitCMD(md)
            client_times.append(time.perf_counter() - t0)
            assert reply.run_cmd.run_level == "step"
        channel.close()
    finally:
        session.close()
    return {
        "client_p50_ms": 1e3 * statistics.median(client_times),
        "client_p99_ms": 1e3 * _pct(client_times, 0.99),
        "server_p50_ms": 1e3 * statistics.median(server_times),
        "server_p99_ms": 1e3 * _pct(server_times, 0.99),
    }


# ------------------------------------------------------------------------ 2. tensors
class _OneTensor:
    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def lookup(self, name: str, slot: str, iter: str) -> np.ndarray | None:
        return self.array if name == "Default/big-op1" and not iter else None

    def check_items(self) -> list[CheckItem]:
        return []


def bench_tensor(mb: int, repeat: int) -> dict[str, float]:
    array = np.arange(mb * MIB // 4, dtype=np.float32)
    session = OnlineSession("127.0.0.1", 0, tensor_timeout=300)
    session.start()
    client = ProtocolClient(session.address, heartbeat=False)
    try:
        client.connect()
        g = graph_pb.GraphProto(name="kernel_graph_0")
        g.node.add(name="1", op_type="Big", scope="Default", full_name="Default/big-op1")
        client.send_graphs([g])
        loop = threading.Thread(
            target=client.command_loop, args=(_OneTensor(array), 0), daemon=True
        )
        loop.start()
        _wait(lambda: session.metadata.state is SessionState.WAITING)
        times = []
        for _ in range(repeat):
            session._tensor_cache.clear()  # measure the transfer, not the cache
            t0 = time.perf_counter()
            value = session.tensor(TensorRef("Default/big-op1"))
            times.append(time.perf_counter() - t0)
            assert value is not None and value.nbytes == array.nbytes
            assert value[-1] == array[-1]
            del value
        session.terminate()
        loop.join(30)
    finally:
        client.close()
        session.close()
    best = min(times)
    return {"seconds": best, "mb_per_s": array.nbytes / MIB / best}


class _Echo(grpc.GenericRpcHandler):
    """A trivial client-streaming method that only counts the bytes it receives."""

    def service(self, handler_call_details):  # type: ignore[override]
        def count(request_iterator: Iterator[bytes], context) -> bytes:
            total = 0
            for chunk in request_iterator:
                total += len(chunk)
            return str(total).encode()

        return grpc.stream_unary_rpc_method_handler(count)


def bench_raw_grpc(mb: int, repeat: int) -> dict[str, float]:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.max_receive_message_length", CHUNK + MIB)],
    )
    server.add_generic_rpc_handlers((_Echo(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    chunk = b"\0" * CHUNK
    count = max(1, mb * MIB // CHUNK)
    try:
        channel = grpc.insecure_channel(
            f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", CHUNK + MIB)]
        )
        call = channel.stream_unary("/bench.Echo/Count")
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            got = call(iter([chunk] * count))
            times.append(time.perf_counter() - t0)
            assert int(got) == count * CHUNK
        channel.close()
    finally:
        server.stop(0)
    best = min(times)
    return {"seconds": best, "mb_per_s": count * CHUNK / MIB / best}


# -------------------------------------------------------------------------- 3. graph
def bench_graph(nodes: int) -> dict[str, float]:
    proto = _graph(nodes)
    data = proto.SerializeToString()
    session = OnlineSession("127.0.0.1", 0)
    log = EventLog()
    session.subscribe(log)
    session.start()
    try:
        channel = grpc.insecure_channel(session.address)
        stub = pb_grpc.EventListenerStub(channel)
        stub.SendMetadata(pb.Metadata(backend="GPU", ms_version="2.3.0"))
        t0 = time.perf_counter()
        chunks = (pb.Chunk(buffer=data[i : i + CHUNK]) for i in range(0, len(data), CHUNK))
        reply = stub.SendGraph(chunks)  # the reply comes after conversion to a Graph
        seconds = time.perf_counter() - t0
        assert reply.status == pb.EventReply.OK
        future = stub.WaitCMD.future(pb.Metadata(backend="GPU"))
        event = log.wait_for(GraphsLoaded, 60)
        assert len(event.graphs["kernel_graph_0"]) == nodes + nodes // 4
        session.terminate()
        future.result()
        channel.close()
    finally:
        session.close()
    return {"seconds": seconds, "mib": len(data) / MIB}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    s = bench_steps(args.steps)
    print(f"step round trip ({args.steps} steps over loopback)")
    print(f"  client (whole RPC)  p50 {s['client_p50_ms']:.3f} ms  p99 {s['client_p99_ms']:.3f} ms")
    print(
        f"  server (wire_wait)  p50 {s['server_p50_ms']:.3f} ms  p99 {s['server_p99_ms']:.3f} ms"
        f"   target p50 < 2 ms: {'ok' if s['server_p50_ms'] < 2 else 'MISSED'}"
    )
    raw = bench_raw_grpc(args.mb, args.repeat)
    t = bench_tensor(args.mb, args.repeat)
    print(f"tensor of {args.mb} MiB (best of {args.repeat})")
    print(
        f"  OnlineSession.tensor  {t['seconds']:.3f} s  {t['mb_per_s']:.0f} MB/s"
        f"   target >= 300 MB/s: {'ok' if t['mb_per_s'] >= 300 else 'MISSED'}"
    )
    print(f"  raw gRPC byte stream  {raw['seconds']:.3f} s  {raw['mb_per_s']:.0f} MB/s")
    g = bench_graph(args.nodes)
    print(f"graph of {args.nodes} kernels ({g['mib']:.1f} MiB serialized)")
    print(
        f"  SendGraph + conversion  {g['seconds']:.3f} s"
        f"   target < 3 s: {'ok' if g['seconds'] < 3 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
