"""Entry points behind `tuidebug offline` and `tuidebug demo`.

The CLI imports this module only inside those subcommands, so `tuidebug check` and the
API never load Textual. Argument mistakes are found here *before* the app starts and end
as one sentence on stderr with exit status 2, never a traceback.

`tuidebug demo --online` asks `tuidebug.online.demo.run_demo_online(dump_dir)` for a
started `OnlineSession` replaying the demo dump as a live training, and shows that.

`watch_specs` and `recommended` are the command line's watchpoints, validated by the CLI;
the app creates them once the graphs are loaded (and then does not offer the recommended
set).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuidebug.cli.common import EXIT_USAGE, say

if TYPE_CHECKING:
    from tuidebug.core.session import DebugSession


def _fail(command: str, sentence: str) -> int:
    """The sentence on stderr (`say` escapes it: it quotes paths and the session's errors)."""
    say(f"tuidebug {command}: {sentence}")
    return EXIT_USAGE


def check_dump_dir(path: str, graph_dir: str | None = None) -> str | None:
    """One sentence if `path` cannot be a dump root, else None: missing, not a folder, not
    a MindSpore dump (no `rank_N/`; a `rank_N` folder itself: open its parent), or no rank
    with a graph file. The same discovery and sentences as `tuidebug check`, so a folder
    `check` refuses never opens as an empty TUI."""
    target = Path(path).expanduser()
    if not target.exists():
        return f"{path} does not exist."
    if not target.is_dir():
        return f"{path} is not a directory; give the dump root (the folder holding rank_N/)."
    from tuidebug.offline.files.msprobe_root import is_msprobe_root
    from tuidebug.offline.layout.errors import DumpError
    from tuidebug.offline.layout.root import DumpLayout

    if is_msprobe_root(target):  # a foreign dump (offline/foreign): its calls are its graph
        if graph_dir is None:
            return None
        return (
            f"--graph reads MindSpore graphs; {path} was written by msprobe, whose own "
            "records make its graph."
        )
    from tuidebug.offline.layout.sync_rank import RankLayout

    try:
        # lists the root, the rank folders and their graphs/; iteration folders are
        # listed later, by the session, with progress on screen
        layout = DumpLayout.open(target)
    except DumpError as err:
        return str(err)
    from tuidebug.offline.layout.async_rank import AsyncRankLayout

    def showable(rank: RankLayout) -> bool:
        # an Ascend asynchronous rank has no graph file by nature: its graph is built from
        # the file names, or taken from --graph DIR (which also stands in for a lost one)
        substitute = graph_dir is not None or isinstance(rank, AsyncRankLayout)
        return bool(rank.graph_files or (substitute and rank.dumped_iterations))

    if not any(showable(rank) for rank in layout.ranks.values()):
        which = ", ".join(f"rank_{r}" for r in sorted(layout.ranks))
        plural = len(layout.ranks) != 1
        return (
            f"{which} of {path} ha{'ve' if plural else 's'} no graph file (graphs/*.pb), "
            "so there is nothing to show."
        )
    return None


def on_terminal() -> bool:
    """True when a full-screen UI can run: stdin and stdout are both a terminal. The one
    test of "is this a terminal" (`tuidebug online` asks it too; tests replace it)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()
    except (OSError, ValueError):
        return False


def terminal_problem() -> str | None:
    """One sentence when the full-screen TUI cannot run: stdin or stdout is not a
    terminal (`</dev/null`, `>file`, a pipe). Without this the app would start, draw into
    the file and wait for keys that never come."""
    if on_terminal():
        return None
    return (
        "the TUI needs a terminal, and standard input or output is not one; "
        "for a report without a terminal use tuidebug check DUMP --watch SPEC."
    )


def _is_tty(stream: Any) -> bool:
    try:
        return stream is not None and bool(stream.isatty())
    except (OSError, ValueError):  # closed, or not a real file
        return False


@contextlib.contextmanager
def drawn_on_the_terminal() -> Iterator[None]:
    """While the TUI runs, draw it on the terminal whichever of stdout and stderr that is.

    Textual's Linux driver draws on `sys.__stderr__`: with `tuidebug offline D 2>log` the
    whole screen would be written into the log, and the terminal stay blank. `on_terminal()`
    has checked that stdout is a terminal, so the driver is pointed at it for the run; the
    log keeps what is written to stderr (log lines, a traceback: `sys.stderr` is untouched)."""
    original = sys.__stderr__
    if _is_tty(original) or not _is_tty(sys.__stdout__):
        yield  # stderr is the terminal already (or nothing is: terminal_problem refused)
        return
    # `sys.__stderr__` is Final to the type checker; the driver reads it when it is built
    setattr(sys, "__stderr__", sys.__stdout__)  # noqa: B010
    try:
        yield
    finally:
        setattr(sys, "__stderr__", original)  # noqa: B010


def run_tui(
    session: DebugSession,
    *,
    start_session: bool = False,
    watch_specs: Sequence[str] = (),
    recommended: bool = False,
    against: str | None = None,
) -> int:
    """`tuidebug.tui.app.run_app`, drawn on the terminal (`drawn_on_the_terminal`); the
    one way the CLI starts the TUI. Imports Textual only when called."""
    from tuidebug.tui.app import run_app

    with drawn_on_the_terminal():
        return run_app(
            session,
            start_session=start_session,
            watch_specs=watch_specs,
            recommended=recommended,
            against=against,
        )


def open_offline(
    dump: str | Path,
    rank: int | None = None,
    *,
    command: str = "offline",
    watch_specs: Sequence[str] = (),
    recommended: bool = False,
    graph_dir: str | None = None,
    cluster: str | None = None,
    all_ranks: bool | None = None,
    against: str | None = None,
) -> int:
    """Open a dump directory in the TUI; loading runs in the app's worker with progress.
    `cluster` (`--cluster ADDRESS|local[:N]`): the session's checks run on that Dask
    cluster, connected here so that one that cannot be reached is refused before the TUI.
    `all_ranks`: check every rank at each step (None: only with a cluster).
    `against` (`--against GOLDEN`): compare with that dump in the divergence tab; two
    msprobe dumps (no graph to show) open in the compare screen alone.

    The garbage collector is paused from here to the app's first frame (`start_gc`: a
    tenth of the start, issue 28); the app resumes it once that is drawn, and the `finally`
    here when no app got that far (a refusal, an error, the compare screen)."""
    from tuidebug.tui.kit import start_gc  # no Textual there

    start_gc.pause()
    try:
        return _open_offline(
            dump,
            rank,
            command=command,
            watch_specs=watch_specs,
            recommended=recommended,
            graph_dir=graph_dir,
            cluster=cluster,
            all_ranks=all_ranks,
            against=against,
        )
    finally:
        start_gc.resume()


def _open_offline(
    dump: str | Path,
    rank: int | None,
    *,
    command: str,
    watch_specs: Sequence[str],
    recommended: bool,
    graph_dir: str | None,
    cluster: str | None,
    all_ranks: bool | None,
    against: str | None,
) -> int:
    from tuidebug.tui.kit import start_gc

    if rank is not None and rank < 0:
        return _fail(command, f"--rank must be 0 or more, not {rank}.")
    if against is not None:
        problem = _against_problem(dump, against)
        if problem:
            return _fail(command, problem)
        from tuidebug.offline.files.msprobe_root import is_msprobe_root

        if is_msprobe_root(Path(dump).expanduser()):
            start_gc.resume()  # not the debugger's first frame to wait for
            return _open_compare_only(command, str(dump), against)
    problem = check_dump_dir(str(dump), graph_dir) or terminal_problem()
    if problem:
        return _fail(command, problem)
    from tuidebug.core.session import SessionError
    from tuidebug.offline.session import OfflineSession

    runner = None
    if cluster is not None:
        try:
            from tuidebug.offline.check.cluster import ClusterError
            from tuidebug.offline.check.cluster_connect import connecting_to, open_runner
        except ImportError:
            return _fail(
                command,
                "--cluster needs Dask's distributed package: pip install 'tuidebug[cluster]'.",
            )
        if sys.stderr is not None and sys.stderr.isatty():
            say(connecting_to(cluster))
        start_gc.resume()  # a cluster to connect to takes seconds, not a tenth
        try:
            runner = open_runner(cluster)
        except ClusterError as exc:
            return _fail(command, str(exc))
    try:
        session = OfflineSession(
            Path(dump).expanduser(),
            rank=rank,
            graph_dir=graph_dir,
            runner=runner,
            all_ranks=all_ranks,
        )
    except (SessionError, OSError, ValueError) as exc:
        if runner is not None:
            runner.close()
        return _fail(command, str(exc))
    try:
        return run_tui(
            session,
            start_session=True,
            watch_specs=watch_specs,
            recommended=recommended,
            against=against,
        )
    finally:
        session.close()


def _against_problem(dump: str | Path, golden: str) -> str | None:
    """One sentence when `--against GOLDEN` cannot be compared with DUMP at all: not a
    folder, or one msprobe dump and one not (the rest the compare itself says in the TUI)."""
    path = Path(golden).expanduser()
    if not path.exists():
        return f"--against {golden} does not exist."
    if not path.is_dir():
        return f"--against {golden} is not a folder holding a dump."
    from tuidebug.offline.files.msprobe_root import is_msprobe_root

    target = Path(dump).expanduser()
    if not target.is_dir():
        return None
    dump_is_msprobe = is_msprobe_root(target)  # each asks for a (bounded) listing: once
    if dump_is_msprobe == is_msprobe_root(path):
        return None
    which = "the dump" if dump_is_msprobe else f"--against {golden}"
    return f"{which} is an msprobe dump and the other is not; compare two dumps of the same kind."


def _open_compare_only(command: str, target: str, golden: str) -> int:
    """Two msprobe dumps: no graph to show, the divergence list alone."""
    problem = terminal_problem()
    if problem:
        return _fail(command, problem)
    from tuidebug.tui.divergence.standalone import run_compare_app

    with drawn_on_the_terminal():
        return run_compare_app(target, golden)


def run_offline(
    args: argparse.Namespace, *, watch_specs: Sequence[str] = (), recommended: bool = False
) -> int:
    return open_offline(
        args.dump,
        getattr(args, "rank", None),
        watch_specs=watch_specs,
        recommended=recommended,
        graph_dir=getattr(args, "graph", None),
        cluster=getattr(args, "cluster", None),
        all_ranks=getattr(args, "all_ranks", None),
        against=getattr(args, "against", None),
    )


def run_demo(
    args: argparse.Namespace, *, watch_specs: Sequence[str] = (), recommended: bool = False
) -> int:
    """Write the demo dump to --out (or a temporary folder) and open it. Without a
    terminal, a temporary demo dump would be written for nothing: refuse first; with --out
    the dump is still written (a script may want it), then the TUI is refused."""
    out = getattr(args, "out", None)
    if out is not None:
        out_dir = Path(out).expanduser()
        if out_dir.exists() and not out_dir.is_dir():
            return _fail("demo", f"--out {out} exists and is not a directory.")
    else:
        problem = terminal_problem()
        if problem:
            return _fail("demo", problem)
        out_dir = Path(tempfile.mkdtemp(prefix="tuidebug-demo-"))
    from tuidebug.offline.writer.demo import write_demo_dump
    from tuidebug.offline.writer.dump_writer import DumpWriterError

    try:
        dump_root = write_demo_dump(out_dir)
    except DumpWriterError as exc:  # e.g. --out already holds a dump
        return _fail("demo", str(exc))
    except OSError as exc:
        return _fail("demo", f"cannot write the demo dump to {out_dir}: {exc.strerror or exc}.")
    say(f"tuidebug demo: demo dump written to {dump_root}")
    if getattr(args, "online", False):
        problem = terminal_problem()
        if problem:  # before the server starts listening
            return _fail("demo", problem)
        return _run_demo_online(dump_root, watch_specs, recommended)
    return open_offline(dump_root, command="demo", watch_specs=watch_specs, recommended=recommended)


def _run_demo_online(dump_root: Path, watch_specs: Sequence[str], recommended: bool) -> int:
    """Serve the demo dump as a live training (the online side's simulator) and open it."""
    from tuidebug.online.demo import run_demo_online

    try:
        session = run_demo_online(dump_root)
    except Exception as exc:  # SimulatorError / ServerStartError carry one sentence
        return _fail("demo", str(exc))
    try:
        return run_tui(session, watch_specs=watch_specs, recommended=recommended)
    finally:
        session.close()
