#!/usr/bin/env python3
"""Cold-start figures (not assertions): what a user waits for before anything happens.

    minimal app first frame   a Textual app of a header, a 50-leaf tree and a footer (the
                              floor Textual itself sets), in a pseudo-terminal, from the
                              process start to its tree on screen
    offline first frame       `tuidebug offline DUMP` in a pseudo-terminal, from the process
                              start to its first paint (the header's `OFFLINE` badge: the
                              whole layout is drawn, the dump is being read)   target ≤ 1.5×
                                                                               the minimal app
    offline graph shown       the same run, to the tree of the first graph on screen (the
                              text `nodes)` of its header line)
    check process             `tuidebug check DUMP --watch TO --json`, the whole process
                              (stdout to a pipe)                               target < 0.5 s
    import check path         `python -c "import tuidebug.cli"` plus the modules `check` loads
    import tuidebug.api       `python -c "import tuidebug.api"`
    python floor              `python -c pass`: the interpreter's own start

Both apps are timed the same way, from `exec` to bytes on the terminal, so the ratio is what
a user sees (bench_tui.py's "first frame" starts its clock after the imports, with the app
built). Each figure is the median of `--repeat` fresh processes, as wall time and as CPU
time (user + system, all threads, read when the marker reaches the terminal: on a shared
machine the steadier of the two); compare figures taken in the same run. The last lines
give the offline first frame as a multiple of the minimal app's, wall and CPU, against the
goal (`GOAL`: issue 28): the median of each round's ratio (the two run back to back), with
the ratio of the rows' medians and of the fastest runs beside it.

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
FRAME = b"OFFLINE"  # the header's mode badge: tuidebug's first paint
MARKER = b"nodes)"  # the tree's header, `kernel_graph0 (107 nodes)`: the graph is painted
MINIMAL_MARKER = b"(50 leaves)"  # the minimal app's tree root: its first paint
GOAL = 1.5  # the offline first frame, as a multiple of the minimal app's (issue 28)
# the floor: what any Textual app of a header, a tree and a footer costs to show
MINIMAL_APP = """
from textual.app import App
from textual.widgets import Footer, Header, Tree

class Minimal(App):
    def compose(self):
        yield Header()
        tree = Tree("kernel_graph0 (50 leaves)")
        for i in range(50):
            tree.root.add_leaf(f"Default/network/op{i}")
        tree.root.expand()
        yield tree
        yield Footer()

Minimal().run()
"""


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


def on_pty(args: list[str], markers: list[bytes], limit: float = 30.0) -> list[tuple[float, float]]:
    """(wall, CPU) seconds from spawning `python ARGS` on a pty to each of `markers` in its
    output (in order): CPU is what the process had used when the marker was read."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the app on the pty
        os.execve(sys.executable, [sys.executable, *args], _env())
    t0 = time.perf_counter()
    seen = b""
    times: list[tuple[float, float]] = []
    try:
        while len(times) < len(markers):
            if time.perf_counter() - t0 > limit:
                raise TimeoutError(f"no {markers[len(times)]!r} in {limit} s: {seen[-300:]!r}")
            ready, _, _ = select.select([fd], [], [], 0.005)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:  # the child exited
                    raise RuntimeError(f"{args} ended: {seen[-300:]!r}") from None
                now = time.perf_counter() - t0
                cpu = _cpu_seconds(pid)
                # one read may hold several markers (a load faster than a frame)
                while len(times) < len(markers) and markers[len(times)] in seen:
                    times.append((now, cpu))
        return times
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def first_frames(dump: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """(wall, CPU) of `tuidebug offline DUMP` to its first paint, and to its graph shown."""
    frame, graph = on_pty(["-m", "tuidebug", "offline", str(dump)], [FRAME, MARKER])
    return frame, graph


def minimal_frame() -> tuple[float, float]:
    """(wall, CPU) of the minimal Textual app to its first paint."""
    (frame,) = on_pty(["-c", MINIMAL_APP], [MINIMAL_MARKER])
    return frame


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
    tui = ["minimal app first frame", "offline first frame", "offline graph shown"]
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in [*cases, *tui]}
    for command in cases.values():  # untimed: writes the bytecode caches, warms the disk
        process(command)
    minimal_frame()
    if args.dump.is_dir():
        first_frames(args.dump)
    for _ in range(args.repeat):  # interleaved, so that load changes touch every row alike
        for name, command in cases.items():
            results[name].append(process(command))
        results["minimal app first frame"].append(minimal_frame())
        if args.dump.is_dir():
            frame, graph = first_frames(args.dump)
            results["offline first frame"].append(frame)
            results["offline graph shown"].append(graph)
    width = max(len(name) for name in results)
    for name, values in results.items():
        print(f"{name:<{width}}  {_ms(values) if values else 'skipped: no dump'}")
    floor = results["minimal app first frame"]
    for name in tui[1:]:
        if not results[name]:
            continue
        # each round ran the minimal app and tuidebug back to back: the median of those
        # paired ratios cancels the machine's slow spells, which the medians of each row
        # (printed too) do not (on this shared VM they swung 1.07x-1.54x for one commit)
        wall, cpu = (
            statistics.median(r[i] / f[i] for r, f in zip(results[name], floor, strict=True))
            for i in (0, 1)
        )
        rows = statistics.median(r[0] for r in results[name]) / statistics.median(
            r[0] for r in floor
        )
        fastest = min(r[0] for r in results[name]) / min(r[0] for r in floor)
        if name == "offline first frame":
            verdict = "ok" if min(wall, cpu) <= GOAL else "MISSED"
            goal = f"goal ≤ {GOAL}×: {verdict}"
        else:
            goal = "no goal: the dump is read by then"
        print(
            f"{name} / minimal app: {wall:.2f}× wall, {cpu:.2f}× CPU, median of the paired "
            f"rounds ({goal}); {rows:.2f}× of the medians, {fastest:.2f}× of the fastest"
        )
    print(
        f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall is the user's figure; "
        "CPU the steadier one on a busy machine)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
