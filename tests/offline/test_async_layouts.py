"""Ascend asynchronous layouts and overflow dumps (issue 16 items 2 and 4), on the
constructed fixtures of tests/constructed/async_dump.py and overflow_dump.py."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.constructed import async_dump, overflow_dump
from tuidebug.offline.dump import OfflineDump
from tuidebug.offline.layout.name_graph import decode_scope_name

DATA = Path(__file__).parent.parent / "data" / "constructed"
LENET = Path("/work/shared/fixtures/mindspore_lenet_dump/ms2_0_0")
CONV_NODE = "Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/Conv2D-op5"
RELU_NODE = "Default/network-WithLossCell/_backbone-LeNet5/relu-ReLU/ReLU-op6"


@pytest.fixture
def written(tmp_path: Path) -> Path:
    async_dump.write(tmp_path)
    overflow_dump.write(tmp_path)
    return tmp_path


def _same_tree(a: Path, b: Path) -> None:
    cmp = filecmp.dircmp(a, b, ignore=["README.md"])
    assert not cmp.left_only and not cmp.right_only and not cmp.diff_files, (a, b)
    for sub in cmp.common_dirs:
        _same_tree(a / sub, b / sub)


@pytest.mark.parametrize("kind", ["async_o2", "async_acl", "overflow"])
def test_committed_fixture_is_what_the_writer_writes(written: Path, kind: str) -> None:
    _same_tree(written / kind, DATA / kind)


def test_o2_layout_maps_devices_to_ranks_and_iteration_folders() -> None:
    dump = OfflineDump(DATA / "async_o2")
    assert dump.ranks == [0, 1]
    assert dump.iterations() == [0, 1]
    notice = dump.problems[0]
    assert notice.startswith("Read as an Ascend asynchronous dump (GE O2 layout)")
    assert "device 0 as rank 0, device 1 as rank 1" in notice
    assert "iteration folders 0, 1" in notice
    graph = dump.graph(0, "kernel_graph_1")
    # the scope tree comes from the `_`-joined names; the type from the file name
    conv = graph.node(CONV_NODE)
    assert conv.op_type == "Conv2D" and conv.scope.endswith("conv1-Conv2d")
    assert graph.node("conv1.weight").is_parameter
    # mapping.csv names the numbered file; 65535 ids are still read as a tensor
    long = next(n for n in graph.operators if n.op_type == "MatMul")
    value = dump.value(0, "kernel_graph_1", long.name, 0, 0)
    assert value is not None and value.shape == (2, 2)
    cast = dump.value(0, "kernel_graph_1", "Default/Cast-op11", 0, 1)
    assert cast is not None and cast.dtype == np.float16
    assert dump.value(0, "kernel_graph_1", CONV_NODE, 0, 1).tolist() == [[0, 2], [4, 6]]


def test_acl_layout_steps_and_aclop_aclnn_names() -> None:
    dump = OfflineDump(DATA / "async_acl")
    assert dump.ranks == [0] and dump.iterations() == [0, 1]
    assert "step folders 0, 1" in dump.problems[0]
    ops = dump.graph(0, "kernel_graph_1")
    # aclop `Add.<name>` and aclnn `<name>.Mul` both give (type, name) the right way round
    assert ops.node("Default/network_Add-op1").op_type == "Add"
    assert ops.node("Default/network_Mul-op2").op_type == "Mul"
    assert dump.value(0, "kernel_graph_1", "Default/network_Mul-op2", 0, 1).tolist() == [4, 4, 4]
    comm = dump.graph(0, "kernel_graph_0")
    assert comm.node("Default/AllReduce-op3").op_type == "AllReduce"


def test_scope_decoding() -> None:
    assert (
        decode_scope_name("Default_network-WithLossCell__backbone-AlexNet_conv3-Conv2d_Conv2D-op12")
        == "Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op12"
    )
    assert decode_scope_name("Default_fc_1-Dense_MatMul-op3") == "Default/fc_1-Dense/MatMul-op3"
    assert decode_scope_name("Conv2D-op12") == "Conv2D-op12"


def _lenet_async_copy(root: Path) -> list[str]:
    """A few of the LeNet sync fixture's tensors under the O2 layout, named as O2 names
    them (full scope, `/` → `_`)."""
    src = OfflineDump(LENET)
    graph = src.graph(0, "kernel_graph_0")
    folder = root / "20240101120000" / "0" / "LeNet" / "3" / "0"
    folder.mkdir(parents=True)
    names = []
    for node in graph.operators:
        f = src.tensor_file(0, graph.name, node.name, 0, 0)
        if f is None or len(names) == 3:
            continue
        encoded = node.name.replace("/", "_")
        (folder / f"{node.op_type}.{encoded}.1.2.{f.timestamp}.output.0.NCHW.npy").write_bytes(
            Path(f.path).read_bytes()
        )
        names.append(node.name)
    return names


@pytest.mark.skipif(not LENET.is_dir(), reason="the shared LeNet fixture is not on this machine")
def test_graph_from_a_sync_dump_matches_operators_by_name(tmp_path: Path) -> None:
    names = _lenet_async_copy(tmp_path)
    dump = OfflineDump(tmp_path, graph_dir=LENET)
    graph = dump.graph(0, "kernel_graph_0")
    assert len(graph) == 93  # the real graph, edges and all
    sync = OfflineDump(LENET)
    for name in names:
        got = dump.value(0, "kernel_graph_0", name, 0, 0)
        want = sync.value(0, "kernel_graph_0", name, 0, 0)
        assert got is not None and want is not None and np.array_equal(got, want)
    # the CLI takes it too
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuidebug",
            "check",
            str(tmp_path),
            "--graph",
            str(LENET),
            "--watch",
            "TO",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert out.returncode == 0, out.stderr


def test_overflow_hits_via_check_and_api() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tuidebug", "check", str(DATA / "overflow"), "--watch", "OO"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    rows = [line.split() for line in out.stdout.splitlines() if "OO" in line.split()]
    assert [(r[0], r[-1]) for r in rows] == [("0", CONV_NODE), ("1", RELU_NODE)]
    assert "65535" in out.stderr

    from tuidebug.api import DumpAnalyzer, OperatorOverflowCondition, Watchpoint

    analyzer = DumpAnalyzer(str(DATA / "overflow"))
    tensors = analyzer.select_tensors(query_string="", use_regex=False, iterations=[0, 1])
    wp = Watchpoint(tensors, OperatorOverflowCondition())
    hits = sorted(
        (h.tensor.iteration, h.tensor.node.name) for h in analyzer.check_watchpoints([wp])
    )
    assert hits == [(0, CONV_NODE), (1, RELU_NODE)]


def test_fifo_in_an_iteration_folder_is_refused_not_opened(tmp_path: Path) -> None:
    async_dump.write(tmp_path)
    folder = tmp_path / "async_o2" / "20240101120000" / "0" / "kernel_graph1" / "1" / "0"
    os.mkfifo(folder / "Add.Default_Add-op99.1.1.1.output.0.ND.npy")
    dump = OfflineDump(tmp_path / "async_o2")
    dump.graph(0, "kernel_graph_1")
    assert any("Add-op99" in p for p in dump.problems)


def test_bad_mapping_row_is_skipped(tmp_path: Path) -> None:
    async_dump.write(tmp_path)
    folder = tmp_path / "async_o2" / "20240101120000" / "0" / "kernel_graph1" / "1" / "0"
    (folder / "mapping.csv").write_text("1700000001\n,,\n\x00garbage", encoding="utf-8")
    dump = OfflineDump(tmp_path / "async_o2")
    graph = dump.graph(0, "kernel_graph_1")  # iteration 0's numbered file names nothing now
    matmul = next(n for n in graph.operators if n.op_type == "MatMul")
    assert dump.value(0, graph.name, matmul.name, 0, 0) is None
    assert any("1700000001" in p for p in dump.problems)


def test_giant_overflow_record_is_never_read(tmp_path: Path) -> None:
    out = overflow_dump.write(tmp_path)
    record = next(out.rglob("Opdebug.Node_OpDebug.2.7.*"))
    with record.open("r+b") as fh:  # sparse: 64 GiB on paper, nothing on disk
        fh.truncate(64 << 30)
    dump = OfflineDump(out)
    assert dump.overflow_nodes(0, "kernel_graph_1", 0) == {CONV_NODE}


def test_not_a_dump_still_says_so(tmp_path: Path) -> None:
    from tuidebug.offline.layout.errors import DumpError

    (tmp_path / "x").mkdir()
    with pytest.raises(DumpError, match="rank_<N>"):
        OfflineDump(tmp_path)


@pytest.mark.parametrize("name", ["async_o2", "async_acl", "async_bin", "overflow"])
def test_check_recommended_on_every_async_fixture(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recommended set is planned per rank: the ranks of an asynchronous dump hold
    different graphs under one name (rank 1 of async_o2 has no conv1.weight)."""
    from tuidebug.cli import main

    code = main(["check", str(DATA / name), "--recommended", "--watch", "TO"])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    assert "Traceback" not in err


def test_device_folder_subfolders_are_layout_not_garbage(tmp_path: Path) -> None:
    """The ACL device folder holds its `kernel_graph0/` folders beside its own tensors: no
    sentence for them, while a stray file, even one named like such a folder, still gets one."""
    import shutil

    root = tmp_path / "async_acl"
    shutil.copytree(DATA / "async_acl", root)
    device = root / "0" / "20240101120000" / "0"
    (device / "kernel_graph0_notes.txt").write_text("not a tensor", encoding="utf-8")
    dump = OfflineDump(root)
    dump.graph(0, "kernel_graph_1")
    named = [p for p in dump.problems if "kernel_graph0" in p]
    assert len(named) == 1 and "kernel_graph0_notes.txt" in named[0], dump.problems
