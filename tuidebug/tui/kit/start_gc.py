"""The garbage collector, paused while the TUI starts (issue 28, "Start as fast as Textual
allows").

Importing the app and building its first frame create some 90,000 objects, all of them
kept; the collector would walk them several times before anything is drawn (a tenth of
`tuidebug offline`'s start). The CLI pauses it (`pause`) before its imports; the app
resumes it (`resume`) once the first frame is drawn, and the CLI does when no app got
that far. A collector that was off already is left off. Once the dump's graphs are shown,
the app freezes (`freeze`) what the start and the load built. No Textual here: the CLI
imports this before the app.
"""

from __future__ import annotations

import gc

_paused = False  # by `pause`, and not resumed yet
_frozen = False  # by `freeze`, and not thawed yet


def pause() -> None:
    """Turn the collector off until `resume` (nothing when it is off already)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Turn the collector back on if `pause` turned it off; nothing otherwise."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()


def freeze() -> None:
    """Move every object alive now out of the collector's sight (`gc.freeze`), once the
    dump's graphs are shown: the start and the load leave ~150,000 objects that live as
    long as the app, and each full collection walked them all (~0.1 s, landing on a key
    such as Esc: issue 28's 0.1 s answers). Later garbage is collected as before. One
    collection first, so no garbage of the start is kept for good; `thaw` gives them back
    to the collector when the app ends."""
    global _frozen
    gc.collect()
    gc.freeze()
    _frozen = True


def thaw() -> None:
    """Undo `freeze` (the app has ended: a process that goes on, a test run or a script
    that ran the app, collects what it left as usual)."""
    global _frozen
    if _frozen:
        _frozen = False
        gc.unfreeze()
