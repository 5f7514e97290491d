"""The app's watchpoint dialogs: create, edit, toggle and delete one, the recommended set,
the command line's `--watch` specs, and saving the watchpoints or the hits to a file.

`WatchpointFlows` is a helper object of the `DebuggerApp`, not a mixin: Textual only
finds `@on` handlers on classes it builds (App, Screen, Widget), so the app keeps the
one-line handlers and the key actions and hands each flow over to this object. The flows
ask their questions with the app's screens (prompts.py, the watchpoint editor) and run
the session calls through the app's `run_session_call`, off the UI thread. What the
exports contain and how their toasts read is watchpoints/export.py's (no Textual there).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from tuidebug.core.graph import Graph
from tuidebug.core.watchpoints import Watchpoint
from tuidebug.tui.messages import StartupWatchpointsCreated, WatchpointAction, WorkerNotice

if TYPE_CHECKING:
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.watchpoints.editor import WatchpointDraft


class WatchpointFlows:
    """The watchpoint flows of one app (see the module docstring)."""

    def __init__(
        self, app: AppHost, startup_specs: Sequence[str] = (), recommended: bool = False
    ) -> None:
        self._app = app
        self._startup_specs = tuple(startup_specs)
        self._startup_recommended = recommended
        # watchpoint id → the spec the user wrote for it (`1e3` stays `1e3` in exports)
        self.given_specs: dict[int, str] = {}

    def _post(self, message: WorkerNotice | StartupWatchpointsCreated) -> None:
        """Post from a worker; dropped once the app has stopped (its loop is closed)."""
        with contextlib.suppress(RuntimeError):
            self._app.post_message(message)

    # ------------------------------------------------- one watchpoint at a time
    def act(self, message: WatchpointAction) -> None:
        """The watchpoint list asked to create, edit, toggle or delete one."""
        app = self._app
        wp_id = message.watchpoint_id
        if message.action == "new":
            self.create()
            return
        watchpoint = next((w for w in app.session.watchpoints if w.id == wp_id), None)
        if watchpoint is None:
            app.notify("Select a watchpoint first (6), or create one with w.")
            return
        if message.action == "edit":
            self.edit(watchpoint)
        elif message.action == "toggle":
            enabled = not watchpoint.enabled
            app.run_session_call(
                "Updating the watchpoint",
                lambda: app.session.update_watchpoint(watchpoint.id, enabled=enabled),
                control=False,
            )
        elif message.action == "delete":

            def answered(yes: bool | None) -> None:
                if yes:
                    app.run_session_call(
                        "Deleting the watchpoint",
                        lambda: app.session.delete_watchpoint(watchpoint.id),
                        control=False,
                    )

            from tuidebug.tui.kit import prompts  # on first use (issue 28)

            app.push_screen(prompts.delete_watchpoint_confirm(watchpoint), answered)

    def create(self, *, whole_scope: bool = False) -> None:
        """The editor for a new watchpoint on the selected node or scope (w); with
        `whole_scope` (W) on the scope selected in the tree, or the one holding the
        selected node, its target whatever the condition (MindInsight selects by scope)."""
        app = self._app
        if not app.guard("new_watchpoint"):
            return
        graph = app.graphs.get(app.current_graph or "")
        if graph is None:
            app.notify("No graph is shown.", severity="warning")
            return
        entry = app.selected_tree_entry()
        node_name = entry.node if entry and entry.node else None
        scope_path = entry.path if entry and entry.node is None else None
        if node_name is not None and app.current_node is not None:
            node_name = app.current_node.name
        if whole_scope:
            if scope_path is None and node_name is not None:
                node = graph.get(node_name)
                # the tree's scope of the node (a parameter sits under its consumer's)
                holder = node.ui_name.rpartition("/")[0] if node is not None else ""
                scope_path = holder if holder and graph.is_scope(holder) else None
            if scope_path is None:
                app.notify(
                    "Select a scope in the tree (1), or a node inside one, to watch it whole.",
                    severity="warning",
                )
                return
            node_name = None
        md = app.metadata
        # the editor screen loads when first opened (w), not with the app's first frame
        from tuidebug.tui.watchpoints.editor import WatchpointEditor

        editor = WatchpointEditor(
            graph,
            node=node_name,
            scope=scope_path,
            backend=md.backend,
            step=md.step,
            init_only_at_step_zero=app.session.capabilities.weight_init_only_at_step_zero,
            prefer_scope=whole_scope,
        )
        app.push_screen(editor, self._drafted)

    def edit(self, watchpoint: Watchpoint) -> None:
        app = self._app
        if not app.guard("new_watchpoint"):
            return
        graph = app.graphs.get(watchpoint.graph_name or app.current_graph or "")
        if graph is None and app.graphs:
            graph = next(iter(app.graphs.values()))
        if graph is None:
            return
        md = app.metadata
        from tuidebug.tui.watchpoints.editor import WatchpointEditor  # on first use

        editor = WatchpointEditor(
            graph,
            backend=md.backend,
            step=md.step,
            init_only_at_step_zero=app.session.capabilities.weight_init_only_at_step_zero,
            editing=watchpoint,
        )
        app.push_screen(editor, self._drafted)

    def _drafted(self, draft: WatchpointDraft | None) -> None:
        if draft is None:
            return
        app = self._app
        if draft.watchpoint_id is None:
            app.run_session_call(
                "Creating the watchpoint",
                lambda: app.session.create_watchpoint(
                    draft.condition, draft.params, draft.targets, graph_name=draft.graph_name
                ),
                control=False,
            )
        else:
            wp_id = draft.watchpoint_id
            app.run_session_call(
                "Updating the watchpoint",
                lambda: app.session.update_watchpoint(
                    wp_id,
                    params=draft.params,
                    targets=None if draft.keep_targets else draft.targets,
                ),
                control=False,
            )

    # ---------------------------------------- the recommended set, the command line
    @property
    def has_startup(self) -> bool:
        """The command line named watchpoints (--watch, --watch-file, --recommended)."""
        return bool(self._startup_specs or self._startup_recommended)

    def offer_recommended(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.apply_recommended()

        from tuidebug.tui.kit import prompts

        self._app.push_screen(prompts.recommended_offer(), answered)

    def apply_recommended(self) -> None:
        self._app.run_session_call(
            "Creating the recommended watchpoints", self._apply_recommended, control=False
        )

    def _apply_recommended(self) -> None:
        created = self._app.session.apply_recommended()
        self._post(WorkerNotice(f"{len(created)} recommended watchpoints created."))

    def create_startup(self, graphs: Mapping[str, Graph]) -> None:
        """Create the command line's watchpoints on the graphs just loaded (a worker)."""
        graphs = dict(graphs)
        self._app.run_session_call(
            "Creating the watchpoints of the command line",
            lambda: self._create_startup(graphs),
            control=False,
        )

    def _create_startup(self, graphs: Mapping[str, Graph]) -> None:
        """(worker) Create the command line's watchpoints on the loaded graphs; a spec
        that watches nothing here, or that the session refuses, is a notice naming it."""
        from tuidebug.tui.watchpoints import export  # with the first export (issue 28)

        given, created = export.create_from_specs(
            self._app.session,
            self._startup_specs,
            graphs,
            recommended=self._startup_recommended,
            warn=lambda text: self._post(WorkerNotice(text, severity="warning", timeout=15)),
        )
        self._post(StartupWatchpointsCreated(given, created))

    def startup_created(self, message: StartupWatchpointsCreated) -> None:
        self.given_specs.update(message.given)
        created = message.created
        self._app.notify(
            f"{created} watchpoint{'s' if created != 1 else ''} created from the command line."
        )

    def spec_of(self, watchpoint: Watchpoint) -> str:
        """The watchpoint as a --watch spec, as the user wrote it while it is unchanged."""
        from tuidebug.tui.watchpoints import export  # with the first export (issue 28)

        return export.spec_of(watchpoint, self.given_specs)

    # ------------------------------------------------ watchpoints and hits out
    def copy_check_command(self) -> None:
        """Copy `tuidebug check DUMP --watch …` (online: the --watch options) and show it."""
        from tuidebug.tui.watchpoints import export  # with the first export (issue 28)

        app = self._app
        exported = export.exported_specs(app.session.watchpoints, self.given_specs, app.graphs)
        if not exported.enabled:
            app.notify("There is no enabled watchpoint to copy: press w to add one.")
            return
        md = app.metadata
        dump = os.path.abspath(md.source) if md.mode == "offline" and md.source else None
        command = export.check_command(exported.enabled, dump)
        app.copy_to_clipboard(command)
        note = export.copied_note(exported)
        app.notify(
            f"Copied to the clipboard:\n{command}" + (f"\n{note}" if note else ""), timeout=20
        )

    def save_watchpoints(self) -> None:
        """Ask for a file, then write the watchpoints in the --watch-file format."""
        from tuidebug.tui.watchpoints import export  # with the first export (issue 28)

        app = self._app
        exported = export.exported_specs(app.session.watchpoints, self.given_specs, app.graphs)
        if not exported.enabled and not exported.disabled:
            app.notify("There are no watchpoints to save: press w to add one.")
            return
        text = export.watch_file_text(exported.enabled, exported.disabled)
        count, note = export.saved_count(exported), exported.note

        def answered(value: str | None) -> None:
            if value:
                path = os.path.abspath(os.path.expanduser(value))
                done = f"Saved {count} to {path}; read them back with --watch-file." + (
                    f" {note}" if note else ""
                )
                self.write_file(path, lambda: text, done)

        from tuidebug.tui.kit import prompts

        app.push_screen(prompts.save_watchpoints_prompt(), answered)

    def save_hits(self, shown_count: int) -> None:
        """Ask for a file, then write every hit as `tuidebug check --json` prints them
        (`shown_count`: how many the hit list's filters leave in view)."""
        from tuidebug.tui.watchpoints import export  # with the first export (issue 28)

        app = self._app
        hits = tuple(app.session.hits)
        if not hits:
            app.notify("There are no hits to save yet: step (n), continue (c) or recheck (r).")
            return
        specs = {wp.id: (self.spec_of(wp), dict(wp.params)) for wp in app.session.watchpoints}
        which = export.saved_hits_which(len(hits), shown_count)

        def answered(value: str | None) -> None:
            if value:
                path = os.path.abspath(os.path.expanduser(value))
                self.write_file(
                    path, lambda: export.hits_json(hits, specs), f"Saved {which} to {path}."
                )

        from tuidebug.tui.kit import prompts

        app.push_screen(prompts.save_hits_prompt(app.metadata.step), answered)

    def write_file(self, path: str, text: Callable[[], str], done: str) -> None:
        """Write `text()` to `path` in a thread worker; toast `done` or why it failed."""
        self._app.run_worker(
            partial(self._write_file, path, text, done),
            thread=True,
            group="save",
            exit_on_error=False,
        )

    def _write_file(self, path: str, text: Callable[[], str], done: str) -> None:
        try:
            content = text()
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(content)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            self._post(WorkerNotice(f"Could not write {path}: {reason}.", severity="error"))
            return
        self._post(WorkerNotice(done, timeout=10))


__all__ = ["WatchpointFlows"]
