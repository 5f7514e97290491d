"""The garbage collector, paused while the TUI starts (issue 28, "Start as fast as Textual
allows").

Importing the app and building its first frame create some 90,000 objects, all of them
kept; the collector would walk them several times before anything is drawn (a tenth of
`tuidebug offline`'s start). The CLI pauses it (`pause`) before its imports; the app
resumes it (`resume`) once the first frame is drawn, and the CLI does when no app got
that far. A collector that was off already is left off. No Textual here: the CLI imports
this before the app.
"""

from __future__ import annotations

import gc

_paused = False  # by `pause`, and not resumed yet


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
