"""The app's helper objects and texts without a running app (no Pilot): the focus history
behind Esc, the tree's waiting sentences, and the watchpoint flows driven through a fake
app that records what they ask, toast, post and run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tests.tui.support import FakeSession
from tuidebug.core.session import Metadata, Notice, SessionError, SessionState
from tuidebug.core.watchpoints import WatchpointError
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.kit.session_text import burst_toast, is_user_error, no_graph_text
from tuidebug.tui.messages import StartupWatchpointsCreated, WatchpointAction, WorkerNotice
from tuidebug.tui.navigation.pane_keys import FocusHistory
from tuidebug.tui.watchpoints.flows import WatchpointFlows


# ------------------------------------------------------------------ focus history
@dataclass(eq=False)
class Place:
    name: str
    is_attached: bool = True


def test_esc_returns_to_the_newest_place_still_on_screen() -> None:
    tree, hits, gone, stack = Place("tree"), Place("hits"), Place("gone"), Place("stack")
    history: FocusHistory[Place] = FocusHistory()
    for place in (tree, hits, gone):
        history.remember(place)
    gone.is_attached = False
    assert history.back(stack) is hits  # the closed one is passed over (and forgotten)
    assert history.back(stack) is tree
    assert history.back(stack) is None


def test_the_history_skips_the_focused_place_and_repeats() -> None:
    tree, hits = Place("tree"), Place("hits")
    history: FocusHistory[Place] = FocusHistory(limit=3)
    history.remember(None)
    for place in (tree, tree, hits, hits):
        history.remember(place)  # a jump from where it already is: remembered once
    assert history.back(hits) is tree  # not back to where the focus is
    assert history.back(hits) is None


def test_the_history_keeps_the_newest_places() -> None:
    places = [Place(str(n)) for n in range(5)]
    history: FocusHistory[Place] = FocusHistory(limit=2)
    for place in places:
        history.remember(place)
    assert [history.back(None), history.back(None), history.back(None)] == [
        places[4],
        places[3],
        None,
    ]


# ------------------------------------------------------------------ session texts
def test_the_tree_says_how_to_connect_while_online_waits() -> None:
    text = no_graph_text(Metadata("online", "10.0.0.7:50123"))
    assert "Waiting for a training to connect to 10.0.0.7:50123…" in text
    assert "MS_DEBUGGER_HOST=10.0.0.7 MS_DEBUGGER_PORT=50123" in text
    assert text.endswith("tuidebug simulate DUMP --connect 10.0.0.7:50123")
    gone = Metadata("online", "h:1", state=SessionState.DISCONNECTED)
    assert no_graph_text(gone) == "The training is gone and sent no graph."
    mismatch = Metadata("online", "h:1", state=SessionState.MISMATCH)
    assert "terminate it (T)" in no_graph_text(mismatch)


def test_the_tree_says_what_an_offline_dump_is_doing() -> None:
    assert no_graph_text(Metadata("offline", "/d", state=SessionState.LOADING)) == (
        "Loading the dump…"
    )
    assert no_graph_text(Metadata("offline", "/d")) == "Nothing is loaded."
    assert no_graph_text(Metadata("offline", "/d", message="The dump went away.")) == (
        "The dump went away."
    )
    waiting = Metadata("offline", "/d", state=SessionState.WAITING)
    assert no_graph_text(waiting) == "This dump has no readable graph."


def test_user_errors_are_the_sentences_of_the_session_and_the_checks() -> None:
    assert is_user_error(SessionError("x")) and is_user_error(WatchpointError("x"))
    assert is_user_error(ValueError("x"))
    assert not is_user_error(KeyError("x")) and not is_user_error(OSError("x"))


# ------------------------------------------------------------- watchpoint flows
@dataclass
class FakeApp:
    """What WatchpointFlows uses of the app, recording each request."""

    session: FakeSession = field(default_factory=FakeSession)
    screens: list[tuple[Any, Callable[[Any], None] | None]] = field(default_factory=list)
    calls: list[tuple[str, bool]] = field(default_factory=list)
    toasts: list[str] = field(default_factory=list)
    posted: list[Any] = field(default_factory=list)
    allowed: bool = True

    def __post_init__(self) -> None:
        self.graphs = dict(self.session._graphs)
        self.current_graph = next(iter(self.graphs))
        self.current_node = None
        self.metadata = self.session.metadata

    def guard(self, action: str) -> bool:
        return self.allowed

    def notify(self, message: str, **_options: Any) -> None:
        self.toasts.append(message)

    def push_screen(self, screen: Any, callback: Callable[[Any], None] | None = None) -> None:
        self.screens.append((screen, callback))

    def run_session_call(self, label: str, call: Callable[[], object], *, control: bool) -> None:
        self.calls.append((label, control))
        call()  # at once: the worker's thread is no part of what is tested here

    def run_worker(self, work: Callable[[], None], **_options: Any) -> None:
        work()

    def post_message(self, message: Any) -> None:
        self.posted.append(message)

    def answer(self, value: Any) -> None:
        """Answer the screen asked last, as the user would."""
        _screen, callback = self.screens[-1]
        assert callback is not None
        callback(value)


def flows_of(app: FakeApp, **options: Any) -> WatchpointFlows:
    return WatchpointFlows(cast(Any, app), **options)


def test_toggle_and_delete_run_as_watchpoint_calls_not_run_controls() -> None:
    app = FakeApp()
    wp = app.session.create_watchpoint("tensor_overflow", {})
    flows = flows_of(app)
    flows.act(WatchpointAction("toggle", wp.id))
    assert app.calls == [("Updating the watchpoint", False)]
    assert not app.session.watchpoints[0].enabled
    flows.act(WatchpointAction("delete", wp.id))
    assert isinstance(app.screens[-1][0], ConfirmScreen)
    app.answer(False)  # "Keep"
    assert app.session.watchpoints
    app.answer(True)
    assert app.calls[-1] == ("Deleting the watchpoint", False)
    assert not app.session.watchpoints


def test_an_action_without_a_watchpoint_says_how_to_pick_one() -> None:
    app = FakeApp()
    flows_of(app).act(WatchpointAction("edit", 7))
    assert app.toasts == ["Select a watchpoint first (6), or create one with w."]
    assert not app.screens


def test_a_refused_guard_opens_no_editor() -> None:
    app = FakeApp(allowed=False)
    flows_of(app).create()
    assert not app.screens


def test_the_command_lines_specs_are_created_once_and_counted() -> None:
    app = FakeApp()
    flows = flows_of(app, startup_specs=["TO", "TL:abs_mean_gt=1e3"])
    assert flows.has_startup and not flows_of(app).has_startup
    assert flows_of(app, recommended=True).has_startup
    flows.create_startup(app.graphs)
    assert app.calls == [("Creating the watchpoints of the command line", False)]
    done = [m for m in app.posted if isinstance(m, StartupWatchpointsCreated)]
    assert len(done) == 1
    flows.startup_created(done[0])
    assert app.toasts[-1] == "2 watchpoints created from the command line."
    assert sorted(flows.given_specs.values()) == ["TL:abs_mean_gt=1e3", "TO"]
    assert [flows.spec_of(wp) for wp in app.session.watchpoints] == ["TO", "TL:abs_mean_gt=1e3"]


def test_saving_hits_without_hits_says_how_to_get_some() -> None:
    app = FakeApp()
    flows_of(app).save_hits(0)
    assert app.toasts == ["There are no hits to save yet: step (n), continue (c) or recheck (r)."]
    assert not app.screens


def test_writing_a_file_toasts_done_or_why_not(tmp_path: Path) -> None:
    app = FakeApp()
    flows = flows_of(app)
    flows.write_file(str(tmp_path / "w.txt"), lambda: "TO\n", "done")
    assert (tmp_path / "w.txt").read_text() == "TO\n"
    missing = str(tmp_path / "missing" / "w.txt")
    flows.write_file(missing, lambda: "TO\n", "done")
    done, failed = app.posted
    assert isinstance(done, WorkerNotice) and done.text == "done"
    assert isinstance(failed, WorkerNotice) and failed.severity == "error"
    assert failed.text == f"Could not write {missing}: No such file or directory."


def test_a_burst_of_notices_is_one_toast_as_bad_as_the_worst() -> None:
    one = burst_toast([Notice("Skipped a.npy.")])
    assert one == ("Skipped a.npy.", "information")
    burst = [Notice("Skipped a.npy.", "warning"), Notice("b", "error"), Notice("c", "odd")]
    assert burst_toast(burst) == (
        "Skipped a.npy.\n(+2 more: Ctrl+P → Session messages)",
        "error",
    )
    assert burst_toast([Notice("x", "odd")])[1] == "information"
