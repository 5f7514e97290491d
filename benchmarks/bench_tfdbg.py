#!/usr/bin/env python3
"""tfdbg dumps at scale (issue 32): figures, not assertions, one run of each, as ratios.

The dump: the real Keras `fit` fixture (tests/data/tfdbg/keras_fit, FULL_HEALTH, TF 2.21)
repeated until it holds `--traces` graph execution traces (1M by default): its traces and
its `.execution` records (function calls and eager ops) again and again with wall times
shifted past the last repeat, each record reframed with fresh CRCs; the NaN/Inf counts of
every repeat but the middle one cleared, so the first NaN comes half way through. Graphs,
stack frames and source text are the fixture's.

    floor                  one pass reading every record of the six files: framing, both
                           CRCs (the least any correct reader does), in this process
    tuidebug first result  `tuidebug check DUMP --watch TO`, from the process start to
                           its first hit line on stdout
    tuidebug check         the same process, to its exit                goal ≤ 2× floor
    DebugDataReader        TensorFlow's reader (`/tmp/tfvenv`, when there) in a process of
                           its own: `update()`, then the traces read and each FULL_HEALTH
                           summary's NaN/Inf counts looked at (what TO decides); its first
                           result is when the first non-finite trace is found
                                                                         goal ≥ 5× faster
    peak RSS               each process's own ru_maxrss                  goal: bounded

Usage: python benchmarks/bench_tfdbg.py [--traces N] [--keep DIR] [--tfvenv /tmp/tfvenv]
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tuidebug._proto import tfdbg_event_pb2 as pb  # noqa: E402
from tuidebug.offline.files.tfdbg import KINDS, crc32c, masked_crc32c, read_records  # noqa: E402

FIXTURE = REPO / "tests" / "data" / "tfdbg" / "keras_fit"
PREFIX = "tfdbg_events.1700000000.fixture"
GOAL_FLOOR, GOAL_TF = 2.0, 5.0


def _framed(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return (
        head
        + struct.pack("<I", masked_crc32c(head))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def make_dump(target: Path, traces: int) -> tuple[int, int]:
    """The repeated fixture (module docstring); (traces, executions) written."""
    target.mkdir(parents=True, exist_ok=True)
    for kind in ("metadata", "source_files", "stack_frames", "graphs"):
        (target / f"{PREFIX}.{kind}").write_bytes((FIXTURE / f"{PREFIX}.{kind}").read_bytes())
    trace_events = [
        pb.DebugEvent.FromString(d)
        for d in read_records(FIXTURE / f"{PREFIX}.graph_execution_traces")[0]
    ]
    exec_events = [
        pb.DebugEvent.FromString(d) for d in read_records(FIXTURE / f"{PREFIX}.execution")[0]
    ]
    start = min(e.wall_time for e in trace_events + exec_events)
    span = max(e.wall_time for e in trace_events + exec_events) - start + 1.0
    repeats = -(-traces // len(trace_events))
    written = [0, 0]
    with (
        (target / f"{PREFIX}.graph_execution_traces").open("wb") as out_t,
        (target / f"{PREFIX}.execution").open("wb") as out_e,
    ):
        for r in range(repeats):
            keep_nan = r == repeats // 2
            shift = r * span
            events = sorted(
                [(e.wall_time, 1, e) for e in trace_events]
                + [(e.wall_time, 0, e) for e in exec_events],
                key=lambda x: (x[0], x[1]),
            )
            for _w, is_trace, event in events:
                if is_trace and written[0] >= traces:
                    continue
                copy = pb.DebugEvent()
                copy.CopyFrom(event)
                copy.wall_time = event.wall_time + shift
                if not keep_nan:
                    _clear_non_finite(copy)
                if is_trace:
                    out_t.write(_framed(copy.SerializeToString()))
                    written[0] += 1
                else:
                    out_e.write(_framed(copy.SerializeToString()))
                    written[1] += 1
    return written[0], written[1]


def _clear_non_finite(event: pb.DebugEvent) -> None:
    protos = (
        [event.graph_execution_trace.tensor_proto]
        if event.HasField("graph_execution_trace")
        else list(event.execution.tensor_protos)
    )
    for tp in protos:
        if tp.dtype == 2 and len(tp.tensor_content) == 88:  # FULL_HEALTH's 11 doubles
            v = list(struct.unpack("<11d", tp.tensor_content))
            v[10] += v[5] + v[6] + v[7]  # counted as positive finite instead
            v[5] = v[6] = v[7] = 0.0
            tp.tensor_content = struct.pack("<11d", *v)


def floor(folder: Path) -> tuple[float, float, int]:
    """One pass over every record of the six files: framing and both CRCs; (wall s, CPU
    s, records)."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    count = 0
    for kind in KINDS:
        path = folder / f"{PREFIX}.{kind}"
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            pos, size = 0, len(m)
            unpack = struct.Struct("<QI").unpack_from
            while pos + 12 <= size:
                length, length_crc = unpack(m, pos)
                if masked_crc32c(m[pos : pos + 8]) != length_crc:
                    raise SystemExit(f"{path}: bad length CRC at {pos}")
                data = m[pos + 12 : pos + 12 + length]  # bytes: what a parser is given
                (data_crc,) = struct.unpack_from("<I", m, pos + 12 + length)
                if masked_crc32c(data) != data_crc:
                    raise SystemExit(f"{path}: bad data CRC at {pos}")
                pos += 16 + length
                count += 1
    return time.perf_counter() - t0, time.process_time() - c0, count


_CHILD = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
first = None
lines = 0
for line in proc.stdout:
    if first is None:
        first = time.perf_counter() - t0
    lines += 1
err = proc.stderr.read()
rc = proc.wait()
total = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
rss = usage.ru_maxrss / 1024
cpu = usage.ru_utime + usage.ru_stime
print(json.dumps({"first": first, "total": total, "rc": rc, "lines": lines, "rss_mb": rss,
                  "cpu": cpu,
                  "stderr": err.decode(errors="replace")[-600:]}))
"""

_TF_READER = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from tensorflow.python.debug.lib import debug_events_reader
t_import = time.perf_counter() - t0
first = None
hits = 0
with debug_events_reader.DebugDataReader(sys.argv[1]) as reader:
    reader.update()
    for trace in reader.graph_execution_traces(digest=False):
        v = trace.debug_tensor_value
        if v is not None and v[5] + v[6] + v[7] > 0:
            hits += 1
            if first is None:
                first = time.perf_counter() - t0
    for e in reader.executions(digest=False):  # eager ops' outputs, as tuidebug checks them
        for v in e.debug_tensor_values or ():
            if v is not None and v[5] + v[6] + v[7] > 0:
                hits += 1
total = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_SELF)
rss = usage.ru_maxrss / 1024
print(json.dumps({"first": first, "total": total, "import": t_import, "hits": hits,
                  "rss_mb": rss, "cpu": usage.ru_utime + usage.ru_stime}))
"""


def run_tuidebug(folder: Path) -> dict[str, object]:
    cmd = [sys.executable, "-m", "tuidebug", "check", str(folder), "--watch", "TO"]
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *cmd], capture_output=True, text=True, cwd=REPO
    )
    return json.loads(out.stdout)


def run_debug_data_reader(folder: Path, python: Path) -> dict[str, object] | None:
    if not python.exists():
        return None
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run(
        [str(python), "-c", _TF_READER, str(folder)], capture_output=True, text=True, env=env
    )
    if out.returncode:
        print(f"DebugDataReader failed: {out.stderr[-800:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _s(seconds: object) -> str:
    return "none" if seconds is None else f"{float(seconds):.2f} s"  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write (or reuse) the dump here")
    parser.add_argument("--tfvenv", type=Path, default=Path("/tmp/tfvenv"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "dump"
        if not (folder / f"{PREFIX}.graph_execution_traces").exists():
            t0 = time.perf_counter()
            n_traces, n_exec = make_dump(folder, args.traces)
            print(
                f"dump: {n_traces:,} graph execution traces, {n_exec:,} executions, "
                f"written in {time.perf_counter() - t0:.1f} s to {folder}"
            )
        size = sum(p.stat().st_size for p in folder.iterdir())
        print(f"dump size: {size / 2**20:.1f} MiB; crc32c: {crc32c!r}")
        floor_s, floor_cpu, records = floor(folder)
        print(
            f"floor (framing + CRCs of {records:,} records, in this process): {floor_s:.2f} s"
            f" wall, {floor_cpu:.2f} s CPU"
        )
        ours = run_tuidebug(folder)
        total, cpu = float(ours["total"]), float(ours["cpu"])  # type: ignore[arg-type]
        first = _s(ours["first"])
        print(
            f"tuidebug check --watch TO (its whole process): first result {first}, total "
            f"{total:.2f} s wall, {cpu:.2f} s CPU, exit {ours['rc']}, {ours['lines']:,} hit "
            f"lines, peak RSS {float(ours['rss_mb']):.0f} MiB"  # type: ignore[arg-type]
        )
        print(
            f"  vs floor: {total / floor_s:.2f}x wall, {cpu / floor_cpu:.2f}x CPU "
            f"(goal <= {GOAL_FLOOR:g}x; CPU is the steadier on a shared machine)"
        )
        theirs = run_debug_data_reader(folder, args.tfvenv / "bin" / "python")
        if theirs is None:
            print(f"DebugDataReader: not measured ({args.tfvenv} has no TensorFlow)")
        else:
            t_total, t_cpu = float(theirs["total"]), float(theirs["cpu"])  # type: ignore[arg-type]
            print(
                f"DebugDataReader (its whole process): first result {_s(theirs['first'])}, "
                f"total {t_total:.2f} s wall, {t_cpu:.2f} s CPU (TensorFlow's import "
                f"{float(theirs['import']):.1f} s of it), {theirs['hits']:,} non-finite "  # type: ignore[arg-type]
                f"outputs, peak RSS {float(theirs['rss_mb']):.0f} MiB"  # type: ignore[arg-type]
            )
            print(
                f"  tuidebug faster by: {t_total / total:.2f}x wall, {t_cpu / cpu:.2f}x CPU "
                f"(goal >= {GOAL_TF:g}x)"
            )
            if ours["first"] is not None and theirs["first"] is not None:
                ratio = float(theirs["first"]) / float(ours["first"])  # type: ignore[arg-type]
                print(f"  first result sooner by: {ratio:.2f}x")
        if ours["stderr"]:
            print(f"tuidebug stderr tail: {ours['stderr']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
