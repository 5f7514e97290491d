#!/usr/bin/env python3
"""A many-rank check on a Dask cluster against the same check here (issue 17).

    python benchmarks/bench_cluster.py [--gb 1] [--ranks 16] [--iterations 3] [--layers 8]
                                       [--workers 2] [--tmp DIR] [--keep]

Writes (with `offline.dump_writer`, `bench_offline.write_dump`) a dump of about `--gb` GB:
`--ranks` ranks × `--iterations` iterations of an MLP, then measures, in one run and on a
warm page cache (the floor pass reads everything first):

    floor      one `numpy.load(mmap_mode="r")` + `numpy.max` pass over every file, in this
               process; also per rank (the slowest rank is the floor of a cluster with one
               worker per rank)
    local      `Checker.check` of the reference watchpoints W1–W10 (bench_offline) over every
               rank and iteration, default threads
    start      starting a `LocalCluster` of `--workers` single-threaded processes + Client
    cluster    the same check with `ClusterRunner` on that cluster (`--cluster local:N`),
               start-up excluded; its report must equal the local one
    per task   the scheduler's round trip per task: `--tasks` no-op tasks submitted and
               gathered, divided by their number
    continue   `tuidebug offline`'s session checking every rank: `continue` from step 0
               until the last step (it stops at every step with hits, so it is called
               again), here (`--all-ranks`, threads) and on the cluster (`--cluster
               local:N`); the hits of every step must be equal

and prints cluster / local against the goal (≤ 1.10, plus the stated start-up), and the
per-task overhead, which with the batch count gives the speed-up to expect on a real
cluster: about min(workers, batches) × (local per worker) + batches × overhead / workers.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_offline import REFERENCE_WATCHPOINTS, write_dump


def _watches(dump: object) -> list[object]:
    from tuidebug.core.watchpoints import Watchpoint, resolve_targets
    from tuidebug.offline.check.checker import Watch

    watches = []
    for wp_id, (cond, params) in enumerate(REFERENCE_WATCHPOINTS):
        wp = Watchpoint(wp_id, cond, params)
        tensors = {}
        for rank in dump.ranks:  # type: ignore[attr-defined]
            for name, graph in dump.graphs(rank).items():  # type: ignore[attr-defined]
                nodes = resolve_targets(wp.condition, (), graph)
                tensors[(rank, name)] = [
                    (n.name, s) for n in nodes for s in range(len(n.outputs) or 1)
                ]
        watches.append(Watch(wp_id, wp.request(), wp.condition.needs_prev, tensors))
    return watches


def _continue_to_end(root: Path, runner: object | None) -> tuple[float, list[object], int]:
    """Seconds for continue from step 0 to the last step in a session that checks every
    rank (called again at each step it stops at), each stop's (step, hits), the steps."""
    from tuidebug.offline.session import OfflineSession

    session = OfflineSession(root, runner=runner, all_ranks=True)  # type: ignore[arg-type]
    try:
        session.start()
        for cond, params in REFERENCE_WATCHPOINTS:
            session.create_watchpoint(cond, params)
        stops = []
        last = session.metadata.max_step or 0
        started = time.perf_counter()
        while session.metadata.step < last:
            session.continue_()
            stops.append((session.metadata.step, tuple(session.hits)))
        return time.perf_counter() - started, stops, last
    finally:
        session.close()  # a client passed in (ClusterRunner(client)) stays open


def _floor(root: Path) -> tuple[float, dict[int, float], int]:
    """Seconds for one numpy.max pass over every file, the same per rank, and the bytes."""
    per_rank: dict[int, float] = {}
    total = 0
    for rank_dir in sorted(root.glob("rank_*")):
        rank = int(rank_dir.name.split("_")[1])
        started = time.perf_counter()
        for path in sorted(rank_dir.rglob("*.npy")):
            array = np.load(path, mmap_mode="r")
            if array.size:
                np.max(array)
            total += array.nbytes
            del array
        per_rank[rank] = time.perf_counter() - started
    return sum(per_rank.values()), per_rank, total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gb", type=float, default=1.0, help="dump size in GB (default 1)")
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--layers", type=int, default=8, help="dense layers (8 kernels each)")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    p.add_argument("--tasks", type=int, default=500, help="no-op tasks for the overhead")
    p.add_argument("--tmp", default=None, help="where to write the dump (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the dump and print its path")
    args = p.parse_args(argv)

    from distributed import Client, LocalCluster

    from tuidebug.offline.check.checker import Checker
    from tuidebug.offline.check.cluster import ClusterRunner
    from tuidebug.offline.dump import OfflineDump

    root = Path(tempfile.mkdtemp(prefix="tuidebug-cluster-", dir=args.tmp)) / "dump"
    try:
        started = time.perf_counter()
        write_dump(root, args.gb, args.ranks, args.iterations, args.layers, overflow_from_layer=2)
        write_s = time.perf_counter() - started
        floor_s, per_rank, floor_bytes = _floor(root)
        _floor(root)  # twice: the timed check below finds the same warm cache

        dump = OfflineDump(root)
        watches = _watches(dump)
        started = time.perf_counter()
        local = Checker(dump).check(watches, dump.iterations())  # type: ignore[arg-type]
        local_s = time.perf_counter() - started

        started = time.perf_counter()
        cluster = LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
        client.run(lambda: None)  # every worker up and answering
        start_s = time.perf_counter() - started
        try:
            # the scheduler's cost per task, apart from any checking
            started = time.perf_counter()
            noop = [client.submit(int, i, pure=False) for i in range(args.tasks)]
            client.gather(noop)
            per_task_s = (time.perf_counter() - started) / args.tasks
            del noop

            dump2 = OfflineDump(root)
            runner = ClusterRunner(client)
            started = time.perf_counter()
            remote = Checker(dump2, runner=runner).check(_watches(dump2), dump2.iterations())  # type: ignore[arg-type]
            cluster_s = time.perf_counter() - started

            # the TUI's continue over every rank, here and on the same cluster
            cont_local_s, stops_local, steps = _continue_to_end(root, None)
            cont_cluster_s, stops_cluster, _ = _continue_to_end(root, ClusterRunner(client))
        finally:
            client.close()
            cluster.close()

        same = (
            remote.outcomes == local.outcomes
            and remote.problems == local.problems
            and remote.tensors_checked == local.tensors_checked
        )
        batches = len(runner.batches)
        ratio = cluster_s / local_s if local_s else math.inf
        gb = floor_bytes / 1e9
        print(
            f"dump: {gb:.2f} GB, {args.ranks} ranks x {args.iterations} iterations, "
            f"{local.tensors_checked} tensors, written in {write_s:.1f} s"
        )
        print(
            f"floor (numpy.max pass): {floor_s:.2f} s ({gb / floor_s:.2f} GB/s); "
            f"slowest rank {max(per_rank.values()):.3f} s"
        )
        print(
            f"local check:            {local_s:.2f} s ({local.workers} threads, "
            f"{local_s / floor_s:.2f}x floor), {len(local.outcomes)} hits"
        )
        print(f"cluster start-up:       {start_s:.2f} s (LocalCluster of {args.workers} + Client)")
        print(
            f"cluster check:          {cluster_s:.2f} s ({batches} tasks on {remote.workers} "
            f"workers), {len(remote.outcomes)} hits, same report as local: {same}"
        )
        print(f"cluster / local:        {ratio:.3f} (goal <= 1.10 plus the start-up)")
        print(
            f"scheduler per task:     {per_task_s * 1e3:.2f} ms ({args.tasks} no-op tasks); "
            f"{batches} tasks cost ~{batches * per_task_s:.2f} s of scheduling"
        )
        same_stops = stops_local == stops_cluster
        print(
            f"continue, every rank:   {cont_local_s:.2f} s here, {cont_cluster_s:.2f} s on the "
            f"cluster ({cont_cluster_s / cont_local_s:.3f}); {steps} steps, {len(stops_local)} "
            f"stops, same hits: {same_stops}"
        )
        same = same and same_stops
        if not same:
            print("MISMATCH between the cluster and the local report", file=sys.stderr)
            return 1
        return 0
    finally:
        if args.keep:
            print(f"dump kept at {root}")
        else:
            shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
