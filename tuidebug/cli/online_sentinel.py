"""`tuidebug online --until-hit`: the headless NaN sentinel for CI.

    tuidebug online --port 50051 --recommended --until-hit --json > hits.json &
    torchrun --nproc-per-node 2 train.py      # attaches with tdb.attach(…, port=50051)
    wait $!                                   # 0: no hit; 1: hits.json says where

No TUI: every training that connects (every rank of one job) gets the command line's
watchpoints at its initial suspension and is continued; at the first stop with hits, that
stop's hits are printed (`--json`: one JSON array, the objects of `tuidebug check --json`,
whose `rank` and `step` say where, `micro_batch` the micro-batch of gradient accumulation
when the training said it), the training is terminated, and the exit status is 1.
Every training ending with no hit is exit 0.

A *check error* is not a hit: a watchpoint that could not judge its tensor ("the previous
step value cannot be found", a tensor too large) says nothing about NaN or a bad value, so a
stop whose hits are all check errors is continued, and a run with only check errors ends
with exit 0. They are kept (once per watchpoint and tensor, at their first step) and written
after the hits, each with `"check_error": true` beside its `error_code`/`error_messages`
(hits have `"check_error": false`); without `--json`, one line on stderr counts them. A training that is lost without a goodbye (a
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
MAX_CHECK_ERRORS = 1000  # check errors kept (a huge graph's every tensor erring is bounded)
# the error bits that are findings: the tensor holds NaN / ±Inf (MindSpore reports them as
# error codes of conditions that could not evaluate their parameters on such a tensor)
_FINDING_BITS = 1 | 2  # ErrorCode.NAN | ErrorCode.INF


def is_check_error(hit: WatchpointHit) -> bool:
    """A hit that only says its check could not be done (error code without NaN/Inf, no
    parameter hit): not a finding about the training."""
    return bool(hit.error_code) and not hit.error_code & _FINDING_BITS and not hit.hit_params


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
        # check errors seen so far, once per (rank, watchpoint, graph, node, slot)
        self.book: dict[int, Any] = {}
        self.check_errors: dict[tuple[int, int, str, str, int], WatchpointHit] = {}

    def note_errors(self, hits: Sequence[WatchpointHit]) -> list[WatchpointHit]:
        """Keep the check errors among `hits`; the findings, in their order."""
        findings = []
        for hit in hits:
            if not is_check_error(hit):
                findings.append(hit)
                continue
            ref = hit.tensor
            key = (ref.rank, hit.watchpoint_id, ref.graph, ref.node, ref.slot)
            if key not in self.check_errors and len(self.check_errors) < MAX_CHECK_ERRORS:
                self.check_errors[key] = hit
        return findings

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

    def record(self, hit: WatchpointHit, check_error: bool) -> dict[str, Any]:
        from tuidebug.core.watchpoints import hit_record

        wp = self.book.get(hit.watchpoint_id)
        spec = self.specs.get(hit.watchpoint_id) or (wp.spec if wp is not None else "")
        record = hit_record(hit, spec, wp.params if wp is not None else {})
        record["micro_batch"] = hit.micro_batch
        record["check_error"] = check_error
        return record

    def report(self, hits: Sequence[WatchpointHit]) -> None:
        """Write the stop's findings `hits` (may be none) and the check errors kept."""
        from tuidebug.core.text import printable

        self.book = {wp.id: wp for wp in self.session.watchpoints}
        records = [self.record(h, False) for h in hits]
        errors = [self.record(h, True) for h in self.check_errors.values()]
        if self.as_json:
            json.dump(records + errors, self.out, indent=2)
            self.out.write("\n")
        else:
            for r in records:
                micro = f" micro-batch {r['micro_batch']}" if r["micro_batch"] else ""
                self.out.write(
                    f"rank {r['rank']} step {r['step']}{micro} {printable(r['watchpoint'])} "
                    f"{printable(r['node'])}:{r['slot']}\n"
                )
        self.out.flush()
        if errors:
            first = next(iter(self.check_errors.values()))
            say(
                f"tuidebug online: {len(errors)} check error(s), not hits (first: "
                f"{printable(first.condition.abbr)} on {printable(first.tensor.node)}: "
                f"{printable(first.detail())})"
                + ('; listed with "check_error": true.' if self.as_json else ".")
            )
        first_hit = hits[0] if hits else None
        if first_hit is not None:
            say(
                f"tuidebug online: {len(hits)} hit(s) at step {first_hit.step}, first on rank "
                f"{first_hit.tensor.rank} ({printable(first_hit.tensor.node)}); the training "
                "was terminated."
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
    from tuidebug.core.session import HitsArrived, SessionError, SessionState

    sentinel = _Sentinel(session, options, recommended, as_json, out or sys.stdout)
    events: queue.SimpleQueue[SessionEvent] = queue.SimpleQueue()
    unsubscribe = session.subscribe(events.put)
    started = time.monotonic()
    terminated_at: float | None = None
    try:
        while True:
            with contextlib.suppress(queue.Empty):
                event = events.get(timeout=0.2)
                if isinstance(event, HitsArrived):  # a run that did not stop keeps its errors
                    sentinel.note_errors(event.hits)
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
                    hits = sentinel.note_errors(list(session.hits))
                    if hits:
                        sentinel.report(hits)
                        session.terminate()
                        terminated_at = time.monotonic()
                    else:  # no hit (a step count ran out) or check errors only: on
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
                return _ended(md, sentinel)
    except KeyboardInterrupt:
        say("tuidebug online: interrupted; the training was not watched to its end.")
        return EXIT_USAGE
    finally:
        unsubscribe()


def _ended(md: Any, sentinel: _Sentinel) -> int:
    """The training ended with no hit: 0 after a goodbye, 1 when it was lost. The check
    errors kept are written (`--json`: the array holds them alone; `[]` without any)."""
    from tuidebug.core.session import Ending
    from tuidebug.core.text import printable

    sentinel.report([])
    if md.ending is Ending.FINISHED:
        say("tuidebug online: the training finished with no hit.")
        return EXIT_OK
    say(
        f"tuidebug online: the training ended without finishing and without a hit "
        f"({printable(md.message or md.ending.value or 'connection lost')})."
    )
    return EXIT_HITS
