"""`.bin` files as first-class tensors (issue 16 item 3) in an Ascend O2 asynchronous
layout: discovery, values, `tuidebug check`, the API, bad files and the TUI, on the
constructed fixture of tests/constructed/async_bin.py."""

from __future__ import annotations

import filecmp
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.cli.support import check, sentences
from tests.constructed import async_bin
from tests.constructed.async_dump import CONV, RELU
from tests.tui.support import settled, tensor_shown, wait_for_notice, wait_for_screen, wait_until
from tuidebug._proto import dump_data_pb2 as pb
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.files import bin as bin_dump
from tuidebug.offline.files import bin_tensors as bin_files
from tuidebug.offline.files.bin_tensors import BinTensorFile

DATA = Path(__file__).parent.parent / "data" / "constructed" / "async_bin"
GRAPH = "kernel_graph_1"
CONV_NODE = "Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/Conv2D-op5"
RELU_NODE = "Default/network-WithLossCell/_backbone-LeNet5/relu-ReLU/ReLU-op6"
TRANS_NODE = "Default/TransData-op12"


def _same_tree(a: Path, b: Path) -> None:
    cmp = filecmp.dircmp(a, b)
    assert not cmp.left_only and not cmp.right_only, (a, b)
    _match, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    assert not mismatch and not errors, (a, mismatch, errors)
    for sub in cmp.common_dirs:
        _same_tree(a / sub, b / sub)


def _node_of(dump: OfflineDump, op_name: str) -> str:
    """The graph node whose files are named `op_name` (the graph is built from them)."""
    return next(n.name for n in dump.graph(0, GRAPH) if n.dump_name == op_name)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return async_bin.write(tmp_path)


def test_committed_fixture_is_what_the_writer_writes(copy: Path) -> None:
    _same_tree(copy, DATA)


def test_discovery_lists_every_input_and_output_reading_each_header_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[str] = []
    real = bin_files.read_bin_header

    def counted(path: str, **limits: int) -> object:
        reads.append(path)
        return real(path, **limits)

    monkeypatch.setattr(bin_files, "read_bin_header", counted)
    dump = OfflineDump(DATA)
    layout = dump.rank_layout(0)
    for it in (0, 1):
        files = layout.tensor_files(1, it)
        assert all(isinstance(f, BinTensorFile) for f in files)
        got = sorted((f.op_type, f.io, f.slot) for f in files)
        assert got == [
            ("Conv2D", "input", 0),
            ("Conv2D", "input", 1),
            ("Conv2D", "output", 0),
            ("MatMul", "input", 0),  # the number 1700000002, named by mapping.csv
            ("MatMul", "output", 0),
            ("ReLU", "input", 0),
            ("ReLU", "output", 0),
            ("TransData", "input", 0),
            ("TransData", "output", 0),
        ]
        formats = {(f.op_type, f.io, f.slot): f.format for f in files}
        assert formats[("Conv2D", "input", 1)] == "FRACTAL_Z"
        assert formats[("TransData", "output", 0)] == "C1HWNCoC0"
    # graph, index, every value: still one header read per file (4 a folder)
    graph = dump.graph(0, GRAPH)
    for node in graph:
        for it in (0, 1):
            dump.value(0, GRAPH, node.name, 0, it)
            dump.value(0, GRAPH, node.name, 0, it, is_output=False)
    assert len(reads) == 8 and len(set(reads)) == 8
    assert not any("cannot read" in p or "msaccucmp" in p for p in dump.problems)


def test_values_are_the_writers_originals() -> None:
    dump = OfflineDump(DATA)
    expected = async_bin.expected()
    seen = 0
    for it in (0, 1):
        for f in dump.rank_layout(0).tensor_files(1, it):
            node = _node_of(dump, f.op_name)
            got = dump.value(0, GRAPH, node, f.slot, it, f.io == "output")
            want = expected[(it, f.name, f.io, f.slot)]
            assert got is not None and got.dtype == want.dtype, (f.name, f.io, f.slot)
            assert np.array_equal(got, want, equal_nan=True), (f.name, f.io, f.slot)
            seen += 1
    assert seen == 18
    # NC1HWC0 and FRACTAL_Z came back in their host layout, the graph declares it
    conv = dump.graph(0, GRAPH).node(CONV_NODE)
    assert conv.outputs[0].shape == (1, 5, 3, 3)
    weight = dump.value(0, GRAPH, CONV_NODE, 1, 0, is_output=False)
    assert weight is not None and weight.shape == (5, 3, 2, 2)


def test_an_unconverted_format_is_shown_raw_and_said() -> None:
    dump = OfflineDump(DATA)
    raw = dump.value(0, GRAPH, TRANS_NODE, 0, 0)
    assert raw is not None and raw.shape == (1, 1, 1, 2, 1, 16)  # its device shape
    said = [p for p in dump.problems if "C1HWNCoC0" in p]
    assert len(said) == 1 and "raw" in said[0] and "TransData" in said[0]
    # the graph declares no host shape for it (none is known)
    assert dump.graph(0, GRAPH).node(TRANS_NODE).outputs[0].shape is None


def test_check_finds_the_nan(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = check(capsys, str(DATA), "--watch", "TO")
    assert code == 1
    rows = [line.split() for line in out.splitlines() if "TO" in line.split()]
    assert [(r[0], r[-1]) for r in rows] == [("1", RELU_NODE)]
    lines = sentences(err, "check")
    # checked raw, as MindSpore's debugger checked what CANN could not convert: said once
    # per file
    assert sum("C1HWNCoC0" in line and "raw" in line for line in lines) == 2


def test_api_agrees(caplog: pytest.LogCaptureFixture) -> None:
    from tuidebug.api import DumpAnalyzer, TensorOverflowCondition, Watchpoint

    analyzer = DumpAnalyzer(str(DATA))
    tensors = analyzer.select_tensors(query_string="", use_regex=False, iterations=[0, 1])
    with caplog.at_level(logging.WARNING, logger="tuidebug.api"):
        hits = analyzer.check_watchpoints([Watchpoint(tensors, TensorOverflowCondition())])
    assert [(h.tensor.iteration, h.tensor.node.name) for h in hits] == [(1, RELU_NODE)]
    relu = next(t for t in tensors if t.node.name == RELU_NODE and t.iteration == 1 and t.slot == 0)
    value = relu.value()
    assert value is not None and value.shape == (1, 5, 3, 3)
    assert np.isnan(value[async_bin.NAN_AT])


def test_a_truncated_bin_is_one_sentence_and_the_rest_still_check(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    it0, it1 = async_bin.folder(copy, 0), async_bin.folder(copy, 1)
    # iteration 1: Conv2D's data cut short (its header still reads)
    conv = next(it1.glob(f"Conv2D.{CONV}.*"))
    conv.write_bytes(conv.read_bytes()[:-100])
    # iteration 0: ReLU cut inside its header (its tensors cannot even be listed)
    relu = next(it0.glob(f"ReLU.{RELU}.*"))
    relu.write_bytes(relu.read_bytes()[:20])
    code, out, err = check(capsys, str(copy), "--watch", "TO")
    assert code == 1  # the NaN of iteration 1 is still found
    rows = [line.split() for line in out.splitlines() if "TO" in line.split()]
    assert [(r[0], r[-1]) for r in rows] == [("1", RELU_NODE)]
    lines = sentences(err, "check")
    about_conv = [line for line in lines if conv.name in line]
    about_relu = [line for line in lines if relu.name in line]
    assert len(about_conv) == 1 and "truncated" in about_conv[0]
    assert len(about_relu) == 1 and "header length" in about_relu[0]
    # the others read as before
    dump = OfflineDump(copy)
    assert dump.value(0, GRAPH, RELU_NODE, 0, 0) is None  # not listed: no value, no crash
    assert dump.value(0, GRAPH, CONV_NODE, 0, 0) is not None
    assert dump.value(0, GRAPH, RELU_NODE, 0, 1) is not None


def _rewrite_header(path: Path, change: Callable[[pb.DumpData], None]) -> None:
    """`path` with its header changed by `change`, the data segment kept (a change must
    keep every buffer's size, or empty the ones it drops from the end)."""
    raw = path.read_bytes()
    length = int.from_bytes(raw[:8], "little")
    message = pb.DumpData.FromString(raw[8 : 8 + length])
    change(message)
    header = message.SerializeToString()
    path.write_bytes(len(header).to_bytes(8, "little") + header + raw[8 + length :])


def test_hostile_headers_are_one_sentence_each_and_the_rest_still_check(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    it0, it1 = async_bin.folder(copy, 0), async_bin.folder(copy, 1)

    def huge_shape(message: pb.DumpData) -> None:
        # the last buffer of the file (its bytes stay, unread): 0 bytes, uint64 dims
        out = message.output[-1]
        out.size = 0
        del out.shape.dim[:]
        out.shape.dim.extend([0, 1 << 63])
        out.format = pb.FORMAT_ND  # type: ignore[assignment]

    def many_slots(message: pb.DumpData) -> None:
        for _ in range(bin_dump.MAX_SLOTS):
            message.output.add()  # 2 bytes each, 0 bytes of data

    conv = next(it1.glob(f"Conv2D.{CONV}.*"))
    _rewrite_header(conv, huge_shape)
    relu = next(it0.glob(f"ReLU.{RELU}.*"))
    _rewrite_header(relu, many_slots)
    code, out, err = check(capsys, str(copy), "--watch", "TO")
    assert code == 1  # the NaN of iteration 1 is still found
    rows = [line.split() for line in out.splitlines() if "TO" in line.split()]
    assert [(r[0], r[-1]) for r in rows] == [("1", RELU_NODE)]
    lines = sentences(err, "check")
    about_conv = [line for line in lines if conv.name in line and "no array" in line]
    about_relu = [line for line in lines if relu.name in line]
    assert len(about_conv) == 1, lines
    assert len(about_relu) == 1 and "inputs and outputs" in about_relu[0]


async def test_tui_opens_a_bin_tensor() -> None:
    from tuidebug.offline.session import OfflineSession
    from tuidebug.tui.app import DebuggerApp
    from tuidebug.tui.kit.dialogs import ConfirmScreen
    from tuidebug.tui.messages import TensorRequested
    from tuidebug.tui.tensor.view import TensorView

    app = DebuggerApp(OfflineSession(DATA), start_session=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("n")  # no recommended watchpoints
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="no offer")
        await settled(pilot)
        for _ in range(2):  # step 2: iteration 1
            await pilot.press("n")
            await settled(pilot)
        assert app.session.metadata.step == 2
        view = app.query_one(TensorView)
        app.post_message(TensorRequested(GRAPH, RELU_NODE, 0))
        await wait_until(pilot, lambda: view.title.startswith("ReLU-op6"), what="ReLU shown")
        await tensor_shown(pilot, view)
        shown = view._displayed()
        assert shown is not None and shown.shape == (1, 5, 3, 3)
        assert np.isnan(shown[async_bin.NAN_AT])
        # a tensor left in its device format: shown raw, and a notice names the format
        app.post_message(TensorRequested(GRAPH, TRANS_NODE, 0))
        await wait_until(pilot, lambda: view.title.startswith("TransData"), what="TransData")
        await tensor_shown(pilot, view)
        await wait_for_notice(pilot, "C1HWNCoC0")
        raw = view._displayed()
        assert raw is not None and raw.shape == (1, 1, 1, 2, 1, 16)


def test_a_fixture_copy_without_mapping_csv_skips_the_numbered_file(copy: Path) -> None:
    """Without its mapping.csv row, the numbered file names nothing: it is said, not read."""
    folder = async_bin.folder(copy, 0)
    (folder / "mapping.csv").unlink()
    dump = OfflineDump(copy)
    ops = {f.op_type for f in dump.rank_layout(0).tensor_files(1, 0)}
    assert "MatMul" not in ops
    assert any(async_bin.NUMBERED in p for p in dump.problems)
    shutil.rmtree(copy)
