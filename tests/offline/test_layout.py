"""Dump discovery (offline/layout/sync_rank.py), the file-name grammar (offline/files/names.py), the
statistic.csv reader and the execution-order readers, on the real fixture dumps and on
damaged copies of them."""

from __future__ import annotations

import builtins
import io
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.dump_names import CONV1_2_10
from tests.offline.dump_copy import copy_dump
from tests.offline.subgraph_dump import add_graph_without_history
from tuidebug.offline.files.execution_order import read_execution_order, read_graph_history
from tuidebug.offline.files.names import (
    FileKind,
    classify_file_name,
    constant_data_name,
    encode_dump_name,
    parse_mapping_csv,
    parse_tensor_file_name,
)
from tuidebug.offline.files.statistic_csv import StatisticCsvError, read_statistic_csv
from tuidebug.offline.layout import sync_rank as layout_module
from tuidebug.offline.layout.errors import DumpError
from tuidebug.offline.layout.root import DumpLayout

TS = 1795310476258960
NAME_2_10 = (
    "Conv2D.Default_network-WithLossCell__backbone-LeNet5_conv1-Conv2d_Conv2D-op0"
    f".0.0.{TS}.output.0.DefaultFormat.Float32.npy"
)
NAME_2_0 = f"Conv2D.Conv2D-op77.0.0.{TS}.input.1.DefaultFormat.npy"


# ====================================================================== file-name grammar
def test_parse_2_10_name() -> None:
    f = parse_tensor_file_name(NAME_2_10, "/d")
    assert f is not None
    assert f.path == Path("/d", NAME_2_10)
    assert f.op_type == "Conv2D"
    assert f.op_name == "Default_network-WithLossCell__backbone-LeNet5_conv1-Conv2d_Conv2D-op0"
    assert (f.task_id, f.stream_id, f.timestamp) == ("0", "0", TS)
    assert (f.io, f.slot, f.format, f.dtype) == ("output", 0, "DefaultFormat", "Float32")
    assert f.is_output


def test_parse_2_0_name() -> None:
    f = parse_tensor_file_name(NAME_2_0)
    assert f is not None
    assert (f.op_type, f.op_name, f.io, f.slot, f.format, f.dtype) == (
        "Conv2D",
        "Conv2D-op77",
        "input",
        1,
        "DefaultFormat",
        None,
    )
    assert not f.is_output


@pytest.mark.parametrize(
    ("name", "op_name", "dtype"),
    [
        (
            f"Parameter.moments.fc1.weight.0.0.{TS}.output.0.DefaultFormat.npy",
            "moments.fc1.weight",
            None,
        ),
        (
            f"Parameter.fc1_weight.0.0.{TS}.output.0.DefaultFormat.Float32.npy",
            "fc1_weight",
            "Float32",
        ),
        (f"Parameter.data-3.0.0.{TS}.output.0.DefaultFormat.npy", "data-3", None),
        (f"Parameter.data-3.0.0.{TS}.output.0.DefaultFormat.Int64.npy", "data-3", "Int64"),
        (f"Parameter.cst12.0.0.{TS}.output.0.DefaultFormat.npy", "cst12", None),
        (f"MatMul.x.0.0.{TS}.input.3.DefaultFormat.Bool.npy", "x", "Bool"),
        (f"Cast.x.1.2.{TS}.output.0.NC1HWC0.BFloat16.npy", "x", "BFloat16"),
        # op names that themselves hold `input`/`output` and digits
        (f"Add.a.output.3.0.0.{TS}.input.1.NCHW.npy", "a.output.3", None),
        (f"Add.a.input.7.0.0.{TS}.output.2.NCHW.Int4.npy", "a.input.7", "Int4"),
    ],
)
def test_parse_names_from_the_right(name: str, op_name: str, dtype: str | None) -> None:
    f = parse_tensor_file_name(name)
    assert f is not None
    assert (f.op_name, f.dtype) == (op_name, dtype)


@pytest.mark.parametrize(
    "name",
    [
        "statistic.csv",
        "mapping.csv",
        "notes.npy",
        f"Conv2D.0.0.{TS}.output.0.DefaultFormat.npy",  # no op name
        f"Conv2D.x.0.0.{TS}.output.a.DefaultFormat.npy",  # slot not a number
        f"Conv2D.x.0.0.{TS}.outputs.0.DefaultFormat.npy",  # io neither input nor output
        "Conv2D.x.0.0.12ab.output.0.DefaultFormat.npy",  # timestamp not a number
        f"Conv2D.x.0.0.{TS}.output.0.DefaultFormat.npz",
        f".x.0.0.{TS}.output.0.DefaultFormat.npy",  # no op type
        f"Conv2D.x.0.0.{TS}.output.0..npy",  # no format
        f"Conv2D.x.0.0.{TS}.output.0.DefaultFormat..npy",  # empty dtype
        f"Conv2D.x.0.0.{TS}.output.².DefaultFormat.npy",  # a digit, but not 0-9
    ],
)
def test_not_tensor_names(name: str) -> None:
    assert parse_tensor_file_name(name) is None


_component = st.text(
    alphabet=st.characters(
        whitelist_categories=("Lu", "Ll", "Nd"), whitelist_characters="-_", max_codepoint=0x7F
    ),
    min_size=1,
    max_size=12,
)


@given(
    op_type=_component,
    op_name=st.lists(_component, min_size=1, max_size=5).map(".".join),
    task=st.integers(0, 99),
    stream=st.integers(0, 99),
    ts=st.integers(0, 10**17),
    io_name=st.sampled_from(["input", "output"]),
    slot=st.integers(0, 500),
    fmt=st.sampled_from(["DefaultFormat", "NCHW", "NC1HWC0", "FRACTAL_Z"]),
    dtype=st.one_of(st.none(), st.sampled_from(["Float32", "BFloat16", "Bool", "Int64"])),
)
def test_parse_round_trip(
    op_type: str,
    op_name: str,
    task: int,
    stream: int,
    ts: int,
    io_name: str,
    slot: int,
    fmt: str,
    dtype: str | None,
) -> None:
    name = f"{op_type}.{op_name}.{task}.{stream}.{ts}.{io_name}.{slot}.{fmt}"
    name += f".{dtype}.npy" if dtype else ".npy"
    f = parse_tensor_file_name(name)
    assert f is not None
    assert (f.op_type, f.op_name, f.task_id, f.stream_id, f.timestamp) == (
        op_type,
        op_name,
        str(task),
        str(stream),
        ts,
    )
    assert (f.io, f.slot, f.format, f.dtype) == (io_name, slot, fmt, dtype)


def test_classify_other_files() -> None:
    assert classify_file_name("statistic.csv") is FileKind.STATISTIC
    assert classify_file_name("mapping.csv") is FileKind.MAPPING
    assert classify_file_name("Opdebug.Node_OpDebug.1.2.1623") is FileKind.OVERFLOW
    assert classify_file_name("Conv2D.Default_net_Conv2D-op12.2.7.161243956333802") is (
        FileKind.ASYNC_BIN
    )
    assert classify_file_name("MatMul.Default_fc1_MatMul-op0.json") is FileKind.KERNEL_ARGS
    assert classify_file_name(NAME_2_0) is FileKind.TENSOR
    assert classify_file_name("core") is FileKind.UNKNOWN
    assert classify_file_name("junk.npy") is FileKind.UNKNOWN


def test_name_helpers() -> None:
    assert encode_dump_name("Default/fc1-Dense/MatMul-op0") == "Default_fc1-Dense_MatMul-op0"
    assert encode_dump_name("moments.fc1.weight") == "moments_fc1_weight"
    assert constant_data_name("Default--data-3") == "data-3"
    assert constant_data_name("Default_data-12") == "data-12"
    assert constant_data_name("cst1") is None
    assert parse_mapping_csv("123,Conv2D.x.0.0.1.output.0.ND.npy\nbad\n,x\n") == {
        "123": "Conv2D.x.0.0.1.output.0.ND.npy"
    }


@pytest.mark.parametrize(
    ("version", "count", "with_dtype"), [("ms2_10_0", 780, True), ("ms2_0_0", 629, False)]
)
def test_every_fixture_file_parses(
    fixtures_dir: Path, version: str, count: int, with_dtype: bool
) -> None:
    root = fixtures_dir / "mindspore_lenet_dump" / version
    names = [p for p in root.rglob("*.npy")]
    assert len(names) == count
    for p in names:
        f = parse_tensor_file_name(p.name, p.parent)
        assert f is not None, p.name
        assert f.path == p
        assert (f.dtype is not None) is with_dtype, p.name
        assert f.task_id == f.stream_id == "0"


# ====================================================================== the real dumps
def test_layout_of_2_10(dump_2_10: Path) -> None:
    dump = DumpLayout.open(dump_2_10)
    assert dump.rank_ids == [0]
    assert dump.problems == []
    assert dump.settings.net_name == "LeNet"
    assert dump.settings.ms_version == "2.10.0"
    assert dump.settings.device_target == "CPU"
    assert dump.settings.is_sync is True
    rank = dump.rank(0)
    assert rank.net_name == "LeNet"
    assert list(rank.graph_files) == [0]
    assert rank.graph_files[0].pb is not None and rank.graph_files[0].pb.name.endswith("_0.pb")
    assert rank.graph_files[0].ir is not None
    assert rank.dumped_iterations == {0: [0, 1, 2, 3]}
    assert rank.constants_dirs == {}
    assert rank.history == {0: [0, 1, 2, 3]}
    assert rank.step_count == dump.step_count == 4
    order = rank.execution_order(0)
    assert len(order) == 45
    assert order[0] == CONV1_2_10
    assert order[-1] == "Default/optimizer-Momentum/ApplyMomentum-op7"
    assert sum(len(rank.tensor_files(0, i)) for i in range(4)) == 780
    assert all(len(rank.tensor_files(0, i)) == 195 for i in range(4))
    assert dump.problems == []


def test_layout_of_2_0(dump_2_0: Path) -> None:
    dump = DumpLayout.open(dump_2_0)
    rank = dump.rank(0)
    assert dump.settings.ms_version == "2.0.0"
    assert rank.dumped_iterations == {0: [0, 1, 2, 3]}
    assert rank.constants_dirs[0].name == "constants"
    assert len(rank.constant_files(0)) == 9
    assert {f.op_name for f in rank.constant_files(0)} == {f"data-{n}" for n in range(1, 10)}
    assert sum(len(rank.tensor_files(0, i)) for i in range(4)) + 9 == 629
    order = rank.execution_order(0)
    assert len(order) == 37 and order[0].endswith("Conv2D-op77")
    assert rank.history == {0: [0, 1, 2, 3]}
    assert dump.problems == []


def test_history_and_previous_iteration(lenet_dump: Path) -> None:
    rank = DumpLayout.open(lenet_dump).rank(0)
    assert rank.has_history(0)
    assert not rank.has_history(7)
    assert rank.previous_iteration(0, 0) is None  # first run of the graph
    assert rank.previous_iteration(0, 1) == 0
    assert rank.previous_iteration(0, 3) == 2
    assert rank.previous_iteration(0, 9) is None  # not in the history
    assert rank.previous_iteration(7, 1) is None


def test_graph_runs(lenet_dump: Path) -> None:
    rank = DumpLayout.open(lenet_dump).rank(0)
    runs = rank.graph_runs({0: "kernel_graph_0"})
    assert [(r.iteration, r.has_data, r.from_history) for r in runs] == [
        (0, True, True),
        (1, True, True),
        (2, True, True),
        (3, True, True),
    ]
    assert {r.graph_name for r in runs} == {"kernel_graph_0"}
    assert rank.graph_runs()[0].graph_name == "kernel_graph_0"


def test_listing_is_cached_and_opens_no_npy(
    dump_2_10: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real_open, real_io_open, real_os_open = builtins.open, io.open, os.open

    def spy(real):  # type: ignore[no-untyped-def]
        def wrapper(file, *args, **kwargs):  # type: ignore[no-untyped-def]
            if str(file).endswith(".npy"):
                opened.append(str(file))
            return real(file, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(builtins, "open", spy(real_open))
    monkeypatch.setattr(io, "open", spy(real_io_open))
    monkeypatch.setattr(os, "open", spy(real_os_open))
    scans: list[str] = []
    real_scandir = os.scandir

    def counting_scandir(path):  # type: ignore[no-untyped-def]
        scans.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(layout_module.os, "scandir", counting_scandir)
    rank = DumpLayout.open(dump_2_10).rank(0)
    first = rank.tensor_files(0, 2)
    after_first = len(scans)
    assert rank.tensor_files(0, 2) is first
    assert len(scans) == after_first
    assert sum(1 for s in scans if s.endswith(os.path.join("LeNet", "0", "2"))) == 1
    assert opened == []


# ====================================================================== settings
def test_no_dump_metadata_is_fine(dump_2_10: Path, tmp_path: Path) -> None:
    """MindSpore 2.10 on CPU and 2.4+ on Ascend write no .dump_metadata."""
    root = copy_dump(dump_2_10, tmp_path / "d", keep=lambda rel: ".dump_metadata" not in rel)
    dump = DumpLayout.open(root)
    assert dump.settings.net_name is None and dump.settings.is_sync is None
    assert dump.settings.source is None
    rank = dump.rank(0)
    assert rank.net_name == "LeNet"
    assert rank.dumped_iterations == {0: [0, 1, 2, 3]}
    assert dump.problems == []


def test_broken_metadata_is_a_problem_not_a_failure(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "d")
    (root / "rank_0" / ".dump_metadata" / "data_dump.json").write_text("{not json")
    dump = DumpLayout.open(root)
    assert dump.settings.ms_version == "2.0.0"  # config.json still read
    assert dump.settings.net_name is None
    assert dump.rank(0).net_name == "LeNet"  # found by looking
    [problem] = dump.problems
    assert "rank_0/.dump_metadata/data_dump.json" in problem and "JSON" in problem


def test_async_settings(tmp_path: Path, dump_2_0: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "d")
    (root / "rank_0" / ".dump_metadata" / "data_dump.json").write_text(
        '{"common_dump_settings": {"net_name": "LeNet", "file_format": "npy", "input_output": 2}}'
    )
    (root / "rank_0" / ".dump_metadata" / "config.json").write_text('{"device_target": "Ascend"}')
    settings = DumpLayout.open(root).settings
    assert settings.is_sync is False
    assert settings.file_format == "npy" and settings.input_output == 2


# ====================================================================== bad input
def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DumpError, match=r"nowhere does not exist\.$"):
        DumpLayout.open(tmp_path / "nowhere")


def test_not_a_directory(tmp_path: Path) -> None:
    file = tmp_path / "dump.npy"
    file.write_bytes(b"x")
    with pytest.raises(DumpError, match=r"dump\.npy is not a folder"):
        DumpLayout.open(file)


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(DumpError, match="holds no rank_<N> folder") as err:
        DumpLayout.open(tmp_path)
    assert str(tmp_path) in str(err.value)


def test_rank_folder_given_instead_of_root(dump_2_10: Path) -> None:
    with pytest.raises(DumpError, match="give its parent folder"):
        DumpLayout.open(dump_2_10 / "rank_0")


def test_rank_folders_with_nothing_in_them(tmp_path: Path) -> None:
    (tmp_path / "rank_0").mkdir()
    (tmp_path / "rank_1").mkdir()
    with pytest.raises(DumpError, match=r"no graph file and no tensor data .*rank_0, rank_1"):
        DumpLayout.open(tmp_path)


def test_rank_without_graphs(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    shutil.copytree(root / "rank_0", root / "rank_1")
    shutil.rmtree(root / "rank_1" / "graphs")
    dump = DumpLayout.open(root)
    assert dump.rank_ids == [0, 1]
    assert dump.rank(0).problems == []
    [problem] = dump.rank(1).problems
    assert problem.startswith("rank_1/graphs is missing")
    assert dump.rank(1).graph_files == {}
    assert dump.rank(1).dumped_iterations == {0: [0, 1, 2, 3]}  # tensors stay usable
    assert len(dump.rank(1).tensor_files(0, 0)) == 195


def test_graphs_folder_without_pb(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d", keep=lambda rel: not rel.endswith(".pb"))
    rank = DumpLayout.open(root).rank(0)
    [problem] = rank.problems
    assert "rank_0/graphs holds no ms_output_trace_code_graph_<id>.pb" in problem
    assert rank.graph_files[0].pb is None and rank.graph_files[0].ir is not None


def test_garbage_in_iteration_folder(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "d")
    it = root / "rank_0" / "LeNet" / "0" / "1"
    (it / "notes.txt").write_text("hello")
    (it / "broken.npy").write_bytes(b"")
    (it / "sub").mkdir()
    (it / "statistic.csv").write_text("Op Type,Op Name,IO,Slot\n")  # expected, not garbage
    (it / "MatMul.MatMul-op89.json").write_text("{}")  # kernel args, expected
    (root / "rank_0" / "LeNet" / "0" / "latest").mkdir()  # not an iteration
    (root / "rank_0" / "LeNet" / "README").write_text("x")  # not a graph-id folder
    dump = DumpLayout.open(root)
    rank = dump.rank(0)
    assert rank.dumped_iterations == {0: [0, 1, 2, 3]}
    assert len(rank.tensor_files(0, 1)) == 155
    problems = dump.problems
    assert sorted(problems) == sorted(
        [
            "rank_0/LeNet/0/latest is not an iteration folder; it was skipped.",
            "rank_0/LeNet/README is not a graph-id folder; it was skipped.",
            "rank_0/LeNet/0/1/broken.npy is not a MindSpore tensor file name; it was skipped.",
            "rank_0/LeNet/0/1/notes.txt is not a MindSpore tensor file name; it was skipped.",
            "rank_0/LeNet/0/1/sub is a folder, where MindSpore writes only files; it was skipped.",
        ]
    )


def test_many_garbage_files_are_summed_up(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "d")
    it = root / "rank_0" / "LeNet" / "0" / "0"
    for i in range(30):
        (it / f"junk{i:02}").touch()
    rank = DumpLayout.open(root).rank(0)
    assert len(rank.tensor_files(0, 0)) == 155
    assert len(rank.problems) == 21
    assert rank.problems[-1] == (
        "rank_0/LeNet/0/0: 10 more files that are not MindSpore tensor file names were skipped."
    )


def test_name_not_utf8(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    folder = os.fsencode(root / "rank_0" / "LeNet" / "0" / "2")
    fd = os.open(os.path.join(folder, b"\xff\xfe.npy"), os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    os.mkdir(os.path.join(os.fsencode(root), b"rank_\xff"))
    dump = DumpLayout.open(root)
    rank = dump.rank(0)
    assert len(rank.tensor_files(0, 2)) == 195
    problems = dump.problems
    assert len(problems) == 2
    assert "rank_\\xff: the name is not valid UTF-8" in problems[0]
    assert problems[1] == (
        "rank_0/LeNet/0/2/\\xff\\xfe.npy: the name is not valid UTF-8, so the file was skipped."
    )
    for p in problems:
        p.encode("utf-8")  # printable as is


def test_symlink_outside_the_root(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / f"Parameter.secret.0.0.{TS}.output.0.DefaultFormat.Float32.npy"
    secret.touch()
    it = root / "rank_0" / "LeNet" / "0" / "0"
    (it / secret.name).symlink_to(secret)
    (root / "rank_0" / "LeNet" / "0" / "7").symlink_to(outside, target_is_directory=True)
    # a link that stays inside the dump is followed
    inside = root / "rank_0" / "LeNet" / "0" / "1" / NAME_2_10
    inside.touch()
    (it / ("Conv2D.x.0.0.5.output.0.DefaultFormat.Float32.npy")).symlink_to(inside)
    dump = DumpLayout.open(root)
    rank = dump.rank(0)
    assert rank.dumped_iterations == {0: [0, 1, 2, 3]}
    names = {f.op_name for f in rank.tensor_files(0, 0)}
    assert "secret" not in names and "x" in names
    problems = dump.problems
    assert len(problems) == 2
    assert any(
        p.startswith("rank_0/LeNet/0/7 is a symbolic link to ") and "outside the dump folder" in p
        for p in problems
    )
    assert any(p.startswith(f"rank_0/LeNet/0/0/{secret.name} is a symbolic link") for p in problems)


def test_symlinked_rank_outside_the_root(dump_2_10: Path, tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    (root / "rank_0").symlink_to(dump_2_10 / "rank_0", target_is_directory=True)
    with pytest.raises(DumpError, match="holds no rank_<N> folder") as err:
        DumpLayout.open(root)
    assert "rank_0 is a symbolic link to " in str(err.value)  # the reason it has no rank


def test_not_a_dump_names_no_unrelated_link(tmp_path: Path) -> None:
    # A project folder given by mistake: links deep inside it (a virtualenv's, a dangling
    # one) have nothing to do with why it is not a dump, so the sentence does not name them.
    root = tmp_path / "project"
    (root / "src" / "venv" / "lib").mkdir(parents=True)
    (root / "src" / "venv" / "lib" / "python").symlink_to("/usr/lib")
    (root / "src" / "gone").symlink_to(tmp_path / "nothing-here")
    with pytest.raises(DumpError) as err:
        DumpLayout.open(root)
    assert str(err.value) == (
        f"{root} holds no rank_<N> folder, so it is not a MindSpore dump folder."
    )


def test_dump_root_given_through_a_symlink(dump_2_10: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(dump_2_10, target_is_directory=True)
    dump = DumpLayout.open(link)
    assert dump.problems == [] and dump.rank(0).dumped_iterations == {0: [0, 1, 2, 3]}


def test_unreadable_iteration_folder(
    dump_2_10: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    blocked = os.path.realpath(root / "rank_0" / "LeNet" / "0" / "3")
    real_scandir = os.scandir

    def scandir(path):  # type: ignore[no-untyped-def]
        # chmod 0 would not stop a test run as root, so the refusal is simulated
        if os.fspath(path) == blocked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(layout_module.os, "scandir", scandir)
    rank = DumpLayout.open(root).rank(0)
    assert rank.dumped_iterations == {0: [0, 1, 2, 3]}
    assert rank.tensor_files(0, 3) == []
    assert len(rank.tensor_files(0, 2)) == 195
    assert rank.problems == ["cannot read the folder rank_0/LeNet/0/3: permission denied."]


def test_missing_history_file(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(
        dump_2_0, tmp_path / "d", keep=lambda rel: "ms_global_execution_order" not in rel
    )
    rank = DumpLayout.open(root).rank(0)
    assert rank.problems == [
        "rank_0/execution_order/ms_global_execution_order_graph_0.csv is missing, so iterations "
        "of graph 0 have no previous run for change conditions."
    ]
    assert not rank.has_history(0)
    assert rank.previous_iteration(0, 2) is None
    assert rank.step_count == 4  # from the dumped iterations
    runs = rank.graph_runs()
    assert [(r.iteration, r.has_data, r.from_history) for r in runs] == [
        (i, True, False) for i in range(4)
    ]
    assert rank.execution_order(0)  # the rest stays usable


def test_graph_without_history_is_listed_from_its_dumped_folders(
    dump_2_0: Path, tmp_path: Path
) -> None:
    """A control-flow net: the root graph 0 has a history, sub-graph 1 only iteration
    folders. Its runs sort in with the root graph's, by step then graph id."""
    root = copy_dump(dump_2_0, tmp_path / "d")
    add_graph_without_history(root, 1, {1: 1, 2: 2})
    rank = DumpLayout.open(root).rank(0)
    assert rank.problems == [
        "rank_0/execution_order/ms_global_execution_order_graph_1.csv is missing, so iterations "
        "of graph 1 have no previous run for change conditions."
    ]
    assert rank.history == {0: [0, 1, 2, 3]} and not rank.history_discarded
    assert rank.has_history(0) and not rank.has_history(1)
    assert rank.previous_iteration(1, 2) is None  # the checker's no-history rule decides
    assert rank.step_count == 4
    runs = rank.graph_runs({0: "kernel_graph_0", 1: "kernel_graph_1"})
    assert [(r.iteration, r.graph_name, r.has_data, r.from_history) for r in runs] == [
        (0, "kernel_graph_0", True, True),
        (1, "kernel_graph_0", True, True),
        (1, "kernel_graph_1", True, False),
        (2, "kernel_graph_0", True, True),
        (2, "kernel_graph_1", True, False),
        (3, "kernel_graph_0", True, True),
    ]


def test_graph_without_history_past_the_root_history_extends_the_steps(
    dump_2_0: Path, tmp_path: Path
) -> None:
    """An iteration folder of a graph without history after the last iteration of the
    root graph's history is still a step one can go to."""
    root = copy_dump(dump_2_0, tmp_path / "d")
    add_graph_without_history(root, 1, {5: 3}, with_graph_file=False)
    rank = DumpLayout.open(root).rank(0)
    assert rank.step_count == 6
    assert [(r.iteration, r.graph_name, r.from_history) for r in rank.graph_runs()][-2:] == [
        (3, "kernel_graph_0", True),
        (5, "kernel_graph_1", False),
    ]
    assert rank.graph_runs()[-1].graph_name == "kernel_graph_1"  # no graph file


def test_many_graphs_without_history_are_one_problem(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "d")
    for gid in (1, 2, 3, 5):
        add_graph_without_history(root, gid, {0: 0}, with_graph_file=False)
    (root / "rank_0" / "LeNet" / "4").mkdir()  # no iteration: no run, nothing missing
    rank = DumpLayout.open(root).rank(0)
    assert rank.problems == [
        "rank_0/execution_order has no ms_global_execution_order_graph_<id>.csv for graphs "
        "1–3, 5, so their iterations have no previous run for change conditions."
    ]
    first = [(r.graph_name, r.from_history) for r in rank.graph_runs() if r.iteration == 0]
    assert first == [
        ("kernel_graph_0", True),
        ("kernel_graph_1", False),
        ("kernel_graph_2", False),
        ("kernel_graph_3", False),
        ("kernel_graph_5", False),
    ]


def test_history_not_covering_the_dump_is_discarded(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    history = root / "rank_0" / "execution_order" / "ms_global_execution_order_graph_0.csv"
    history.write_text("0\n1\n")
    rank = DumpLayout.open(root).rank(0)
    assert rank.history_discarded and rank.history == {}
    # the file still answers "previous run" questions, as MindSpore's offline engine reads it
    assert rank.has_history(0)
    assert rank.previous_iteration(0, 1) == 0
    assert rank.previous_iteration(0, 3) is None
    # listed from the dumped folders, and marked so: the history file was not used
    runs = rank.graph_runs()
    assert [(r.iteration, r.from_history) for r in runs] == [(i, False) for i in range(4)]
    [problem] = rank.problems
    assert problem == (
        "rank_0/execution_order/ms_global_execution_order_graph_0.csv does not list the dumped "
        "iterations 2–3, so the graph runs and step count of rank_0 come from the dumped "
        "iterations instead."
    )
    assert rank.step_count == 4


def test_history_tolerates_one_extra_final_iteration(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    history = root / "rank_0" / "execution_order" / "ms_global_execution_order_graph_0.csv"
    history.write_text("0\n1\n2\n")
    rank = DumpLayout.open(root).rank(0)
    assert rank.has_history(0) and not rank.history_discarded
    assert rank.previous_iteration(0, 2) == 1
    assert rank.step_count == 3  # max(history) + 1
    [problem] = rank.problems
    assert "iteration 3 of graph 0" in problem and "dataset sink mode" in problem
    runs = rank.graph_runs()
    assert [r.iteration for r in runs] == [0, 1, 2]
    assert all(r.from_history for r in runs)


def test_history_with_bad_lines_and_gaps(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    history = root / "rank_0" / "execution_order" / "ms_global_execution_order_graph_0.csv"
    history.write_text("0\n1\nfoo\n\n2\n3\n5\n")
    rank = DumpLayout.open(root).rank(0)
    [problem] = rank.problems
    assert problem == (
        "rank_0/execution_order/ms_global_execution_order_graph_0.csv: skipped 1 line that is "
        "not an iteration number."
    )
    assert rank.history[0] == [0, 1, 2, 3, 5]
    assert rank.previous_iteration(0, 5) == 3
    assert rank.step_count == 6
    assert [(r.iteration, r.has_data) for r in rank.graph_runs()][-2:] == [(3, True), (5, False)]


def test_async_bin_files_and_mapping(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    it = root / "rank_0" / "LeNet" / "0" / "0"
    (it / "Conv2D.Default_net_Conv2D-op12.2.7.161243956333802").touch()
    (it / "Conv2D.Default_net_Conv2D-op13.2.7.161243956333803").touch()
    long_name = "Add." + "Default_" * 40 + f"Add-op3.0.0.{TS}.output.0.DefaultFormat.Float32.npy"
    (it / "1234.npy").touch()
    (it / "mapping.csv").write_text(f"1234,{long_name}\n")
    rank = DumpLayout.open(root).rank(0)
    files = rank.tensor_files(0, 0)
    assert len(files) == 196
    [mapped] = [f for f in files if f.path.name == "1234.npy"]
    assert mapped.op_type == "Add" and mapped.op_name.endswith("Add-op3")
    assert mapped.path == it / "1234.npy"
    # `.bin` files are read natively (bin_files): an empty one is one sentence each, and
    # the folder's other files are listed as usual
    assert sorted(rank.problems) == [
        f"rank_0/LeNet/0/0/Conv2D.Default_net_Conv2D-op{n}.2.7.16124395633380{n - 10} is not "
        "an Ascend dump: it has 0 bytes, fewer than the 8-byte header length, so the tensors "
        f"of Default_net_Conv2D-op{n} were not read."
        for n in (12, 13)
    ]


def test_exec_order_reader(tmp_path: Path) -> None:
    f = tmp_path / "order.csv"
    f.write_text("a/B-op1\n\nc/D-op2\n")
    assert read_execution_order(f) == ["a/B-op1", "c/D-op2"]  # no header: older versions
    f.write_text("nodeexecutionorder-fullnamewithscope\r\na/B-op1\r\n")
    assert read_execution_order(f) == ["a/B-op1"]
    f.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match=r"order.csv is not UTF-8 text\.$"):
        read_execution_order(f)
    f.write_text("0\n1,x\n 2\nthree\n")
    assert read_graph_history(f) == ([0, 1, 2], 1)


def test_unreadable_exec_order_is_a_problem(dump_2_10: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_10, tmp_path / "d")
    order = root / "rank_0" / "execution_order" / "ms_execution_order_graph_0.csv"
    order.write_bytes(b"\xff\xff\xff")
    rank = DumpLayout.open(root).rank(0)
    assert rank.execution_order(0) == []
    assert rank.problems == [
        "rank_0/execution_order/ms_execution_order_graph_0.csv is not UTF-8 text."
    ]


# ====================================================================== statistic.csv
OLD_HEADER = (
    "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,"
    "Min Value,Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,"
    "Negative Inf Count,Positive Inf Count,Zero Count"
)


def test_statistic_csv_old_layout(tmp_path: Path) -> None:
    f = tmp_path / "statistic.csv"
    f.write_text(
        OLD_HEADER
        + "\n"
        + 'Conv2D,Conv2D-op12,0,0,1623,output,0,602112,float32,"(32,6,28,28)",3.5,-1.25,0.5,'
        "150528,70000,80000,0,0,0,528\n"
        + 'ReLU,ReLU-op13,0,0,1624,input,0,12,float32,"()",nan,nan,nan,3,0,0,3,0,0,0\n'
    )
    table = read_statistic_csv(f)
    assert table.problems == []
    first, second = table.rows
    assert first.key == "Conv2D-op12:output:0"
    assert (first.op_type, first.timestamp, first.data_size, first.data_type) == (
        "Conv2D",
        1623,
        602112,
        "float32",
    )
    assert first.shape == (32, 6, 28, 28)
    assert first.stats["max"] == 3.5 and first.stats["min"] == -1.25
    assert first.stats["count"] == 150528 and first.stats["neg_zero_count"] == 70000
    assert first.stats["nan_count"] == 0 and first.stats["zero_count"] == 528
    assert first.raw["Op Name"] == "Conv2D-op12"
    assert second.shape == () and second.io == "input" and second.stats["nan_count"] == 3


def test_statistic_csv_new_layout(tmp_path: Path) -> None:
    f = tmp_path / "statistic.csv"
    f.write_text(
        "op type,OP NAME,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,"
        "Max Value,Min Value,L2Norm Value,Nan Count,MD5,Extra Thing\n"
        'MatMul,Default_fc1-Dense_MatMul-op0,0,0,7,output,0,1920,float32,"(4,120)",'
        "1.5,-2,3.25,2,abc123,zzz\n"
        "MatMul,broken-row,0,0,7,output\n"
        "MatMul,bad-slot,0,0,7,output,x,1,float32,(1),1,1,1,0,d,e\n"
    )
    table = read_statistic_csv(f, "rank_0/LeNet/0/0/statistic.csv")
    [row] = table.rows
    assert row.op_name == "Default_fc1-Dense_MatMul-op0"
    assert row.stats == {"max": 1.5, "min": -2.0, "l2norm": 3.25, "nan_count": 2, "md5": "abc123"}
    assert row.raw["Extra Thing"] == "zzz"
    assert table.problems == [
        "rank_0/LeNet/0/0/statistic.csv: skipped 2 rows whose column count or slot does not fit "
        "the header."
    ]


def test_statistic_csv_unusable(tmp_path: Path) -> None:
    f = tmp_path / "statistic.csv"
    f.write_text("")
    with pytest.raises(StatisticCsvError, match=r"statistic\.csv is empty"):
        read_statistic_csv(f)
    f.write_text("Op Type,Task ID,Max Value\nA,0,1\n")
    with pytest.raises(StatisticCsvError, match="has no 'Op Name' or 'IO' or 'Slot' column"):
        read_statistic_csv(f)
    with pytest.raises(StatisticCsvError, match="cannot read"):
        read_statistic_csv(tmp_path / "missing.csv")


def test_rank_statistics(dump_2_0: Path, tmp_path: Path) -> None:
    root = copy_dump(dump_2_0, tmp_path / "d")
    it = root / "rank_0" / "LeNet" / "0"
    (it / "1" / "statistic.csv").write_text(
        OLD_HEADER + "\nConv2D,Conv2D-op77,0,0,1,output,0,4,float32,(1),1,1,1,1,0,1,0,0,0,0\n"
    )
    (it / "2" / "statistic.csv").write_text("Op Type\n")
    rank = DumpLayout.open(root).rank(0)
    table = rank.statistics(0, 1)
    assert table is not None and [r.key for r in table.rows] == ["Conv2D-op77:output:0"]
    assert rank.statistics(0, 0) is None
    assert rank.statistics(0, 2) is None
    assert rank.statistics(0, 1) is table
    assert rank.problems == [
        "rank_0/LeNet/0/2/statistic.csv has no 'Op Name' or 'IO' or 'Slot' column, so its rows "
        "cannot be tied to tensors."
    ]
