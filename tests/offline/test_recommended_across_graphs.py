"""Issue 28: the recommended watchpoints on a dump of several graphs are one watchpoint per
condition across graphs (each graph's targets watched there), and the recommended tensor
checks leave optimizer state out (TZ on `moments.*` would stop every step)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tuidebug.cli import main
from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.core.watch_targets import watched_tensors
from tuidebug.core.watchpoints import (
    RecommendedWatchpoint,
    is_optimizer_state,
    merge_recommended,
    recommended_watchpoints,
)
from tuidebug.offline.session import OfflineSession
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef, TensorKey

F32 = np.float32


def _graph_nodes(k: int) -> tuple[list[NodeDef], list[ParamDef]]:
    """Graph k: a Dense layer, its gradient and a Momentum update of its weight."""
    mm = f"Default/net/fc{k}-Dense/MatMul-op{k}"
    relu = f"Default/net/ReLU-op{k}"
    grad = f"Gradients/Default/net/fc{k}-Dense/gradMatMul/MatMul-op{k + 10}"
    opt = f"Default/optimizer-Momentum/ApplyMomentum-op{k}"
    nodes = [
        NodeDef(mm, "MatMul", [f"x{k}", f"fc{k}.weight"], shape=(2, 2)),
        NodeDef(relu, "ReLU", [mm], shape=(2, 2)),
        NodeDef(grad, "MatMul", [relu, f"x{k}"], shape=(2, 2)),
        NodeDef(
            opt, "ApplyMomentum", [f"fc{k}.weight", f"moments.fc{k}.weight", grad], shape=(2, 2)
        ),
    ]
    params = [
        ParamDef(f"x{k}", F32, (2, 2)),
        ParamDef(f"fc{k}.weight", F32, (2, 2)),
        ParamDef(f"moments.fc{k}.weight", F32, (2, 2)),
    ]
    return nodes, params


@pytest.fixture
def two_graphs(tmp_path: Path) -> Path:
    writer = DumpWriter(tmp_path / "d", start_timestamp=1000)
    for k in (0, 1):
        nodes, params = _graph_nodes(k)
        writer.add_graph(k, nodes, params)
    for it in (0, 1):
        for k in (0, 1):
            nodes, params = _graph_nodes(k)
            tensors: dict[TensorKey, np.ndarray] = {
                (n.full_name, "output", 0): np.ones((2, 2), F32) for n in nodes
            }
            tensors.update({(p.name, "output", 0): np.ones((2, 2), F32) for p in params})
            # the optimizer's moments start at zero: all-zero every step
            tensors[(f"moments.fc{k}.weight", "output", 0)] = np.zeros((2, 2), F32)
            # a vanished gradient in each graph: GV hits it
            tensors[(nodes[2].full_name, "output", 0)] = np.zeros((2, 2), F32)
            writer.write_iteration(k, it, tensors)
    writer.finish()
    return tmp_path / "d"


def _param(name: str, scope: str = "") -> Node:
    return Node(name, NodeKind.PARAMETER, "Parameter", scope=scope)


def test_optimizer_state_by_scope_or_by_name() -> None:
    for name in (
        "moments.fc1.weight",
        "accum.conv1.weight",
        "adam_m.dense.bias",
        "adam_v.dense.bias",
        "fc1.weight.moment1",
        "moment2.fc1.weight",
        "global_step",
        "beta1_power",
        "layer0.weight.exp_avg_sq",
    ):
        assert is_optimizer_state(_param(name)), name
    assert is_optimizer_state(_param("learning_rate", "Default/optimizer-Adam"))
    for name in ("fc1.weight", "fc1.bias", "inputs0", "momentum_layer.weight", "step_count"):
        assert not is_optimizer_state(_param(name)), name
    assert not is_optimizer_state(Node("Default/moments.x", NodeKind.OPERATOR, "Add"))


def test_merge_keeps_one_per_name_with_every_graphs_targets_in_order() -> None:
    a = RecommendedWatchpoint("tz", "tensor_all_zero", {}, ("Default", "Gradients"))
    b = RecommendedWatchpoint("tz", "tensor_all_zero", {}, ("Default", "Other"))
    g = RecommendedWatchpoint("gv", "gradient_vanishing", {}, ("Gradients/x",))
    merged = merge_recommended([[a, g], [b]])
    assert [(r.name, r.targets) for r in merged] == [
        ("tz", ("Default", "Gradients", "Other")),
        ("gv", ("Gradients/x",)),
    ]


def test_recommended_tensor_checks_leave_optimizer_state_out(two_graphs: Path) -> None:
    session = OfflineSession(two_graphs)
    session.start()
    graph: Graph = next(iter(session.graphs.values()))
    recs = {r.name: r for r in recommended_watchpoints(graph)}
    tz = recs["recommend_tensor_all_zero_watchpoint"]
    watched = watched_tensors(tz.condition, tz.targets, [graph], constants=False)[graph.name]
    names = {node for node, _ in watched}
    assert "moments.fc0.weight" not in names
    # everything else is still watched: kernels, weights, inputs, the optimizer's kernel
    assert {"fc0.weight", "x0", "Default/optimizer-Momentum/ApplyMomentum-op0"} <= names
    assert recs["recommend_tensor_overflow_watchpoint"].targets == tz.targets


def test_one_recommended_watchpoint_per_condition_across_graphs(two_graphs: Path) -> None:
    session = OfflineSession(two_graphs)
    session.start()
    assert len(session.graphs) == 2
    created = session.apply_recommended()
    conditions = [wp.condition.abbr for wp in created]
    assert all(wp.graph_name is None for wp in created)
    # one per recommendation name: WI, WCL, GV, TO, TZ, AR (relu)
    assert conditions == ["WI", "WCL", "GV", "TO", "TZ", "AR"]
    gv = next(wp for wp in created if wp.condition.abbr == "GV")
    assert len(gv.targets) == 2  # each graph's gradient node
    session.step()  # iteration 0; then iteration 1: the moments are zero again
    session.step()
    hits = session.hits
    # each graph's gradient is checked by the one GV watchpoint; no optimizer state hit
    gv_hits = [h for h in hits if h.watchpoint_id == gv.id and not h.is_error]
    assert len({h.tensor.graph for h in gv_hits}) == 2
    assert not any(h.tensor.node.startswith("moments.") for h in hits)
    session.close()


def test_check_recommended_leaves_optimizer_state_out(capsys, two_graphs: Path) -> None:  # type: ignore[no-untyped-def]
    code = main(["check", str(two_graphs), "--recommended", "--json"])
    out = capsys.readouterr().out
    hits = json.loads(out)
    assert code in (0, 1)
    assert not any(h["node"].startswith("moments.") for h in hits)
