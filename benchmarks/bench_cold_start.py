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
figure is the median of `--repeat` fresh processes; the machine's load moves them, so
compare figures taken in the same run.

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
    env["TERM"] = "xterm-256color"
    env["COLUMNS"], env["LINES"] = "160", "48"
    return env


def first_frame(dump: Path, limit: float = 30.0) -> float:
    """Seconds from spawning `tuidebug offline DUMP` on a pty to MARKER in its output."""
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
        return time.perf_counter() - t0
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def process(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, *args],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    return time.perf_counter() - t0


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms (median of {len(values)}, min {min(values) * 1000:.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dump", type=Path, default=DEFAULT_DUMP)
    args = parser.parse_args(argv)
    dump = str(args.dump)
    check_imports = (
        "import tuidebug.cli, tuidebug.cli.check, tuidebug.offline.dump, tuidebug.offline.checker"
    )
    cases = {
        "python floor": ["-c", "pass"],
        "import tuidebug.api": ["-c", "import tuidebug.api"],
        "import check path": ["-c", check_imports],
        "check process": ["-m", "tuidebug", "check", dump, "--watch", "TO", "--json"],
    }
    results: dict[str, list[float]] = {name: [] for name in [*cases, "offline first frame"]}
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
