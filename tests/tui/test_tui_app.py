"""Pilot tests of the debugger app's panes and flows, on the in-memory session.

Every test drives the real app through keys (and a few clicks) and checks what the panes
show and which session calls were made. Each step waits for what it needs (tests/tui/support.py's
waits), never for a fixed number of rounds; nothing here depends on timing.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input, OptionList, Select, TabbedContent, Tree

from tests.tui.support import (
    CONV,
    RELU,
    FakeSession,
    make_app,
    notices,
    run_palette,
    settled,
    synthetic_graph,
    wait_for_notice,
    wait_for_screen,
    wait_until,
)
from tuidebug.core.session import SessionState
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.keys.help_screen import HelpScreen
from tuidebug.tui.kit.dialogs import ConfirmScreen, HistoryScreen, PromptScreen
from tuidebug.tui.messages import NodeChosen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.hit_list import HitList
from tuidebug.tui.panes.node_details import NodeDetails
from tuidebug.tui.panes.scope_tree import GraphTree, ScopeTree, walk
from tuidebug.tui.panes.stack_list import StackList
from tuidebug.tui.tensor.view import TensorView
from tuidebug.tui.watchpoints.editor import WatchpointEditor
from tuidebug.tui.watchpoints.list_pane import WatchpointList

SIZE = (160, 48)


notifications = notices


def watchpoint_rows(app: DebuggerApp) -> list[Any]:
    """The watchpoints the list shows (not the session's: the list is what the user sees)."""
    return app.query_one(WatchpointList).watchpoints


async def start(pilot: Any, *, accept_recommended: bool = False) -> None:
    """Loaded, the recommended-watchpoints offer answered, nothing left pending."""
    await wait_for_screen(pilot, ConfirmScreen)
    await pilot.press("y" if accept_recommended else "n")
    await wait_until(
        pilot,
        lambda: not isinstance(pilot.app.screen, ConfirmScreen),
        what="the recommended-watchpoints offer to close",
    )
    if accept_recommended:
        await wait_until(
            pilot,
            lambda: len(watchpoint_rows(pilot.app)) == 2,
            what="the recommended watchpoints in the list",
        )
    await settled(pilot)


# --------------------------------------------------------------------------- opening
async def test_open_shows_header_tree_and_offers_recommended() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        assert session.calls[0] == "start"
        await pilot.press("y")
        await wait_for_notice(pilot, "2 recommended watchpoints created.")
        await wait_until(pilot, lambda: len(watchpoint_rows(app)) == 2, what="2 watchpoints")
        assert len(session.watchpoints) == 2
        header = str(app.query_one(SessionHeader).render())
        assert "OFFLINE" in header and "/dumps/fake" in header
        assert "step 1/4" in header and "kernel_graph_0" in header
        tree = app.query_one(GraphTree)
        labels = [str(n.label) for n in tree.root.children]
        assert labels[0].startswith("Default") and labels[1].startswith("Gradients")
        assert "2 recommended watchpoints created." in notifications(app)
        table = app.query_one(WatchpointList)
        assert table.row_count == 2


async def test_declining_recommended_creates_nothing() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, accept_recommended=False)
        assert session.watchpoints == ()
        assert not isinstance(app.screen, ConfirmScreen)


async def test_session_started_before_the_app_still_gets_the_offer() -> None:
    session = FakeSession()
    session.start()
    app = DebuggerApp(session)  # start_session=False: the caller started it (online)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        assert session.calls == ["start"]
        await pilot.press("n")
        assert app.query_one(GraphTree).root.children


async def test_graphs_loaded_works_out_the_tree_badges_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The badges scan every watchpoint's nodes in the graph: a graph load (each rank
    switch, each online reconnect) must not pay for it twice."""
    from tuidebug.tui.watchpoints import badges

    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, accept_recommended=True)
        scans: list[str] = []
        real = badges.watch_badges

        def counted(graph: Any, *args: Any) -> Any:
            scans.append(graph.name)
            return real(graph, *args)

        monkeypatch.setattr(badges, "watch_badges", counted)
        app._graphs_loaded(app.graphs, first_time=False)
        assert scans == ["kernel_graph_0"]
        assert app.query_one(GraphTree).root.children


# ------------------------------------------------------------------------------ tree
async def test_tree_expands_lazily_and_selecting_a_node_fills_details() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        tree = app.query_one(GraphTree)
        default = tree.root.children[0]
        assert len(default.children) == 0  # nothing loaded before it is opened
        await pilot.press("right")  # expand Default
        assert [str(c.label).split()[0] for c in default.children] == ["network-Net"]
        await pilot.press("down", "right", "down", "right", "down", "down")
        assert tree.cursor_node is not None and tree.cursor_node.data.node == CONV
        details = app.query_one(NodeDetails)
        await wait_until(pilot, lambda: details.summary_text(0), what="Conv2D-op0's summary")
        assert details.node is not None and details.node.name == CONV
        summary = details.summary_text(0)
        assert summary is not None and summary.startswith("float32<4,4> ∈[")
        io_ids = [
            details.query_one("#io-list", OptionList).get_option_at_index(i).id
            for i in range(details.query_one("#io-list", OptionList).option_count)
        ]
        assert "out:0" in io_ids and "in:layer0.weight" in io_ids and f"in:{RELU}" in io_ids


async def test_nan_and_inf_counts_are_shown_in_the_summary() -> None:
    app, _session = make_app(nan_node=RELU)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert app.go_to_node("kernel_graph_0", RELU)
        details = app.query_one(NodeDetails)
        await wait_until(pilot, lambda: details.summary_text(0), what="ReLU-op1's summary")
        summary = details.summary_text(0)
        assert summary is not None and "NaN:1" in summary and "+Inf:1" in summary


async def test_enter_on_a_node_opens_its_tensor() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert app.go_to_node("kernel_graph_0", CONV)
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view._state == "tensor", what="the tensor to open")
        assert view._array is not None and view._array.shape == (4, 4)
        assert "Conv2D-op0:0" in view._title


async def test_name_filter_narrows_the_tree_and_escape_clears_it() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("slash")
        assert isinstance(app.focused, Input) and app.focused.id == "name-filter"
        await pilot.press(*"tanh")
        tree = app.query_one(GraphTree)

        def leaves_shown() -> list[Any]:
            return [n for n in walk(tree.root) if n.data and n.data.node]

        await wait_until(pilot, lambda: len(leaves_shown()) == 4, what="the 4 Tanh leaves")
        leaves = leaves_shown()
        assert len(leaves) == 4 and all("Tanh" in n.data.node for n in leaves)
        await pilot.press("escape")
        assert not app.query_one(ScopeTree)._name_match
        assert [str(n.label).split()[0] for n in tree.root.children] == ["Default", "Gradients"]


async def test_filter_with_no_match_says_so() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("slash", *"nothing-like-this")
        status = app.query_one("#filter-status")
        assert "no node matches" in str(status.render())


async def test_node_type_filter_shows_only_that_type() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        select = app.query_one("#type-filter", Select)
        select.value = "category:weight"
        tree = app.query_one(GraphTree)
        weights = [f"layer{i}.weight" for i in range(4)]

        def leaves() -> list[str]:
            return sorted(n.data.node for n in walk(tree.root) if n.data and n.data.node)

        await wait_until(pilot, lambda: leaves() == weights, what="only the weights in the tree")


async def test_graph_selector_switches_graphs() -> None:
    graphs = [synthetic_graph("kernel_graph_0"), synthetic_graph("kernel_graph_1", scopes=1)]
    app, _session = make_app(graph_list=graphs)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.query_one("#graph-select", Select).value = "kernel_graph_1"
        header = app.query_one(SessionHeader)
        await wait_until(
            pilot,
            lambda: "graph kernel_graph_1" in str(header.render()),
            what="the header to name kernel_graph_1",
        )
        assert app.current_graph == "kernel_graph_1"


# ------------------------------------------------------------------------ watchpoints
async def test_create_watchpoint_with_inline_validation() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.go_to_node("kernel_graph_0", CONV)
        await pilot.press("w")
        editor = await wait_for_screen(pilot, WatchpointEditor)
        conditions = editor.query_one("#condition-list", OptionList)
        index = next(
            i
            for i in range(conditions.option_count)
            if conditions.get_option_at_index(i).id == "tensor_too_large"
        )
        conditions.highlighted = index
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: isinstance(app.focused, Input) and app.focused.id == "param-abs_mean_gt",
            what="the focus on the abs_mean_gt field",
        )
        await pilot.press(*"-1")
        error = editor.query_one(".param-error")
        assert "abs_mean_gt" in str(error.render())
        await pilot.press("ctrl+s")  # refused: the error stays, the dialog stays
        assert isinstance(app.screen, WatchpointEditor)
        await pilot.press("backspace", "backspace", "1", "enter")
        await wait_until(pilot, lambda: len(watchpoint_rows(app)) == 1, what="the new watchpoint")
        assert not isinstance(app.screen, WatchpointEditor)
        wp = session.watchpoints[-1]
        assert wp.condition.abbr == "TL" and wp.params == {"abs_mean_gt": 1.0}
        assert wp.targets == (CONV,)
        assert app.query_one(WatchpointList).row_count == 1


async def test_weight_condition_defaults_to_its_category() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.go_to_node("kernel_graph_0", CONV)
        await pilot.press("w")
        editor = await wait_for_screen(pilot, WatchpointEditor)
        conditions = editor.query_one("#condition-list", OptionList)
        conditions.highlighted = next(
            i
            for i in range(conditions.option_count)
            if conditions.get_option_at_index(i).id == "weight_overflow"
        )
        target = editor.query_one("#target-select", Select)
        await wait_until(pilot, lambda: target.value == "category", what="the category target")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(watchpoint_rows(app)) == 1, what="the new watchpoint")
        wp = session.watchpoints[-1]
        assert wp.condition.abbr == "WO" and wp.targets == ()


async def test_weight_condition_on_a_non_weight_node_is_refused_inline() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.go_to_node("kernel_graph_0", CONV)
        await pilot.press("w")
        editor = await wait_for_screen(pilot, WatchpointEditor)
        conditions = editor.query_one("#condition-list", OptionList)
        conditions.highlighted = next(
            i
            for i in range(conditions.option_count)
            if conditions.get_option_at_index(i).id == "weight_overflow"
        )
        target = editor.query_one("#target-select", Select)
        await wait_until(pilot, lambda: target.value == "category", what="the category target")
        target.value = f"node:{CONV}"
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, WatchpointEditor)
        assert "not a weight node" in str(editor.query_one("#editor-error").render())
        await pilot.press("escape")
        assert session.watchpoints == ()


async def test_edit_toggle_and_delete_a_watchpoint() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, accept_recommended=True)
        await pilot.press("6")
        assert isinstance(app.focused, WatchpointList)
        await pilot.press("down", "enter")  # WCL: edit
        editor = await wait_for_screen(pilot, WatchpointEditor)
        field = editor.query_one("#param-abs_mean_update_ratio_gt", Input)
        assert field.value == "1"
        field.value = "0.5"
        await pilot.press("ctrl+s")
        await wait_until(
            pilot,
            lambda: watchpoint_rows(app)[1].params == {"abs_mean_update_ratio_gt": 0.5},
            what="the edited threshold in the list",
        )
        assert session.watchpoints[1].params == {"abs_mean_update_ratio_gt": 0.5}
        assert session.watchpoints[1].targets == ()  # "keep" the targets
        await pilot.press("space")
        await wait_until(
            pilot, lambda: not watchpoint_rows(app)[1].enabled, what="WCL disabled in the list"
        )
        assert session.watchpoints[1].enabled is False
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_until(pilot, lambda: len(watchpoint_rows(app)) == 1, what="WCL deleted")
        assert [w.id for w in session.watchpoints] == [1]


# ------------------------------------------------------------------- hits and control
async def test_recheck_fills_the_hit_list_and_enter_jumps_to_the_node() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, accept_recommended=True)
        await pilot.press("r")
        hits = app.query_one(HitList)
        await wait_until(pilot, lambda: hits.hit_count == 4, what="4 hits in the hit list")
        assert session.calls[-1] == "recheck"
        tabs = app.query_one("#left-tabs", TabbedContent)
        assert str(tabs.get_tab("hits-tab").label) == "2 Hits (4)"
        await pilot.press("2")
        assert tabs.active == "hits-tab"
        tree = hits.tree_view
        groups = tree.root.children
        assert [str(g.label).split()[0] for g in groups] == ["#1", "#2"]
        # WCL's check errors are folded into one line under its group
        (fold,) = groups[1].children
        assert str(fold.label).startswith("2 check errors") and not fold.is_expanded
        rows = [str(leaf.label) for leaf in fold.children]
        assert rows[0].startswith("WCL layer0.weight:0 step 1")  # dump iteration 0
        assert "previous step value cannot be found" in rows[0]
        first_to = groups[0].children[1]  # TO on Conv2D-op0
        tree.move_cursor(first_to)
        await pilot.press("enter")
        view = app.query_one(TensorView)
        await wait_until(pilot, lambda: view._state == "tensor", what="the hit's tensor to open")
        # issue 28: Enter on a hit left the hit tab for the tree; the list keeps its tab
        # and the keys (the next hit is one ↓ away), the tree behind it follows the hit
        assert tabs.active == "hits-tab" and app.focused is tree
        assert app.query_one(GraphTree).cursor_node.data.node == CONV
        # the title names the hit's step, as the header and a tensor opened from the tree do
        assert "step 1)" in view._title


async def test_hit_list_filters_by_watchpoint() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, accept_recommended=True)
        await pilot.press("r")
        hits = app.query_one(HitList)
        await wait_until(pilot, lambda: hits.hit_count == 4, what="4 hits in the hit list")
        hits.query_one("#hit-filter-watchpoint", Select).value = "2"

        def groups() -> list[str]:
            return [str(g.label).split()[0] for g in hits.tree_view.root.children]

        await wait_until(pilot, lambda: groups() == ["#2"], what="only watchpoint #2's hits")
        assert "2 hits" in str(hits.query_one("#hit-status").render())


async def test_step_continue_and_reset_step() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("n")
        header = app.query_one(SessionHeader)
        await wait_until(pilot, lambda: "step 2/4" in str(header.render()), what="step 2/4")
        await settled(pilot)  # the step's command done: the next one is not "still busy"
        assert session.metadata.step == 2
        await pilot.press("N")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("backspace", "9", "enter")  # only 2 steps are left
        assert isinstance(app.screen, PromptScreen)
        assert "between 1 and 2" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("backspace", "2", "enter")
        await wait_until(pilot, lambda: "step 4/4" in str(header.render()), what="step 4/4")
        await settled(pilot)
        assert session.metadata.step == 4 and "step 2" in session.calls
        await pilot.press("n")  # at the last step: refused with a reason
        assert any("last step" in m for m in notifications(app))
        await pilot.press("g")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("backspace", "x", "enter")
        assert "whole number" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("backspace", "2", "enter")
        await wait_until(pilot, lambda: "step 2/4" in str(header.render()), what="back at step 2")
        assert session.calls[-1] == "reset 2" and session.metadata.step == 2


async def test_continue_runs_to_the_end() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("c")
        header = app.query_one(SessionHeader)
        await wait_until(pilot, lambda: "step 4/4" in str(header.render()), what="step 4/4")
        assert "continue" in session.calls and session.metadata.step == 4


async def test_history_lists_graph_runs_and_jumps() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: session.metadata.step == 3, what="the jump to step 3")
        assert session.calls[-1] == "reset 3"


async def test_recheck_without_watchpoints_explains_why() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("r")
        await wait_for_notice(pilot, "no watchpoints")
        await settled(pilot)
        assert "recheck" not in session.calls


async def test_offline_refuses_pause_and_terminate_with_a_reason() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await pilot.press("p", "T")
        messages = notifications(app)
        assert any(m.startswith("Pause needs a live training") for m in messages)
        assert any(m.startswith("Terminate needs a live training") for m in messages)
        assert "pause" not in session.calls and "terminate" not in session.calls
        assert app.check_action("pause", ()) is None  # greyed out in the footer


async def test_session_errors_become_notifications() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.run_session_call("Step", lambda: session.step(10))
        await wait_for_notice(pilot, "There is no step 11")
        assert app.is_running


# ------------------------------------------------------------------------------ online
async def test_online_header_pause_and_terminate_with_confirmation() -> None:
    app, session = make_app(live=True)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        header = str(app.query_one(SessionHeader).render())
        assert "ONLINE" in header and "client 10.0.0.7:50123" in header
        assert "GPU" in header and "MindSpore 2.0.0" in header and "paused" in header
        await pilot.press("g")
        assert any("Only offline sessions" in m for m in notifications(app))
        session._set(state=SessionState.RUNNING)
        header = app.query_one(SessionHeader)
        await wait_until(pilot, lambda: "running" in str(header.render()), what="'running'")
        await pilot.press("p")
        await wait_until(pilot, lambda: "paused" in str(header.render()), what="'paused'")
        await settled(pilot)  # the pause command done before the next
        assert session.calls[-1] == "pause"
        await pilot.press("T")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert "terminate" not in session.calls
        await pilot.press("T", "y")
        await wait_until(
            pilot, lambda: "terminated by you" in str(header.render()), what="the ending named"
        )
        assert session.calls[-1] == "terminate"


async def test_online_states_are_worded_for_the_user() -> None:
    app, session = make_app(live=True)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        session._set(state=SessionState.DISCONNECTED, message="The training went away.")
        await wait_until(
            pilot,
            lambda: "disconnected" in str(app.query_one(SessionHeader).render()),
            what="'disconnected' in the header",
        )
        header = str(app.query_one(SessionHeader).render())
        assert "disconnected" in header and "The training went away." in header
        await pilot.press("n")
        assert any("disconnected" in m for m in notifications(app))


# ----------------------------------------------------------------------- stack, help
async def test_stack_list_search_and_nodes_at_a_line() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        app.go_to_node("kernel_graph_0", CONV)
        await pilot.press("3")
        stack = app.query_one(StackList)
        await wait_until(pilot, lambda: stack.ready, what="the stack index")
        await pilot.press("slash", *"layer2")
        lines = stack.query_one("#stack-lines", OptionList)
        ids = [lines.get_option_at_index(i).id for i in range(lines.option_count)]
        found = [i for i in ids if i and i.startswith("all:")]
        assert len(found) == 1 and "self.layer2(x)" in found[0]
        await pilot.press("enter")  # to the list
        lines.highlighted = ids.index(found[0])
        await pilot.press("enter")
        nodes = stack.query_one("#stack-nodes", OptionList)
        await wait_until(pilot, lambda: app.focused is nodes, what="the focus on the line's nodes")
        assert nodes.option_count == 5
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.current_node is not None, what="a node chosen")
        assert app.current_node is not None
        assert app.current_node.name.startswith("Default/network-Net/layer2-Block/")


async def test_help_screen_lists_keys_with_context() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, accept_recommended=True)
        await pilot.press("6", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "Enter or e edits" in app.screen.context_text
        keys = app.help_keys()
        assert ("n", keys[0][1], "") == keys[0]
        pause = next(row for row in keys if row[0] == "p")
        assert pause[2].startswith("Pause needs a live training")
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)


async def test_number_keys_focus_panes() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        tabs = app.query_one("#left-tabs", TabbedContent)
        await pilot.press("2")
        assert tabs.active == "hits-tab" and isinstance(app.focused, Tree)
        await pilot.press("3")
        assert tabs.active == "stack-tab" and app.focused.id == "stack-lines"
        await pilot.press("4")
        assert app.focused.id == "io-list"
        await pilot.press("6")
        assert isinstance(app.focused, WatchpointList)
        await pilot.press("1")
        assert tabs.active == "tree-tab" and isinstance(app.focused, GraphTree)


async def test_mouse_clicks_work_too() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert await pilot.click("#control-step")
        await wait_until(pilot, lambda: "step 1" in session.calls, what="the step command")
        await settled(pilot)
        assert await pilot.click("#left-tabs Tab#--content-tab-hits-tab")
        assert app.query_one("#left-tabs", TabbedContent).active == "hits-tab"


# ---------------------------------------------------------------------------- palette
async def test_palette_offers_state_aware_commands_and_nodes() -> None:
    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        titles = [c.title for c in app.palette_commands()]
        assert "Step" in titles and "Go to step…" in titles
        assert "Pause" not in titles and "Recheck watchpoints" not in titles
        await run_palette(pilot, "step")
        await wait_until(pilot, lambda: "step 1" in session.calls, what="the step command")


async def test_palette_goes_to_a_node() -> None:
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        await run_palette(pilot, "MatMul-op7")
        matmul = "Default/network-Net/layer1-Block/MatMul-op7"
        await wait_until(
            pilot,
            lambda: app.current_node is not None and app.current_node.name == matmul,
            what="MatMul-op7 chosen",
        )


@pytest.mark.parametrize("live", [False, True])
async def test_palette_commands_follow_capabilities(live: bool) -> None:
    app, session = make_app(live=live)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        session._set(state=SessionState.RUNNING)
        await wait_until(
            pilot,
            lambda: app._metadata.state is SessionState.RUNNING,
            what="the app to know the training runs",
        )
        titles = {c.title for c in app.palette_commands()}
        assert ("Pause" in titles) is live
        assert "Step" not in titles


async def test_a_burst_of_notices_is_one_toast_and_kept_for_the_dialog() -> None:
    from tuidebug.core.session import Notice

    app, session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        for i in range(3):
            session.emit(Notice(f"file {i} matches no node", "warning"))
        await wait_for_notice(pilot, "matches no node")
        await settled(pilot)  # a burst is one toast: no second one comes
        toasts = [m for m in notifications(app) if "matches no node" in m]
        assert toasts == ["file 0 matches no node\n(+2 more: Ctrl+P → Session messages)"]
        assert "Session messages" in [c.title for c in app.palette_commands()]
        app.action_messages()
        await wait_for_screen(pilot, ConfirmScreen)
        assert "file 2 matches no node" in str(app.screen.query_one("#confirm-body").render())


# ------------------------------------------------------------ small keys (issue 28)
async def test_ctrl_c_quits_as_q_does() -> None:
    """Ctrl+C showed Textual's raw `[b]ctrl+q[/b]` sentence and quit nothing."""
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        assert not notices(app)
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: app._exit, what="Ctrl+C to quit the app")
        assert not any("[b]" in text for text in notices(app))


async def test_page_keys_scroll_node_details_from_its_list() -> None:
    """PageDown / End on the node's input and output rows scrolled nothing: the list took
    them for its own rows and the stack below stayed out of sight."""
    app, _session = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await start(pilot)
        graph = next(iter(app.graphs))
        app.post_message(NodeChosen(graph, CONV))
        await wait_until(pilot, lambda: app.current_node is not None, what="CONV shown")
        await pilot.press("4")
        details = app.query_one(NodeDetails)
        assert app.focused is app.query_one("#io-list") and details.max_scroll_y > 2
        await pilot.press("home")
        assert details.scroll_y == 0
        await pilot.press("pagedown")
        assert details.scroll_y > 0
        await pilot.press("end")
        assert details.scroll_y == details.max_scroll_y
        await pilot.press("pageup", "pageup", "pageup")
        assert details.scroll_y == 0
        assert app.focused is app.query_one("#io-list")  # the keys stay in the pane


async def test_escape_on_the_tree_filter_keeps_the_expansion() -> None:
    """Esc on the name filter rebuilt the tree collapsed to its top level; now the scopes
    expanded before the filter are expanded again, and the cursor is where it was (or on
    the node picked among the matches, when the tree had the keys)."""
    app, _session = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot)
        graph = next(iter(app.graphs))
        app.post_message(NodeChosen(graph, CONV))
        tree = app.query_one(GraphTree)
        await wait_until(
            pilot,
            lambda: tree.cursor_node is not None and tree.cursor_node.data.node == CONV,
            what="CONV revealed in the tree",
        )

        def expanded() -> list[str]:
            return [row.data.path for row in walk(tree.root) if row.is_expanded]

        before = expanded()
        assert "Default/network-Net/layer0-Block" in before
        await pilot.press("slash", "t", "a", "n", "h")
        await wait_until(
            pilot,
            lambda: app.query_one("#filter-status").has_class("-shown"),
            what="the filtered tree",
        )
        await pilot.press("escape")  # from the box: the tree as it was
        assert app.focused is tree and expanded() == before
        assert tree.cursor_node.data.node == CONV
        await pilot.press("slash", "t", "a", "n", "h", "enter")  # to the matches
        assert app.focused is tree
        picked = tree.cursor_node.data.node
        assert picked is not None and "Tanh" in picked
        await pilot.press("escape")  # from the tree: the pick stays, revealed
        assert tree.cursor_node.data.node == picked
        assert set(before) <= set(expanded())
