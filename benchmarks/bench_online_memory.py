"""Memory of `tuidebug online` under concurrent large graph streams (issue 11, "Memory").

    python benchmarks/bench_online_memory.py [--clients 4] [--mib 1000] [--chunk-mib 3]

The server runs in a child process with its production limits (`ServerOptions()`), so its
resident memory is measured alone: `--clients` local clients each stream `--mib` MiB of
graph chunks at once (each under the 1024 MiB per-stream cap; zeros, which are no graph,
so nothing is kept after the stream). Reported: the server's RSS before, its peak (the
kernel's high-water mark, VmHWM), and its RSS two seconds after the last stream ended, next
to the server's own buffered-bytes counters and how each stream ended.

Linux only (reads /proc). The same script runs against an older checkout (no counters) with
`PYTHONPATH=<checkout>` to compare.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc

from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug._proto import debug_grpc_pb2_grpc as pb_grpc

MIB = 1024 * 1024


def serve(trim: bool) -> None:
    """The child: a session on a free loopback port; prints its counters when asked."""
    from tuidebug.online import server
    from tuidebug.online.session import OnlineSession

    if not trim and hasattr(server, "TRIM_AFTER_BYTES"):
        server.TRIM_AFTER_BYTES = 1 << 62  # never: what glibc keeps without malloc_trim

    session = OnlineSession("127.0.0.1", 0)
    session.start()
    print(f"port {session.port}", flush=True)
    for line in sys.stdin:
        if line.strip() == "stats":
            listener = getattr(session, "listener", None)
            stats = {}
            if listener is not None:
                stats = {
                    "budget_limit_mib": listener.budget.limit / MIB,
                    "buffered_peak_mib": listener.budget.peak / MIB,
                    "buffered_now_mib": listener.budget.used / MIB,
                }
            print(json.dumps(stats), flush=True)
        elif line.strip() == "quit":
            break
    session.close()


def _status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def _chunks(total: int, chunk: int) -> Iterator[pb.Chunk]:
    piece = b"\0" * chunk
    sent = 0
    while sent < total:
        size = min(chunk, total - sent)
        yield pb.Chunk(buffer=piece if size == chunk else piece[:size])
        sent += size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--mib", type=int, default=1000)
    parser.add_argument("--chunk-mib", type=int, default=3)
    parser.add_argument(
        "--no-trim", action="store_true", help="never call malloc_trim (to compare)"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(trim=not args.no_trim)
        return

    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", *(["--no-trim"] if args.no_trim else [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    port = int(child.stdout.readline().split()[1])
    time.sleep(0.5)
    before = _status(child.pid)["VmRSS"]
    outcomes: list[str] = []

    def client() -> None:
        channel = grpc.insecure_channel(
            f"127.0.0.1:{port}",
            options=[
                ("grpc.use_local_subchannel_pool", 1),
                ("grpc.max_send_message_length", 8 * MIB),
            ],
        )
        stub = pb_grpc.EventListenerStub(channel)
        try:
            reply = stub.SendGraph(_chunks(args.mib * MIB, args.chunk_mib * MIB), timeout=600)
            outcomes.append("FAILED reply" if reply.status else "OK reply")
        except grpc.RpcError as exc:
            outcomes.append(f"{exc.code().name}: {exc.details()}")
        finally:
            channel.close()

    start = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    time.sleep(2.0)
    after = _status(child.pid)
    child.stdin.write("stats\n")
    child.stdin.flush()
    stats = json.loads(child.stdout.readline())
    child.stdin.write("quit\n")
    child.stdin.flush()
    child.wait(30)

    print(
        f"{args.clients} clients x {args.mib} MiB in {args.chunk_mib} MiB chunks: {elapsed:.1f} s"
    )
    print(f"server RSS before:        {before / MIB:8.0f} MiB")
    print(f"server RSS peak (VmHWM):  {after['VmHWM'] / MIB:8.0f} MiB")
    print(f"server RSS 2 s after:     {after['VmRSS'] / MIB:8.0f} MiB")
    for key, value in stats.items():
        print(f"{key + ':':26}{value:8.0f}")
    for outcome in sorted(outcomes):
        print(f"  stream: {outcome}")


if __name__ == "__main__":
    main()
