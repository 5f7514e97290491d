#!/usr/bin/env python3
"""`tuidebug compare` on two big msprobe tensor dumps (issue 30), against the floor and
`msprobe compare`, in one run.

    python benchmarks/bench_compare.py [--size-mb 1024] [--tensors 32] [--tmp DIR] [--keep]
                                       [--msprobe /tmp/msvenv/bin/msprobe] [--no-msprobe]

Writes two msprobe tensor dumps (`step0/rank0/{dump.json, construct.json, stack.json,
dump_tensor_data/*.pt}`, the `.pt` files by torch.save as msprobe writes them) of
`--size-mb` each (default 1 GiB: 32 float32 tensors of 8M elements, the inputs and outputs
of 16 `Functional.linear.<i>.forward` calls): the golden random, the target the golden plus
noise of 1e-6 (no divergence) except one output at 60 % of the run shifted by 0.5 (the one
divergence both tools must report). Then, each a fresh process (the page cache warm: the
generator just wrote the files):

    floor     reading every tensor file of both dumps once (whole files) and one fused
              numpy pass per pair for all the metrics (chunks of 64K elements in float64:
              the four dot products, max |diff|, the float32 relative error's max and two
              ratios, each side's max/min/sum), without tuidebug
    tuidebug  `python -m tuidebug compare TARGET GOLDEN --csv OUT` (exit 1, the planted
              output first)
    msprobe   `msprobe compare -tp TARGET/step0 -gp GOLDEN/step0 -o OUT` (mindstudio-probe
              26.x in its own venv), its CSV checked to mark the planted output

and the same two tools on msprobe's own test dumps (../shared/fixtures/msprobe_mlp tensor
dumps, bf16 against fp32, step 0) when they are there. Prints wall time and peak RSS (the
child's ru_maxrss) and the ratios against the goals: tuidebug ≤ 1.5× the floor, ≥ 10×
faster than msprobe compare, RSS bounded (a few tensors, not the dumps' size).
`--size-mb 64` is a quick run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures" / "msprobe_mlp"

# The floor: read each .pt whole, find its storage in the zip, one fused pass per pair.
FLOOR = r"""
import math, struct, sys, zipfile, io
from pathlib import Path
import numpy as np

def array(path):
    data = Path(path).read_bytes()
    zf = zipfile.ZipFile(io.BytesIO(data))
    info = next(i for i in zf.infolist() if "/data/" in i.filename)
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    return np.frombuffer(data, np.float32, info.file_size // 4, start)

def dot(a, b):
    return np.einsum("i,i->", a, b)  # not BLAS: OpenBLAS's threads spin on a loaded machine

def fused(n_all, b_all, chunk=1 << 16):
    acc = [0.0] * 6
    m = [0.0, 0.0, -math.inf, math.inf, -math.inf, math.inf]
    counts = [0, 0]
    eps = np.float32(np.finfo(np.float32).eps)
    for s in range(0, n_all.size, chunk):
        nr, br = n_all[s : s + chunk], b_all[s : s + chunk]
        n, b = nr.astype(np.float64), br.astype(np.float64)
        acc[0] += n.sum(); acc[1] += b.sum()
        m[2] = max(m[2], n.max()); m[3] = min(m[3], n.min())
        m[4] = max(m[4], b.max()); m[5] = min(m[5], b.min())
        acc[2] += dot(n, b); acc[3] += dot(n, n); acc[4] += dot(b, b)
        d = np.subtract(n, b, out=n); acc[5] += dot(d, d)
        m[0] = max(m[0], np.abs(d, out=d).max())
        n32, b32 = nr.copy(), br.copy()
        z = b32 == 0
        n32[z] += eps; b32[z] += eps
        rel = np.abs(np.divide(n32 - b32, b32))
        m[1] = max(m[1], rel.max())
        counts[0] += np.count_nonzero(rel < 0.001); counts[1] += np.count_nonzero(rel < 0.005)
    return acc[2] / math.sqrt(acc[3] * acc[4]), math.sqrt(acc[5]), m, counts

target, golden = Path(sys.argv[1]), Path(sys.argv[2])
worst = 1.0
for t in sorted((target / "step0" / "rank0" / "dump_tensor_data").iterdir()):
    g = golden / "step0" / "rank0" / "dump_tensor_data" / t.name
    cos = fused(array(t), array(g))[0]
    worst = min(worst, cos)
print(f"lowest cosine {worst:.6f}")
"""


def write_dump(root: Path, size_mb: int, tensors: int, *, target: bool) -> None:
    """One msprobe tensor dump (module docstring); the golden and the target share a seed."""
    import numpy as np
    import torch

    folder = root / "step0" / "rank0"
    data_dir = folder / "dump_tensor_data"
    data_dir.mkdir(parents=True)
    elements = max(size_mb * (1 << 20) // 4 // tensors, 2)
    calls: dict[str, object] = {}
    construct: dict[str, None] = {}
    planted = int(tensors // 2 * 0.6)
    for i in range(tensors // 2):
        name = f"Functional.linear.{i}.forward"
        record: dict[str, list[dict[str, object]]] = {}
        for role, k in (("input_args", 0), ("output", 1)):
            rng = np.random.default_rng(1000 * i + k)
            value = rng.standard_normal(elements, dtype=np.float32)
            if target:
                noise = np.random.default_rng(7 + 1000 * i + k).standard_normal(
                    elements, dtype=np.float32
                )
                value += noise * np.float32(1e-6)
                if i == planted and role == "output":
                    value += np.float32(0.5)
            short = "input" if role == "input_args" else "output"
            data_name = f"{name}.{short}.0.pt"
            torch.save(torch.from_numpy(value), data_dir / data_name)
            v64 = value.astype(np.float64)
            record[role] = [
                {
                    "type": "torch.Tensor",
                    "dtype": "torch.float32",
                    "shape": [elements],
                    "Max": float(value.max()),
                    "Min": float(value.min()),
                    "Mean": float(v64.mean()),
                    "Norm": float(np.sqrt(v64 @ v64)),
                    "requires_grad": False,
                    "data_name": data_name,
                }
            ]
        calls[name] = record
        construct[name] = None
    doc = {
        "task": "tensor",
        "level": "L1",
        "framework": "pytorch",
        "dump_data_dir": str(data_dir),
        "data": calls,
    }
    (folder / "dump.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    (folder / "construct.json").write_text(json.dumps(construct, indent=1), encoding="utf-8")
    (folder / "stack.json").write_text("{}", encoding="utf-8")


@dataclass
class Ran:
    """One child process: wall and CPU seconds (its own and its reaped children's: msprobe's
    worker pool), peak RSS bytes, exit status, output."""

    wall: float
    cpu: float
    rss: int
    code: int
    text: str


def run(cmd: list[str], cwd: str | None = None) -> Ran:
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    return Ran(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, code, text)


def _line(label: str, ran: Ran, tail: str) -> str:
    return f"{label:9} {ran.wall:7.2f} s wall {ran.cpu:7.2f} s CPU  {_mb(ran.rss):>9}  {tail}"


def _mb(nbytes: float) -> str:
    return f"{nbytes / (1 << 20):,.0f} MB"


def _msprobe_error_rows(out: Path) -> list[str]:
    found = sorted(out.glob("compare_result_*.csv"))
    if not found:
        return []
    with found[0].open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [r["NPU Name"] for r in rows if r.get("Result") == "error"]


def bench_pair(
    label: str,
    target: Path,
    golden: Path,
    msprobe_paths: tuple[Path, Path] | None,
    work: Path,
    args: argparse.Namespace,
    *,
    floor: bool,
) -> dict[str, Ran]:
    print(f"\n== {label}")
    out: dict[str, Ran] = {}
    if floor:
        ran = run([sys.executable, "-c", FLOOR, str(target), str(golden)])
        assert ran.code == 0, ran.text
        out["floor"] = ran
        print(_line("floor", ran, ran.text.strip()))
    csv_out = work / f"{label.split()[0]}.csv"
    csv_out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "tuidebug", "compare", str(target), str(golden)]
    ran = run([*cmd, "--csv", str(csv_out)], cwd=str(ROOT))
    first = next((ln for ln in ran.text.splitlines() if ln.startswith("first divergence")), "")
    out["tuidebug"] = ran
    print(_line("tuidebug", ran, f"exit {ran.code}; {first or 'no divergence'}"))
    if msprobe_paths is not None and not args.no_msprobe and Path(args.msprobe).exists():
        ms_out = work / f"msprobe_{label.split()[0]}"
        shutil.rmtree(ms_out, ignore_errors=True)
        ms_out.mkdir()
        t, g = msprobe_paths
        ran = run([args.msprobe, "compare", "-tp", str(t), "-gp", str(g), "-o", str(ms_out)])
        errors = _msprobe_error_rows(ms_out)
        out["msprobe"] = ran
        tail = f"exit {ran.code}; {len(errors)} error rows"
        print(_line("msprobe", ran, tail + (f", the first {errors[0]}" if errors else "")))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="size of each dump")
    parser.add_argument("--tensors", type=int, default=32, help="tensor files per dump")
    parser.add_argument("--tmp", default=None, help="where to write the dumps")
    parser.add_argument("--keep", action="store_true", help="keep the dumps")
    parser.add_argument("--msprobe", default="/tmp/msvenv/bin/msprobe")
    parser.add_argument("--no-msprobe", action="store_true")
    parser.add_argument("--write", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write is not None:
        # the generator runs in a child: the parent stays small, since Linux keeps a
        # parent's peak RSS as the starting peak of every child it forks
        write_dump(Path(args.write) / "golden", args.size_mb, args.tensors, target=False)
        write_dump(Path(args.write) / "target", args.size_mb, args.tensors, target=True)
        return
    work = Path(tempfile.mkdtemp(prefix="bench_compare_", dir=args.tmp))
    try:
        start = time.perf_counter()
        made = run(
            [sys.executable, __file__, "--write", str(work), "--size-mb", str(args.size_mb),
             "--tensors", str(args.tensors)]
        )  # fmt: skip
        assert made.code == 0, made.text
        each = sum(f.stat().st_size for f in (work / "target").rglob("*") if f.is_file())
        print(
            f"two msprobe tensor dumps of {_mb(each)} each ({args.tensors} float32 tensors), "
            f"written in {time.perf_counter() - start:.0f} s"
        )
        big = bench_pair(
            "generated pair",
            work / "target",
            work / "golden",
            (work / "target" / "step0", work / "golden" / "step0"),
            work,
            args,
            floor=True,
        )
        small: dict[str, Ran] = {}
        if FIXTURES.is_dir():
            small = bench_pair(
                "msprobe_mlp (bf16 vs fp32, step 0)",
                FIXTURES / "tensor_mix_bf16" / "step0",
                FIXTURES / "tensor_mix_fp32" / "step0",
                (FIXTURES / "tensor_mix_bf16" / "step0", FIXTURES / "tensor_mix_fp32" / "step0"),
                work,
                args,
                floor=False,
            )
        print("\n== ratios (wall; CPU, which the machine's other load does not inflate)")
        ours, floor = big["tuidebug"], big["floor"]
        print(
            f"tuidebug / floor           {ours.wall / floor.wall:5.2f}×; "
            f"{ours.cpu / floor.cpu:5.2f}×   (goal ≤ 1.5×)"
        )
        if "msprobe" in big:
            ms = big["msprobe"]
            print(
                f"msprobe / tuidebug         {ms.wall / ours.wall:5.1f}×; "
                f"{ms.cpu / ours.cpu:5.1f}×   (goal ≥ 10×)"
            )
        if "msprobe" in small:
            ms, mine = small["msprobe"], small["tuidebug"]
            print(
                f"msprobe / tuidebug (mlp)   {ms.wall / mine.wall:5.1f}×; {ms.cpu / mine.cpu:5.1f}×"
            )
        tensor = each / max(args.tensors, 1)
        print(
            f"tuidebug peak RSS          {_mb(ours.rss)} = {ours.rss / each:.2f}× one dump, "
            f"{ours.rss / tensor:.1f}× one tensor file (goal: bounded by tensors, not dumps)"
        )
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
