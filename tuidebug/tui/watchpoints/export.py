"""Watchpoints in and out as the command line writes them.

In: `create_from_specs` creates the `--watch` / `--watch-file` / `--recommended`
watchpoints once the graphs are loaded. Out: `check_command` (the palette's "copy as a
check command") and `watch_file_text` (a `--watch-file`) write watchpoints as `--watch`
specs, as the user wrote them while they are unchanged (`spec_of`); `hits_json` writes
hits as `tuidebug check --json` prints them. The rest words what the app tells the user
about an export. No Textual here: the app asks for a file and writes it in a worker.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tuidebug.core.graph import Graph
from tuidebug.core.session import DebugSession, SessionError
from tuidebug.core.watchpoints import (
    Watchpoint,
    WatchpointError,
    WatchpointHit,
    hit_record,
    parse_watch_spec,
    resolve_targets,
)


def create_from_specs(
    session: DebugSession,
    specs: Sequence[str],
    graphs: Mapping[str, Graph],
    *,
    recommended: bool = False,
    warn: Callable[[str], None],
) -> tuple[dict[int, str], int]:
    """(blocking) Create the command line's watchpoints on the loaded graphs → (watchpoint
    id → the spec as written, how many were created, the recommended ones included). A
    spec that watches nothing here, or that the session refuses, is a `warn(sentence)`
    naming it, and the others are still created."""
    given: dict[int, str] = {}
    created = 0
    for spec in specs:
        try:
            condition, params = parse_watch_spec(spec)
        except WatchpointError as err:  # the CLI validated it; a direct caller may not
            warn(f"--watch {spec}: {err}")
            continue
        if not any(resolve_targets(condition, (), graph) for graph in graphs.values()):
            target = condition.target.value
            what = "node" if target == "tensor" else f"{target} node"
            warn(f"--watch {spec} watches no {what} in the loaded graphs, so it was not created.")
            continue
        try:
            watchpoint = session.create_watchpoint(condition.id, params)
        except (WatchpointError, SessionError) as err:
            warn(f"--watch {spec}: {err}")
            continue
        given[watchpoint.id] = spec
        created += 1
    if recommended:
        created += len(session.apply_recommended())
    return given, created


def check_command(specs: Sequence[str], dump: str | None) -> str:
    """`tuidebug check DUMP --watch SPEC …`, shell-quoted; without a dump (online) only
    the `--watch` options."""
    words = ["tuidebug", "check", shlex.quote(dump)] if dump is not None else []
    for spec in specs:
        words += ["--watch", shlex.quote(spec)]
    return " ".join(words)


def watch_file_text(specs: Sequence[str], disabled: Sequence[str] = ()) -> str:
    """A `--watch-file`: one spec a line under a comment saying how to use it; disabled
    watchpoints as comments, so they are kept but not read back."""
    lines = [
        "# tuidebug watchpoints, one --watch SPEC a line: tuidebug check DUMP --watch-file FILE",
        "# (or tuidebug offline / online / demo --watch-file FILE); # starts a comment",
        *specs,
        *(f"# disabled: {spec}" for spec in disabled),
    ]
    return "\n".join(lines) + "\n"


def spec_of(watchpoint: Watchpoint, given: Mapping[int, str]) -> str:
    """The watchpoint as a --watch spec: as the user wrote it on the command line
    (`given`: watchpoint id → spec, so `1e3` stays `1e3`) while it is unchanged, else
    `Watchpoint.spec`."""
    spec = given.get(watchpoint.id)
    if spec is not None:
        with contextlib.suppress(WatchpointError):
            if parse_watch_spec(spec) == (watchpoint.condition, watchpoint.params):
                return spec
    return watchpoint.spec


def narrowed(watchpoint: Watchpoint, graphs: Mapping[str, Graph]) -> bool:
    """True when the watchpoint's targets watch fewer nodes than its spec would."""
    if not watchpoint.targets:
        return False
    names = [watchpoint.graph_name] if watchpoint.graph_name else list(graphs)
    for name in names:
        graph = graphs.get(name)
        if graph is None:
            continue
        try:
            chosen = resolve_targets(watchpoint.condition, watchpoint.targets, graph)
        except WatchpointError:
            return True
        if len(chosen) != len(resolve_targets(watchpoint.condition, (), graph)):
            return True
    return False


@dataclass(frozen=True)
class ExportedSpecs:
    """The watchpoints as specs, each once, in list order."""

    enabled: list[str]
    disabled: list[str]
    note: str  # said when some watch chosen nodes, which the spec form cannot say


def exported_specs(
    watchpoints: Sequence[Watchpoint], given: Mapping[int, str], graphs: Mapping[str, Graph]
) -> ExportedSpecs:
    enabled = [wp for wp in watchpoints if wp.enabled]
    specs = list(dict.fromkeys(spec_of(wp, given) for wp in enabled))
    disabled = list(dict.fromkeys(spec_of(wp, given) for wp in watchpoints if not wp.enabled))
    count = sum(1 for wp in enabled if narrowed(wp, graphs))
    note = ""
    if count:
        note = (
            f"{count} of them watch{'es' if count == 1 else ''} chosen nodes here; "
            "a --watch spec watches every node of its kind."
        )
    return ExportedSpecs(specs, disabled, note)


def copied_note(exported: ExportedSpecs) -> str:
    """What the copy's toast adds under the command: disabled ones left out, narrowing."""
    note = exported.note
    disabled = len(exported.disabled)
    if disabled:
        left_out = f"{disabled} disabled watchpoint"
        left_out += "s are left out." if disabled != 1 else " is left out."
        note = f"{left_out} {note}".strip()
    return note


def saved_count(exported: ExportedSpecs) -> str:
    """ "3 watchpoints and 1 disabled one as comments", for the save's toast."""
    specs, disabled = len(exported.enabled), len(exported.disabled)
    count = f"{specs} watchpoint{'s' if specs != 1 else ''}"
    if disabled:
        count += f" and {disabled} disabled one{'s' if disabled != 1 else ''} as comments"
    return count


def saved_hits_which(total: int, shown: int) -> str:
    """Which hits a save writes, as the toast says it: all of them, whatever is shown."""
    which = f"all {total} hits" if total != 1 else "the hit"
    if shown != total:
        which += f" (not only the {shown} the filters show)"
    return which


def hits_json(
    hits: Sequence[WatchpointHit], specs: Mapping[int, tuple[str, Mapping[str, float]]]
) -> str:
    """The hits as `tuidebug check --json` prints them; `specs`: watchpoint id → (spec,
    user-set parameters). A hit whose watchpoint is gone gets its condition's abbreviation."""
    records = []
    for hit in hits:
        spec, params = specs.get(hit.watchpoint_id, (hit.condition.abbr, {}))
        records.append(hit_record(hit, spec, params))
    return json.dumps(records, indent=2) + "\n"


__all__ = [
    "ExportedSpecs",
    "check_command",
    "copied_note",
    "create_from_specs",
    "exported_specs",
    "hits_json",
    "narrowed",
    "saved_count",
    "saved_hits_which",
    "spec_of",
    "watch_file_text",
]
