"""Dump mode: a PyTorch training written in the MindSpore 2.10 layout and read back by the
offline reader (DumpLayout / TensorIndex / graph_files) and by `tuidebug check`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tuidebug.torch as tdb
from tests.torch.support import LogNet, TinyCNN, node_named, torch
from tuidebug.core.graph import Category, NodeKind
from tuidebug.offline.files.graphs import load_graph_file
from tuidebug.offline.files.npy import load_npy
from tuidebug.offline.layout.root import DumpLayout
from tuidebug.offline.layout.tensor_index import TensorIndex

nn = torch.nn


def train(
    dbg: tdb.Debugger,
    model: nn.Module,
    opt: torch.optim.Optimizer,
    steps: int,
    *,
    shape: tuple[int, ...],
    before: Any = None,
) -> dict[tuple[int, str], np.ndarray]:
    """SGD steps; returns what the test saw itself, by (iteration, name)."""
    seen: dict[tuple[int, str], np.ndarray] = {}
    loss_fn = nn.MSELoss()
    for i in range(steps):
        if before is not None:
            before(i)
        g = torch.Generator().manual_seed(i)
        x = torch.randn(*shape, generator=g)
        out = model(x)
        seen[(i, "args0")] = x.numpy().copy()
        seen[(i, "out")] = out.detach().numpy().copy()
        loss = loss_fn(out, torch.zeros_like(out))
        loss.backward()
        for name, p in model.named_parameters():
            seen[(i, name + ".grad")] = p.grad.numpy().copy()
        opt.step()
        opt.zero_grad()
        for name, p in model.named_parameters():
            seen[(i, name)] = p.detach().numpy().copy()
        dbg.step_end()
    return seen


def open_dump(root: Path) -> tuple[Any, Any, TensorIndex]:
    layout = DumpLayout.open(root)
    rank = layout.rank(0)
    files = rank.graph_files[0]
    assert files.pb is not None
    graph = load_graph_file(files.pb)
    return rank, graph, TensorIndex(rank, graph, 0)


def test_dump_round_trips_through_the_offline_reader(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = tmp_path / "dump"
    dbg = tdb.dump(model, opt, out, steps=3)
    seen = train(dbg, model, opt, 5, shape=(2, 1, 8, 8))
    dbg.close()

    rank, graph, index = open_dump(out)
    assert index.iterations == [0, 1, 2]  # steps=3: the first three steps only
    assert rank.settings.ms_version == f"torch-{torch.__version__}"
    assert rank.history_raw[0] == [0, 1, 2]
    mg = tdb.graph_for(model)
    assert set(graph.nodes) == set(mg.by_name) | set(mg.inputs)
    fc2 = node_named(mg, "/fc2-Linear/")
    conv = graph.node(node_named(mg, "/conv1-Conv2d/"))
    assert conv.outputs[0].shape == (2, 4, 6, 6)  # types known once tensors were seen
    assert conv.stack and conv.stack[0].file_path.endswith("/tests/torch/support.py")
    assert Category.WEIGHT in graph.categories(graph.node("fc1.weight"))
    order = rank.execution_order(0)
    assert order[0] == conv.name and order.index(fc2) < len(order)

    def value(name: str, iteration: int) -> np.ndarray:
        found = index.lookup(name, 0, iteration)
        assert found is not None, (name, iteration)
        return np.asarray(load_npy(found.path, root=out))

    for it in range(3):
        np.testing.assert_array_equal(value(fc2, it), seen[(it, "out")])
        np.testing.assert_array_equal(value("args0", it), seen[(it, "args0")])
        np.testing.assert_array_equal(value("fc1.weight", it), seen[(it, "fc1.weight")])
        pgrad = mg.param_grad_of["conv1.weight"].name
        np.testing.assert_array_equal(value(pgrad, it), seen[(it, "conv1.weight.grad")])
    assert index.lookup(fc2, 0, 3) is None
    assert not index.unmatched


def test_dump_of_chosen_iterations_next_to_a_missing_debugger(tmp_path: Path) -> None:
    model = LogNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dbg = tdb.attach(model, opt, host=None, dump_dir=tmp_path / "d", dump_steps=[1, 3])
    train(dbg, model, opt, 4, shape=(3, 4))
    dbg.close()
    _, graph, index = open_dump(tmp_path / "d")
    assert index.iterations == [1, 3]
    assert graph.node("args0").kind is NodeKind.PARAMETER


def test_tuidebug_check_finds_the_nan_origin_in_a_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = pytest.importorskip("tuidebug.cli")
    model = LogNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    out = tmp_path / "nan"

    def before(i: int) -> None:
        model.offset = -100.0 if i == 2 else 1.0

    dbg = tdb.dump(model, opt, out)
    train(dbg, model, opt, 3, shape=(3, 4), before=before)
    dbg.close()
    code = cli.main(["check", str(out), "--watch", "TO", "--json", "--workers", "1"])
    hits = json.loads(capsys.readouterr().out)
    assert code == 1, hits
    mg = tdb.graph_for(model)
    log_node = node_named(mg, "/log-Log/")
    assert {h["iteration"] for h in hits} == {2}
    assert hits[0]["node"] == log_node  # execution order: the origin first
    nodes = {h["node"] for h in hits}
    assert node_named(mg, "/fc2-Linear/") in nodes
    assert node_named(mg, "/fc1-Linear/") not in nodes  # upstream of the NaN: clean


def test_autocast_bfloat16_dump_is_checked_and_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bf16 autocast step on CPU dumped as MindSpore 2.4+ does it (bfloat16 named in the
    file name, stored as float32, exactly): the check finds the overflow where it arose and
    the file holds the activation's values."""
    cli = pytest.importorskip("tuidebug.cli")
    from tests.torch.test_torch_online import AutocastNet

    model = AutocastNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    out = tmp_path / "bf16"
    seen: list[torch.Tensor] = []
    model.scale.register_forward_hook(lambda m, a, o: seen.append(o.detach().clone()))
    dbg = tdb.dump(model, opt, out)
    for i in range(2):
        model.scale.factor = 1e39 if i == 1 else 1.0
        g = torch.Generator().manual_seed(i)
        x = torch.randn(3, 4, generator=g)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = model(x)
        y.float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
        dbg.step_end()
    dbg.close()
    code = cli.main(["check", str(out), "--watch", "TO", "--json", "--workers", "1"])
    hits = json.loads(capsys.readouterr().out)
    assert code == 1, hits
    scale = node_named(tdb.graph_for(model), "/scale-Scale/")
    assert hits[0]["node"] == scale and hits[0]["iteration"] == 1
    files = sorted(out.rglob("Scale.*.output.0.*.npy"))
    assert files and all(f.name.endswith(".BFloat16.npy") for f in files), files
    stored = np.load(files[-1])
    assert stored.dtype == np.float32
    want = seen[-1]
    assert want.dtype == torch.bfloat16
    np.testing.assert_array_equal(stored, want.float().numpy())
