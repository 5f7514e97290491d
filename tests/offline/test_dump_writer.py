"""offline/writer/dump_writer.py and offline/writer/demo.py: MindSpore 2.10-layout dumps we write ourselves
must read exactly like the real ones."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tuidebug._proto import debug_graph_pb2 as pb
from tuidebug.core.graph import NodeKind, StackFrame
from tuidebug.core.graph_pb import raw_enum
from tuidebug.core.tensor import (
    DT_BFLOAT16_TUIDEBUG,
    DT_FLOAT32,
    DT_INT32,
    DT_NONE,
    DT_TENSOR,
    DT_TUPLE,
)
from tuidebug.offline.writer import demo
from tuidebug.offline.writer.dump_writer import (
    EXECUTION_ORDER_HEADER,
    DumpWriter,
    DumpWriterError,
    NodeDef,
    ParamDef,
    TensorDef,
    encode_name,
    format_source_address,
)

# a 2.10 tensor file name, as in fixtures/README.md
_NAME_2_10 = re.compile(
    r"(?P<type>[^.]+)\.(?P<op>.+)\.0\.0\.(?P<ts>\d+)\.(?P<io>input|output)\.(?P<slot>\d+)"
    r"\.DefaultFormat\.(?P<dtype>[A-Za-z0-9]+)\.npy"
)
_NEW_LOCATION = re.compile(r"      # In file (?P<path>.+):(?P<line>\d+), \d+~\d+/(?P<code>.*)/")


@pytest.fixture(scope="module")
def demo_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.write_demo_dump(tmp_path_factory.mktemp("demo") / "dump")


def _iteration_dir(root: Path, iteration: int) -> Path:
    return root / "rank_0" / demo.NET_NAME / "0" / str(iteration)


def _load(folder: Path, op_type: str, name: str, io: str = "output", slot: int = 0) -> np.ndarray:
    pattern = f"{op_type}.{encode_name(name)}.0.0.*.{io}.{slot}.DefaultFormat.*.npy"
    matches = sorted(folder.glob(pattern))
    assert len(matches) == 1, (pattern, matches)
    return np.load(matches[0], allow_pickle=False)


def _model(root: Path) -> pb.ModelProto:
    model = pb.ModelProto()
    model.ParseFromString((root / "rank_0/graphs/ms_output_trace_code_graph_0.pb").read_bytes())
    return model


# ------------------------------------------------------------------- the demo


def test_demo_layout_matches_the_real_2_10_dump(demo_dump: Path, dump_2_10: Path) -> None:
    ours = demo_dump / "rank_0"
    real = dump_2_10 / "rank_0"
    for sub in (
        ".dump_metadata/config.json",
        ".dump_metadata/data_dump.json",
        "graphs/ms_output_trace_code_graph_0.pb",
        "execution_order/ms_execution_order_graph_0.csv",
        "execution_order/ms_global_execution_order_graph_0.csv",
    ):
        assert (real / sub).is_file() and (ours / sub).is_file(), sub
    order = (ours / "execution_order/ms_execution_order_graph_0.csv").read_text().splitlines()
    assert (
        order[0]
        == EXECUTION_ORDER_HEADER
        == real.joinpath("execution_order/ms_execution_order_graph_0.csv")
        .read_text()
        .splitlines()[0]
    )
    history = (ours / "execution_order/ms_global_execution_order_graph_0.csv").read_text()
    assert history == "0\n1\n2\n3\n4\n5\n"
    assert sorted(p.name for p in (ours / demo.NET_NAME / "0").iterdir()) == list("012345")
    for path in demo_dump.rglob("*.npy"):
        assert _NAME_2_10.fullmatch(path.name), path.name


def test_demo_is_small_and_numpy_readable(demo_dump: Path) -> None:
    files = [p for p in demo_dump.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 5 * 2**20
    for path in demo_dump.rglob("*.npy"):
        array = np.load(path, allow_pickle=False)
        assert array.dtype.kind in "biuf"


def test_demo_graph_proto(demo_dump: Path) -> None:
    model = _model(demo_dump)
    graph = model.graph
    assert model.ir_version == 1
    assert graph.name == "kernel_graph0" and graph.root_name == "0"
    names = [n.full_name for n in graph.node]
    assert "Default/network-WithLossCell/_backbone-MLP/fc1-Dense/MatMul-op0" in names
    assert "Default/network-WithLossCell/_backbone-MLP/fc1-Dense/BiasAdd-op0" in names
    assert any(n.startswith("Gradients/Default/network-WithLossCell/") for n in names)
    assert "Default/optimizer-Momentum/ApplyMomentum-op5" in names
    assert [n.name for n in graph.node] == [str(i) for i in range(1, len(graph.node) + 1)]
    params = [p.name for p in graph.parameters]
    for name in ("fc1.weight", "fc1.bias", "fc3.weight", "moments.fc1.weight", "learning_rate"):
        assert name in params
    # inputs name producers by index or parameter name, as MindSpore's exporter does
    index = {n.name for n in graph.node}
    for node in graph.node:
        for inp in node.input:
            assert inp.name in index or inp.name in params, (node.full_name, inp.name)
    fc1 = next(n for n in graph.node if n.full_name.endswith("fc1-Dense/MatMul-op0"))
    assert [i.name for i in fc1.input] == ["inputs0", "fc1.weight"]
    assert fc1.scope == "Default/network-WithLossCell/_backbone-MLP/fc1-Dense"
    assert fc1.output_type.data_type == DT_TENSOR
    assert fc1.output_type.tensor_type.elem_type == DT_FLOAT32
    dims = [d.size for d in fc1.output_type.tensor_type.shape.dim]
    assert dims == [demo.BATCH, demo.HIDDEN1]
    labels = next(p for p in graph.parameters if p.name == "inputs1")
    assert labels.type.tensor_type.elem_type == DT_INT32


def test_demo_stacks_point_at_real_source_lines(demo_dump: Path) -> None:
    source = Path(demo.__file__).read_text().splitlines()
    for node in _model(demo_dump).graph.node:
        lines = node.source_address.splitlines()
        assert lines, node.full_name
        for line in lines:
            m = _NEW_LOCATION.fullmatch(line)
            assert m, line
            assert m.group("path") == demo.__file__
            assert source[int(m.group("line")) - 1] == m.group("code")
        innermost = _NEW_LOCATION.fullmatch(lines[0])
        assert innermost is not None and "rec.kernel(" in innermost.group("code")


def test_demo_blows_up_as_advertised(demo_dump: Path) -> None:
    def flags(iteration: int) -> tuple[bool, bool]:
        has_inf = has_nan = False
        for path in _iteration_dir(demo_dump, iteration).glob("*.npy"):
            a = np.load(path, allow_pickle=False)
            if a.dtype.kind == "f":
                has_inf |= bool(np.isinf(a).any())
                has_nan |= bool(np.isnan(a).any())
        return has_inf, has_nan

    assert flags(0) == flags(1) == flags(2) == (False, False)
    assert flags(3)[0]  # the first Inf
    assert flags(4)[1] and flags(5)[1]  # NaN after
    # the Inf starts in a forward MatMul, the kernel a user should find
    matmul = _load(_iteration_dir(demo_dump, 3), "MatMul", f"{demo.NET}/fc2-Dense/MatMul-op0")
    assert np.isinf(matmul).any()
    fc2_input = _load(
        _iteration_dir(demo_dump, 3), "MatMul", f"{demo.NET}/fc2-Dense/MatMul-op0", "input", 0
    )
    assert np.isfinite(fc2_input).all()
    # the learning rate is what blows up
    rates = [
        float(_load(_iteration_dir(demo_dump, i), "Parameter", "learning_rate")) for i in range(3)
    ]
    assert rates[0] == pytest.approx(demo.BASE_LR) and rates[2] > rates[1] > rates[0]


def test_demo_dumps_parameters_after_the_update(demo_dump: Path) -> None:
    folder = _iteration_dir(demo_dump, 1)
    kernel = "Default/optimizer-Momentum/ApplyMomentum-op5"
    out = _load(folder, "ApplyMomentum", kernel)
    assert np.array_equal(_load(folder, "ApplyMomentum", kernel, "input", 0), out)  # in place
    assert np.array_equal(_load(folder, "Parameter", "fc1.weight"), out)
    before = _load(_iteration_dir(demo_dump, 0), "Parameter", "fc1.weight")
    assert not np.array_equal(before, out)
    moment = _load(folder, "Parameter", "moments.fc1.weight")
    assert np.array_equal(_load(folder, "ApplyMomentum", kernel, "input", 1), moment)


def test_demo_timestamps_increase(demo_dump: Path) -> None:
    order = (
        (demo_dump / "rank_0/execution_order/ms_execution_order_graph_0.csv")
        .read_text()
        .splitlines()[1:]
    )
    previous_max = 0
    for iteration in range(6):
        stamps: dict[str, list[int]] = {}
        for path in _iteration_dir(demo_dump, iteration).glob("*.npy"):
            m = _NAME_2_10.fullmatch(path.name)
            assert m
            stamps.setdefault(m.group("op"), []).append(int(m.group("ts")))
        all_stamps = [t for ts in stamps.values() for t in ts]
        assert min(all_stamps) > previous_max
        assert len(set(all_stamps)) == len(all_stamps)
        previous_max = max(all_stamps)
        firsts = [min(stamps[encode_name(name)]) for name in order]
        assert firsts == sorted(firsts)  # kernels are written in execution order
        kernel_max = max(max(stamps[encode_name(name)]) for name in order)
        params = [min(ts) for op, ts in stamps.items() if op not in map(encode_name, order)]
        assert min(params) > kernel_max  # parameters come after the step's kernels


def test_demo_is_deterministic(tmp_path: Path, demo_dump: Path) -> None:
    again = demo.write_demo_dump(tmp_path / "again")

    def digest(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "data_dump.json"  # holds the absolute dump path
        }

    assert digest(again) == digest(demo_dump)


def test_demo_refuses_a_used_folder(demo_dump: Path) -> None:
    with pytest.raises(DumpWriterError) as err:
        demo.write_demo_dump(demo_dump)
    assert "already holds a dump" in str(err.value)


# ---------------------------------------------- read back by the offline engine


def test_demo_is_discovered_by_layout(demo_dump: Path) -> None:
    from tuidebug.offline.layout.root import DumpLayout

    layout = DumpLayout.open(demo_dump)
    assert layout.rank_ids == [0]
    rank = layout.rank(0)
    assert rank.net_name == demo.NET_NAME
    assert rank.graph_ids == [0]
    assert rank.iterations == [0, 1, 2, 3, 4, 5]
    assert rank.has_history(0) and rank.step_count == 6
    assert rank.previous_iteration(0, 3) == 2
    assert rank.execution_order(0)[0].endswith("fc1-Dense/MatMul-op0")
    assert layout.settings.ms_version == "2.10.0"
    assert layout.problems == []


def test_demo_graph_and_tensor_index(demo_dump: Path) -> None:
    from tuidebug.offline.files.graphs import load_graph_file
    from tuidebug.offline.layout.root import DumpLayout
    from tuidebug.offline.layout.tensor_index import TensorIndex

    graph = load_graph_file(demo_dump / "rank_0/graphs/ms_output_trace_code_graph_0.pb")
    fc1 = graph.node("Default/network-WithLossCell/_backbone-MLP/fc1-Dense/MatMul-op0")
    assert fc1.stack and fc1.stack[0].file_path == demo.__file__
    assert fc1.stack[0].line_no is not None
    assert "x @ self.weight.T" in fc1.stack[0].code_line
    assert graph.node("fc1.weight").kind is NodeKind.PARAMETER
    weights = {n.name for n in graph.parameters if n.name.endswith((".weight", ".bias"))}
    assert "fc1.weight" in weights and "moments.fc1.weight" in weights

    rank = DumpLayout.open(demo_dump).rank(0)
    index = TensorIndex(rank, graph)
    assert index.problems == [] and index.unmatched == []
    files = index.files_for(3)
    on_disk = list(_iteration_dir(demo_dump, 3).glob("*.npy"))
    assert len(files) == len(on_disk)
    found = index.lookup(fc1.name, 0, 3)
    assert found is not None and np.isfinite(np.load(found.path)).all()
    assert index.lookup("fc1.weight", 0, 5) is not None


# -------------------------------------------------------------- the writer API

_SCOPE = "Default/network-WithLossCell/_backbone-Net"


def _tiny_writer(root: Path, **kwargs: object) -> DumpWriter:
    writer = DumpWriter(root, net_name="Net", start_timestamp=1000, **kwargs)  # type: ignore[arg-type]
    writer.add_graph(
        0,
        [
            NodeDef(
                f"{_SCOPE}/fc-Dense/MatMul-op0",
                "MatMul",
                ["x", "fc.weight"],
                dtype=np.float32,
                shape=(2, 3),
                stack=[StackFrame("/src/net.py", 7, "        y = self.matmul(x, self.weight)")],
                attributes={"transpose_b": True, "groups": 1, "alpha": 0.5, "fmt": "NCHW"},
            ),
            NodeDef(
                f"{_SCOPE}/Split-op0",
                "Split",
                [f"{_SCOPE}/fc-Dense/MatMul-op0"],
                dtype=ml_dtypes.bfloat16,
                shape=(2, 1),
                extra_outputs=[TensorDef(np.int32, ())],
            ),
            NodeDef(f"{_SCOPE}/MakeTuple-op0", "MakeTuple", [f"{_SCOPE}/Split-op0"], dtype=None),
        ],
        [ParamDef("x", np.float32, (2, 4)), ParamDef("fc.weight", np.float32, (3, 4))],
        execution_order=[f"{_SCOPE}/fc-Dense/MatMul-op0", f"{_SCOPE}/Split-op0"],
    )
    return writer


def test_writer_proto_details(tmp_path: Path) -> None:
    _tiny_writer(tmp_path).finish()
    graph = _model(tmp_path).graph
    matmul, split, make_tuple = graph.node
    attrs = {a.name: a.value for a in matmul.attribute}
    assert attrs["transpose_b"].bool_val is True and attrs["groups"].int_val == 1
    assert attrs["alpha"].double_val == 0.5 and attrs["fmt"].str_val == "NCHW"
    assert matmul.source_address == (
        "      # In file /src/net.py:7, 8~39/        y = self.matmul(x, self.weight)/\n"
    )
    assert split.output_type.data_type == DT_TUPLE
    elems = split.output_type.sequence_type.elem_types
    # bfloat16 with tuidebug's own number (the closed enum parks it in the unknown fields)
    got = [raw_enum(e.tensor_type, "elem_type", 1) for e in elems]
    assert got == [DT_BFLOAT16_TUIDEBUG, DT_INT32]
    assert elems[1].tensor_type.HasField("shape") and len(elems[1].tensor_type.shape.dim) == 0
    assert make_tuple.output_type.data_type == DT_NONE and make_tuple.source_address == ""
    assert [i.name for i in split.input] == ["1"]
    assert graph.outputs[0].name == "3"
    order = (tmp_path / "rank_0/execution_order/ms_execution_order_graph_0.csv").read_text()
    assert order.splitlines() == [
        EXECUTION_ORDER_HEADER,
        f"{_SCOPE}/fc-Dense/MatMul-op0",
        f"{_SCOPE}/Split-op0",
    ]


def test_writer_tensor_files(tmp_path: Path) -> None:
    writer = _tiny_writer(tmp_path)
    matmul = f"{_SCOPE}/fc-Dense/MatMul-op0"
    split = f"{_SCOPE}/Split-op0"
    folder = writer.write_iteration(
        0,
        0,
        {
            ("fc.weight", "output", 0): np.ones((3, 4), np.float32),
            (split, "output", 1): np.int32(7),
            (split, "output", 0): np.array([[1.5], [2.0]], dtype=ml_dtypes.bfloat16),
            (matmul, "output", 0): np.zeros((2, 3), np.float32),
            (matmul, "input", 1): np.ones((3, 4), np.float32),
        },
    )
    writer.finish()
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        [
            f"MatMul.{encode_name(matmul)}.0.0.1037.input.1.DefaultFormat.Float32.npy",
            f"MatMul.{encode_name(matmul)}.0.0.1074.output.0.DefaultFormat.Float32.npy",
            f"Split.{encode_name(split)}.0.0.1111.output.0.DefaultFormat.BFloat16.npy",
            f"Split.{encode_name(split)}.0.0.1148.output.1.DefaultFormat.Int32.npy",
            "Parameter.fc_weight.0.0.1185.output.0.DefaultFormat.Float32.npy",
        ]
    )
    assert folder == tmp_path / "rank_0" / "Net" / "0" / "0"
    bf16 = np.load(next(folder.glob("Split.*.output.0.*")), allow_pickle=False)
    assert bf16.dtype == np.float32 and bf16.tolist() == [[1.5], [2.0]]  # stored as float32
    scalar = np.load(next(folder.glob("Split.*.output.1.*")), allow_pickle=False)
    assert scalar.shape == () and scalar == 7
    history = tmp_path / "rank_0/execution_order/ms_global_execution_order_graph_0.csv"
    assert history.read_text() == "0\n"
    writer.write_iteration(0, 2, {("fc.weight", "output", 0): np.ones((3, 4), np.float32)})
    writer.write_iteration(0, 2, {("x", "output", 0): np.ones((2, 4), np.float32)})
    assert history.read_text() == "0\n2\n"


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        (("nope", "output", 0), "is not a node or parameter"),
        (("x", "input", 0), "only has output slot 0"),
        (("x", "output", 1), "only has output slot 0"),
        (("x", "sideways", 0), "is not a (name, io, slot) key"),
    ],
)
def test_writer_rejects_bad_keys(tmp_path: Path, key: tuple[str, str, int], fragment: str) -> None:
    writer = _tiny_writer(tmp_path)
    with pytest.raises(DumpWriterError) as err:
        writer.write_iteration(0, 0, {key: np.zeros(1)})  # type: ignore[dict-item]
    assert fragment in str(err.value)


def test_writer_rejects_bad_graphs(tmp_path: Path) -> None:
    writer = DumpWriter(tmp_path, start_timestamp=0)
    with pytest.raises(DumpWriterError, match="neither an earlier node nor a parameter"):
        writer.add_graph(0, [NodeDef("Default/A-op0", "A", ["later"])], [])
    with pytest.raises(DumpWriterError, match="declared twice"):
        writer.add_graph(0, [NodeDef("Default/A-op0", "A"), NodeDef("Default/A-op0", "A")], [])
    with pytest.raises(DumpWriterError, match="declared twice"):
        writer.add_graph(0, [], [ParamDef("w", np.float32, ()), ParamDef("w", np.float32, ())])
    with pytest.raises(DumpWriterError, match="not a node"):
        writer.add_graph(1, [NodeDef("Default/A-op0", "A")], [], execution_order=["Default/B"])
    with pytest.raises(DumpWriterError, match="was not added"):
        writer.write_iteration(5, 0, {})
    writer.add_graph(0, [NodeDef("Default/A-op0", "A")], [])
    with pytest.raises(DumpWriterError, match="already added"):
        writer.add_graph(0, [NodeDef("Default/A-op0", "A")], [])
    with pytest.raises(DumpWriterError, match="must not be negative"):
        writer.write_iteration(0, -1, {})
    with pytest.raises(DumpWriterError):
        DumpWriter(tmp_path / "other", net_name="a/b")


def test_writer_refuses_a_non_empty_rank_folder_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "rank_0").mkdir()
    (tmp_path / "rank_0" / "something").write_text("x")
    with pytest.raises(DumpWriterError) as err:
        DumpWriter(tmp_path)
    assert str(err.value).endswith("already holds a dump; choose an empty folder.")
    DumpWriter(tmp_path, exist_ok=True)
    DumpWriter(tmp_path, rank=1)  # another rank of the same dump is fine


def test_writer_context_manager_finishes(tmp_path: Path) -> None:
    with DumpWriter(tmp_path, net_name="N", start_timestamp=5, ms_version="2.4.0") as writer:
        writer.add_graph(3, [NodeDef("Default/A-op0", "A", shape=(1,))], [])
        writer.write_iteration(3, 0, {("Default/A-op0", "output", 0): np.zeros(1, np.float32)})
    meta = tmp_path / "rank_0" / ".dump_metadata"
    assert '"ms_version": "2.4.0"' in (meta / "config.json").read_text()
    assert '"net_name": "N"' in (meta / "data_dump.json").read_text()
    assert (tmp_path / "rank_0/graphs/ms_output_trace_code_graph_3.pb").is_file()
    assert not list(tmp_path.rglob("*.tmp"))


def test_format_source_address() -> None:
    text = format_source_address(
        [
            StackFrame("/a/b.py", 12, "    return x + 1"),
            StackFrame("/a/c.py", None, "x"),
            StackFrame("", None, "Corresponding forward node candidate:", 1),
            StackFrame("/a/d.py", 3, "y = f(x)", 1),
        ]
    )
    lines = text.splitlines()
    assert lines[0] == "      # In file /a/b.py:12, 4~16/    return x + 1/"
    assert _NEW_LOCATION.fullmatch(lines[0])
    assert lines[1] == "      # In file /a/c.py/x/"
    assert lines[2] == "      # Corresponding forward node candidate:"
    assert format_source_address([]) == ""


def test_source_address_round_trips_through_the_reader() -> None:
    from tuidebug.core.graph_pb import parse_source_address

    stack = [
        StackFrame("/w/model.py", 30, "        x = self.fc1(x)"),
        StackFrame("/w/train.py", 9, "loss = net(data)"),
        StackFrame("", None, "Corresponding forward node candidate:", 1),
        StackFrame("/w/model.py", 31, "    return self.relu(x)", 1),
    ]
    parsed = parse_source_address(format_source_address(stack))
    assert [(f.file_path, f.line_no, f.code_line.strip(), f.group) for f in parsed] == [
        (f.file_path, f.line_no, f.code_line.strip(), f.group) for f in stack
    ]


def test_source_address_matches_the_real_2_10_form(dump_2_10: Path) -> None:
    model = _model(dump_2_10)
    real = next(n.source_address for n in model.graph.node if n.source_address)
    # the fixture's single-line frames have exactly the shape we write
    single = [line for line in real.splitlines() if re.search(r":\d+, ", line)]
    assert single and all(_NEW_LOCATION.fullmatch(line) for line in single)


def test_encode_name() -> None:
    assert encode_name("Default/fc1-Dense/MatMul-op0") == "Default_fc1-Dense_MatMul-op0"
    assert encode_name("moments.fc1.weight") == "moments_fc1_weight"
