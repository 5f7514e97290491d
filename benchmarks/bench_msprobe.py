#!/usr/bin/env python3
"""`tuidebug check --watch TO` on a big msprobe dump (issue 29), against the floor and msprobe.

    python benchmarks/bench_msprobe.py [--records 1000000] [--tmp DIR] [--keep]
                                       [--msprobe /tmp/msvenv/bin/msprobe] [--repeat 1]

Writes an msprobe root `step0/rank0/{dump.json, construct.json, stack.json}` whose one
dump.json holds `--records` tensor records (1M ≈ 290 MB, msprobe's own indent-1 layout):
`Functional.linear.<i>.forward` calls of three inputs and one output each, finite
statistics, an output whose Norm alone is Infinity every 97th call (msprobe's float32 Norm
overflow, no anomaly) and one output whose Max/Min are NaN/Infinity at 90 % of the file (the
one anomaly both tools must find, after reading nearly everything). Then, each as a fresh
process, in `--repeat` interleaved rounds (the best of each counts; the page cache is warm
after the first):

    floor    `python -c 'json.load(open(dump.json, "rb"))'`: the stdlib json (orjson is no
             dependency of tuidebug, and it refuses msprobe's NaN/Infinity tokens)
    check    `python -m tuidebug check ROOT --watch TO` (exit 1, the planted call named)
    msprobe  `msprobe overflow_check -i ROOT/step0 -o …` of mindstudio-probe 26.x (8.3.3
             has no such analysis command; its `overflow_check` is a dump task), its answer
             checked to name the planted call

with wall time, CPU time (user + system: a shared, loaded machine distorts it least) and
peak RSS (the child's ru_maxrss), and prints the ratios against the goals
of issue 29: check ≤ 1.5× the floor, ≥ 5× faster than msprobe, RSS ≤ 2× the file.
`--records 100000` is a quick run (~29 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent

_TENSOR = """    {{
     "type": "torch.Tensor",
     "dtype": "torch.float32",
     "shape": [
      {a},
      {b}
     ],
     "Max": {mx},
     "Min": {mn},
     "Mean": {mean},
     "Norm": {norm},
     "requires_grad": true
    }}"""


def _tensor(i: int, k: int, *, mx: str = "", mn: str = "", norm: str = "") -> str:
    v = ((i * 7 + k * 13) % 1000) / 997.0 + 0.001
    return _TENSOR.format(
        a=8 + i % 5,
        b=16 + k,
        mx=mx or repr(v * 3.0),
        mn=mn or repr(-v * 2.5),
        mean=repr(v * 0.01),
        norm=norm or repr(v * 40.0),
    )


def write_dump(folder: Path, records: int) -> tuple[Path, str]:
    """The root, and the name of the call holding the one anomaly."""
    rank = folder / "step0" / "rank0"
    rank.mkdir(parents=True)
    calls = max(1, records // 4)
    bad = calls * 9 // 10
    with open(rank / "dump.json", "w", buffering=1 << 22) as out:
        out.write(
            '{\n "task": "statistics",\n "level": "L1",\n "framework": "pytorch",\n'
            ' "dump_data_dir": null,\n "data": {\n'
        )
        for i in range(calls):
            inputs = ",\n".join(_tensor(i, k) for k in range(3))
            if i == bad:
                output = _tensor(i, 3, mx="NaN", mn="-Infinity", norm="NaN")
            elif i % 97 == 0:
                output = _tensor(i, 3, norm="Infinity")  # Norm alone: no anomaly
            else:
                output = _tensor(i, 3)
            sep = ",\n" if i + 1 < calls else "\n"
            out.write(
                f'  "Functional.linear.{i}.forward": {{\n   "input_args": [\n{inputs}\n   ],\n'
                f'   "input_kwargs": {{}},\n   "output": [\n{output}\n   ]\n  }}{sep}'
            )
        out.write(" }\n}\n")
    (rank / "construct.json").write_text("{}")
    (rank / "stack.json").write_text("{}")
    return folder, f"Functional.linear.{bad}.forward"


class Run(NamedTuple):
    wall: float  # seconds
    cpu: float  # the child's user + system seconds: what a loaded, shared machine distorts least
    rss: int  # peak, bytes
    rc: int
    out: str


def run(cmd: list[str], cwd: str | None = None) -> Run:
    """One child process, measured."""
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, cpu, usage.ru_maxrss * 1024, proc.returncode, text)


def _figures(r: Run, cpu: float) -> str:
    return f"{r.wall:7.2f} s  cpu {cpu:7.2f} s   peak RSS {r.rss / 1e6:6.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--msprobe", default="/tmp/msvenv/bin/msprobe")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_msprobe_", dir=args.tmp))
    try:
        t0 = time.perf_counter()
        root, bad = write_dump(folder / "root", args.records)
        dump = root / "step0" / "rank0" / "dump.json"
        size = dump.stat().st_size
        print(
            f"dump.json: {args.records:,} tensor records, {size / 1e6:.0f} MB, written in "
            f"{time.perf_counter() - t0:.1f} s; the anomaly is {bad}"
        )
        floor_cmd = [
            sys.executable,
            "-c",
            "import json, sys; json.load(open(sys.argv[1], 'rb'))",
            str(dump),
        ]
        check_cmd = [sys.executable, "-m", "tuidebug", "check", str(root), "--watch", "TO"]
        out_dir = folder / "msprobe_out"
        m_cmd = [args.msprobe, "overflow_check", "-i", str(root / "step0"), "-o", str(out_dir)]
        has_msprobe = os.access(args.msprobe, os.X_OK)
        # rounds interleave the three (floor, check, msprobe, floor, …) so that a machine
        # whose load changes over minutes slows each alike; the best of each counts
        rounds: dict[str, list[Run]] = {"f": [], "c": [], "m": []}
        for _ in range(args.repeat):
            rounds["f"].append(run(floor_cmd))
            rounds["c"].append(run(check_cmd))
            if has_msprobe:
                rounds["m"].append(run(m_cmd))
        best = {k: min(v, key=lambda r: r.wall) for k, v in rounds.items() if v}
        cpu = {k: min(r.cpu for r in v) for k, v in rounds.items() if v}
        f, c = best["f"], best["c"]
        if f.rc:
            sys.exit(f"the floor failed: {f.out[-500:]}")
        if c.rc != 1 or bad not in c.out:
            sys.exit(f"check did not find {bad} (exit {c.rc}): {c.out[-800:]}")
        print(f"floor    json.load (stdlib) process  {_figures(f, cpu['f'])}")
        print(f"check    tuidebug check --watch TO   {_figures(c, cpu['c'])}")
        if has_msprobe:
            m = best["m"]
            answers = sorted(out_dir.glob("*.json"))
            names = (
                [e["op_name"] for v in json.loads(answers[-1].read_text()).values() for e in v]
                if answers
                else []
            )
            ok = "agrees" if names[:1] == [bad] else f"DISAGREES ({names[:1]}, exit {m.rc})"
            print(
                f"msprobe  overflow_check -i (26.x)    {_figures(m, cpu['m'])}   first anomaly {ok}"
            )
        else:
            print(f"msprobe  not run: {args.msprobe} is not an executable (see the docstring)")
        every = ", ".join(
            f"{k} " + "/".join(f"{r.wall:.1f}" for r in v) for k, v in rounds.items() if v
        )
        print(f"(every round, wall s: {every})")
        print()
        print("ratios, on wall time (on CPU time)")
        print(
            f"check / floor      {c.wall / f.wall:6.2f}× ({cpu['c'] / cpu['f']:.2f}×)   (goal ≤ 1.5×)"
        )
        if has_msprobe:
            print(
                f"msprobe / check    {best['m'].wall / c.wall:6.2f}× ({cpu['m'] / cpu['c']:.2f}×)   (goal ≥ 5×)"
            )
        print(f"check RSS / file   {c.rss / size:6.2f}×   (goal ≤ 2×)")
        print(f"floor RSS / file   {f.rss / size:6.2f}×")
    finally:
        if args.keep:
            print(f"kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
