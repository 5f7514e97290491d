"""Issue 28: one label for a step everywhere (`core.text.step_text`), shapes from the file's
header where the graph does not give them, and `pt`'s title naming the whole shape and the
slice it prints."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tuidebug.commands import CommandRegistry, command_registry
from tuidebug.core.condition_catalogue import get_condition
from tuidebug.core.tensor import TensorRef
from tuidebug.core.text import step_text
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.offline.session import OfflineSession
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

LOSS = "SparseSoftmaxCrossEntropyWithLogits-op87"
CONV = "Conv2D-op77"


@pytest.fixture(scope="module")
def lenet(fixtures_dir: Path) -> Iterator[tuple[OfflineSession, CommandRegistry]]:
    session = OfflineSession(fixtures_dir / "mindspore_lenet_dump" / "ms2_0_0")
    session.start()
    yield session, command_registry(session, width=120)
    session.close()


def test_step_text_is_one_wording() -> None:
    assert step_text(4, 3) == "step 4 (iteration 3)"
    assert step_text(4) == "step 4"


def test_offline_and_online_hits_say_their_step_the_same_way() -> None:
    condition = get_condition("TO")
    offline = WatchpointHit(1, condition, TensorRef("n", 0, 3), 0, step=4)
    online = WatchpointHit(1, condition, TensorRef("n", 0, 4), 0, step=4)
    assert offline.step_label == "step 4 (iteration 3)"
    assert online.step_label == "step 4"
    assert WatchpointHit(1, condition, TensorRef("n", 0, 3), 0).step_label == ""


def test_session_labels_match_the_header(lenet: tuple[OfflineSession, CommandRegistry]) -> None:
    session, _ = lenet
    assert session.iteration_of_step(0) is None and session.iteration_of_step(4) == 3
    assert session.step_label(TensorRef("x", 0, 2)) == "step 3 (iteration 2)"


def test_lt_and_pt_name_the_step_as_the_header_does(
    lenet: tuple[OfflineSession, CommandRegistry],
) -> None:
    _, registry = lenet
    assert registry.run("lt").plain().startswith("60 tensors of step 1 (iteration 0)")
    title = registry.run("pt fc3.bias@1").plain().splitlines()[0]
    assert "@ step 2 (iteration 1)" in title and "iteration 1:" not in title


def test_a_scalar_without_a_declared_shape_gets_its_files(
    lenet: tuple[OfflineSession, CommandRegistry],
) -> None:
    """The loss is declared without a shape: `lt` said `?` for its size and shape."""
    session, registry = lenet
    row = next(line for line in registry.run("lt").plain().splitlines() if LOSS in line)
    # (the size's unit is another change's business: `4 B` or `4B`)
    assert "?" not in row and re.search(r"\s4 ?B\s", row) and "[]" in row
    entry = next(e for e in session.tensor_entries(0) if LOSS in e.node)
    assert entry.shape == () and entry.nbytes == 4 and entry.dtype == "float32"


def test_pt_title_names_the_whole_shape_and_the_slice(
    lenet: tuple[OfflineSession, CommandRegistry],
) -> None:
    _, registry = lenet
    title = registry.run(f"pt {CONV}:0").plain().splitlines()[0]
    assert "shape [4,6,28,28]; slice [0, 0, :, :] → shape [28,28]" in title
    title = registry.run(f"pt {CONV}:0[1]").plain().splitlines()[0]
    assert "shape [4,6,28,28]; slice [1, :, :, :] → shape [6,28,28]" in title
    whole = registry.run("pt fc3.bias").plain().splitlines()[0]
    assert whole.endswith("shape [10]")  # the whole tensor: no slice to name


def test_kernels_with_several_outputs_list_their_files_shapes(tmp_path: Path) -> None:
    """A BatchNorm whose graph declares no output types (as real dumps' tuple outputs
    often do): the listing takes each slot's shape and dtype from its `.npy` header."""
    with DumpWriter(tmp_path / "dump") as writer:
        writer.add_graph(
            0,
            [NodeDef("Default/BatchNorm-op1", "BatchNorm", inputs=["x"], dtype=None)],
            [ParamDef("x", np.float32, (2, 3))],
        )
        writer.write_iteration(
            0,
            0,
            {
                ("Default/BatchNorm-op1", "output", 0): np.zeros((2, 3), np.float32),
                ("Default/BatchNorm-op1", "output", 1): np.zeros((3,), np.float32),
                ("Default/BatchNorm-op1", "output", 2): np.zeros((3,), np.float16),
                ("x", "output", 0): np.zeros((2, 3), np.float32),
            },
        )
    session = OfflineSession(tmp_path / "dump")
    session.start()
    try:
        entries = {
            e.slot: e for e in session.tensor_entries(0) if e.node == "Default/BatchNorm-op1"
        }
        assert {s: (e.shape, e.dtype, e.nbytes) for s, e in entries.items()} == {
            0: ((2, 3), "float32", 24),
            1: ((3,), "float32", 12),
            2: ((3,), "float16", 6),
        }
        lines = command_registry(session, width=120).run("lt").plain().splitlines()
        assert not [line for line in lines if "BatchNorm" in line and "?" in line]
    finally:
        session.close()


def test_ni_lists_inputs_and_consumers_with_links(
    lenet: tuple[OfflineSession, CommandRegistry],
) -> None:
    """tfdbg's node_info lists the neighbours; `ni` said only "1 input node(s), 3 …"."""
    _, registry = lenet
    out = registry.run("ni ReLU-op78")
    text = out.plain()
    assert "node(s)" not in text and "  1 input:" in text and "  3 consumers:" in text
    assert "<- Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/Conv2D-op77" in text
    linked = {span.link.node for line in out.lines for span in line if span.link is not None}
    assert any(name.endswith("MaxPool-op79") for name in linked)
    assert any(name.endswith("Conv2D-op77") for name in linked)


def test_fused_stacks_are_separate_candidates(
    lenet: tuple[OfflineSession, CommandRegistry],
) -> None:
    from tuidebug.core.graph import stack_sections

    session, registry = lenet
    text = registry.run("ni MatMulBiasAddReluFusion-op84 -t").plain()
    lines = text.splitlines()
    assert "  Corresponding code candidate:" not in lines  # a header is no frame
    titles = [line.strip() for line in lines if "candidate" in line]
    assert titles == [f"Corresponding code candidate {n} of 3:" for n in (1, 2, 3)]
    graph = next(iter(session.graphs.values()))
    node = next(n for n in graph if n.name.endswith("MatMulBiasAddReluFusion-op84"))
    sections = stack_sections(node.stack)
    assert len(sections) == 3 and all(f.file_path for s in sections for f in s.frames)


def _loop_dump(root: Path) -> Path:
    """A control-flow loop: one iteration folder holds three trips of two tensors."""
    with DumpWriter(root) as writer:
        writer.add_graph(
            0,
            [
                NodeDef("Default/while/Add-op1", "Add", inputs=["x"], shape=(2,)),
                NodeDef("Default/while/Mul-op2", "Mul", inputs=["Default/while/Add-op1"]),
            ],
            [ParamDef("x", np.float32, (2,))],
        )
        for trip in (1, 2, 3):
            writer.write_iteration(
                0,
                0,
                {
                    ("Default/while/Add-op1", "output", 0): np.full(2, trip, np.float32),
                    ("Default/while/Mul-op2", "output", 0): np.float32(trip * 10),
                },
            )
    return root


def test_loop_trips_are_one_sentence_and_pt_prints_each(tmp_path: Path) -> None:
    from tuidebug.core.session import Notice

    session = OfflineSession(_loop_dump(tmp_path / "dump"))
    said: list[str] = []
    session.subscribe(lambda e: said.append(e.message) if isinstance(e, Notice) else None)
    session.start()
    try:
        registry = command_registry(session, width=120)
        out = registry.run("pt Add-op1:0@0")
        assert "trip 3 of 3, the last; #N picks another" in out.plain().splitlines()[0]
        assert "[3., 3.]" in out.plain()
        first = registry.run("pt Add-op1:0@0#1").plain()
        assert "@ step 1 (iteration 0), trip 1 of 3:" in first and "[1., 1.]" in first
        assert "[2., 2.]" in registry.run("pt Add-op1:0@0#2").plain()
        assert "20." in registry.run("pt Mul-op2@0#2").plain()
        error = registry.run("pt Add-op1:0@0#4").error
        assert (
            error
            == "Default/while/Add-op1:0 has 3 trips at step 1 (iteration 0), not #4 (#1 is the first)."
        )
        trips = [m for m in said if "several files" in m or "same tensor" in m]
        assert len(trips) == 1, said  # one sentence, not one per file
        assert trips[0].startswith("2 tensors of graph") and "up to 3 each" in trips[0]
        assert "#TRIP" in trips[0]
    finally:
        session.close()


def test_trip_grammar_leaves_hashes_in_node_names_alone() -> None:
    from tuidebug.commands import parse_tensor_name

    name = parse_tensor_name("Add-op1:0@3#2[0]")
    assert (name.node, name.slot, name.iteration, name.trip, name.slice) == (
        "Add-op1",
        0,
        3,
        2,
        "[0]",
    )
    named = parse_tensor_name("MatMul-op0#1@3")  # a duplicate name's `#N` is its own
    assert (named.node, named.iteration, named.trip) == ("MatMul-op0#1", 3, None)
