"""Watchpoints in and out as the command line writes them, without the app: the spec as
given, narrowed watchpoints, the toasts' wording, the startup specs, hits as JSON."""

from __future__ import annotations

import json

from tests.tui.support import FakeSession, synthetic_graph
from tuidebug.core.condition_catalogue import get_condition
from tuidebug.core.watchpoints import Watchpoint
from tuidebug.tui.watchpoints.export import (
    copied_note,
    create_from_specs,
    exported_specs,
    hits_json,
    narrowed,
    saved_count,
    saved_hits_which,
    spec_of,
)

GRAPH = synthetic_graph()
GRAPHS = {GRAPH.name: GRAPH}
OVERFLOW = get_condition("tensor_overflow")
TOO_LARGE = get_condition("tensor_too_large")


def test_a_given_spec_is_kept_while_the_watchpoint_is_unchanged() -> None:
    wp = Watchpoint(1, TOO_LARGE, {"abs_mean_gt": 1000.0})
    assert spec_of(wp, {1: "TL:abs_mean_gt=1e3"}) == "TL:abs_mean_gt=1e3"
    assert spec_of(wp, {}) == wp.spec
    assert spec_of(wp, {1: "TL:abs_mean_gt=5"}) == wp.spec  # edited since
    assert spec_of(wp, {1: "not a spec"}) == wp.spec


def test_narrowed_means_fewer_nodes_than_the_spec_watches() -> None:
    everything = Watchpoint(1, OVERFLOW)
    one_scope = Watchpoint(2, OVERFLOW, targets=("Default/network-Net/layer0-Block",))
    assert not narrowed(everything, GRAPHS)
    assert narrowed(one_scope, GRAPHS)
    assert narrowed(Watchpoint(3, OVERFLOW, targets=("gone",)), GRAPHS)  # unresolvable
    assert not narrowed(Watchpoint(4, OVERFLOW, targets=("x",), graph_name="other"), GRAPHS)


def test_exported_specs_and_what_the_toasts_say() -> None:
    wps = [
        Watchpoint(1, OVERFLOW),
        Watchpoint(2, OVERFLOW, targets=("Default/network-Net/layer0-Block",)),
        Watchpoint(3, TOO_LARGE, {"abs_mean_gt": 1.0}, enabled=False),
    ]
    exported = exported_specs(wps, {}, GRAPHS)
    assert exported.enabled == ["TO"]  # each spec once
    assert exported.disabled == ["TL:abs_mean_gt=1"]
    assert exported.note == (
        "1 of them watches chosen nodes here; a --watch spec watches every node of its kind."
    )
    assert copied_note(exported) == "1 disabled watchpoint is left out. " + exported.note
    assert saved_count(exported) == "1 watchpoint and 1 disabled one as comments"
    plain = exported_specs(wps[:1], {}, GRAPHS)
    assert (copied_note(plain), saved_count(plain)) == ("", "1 watchpoint")
    assert saved_hits_which(1, 1) == "the hit"
    assert saved_hits_which(5, 2) == "all 5 hits (not only the 2 the filters show)"


def test_startup_specs_are_created_and_the_bad_ones_named() -> None:
    session = FakeSession()
    session.start()
    warned: list[str] = []
    given, created = create_from_specs(
        session,
        ["TL:abs_mean_gt=1e3", "bogus", "TO"],
        GRAPHS,
        recommended=True,
        warn=warned.append,
    )
    assert created == 4  # two specs and the two recommended
    assert sorted(given.values()) == ["TL:abs_mean_gt=1e3", "TO"]
    assert len(warned) == 1 and warned[0].startswith("--watch bogus: ")


def test_hits_json_names_each_hit_by_its_spec() -> None:
    session = FakeSession()
    session.start()
    session.create_watchpoint("tensor_overflow", {})
    session.recheck()
    records = json.loads(hits_json(session.hits, {1: ("TO as given", {})}))
    assert records and {r["watchpoint"] for r in records} == {"TO as given"}
    orphan = json.loads(hits_json(session.hits, {}))  # the watchpoint is gone: its condition
    assert {r["watchpoint"] for r in orphan} == {"TO"}
