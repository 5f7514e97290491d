"""`tuidebug online --until-hit`: the headless NaN sentinel for CI.

    tuidebug online --port 50051 --recommended --until-hit --json > hits.json &
    torchrun --nproc-per-node 2 train.py      # attaches with tdb.attach(…, port=50051)
    wait $!                                   # 0: no hit; 1: hits.json says where

No TUI: every training that connects (every rank of one job) gets the command line's
watchpoints at its initial suspension and is continued; at the first stop with hits, that
stop's hits are printed (`--json`: one JSON array, the objects of `tuidebug check --json`,
whose `rank` and `step` say where), the training is terminated, and the exit status is 1.
Every training ending with no hit is exit 0. A training that is lost without a goodbye (a
crashed rank) is one sentence on stderr and exit 1: the run did not end cleanly, and the
sentinel cannot say it was healthy. No training within `--connect-timeout` is exit 2.
"""

from __future__ import annotations

import contextlib
import json
import queue
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from tuidebug.cli.common import EXIT_HITS, EXIT_OK, EXIT_USAGE, say

if TYPE_CHECKING:
    from tuidebug.cli.watch_options import WatchOption
    from tuidebug.core.session import DebugSession, SessionEvent
    from tuidebug.core.watchpoints import WatchpointHit

TERMINATE_GRACE = 10.0  # seconds the training is given to take the exit command


class _Sentinel:
    def __init__(
        self,
        session: DebugSession,
        options: Sequence[WatchOption],
        recommended: bool,
        as_json: bool,
        out: TextIO,
    ) -> None:
        self.session = session
        self.options = options
        self.recommended = recommended
        self.as_json = as_json
        self.out = out
        self.specs: dict[int, str] = {}  # watchpoint id -> the spec as the user wrote it
        self.armed = False  # this training has its watchpoints and was continued
        self.connected = False

    def arm(self) -> None:
        """The training's initial suspension: create the watchpoints and continue."""
        from tuidebug.core.session import SessionError
        from tuidebug.core.text import printable
        from tuidebug.core.watchpoints import WatchpointError

        for option in self.options:
            try:
                wp = self.session.create_watchpoint(option.condition.id, option.params)
            except (WatchpointError, SessionError) as err:
                say(f"tuidebug online: warning: --watch {printable(option.spec)}: {err}")
                continue
            self.specs[wp.id] = option.spec
        if self.recommended:
            for wp in self.session.apply_recommended():
                self.specs[wp.id] = wp.spec
        if not self.specs:
            say(
                "tuidebug online: warning: no watchpoint could be set on this training's "
                "graph; it runs unwatched."
            )
        self.armed = True
        self.session.continue_()

    def report(self, hits: Sequence[WatchpointHit]) -> None:
        from tuidebug.core.text import printable
        from tuidebug.core.watchpoints import hit_record

        book = {wp.id: wp for wp in self.session.watchpoints}
        records = []
        for hit in hits:
            wp = book.get(hit.watchpoint_id)
            spec = self.specs.get(hit.watchpoint_id) or (wp.spec if wp is not None else "")
            records.append(hit_record(hit, spec, wp.params if wp is not None else {}))
        if self.as_json:
            json.dump(records, self.out, indent=2)
            self.out.write("\n")
        else:
            for r in records:
                self.out.write(
                    f"rank {r['rank']} step {r['step']} {printable(r['watchpoint'])} "
                    f"{printable(r['node'])}:{r['slot']}\n"
                )
        self.out.flush()
        first = hits[0] if hits else None
        if first is not None:
            say(
                f"tuidebug online: {len(hits)} hit(s) at step {first.step}, first on rank "
                f"{first.tensor.rank} ({printable(first.tensor.node)}); the training was "
                "terminated."
            )


def run_sentinel(
    session: DebugSession,
    options: Sequence[WatchOption],
    *,
    recommended: bool,
    as_json: bool,
    connect_timeout: float | None = None,
    out: TextIO | None = None,
) -> int:
    """Drive `session` (started, no training yet) as the module docstring says."""
    from tuidebug.core.session import SessionError, SessionState

    sentinel = _Sentinel(session, options, recommended, as_json, out or sys.stdout)
    events: queue.SimpleQueue[SessionEvent] = queue.SimpleQueue()
    unsubscribe = session.subscribe(events.put)
    started = time.monotonic()
    terminated_at: float | None = None
    try:
        while True:
            with contextlib.suppress(queue.Empty):
                events.get(timeout=0.2)
            md = session.metadata
            state = md.state
            if state not in (SessionState.PENDING,):
                sentinel.connected = True
            if (
                not sentinel.connected
                and connect_timeout is not None
                and time.monotonic() - started > connect_timeout
            ):
                say(
                    f"tuidebug online: no training connected within {connect_timeout:g} s; "
                    "nothing was checked."
                )
                return EXIT_USAGE
            if terminated_at is not None:
                if state in (SessionState.DONE, SessionState.DISCONNECTED) or (
                    time.monotonic() - terminated_at > TERMINATE_GRACE
                ):
                    return EXIT_HITS
                continue
            if state is SessionState.WAITING:
                try:
                    if not sentinel.armed:
                        sentinel.arm()
                        continue
                    hits = list(session.hits)
                    if hits:
                        sentinel.report(hits)
                        session.terminate()
                        terminated_at = time.monotonic()
                    else:  # stopped without a hit (a step count ran out): on
                        session.continue_()
                except SessionError as err:
                    # the state moved under us (a rank left meanwhile): look again
                    say(f"tuidebug online: warning: {err}")
                continue
            if state is SessionState.MISMATCH or state is SessionState.NODE_TOO_LARGE:
                say(f"tuidebug online: {md.message or 'the training was refused.'}")
                session.terminate()
                return EXIT_USAGE
            if sentinel.armed and state in (SessionState.DONE, SessionState.DISCONNECTED):
                return _ended(md, as_json, sentinel.out)
    except KeyboardInterrupt:
        say("tuidebug online: interrupted; the training was not watched to its end.")
        return EXIT_USAGE
    finally:
        unsubscribe()


def _ended(md: Any, as_json: bool, out: TextIO) -> int:
    """The training ended with no hit: 0 after a goodbye, 1 when it was lost."""
    from tuidebug.core.session import Ending
    from tuidebug.core.text import printable

    if md.ending is Ending.FINISHED:
        if as_json:
            out.write("[]\n")
            out.flush()
        say("tuidebug online: the training finished with no hit.")
        return EXIT_OK
    if as_json:
        out.write("[]\n")
        out.flush()
    say(
        f"tuidebug online: the training ended without finishing and without a hit "
        f"({printable(md.message or md.ending.value or 'connection lost')})."
    )
    return EXIT_HITS
