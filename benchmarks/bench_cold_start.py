#!/usr/bin/env python3
"""Cold-start figures (not assertions): what a user waits for before anything happens.

    offline first frame   `tuidebug offline DUMP` in a pseudo-terminal, from the process
                          start to the tree of the first graph on screen (the text
                          `nodes)` of its header line), imports included      target < 0.5 s
    check process         `tuidebug check DUMP --watch TO --json`, the whole process
                          (stdout to a pipe)                                  target < 0.5 s
    import check path     `python -c "import tuidebug.cli"` plus the modules `check` loads
    import tuidebug.api   `python -c "import tuidebug.api"`
    python floor          `python -c pass`: the interpreter's own start

bench_tui.py's "first frame" starts its clock after the imports (the app is already
built); this script measures what the issue calls cold start, from `exec` on. Each
figure is the median of `--repeat` fresh processes, as wall time and as CPU time (user +
system, all threads: on a shared machine the steadier of the two); compare figures taken
in the same run.

Usage: python benchmarks/bench_cold_start.py [--repeat N] [--dump DUMP_ROOT]
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DUMP = REPO.parent / "shared" / "fixtures" / "mindspore_lenet_dump" / "ms2_10_0"
MARKER = b"nodes)"  # the tree's header, `kernel_graph0 (107 nodes)`: the graph is painted


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    # an installed package has its bytecode compiled; without it every run would pay
    # the compiler for each module (the first, untimed, round writes __pycache__)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["TERM"] = "xterm-256color"
    env["COLUMNS"], env["LINES"] = "160", "48"
    return env


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_frame(dump: Path, limit: float = 30.0) -> tuple[float, float]:
    """(wall, CPU) seconds from spawning `tuidebug offline DUMP` on a pty to MARKER in its
    output."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the TUI on the pty
        os.execve(sys.executable, [sys.executable, "-m", "tuidebug", "offline", str(dump)], _env())
    t0 = time.perf_counter()
    seen = b""
    try:
        while MARKER not in seen:
            if time.perf_counter() - t0 > limit:
                raise TimeoutError(f"no first frame in {limit} s: {seen[-300:]!r}")
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:  # the child exited
                    raise RuntimeError(f"tuidebug offline ended: {seen[-300:]!r}") from None
        return time.perf_counter() - t0, _cpu_seconds(pid)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def process(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `python ARGS`."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args], env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped here: Popen must not wait for it again
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def _ms(runs: list[tuple[float, float]]) -> str:
    wall = statistics.median(r[0] for r in runs) * 1000
    cpu = statistics.median(r[1] for r in runs) * 1000
    return f"{wall:7.1f} ms wall, {cpu:7.1f} ms CPU (medians of {len(runs)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dump", type=Path, default=DEFAULT_DUMP)
    args = parser.parse_args(argv)
    dump = str(args.dump)
    check_imports = "import tuidebug.cli, tuidebug.cli.check, tuidebug.offline.dump, tuidebug.offline.check.checker"
    cases = {
        "python floor": ["-c", "pass"],
        "import tuidebug.api": ["-c", "import tuidebug.api"],
        "import check path": ["-c", check_imports],
        "check process": ["-m", "tuidebug", "check", dump, "--watch", "TO", "--json"],
    }
    results: dict[str, list[tuple[float, float]]] = {
        name: [] for name in [*cases, "offline first frame"]
    }
    for command in cases.values():  # untimed: writes the bytecode caches, warms the disk
        process(command)
    for _ in range(args.repeat):  # interleaved, so that load changes touch every row alike
        for name, command in cases.items():
            results[name].append(process(command))
        if args.dump.is_dir():
            results["offline first frame"].append(first_frame(args.dump))
    width = max(len(name) for name in results)
    for name, values in results.items():
        print(f"{name:<{width}}  {_ms(values) if values else 'skipped: no dump'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
