#!/usr/bin/env python3
"""Opening a big msprobe dump in the TUI, `exec` and the API (issue 29): the time to the
first frame of its step and the peak memory, against the floor, in one run.

    python benchmarks/bench_msprobe_open.py [--records 300000] [--tmp DIR] [--repeat 1]

Writes the dump `bench_msprobe.py` writes (one step, `--records` tensor records in msprobe's
own indent-1 layout; `Functional.linear.<i>.forward` calls of three inputs and one output),
then, each as a fresh process, in `--repeat` interleaved rounds (the best of each counts):

    floor   `json.load` of the dump.json (the stdlib: orjson refuses msprobe's NaN tokens)
    open    what the TUI does before its first frame of step 1: `OfflineSession.start()`
            (the graph of the calls) and the step's tensor list (`tensor_entries`, which
            reads the step's records), through the foreign-dump seam (`offline/foreign`)

with wall time, CPU time (the child's user + system seconds: on a shared machine the wall
time says how busy the others were, the CPU time what the work cost) and peak RSS (the
child's ru_maxrss). No other tool shows an msprobe dump in
a terminal (msprobe's own viewers are a CSV and a TensorBoard plugin), so the floor is the
only comparison. `tuidebug check` on the same dump is `bench_msprobe.py`'s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_msprobe import write_dump  # the sibling script's generator


def run(cmd: list[str]) -> tuple[float, float, int, int, str]:
    """(wall seconds, CPU seconds, peak RSS bytes, exit status, output) of one child."""
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status), text


_OPEN = """
import sys
from tuidebug.offline.session import OfflineSession
session = OfflineSession(sys.argv[1])
session.start()
session.reset_step(1)
print(len(session.tensor_entries()))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_msprobe_open_", dir=args.tmp))
    try:
        t0 = time.perf_counter()
        root, _bad = write_dump(folder / "root", args.records)
        dump = root / "step0" / "rank0" / "dump.json"
        size = dump.stat().st_size
        print(
            f"dump.json: {args.records:,} tensor records, {size / 1e6:.0f} MB, written in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        floor_cmd = [
            sys.executable,
            "-c",
            "import json, sys; json.load(open(sys.argv[1], 'rb'))",
            str(dump),
        ]
        open_cmd = [sys.executable, "-c", _OPEN, str(root)]
        rounds: dict[str, list[tuple[float, float, int, int, str]]] = {"f": [], "o": []}
        for _ in range(args.repeat):
            rounds["f"].append(run(floor_cmd))
            rounds["o"].append(run(open_cmd))
        f_wall, f_cpu, f_rss, f_rc, f_out = min(rounds["f"], key=lambda r: r[0])
        o_wall, o_cpu, o_rss, o_rc, o_out = min(rounds["o"], key=lambda r: r[0])
        # the best CPU time of each, whichever round it came from
        f_cpu = min(r[1] for r in rounds["f"])
        o_cpu = min(r[1] for r in rounds["o"])
        if f_rc or o_rc:
            sys.exit(f"a run failed: {f_out[-400:]} {o_out[-800:]}")
        print(
            f"floor  json.load (stdlib)            {f_wall:7.2f} s   CPU {f_cpu:6.2f} s   "
            f"peak RSS {f_rss / 1e6:6.0f} MB"
        )
        print(
            f"open   session + step 1's tensors    {o_wall:7.2f} s   CPU {o_cpu:6.2f} s   "
            f"peak RSS {o_rss / 1e6:6.0f} MB"
        )
        print(f"       ({o_out.strip().splitlines()[-1]} tensors listed)")
        print()
        print(f"open / floor       {o_wall / f_wall:6.2f}× wall   {o_cpu / f_cpu:6.2f}× CPU")
        print(f"open RSS / file    {o_rss / size:6.2f}×")
        print(f"floor RSS / file   {f_rss / size:6.2f}×")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
