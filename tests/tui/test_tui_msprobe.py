"""An msprobe dump in the TUI (issue 29), opened as `tuidebug offline ROOT` opens it: the
tree of calls, a call's details (its inputs, parameters and outputs with dtype, shape and
msprobe's statistics) and stack, continue to the NaN/Inf step, whose first hit is the call
`msprobe overflow_check` names, and `L` lists the step's tensors with msprobe's statistics."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from tests.tui.support import settled, wait_until
from tests.tui.test_tui_tensor_list import health_known, open_list
from tuidebug.core.tensor_health import Health
from tuidebug.offline.session import OfflineSession
from tuidebug.tui.app import DebuggerApp
from tuidebug.tui.kit.dialogs import ConfirmScreen
from tuidebug.tui.panes.header import SessionHeader
from tuidebug.tui.panes.node_details import NodeDetails
from tuidebug.tui.panes.scope_tree import GraphTree

SIZE = (160, 48)
LAYER_NORM = "Functional/Functional.layer_norm.0.forward"


async def test_msprobe_dump_opens_shows_a_call_and_finds_the_first_anomaly(
    fixtures_dir: Path,
) -> None:
    root = fixtures_dir / "msprobe_mlp" / "stat_L1_blowup"
    session = OfflineSession(root)
    app = DebuggerApp(session, start_session=True, watch_specs=["TO"])
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.loaded and session.watchpoints, what="the dump")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("n")
        await settled(pilot)
        header = str(app.query_one(SessionHeader).render())
        assert "step 0/3" in header
        tree = app.query_one(GraphTree)
        assert [str(n.label).split()[0] for n in tree.root.children][:2] == ["Functional", "Torch"]
        await pilot.press("n")
        await wait_until(pilot, lambda: session.metadata.step == 1, what="step 1")
        await settled(pilot)
        assert app.go_to_node("msprobe", LAYER_NORM)
        details = app.query_one(NodeDetails)
        await wait_until(pilot, lambda: details.summary_text(0), what="the call's statistics")
        text = details.summary_text(0) or ""
        assert "max" in text.lower() or "nan" in text.lower(), text
        shown = " ".join(str(w.render()) for w in details.query("Static"))
        # each argument with its dtype, shape and own statistics (not only through the
        # node making it)
        await wait_until(pilot, lambda: details.argument_text(0), what="an input's statistics")
        arg = details.argument_text(0) or ""
        assert arg.startswith("statistics only: max") and "NaN no" in arg, arg
        io_list = details.query_one("#io-list", OptionList)
        rows = [str(io_list.get_option_at_index(i).prompt) for i in range(io_list.option_count)]
        assert "arguments (3)" in rows
        assert any(r.startswith("  input.0 float32  <5,24>") and "max 1.29621" in r for r in rows)
        assert "msprobe name" in shown
        # continue: step 2's Norm=Infinity is no overflow; step 3's first hit is msprobe's
        await pilot.press("c")
        await wait_until(pilot, lambda: session.metadata.step == 3 and session.hits, what="hits")
        await settled(pilot)
        assert session.hits[0].tensor.node == LAYER_NORM
        # L: the step's tensors with msprobe's statistics (no value was dumped)
        screen = await open_list(pilot)
        await health_known(pilot, screen)
        health = {e.node: h for e, h in zip(screen.entries, screen.health, strict=True)}
        assert health["Functional/Functional.linear.0.forward"] is Health.NORMAL  # 4.9e25: finite
        assert health[LAYER_NORM] in (Health.NAN, Health.INF)
        # msprobe's NaN/Inf "counts" are flags from Max/Min: `L` shows "yes", not "1"
        index = next(i for i, e in enumerate(screen.entries) if e.node == LAYER_NORM)
        summary = screen.summaries[index]
        assert summary is not None and summary.presence
