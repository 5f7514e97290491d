"""The analyzer's commands (tuidebug/commands) on real MindSpore dumps, checked against the
files themselves: what `lt` lists is what the iteration folder holds, what `pt` and `eval`
print is numpy's own reading of the `.npy` files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tuidebug.commands import CommandRegistry, History, command_registry, parse_tensor_name
from tuidebug.commands.output import Link
from tuidebug.commands.registry import PATH_CANDIDATES
from tuidebug.offline.session import OfflineSession

FC3_BIAS = "fc3.bias"


@pytest.fixture(scope="module")
def registry(request: pytest.FixtureRequest, fixtures_dir: Path) -> Iterator[CommandRegistry]:
    session = OfflineSession(fixtures_dir / "mindspore_lenet_dump" / "ms2_0_0")
    session.start()
    yield command_registry(session, width=120)
    session.close()


def _files(dump: Path, iteration: int, pattern: str) -> list[Path]:
    return sorted((dump / "rank_0" / "LeNet" / "0" / str(iteration)).glob(pattern))


def _parameter(dump: Path, name: str, iteration: int) -> np.ndarray:
    (path,) = _files(dump, iteration, f"Parameter.{name}.*.output.0.*npy")
    return np.load(path)


def test_lt_lists_every_output_file_of_the_iteration_in_execution_order(
    lenet_dump: Path,
) -> None:
    session = OfflineSession(lenet_dump)
    session.start()
    try:
        out = command_registry(session).run("lt -i 1")
        assert out.error is None
        links = [s.link for line in out.lines for s in line if s.link is not None]
        outputs = _files(lenet_dump, 1, "*.output.*.npy")
        graph = next(iter(session.graphs.values()))
        kinds = [graph.node(link.node).kind.value for link in links]
        # every output file of the folder, plus the graph's constants (constants/ folder)
        assert len(links) - kinds.count("constant") == len(outputs)
        assert all(isinstance(link, Link) and link.iteration == 1 for link in links)
        order = (lenet_dump / "rank_0" / "execution_order").glob("ms_execution_order_graph_0.csv")
        kernels = [line for line in next(order).read_text().splitlines()[1:] if line.strip()]
        listed = [link.node for link in links if link.node in kernels]
        assert listed == [k for k in kernels if k in listed]  # the file's order
        assert listed[0].endswith("Conv2D-op77") or "conv1" in listed[0]
    finally:
        session.close()


def test_lt_filters_sorts_and_reverses(registry: CommandRegistry) -> None:
    out = registry.run("lt -t ^Conv2D$ -s size -r")
    rows = [line for line in out.lines if any(s.link for s in line)]
    assert len(rows) == 2  # conv1 and conv2 forward
    sizes = [
        int(re.search(r"\[([\d,]+)\]", "".join(s.text for s in r))[1].count(",")) for r in rows
    ]
    assert sizes == [3, 3]
    assert "conv1" in rows[0][-1].text  # 4x6x28x28 is larger than 4x16x10x10: first with -r
    out = registry.run("lt -n fc3 -t BiasAdd")
    assert all("fc3" in r[-1].text for r in out.lines[2:])
    bad = registry.run("lt -n '('")
    assert bad.error is not None and "regular expression" in bad.error


def test_pt_prints_the_file_values_and_a_slice(registry: CommandRegistry, dump_2_0: Path) -> None:
    truth = _parameter(dump_2_0, "fc3.weight", 0)
    out = registry.run("pt fc3.weight[0:2, 0:3]")
    assert out.error is None
    numbers = [
        float(x) for x in re.findall(r"-?\d\.\d+e[-+]\d+|-?\d+\.\d+", out.plain().split("\n", 1)[1])
    ]
    np.testing.assert_allclose(numbers, truth[0:2, 0:3].ravel(), rtol=1e-6)
    assert "shape [2,3]" in out.plain()


def test_pt_summary_highlight_and_save(
    registry: CommandRegistry, dump_2_0: Path, tmp_path: Path
) -> None:
    truth = _parameter(dump_2_0, "fc3.weight", 0)
    out = registry.run(f"pt fc3.weight -s -r [[-inf,-0.05],[0.05,inf]] -w {tmp_path / 'w'}")
    assert out.error is None, out.error
    expected = int(((truth <= -0.05) | (truth >= 0.05)).sum())
    assert f"{expected:,} of {truth.size:,} elements" in out.plain()
    highlighted = [s for line in out.lines for s in line if s.style == "highlight"]
    assert len(highlighted) == expected
    assert f"count {truth.size:,}" in out.plain()
    np.testing.assert_array_equal(np.load(tmp_path / "w.npy"), truth)


def test_eval_over_two_iterations_matches_numpy(registry: CommandRegistry, dump_2_0: Path) -> None:
    a, b = _parameter(dump_2_0, "fc3.weight", 0), _parameter(dump_2_0, "fc3.weight", 2)
    out = registry.run('eval "np.abs(`fc3.weight:0` - `fc3.weight:0@2`).max()"')
    assert out.error is None, out.error
    value = float(out.lines[0][-1].text)
    assert value == pytest.approx(float(np.abs(a - b).max()), rel=1e-12)
    assert value > 0


@pytest.mark.parametrize(
    ("line", "sentence"),
    [
        ("eval `fc3.weight` +", "not valid Python"),
        ("eval `nosuch:0` * 2", "No node is named 'nosuch'"),
        ("eval 1/0", "ZeroDivisionError"),
        ("eval `fc3.bias", "backquote"),
        ("pt fc3.bias@99", "no value at step 100 (iteration 99)"),
        ("pt fc3.bias[0, 1]", "2 entries but the tensor has 1 dimension"),
        ("pt fc3.bias -r [1,", "not a range"),
        ("nosuch", "There is no command 'nosuch'"),
        ("ni Conv2D", "No node is named"),
        ("li ReLU-op78 -r -d 0", "at least 1"),
        ("pt 'unclosed", "cannot be split"),
        ("lt > a > b", "once, at the end"),
    ],
)
def test_mistakes_are_one_sentence(registry: CommandRegistry, line: str, sentence: str) -> None:
    out = registry.run(line)
    assert out.error is not None and sentence in out.error
    assert "\n" not in out.error and "Traceback" not in out.error


def test_ambiguous_short_names_name_the_candidates(dump_2_10: Path) -> None:
    session = OfflineSession(dump_2_10)
    session.start()
    try:
        out = command_registry(session).run("ni Conv2D-op0")
        assert out.error is not None and "names 2 nodes" in out.error
        assert "conv1-Conv2d/Conv2D-op0" in out.error
        ok = command_registry(session).run("ni conv2-Conv2d/Conv2D-op0 -d")
        assert ok.error is None and "Data at 4 iteration(s): 0-3" in ok.plain()
    finally:
        session.close()


def test_ni_li_lo_follow_the_graph(registry: CommandRegistry) -> None:
    session = registry.context.session
    graph = next(iter(session.graphs.values()))
    relu = next(n for n in graph if n.name.endswith("ReLU-op78"))
    out = registry.run("li ReLU-op78 -r -d 2 -t")
    names = [s.link.node for line in out.lines[1:] for s in line if s.link]
    level1 = [n.name for n in graph.inputs(relu.name)]
    level2 = [n.name for src in level1 for n in graph.inputs(src)]
    assert names == [level1[0], *level2]
    assert "[Conv2D]" in out.plain()
    out = registry.run("lo conv1.weight")
    assert [s.link.node for line in out.lines[1:] for s in line if s.link] == [
        n.name for n in graph.consumers("conv1.weight")
    ]
    info = registry.run("ni Conv2D-op77 -a -t").plain()
    assert "kernel_size: (5, 5)" in info and "train_lenet.py:30" in info


def test_ps_without_the_file_lists_the_quoted_lines(registry: CommandRegistry) -> None:
    out = registry.run("ps train_lenet.py")
    assert out.error is None
    assert "not on this machine" in out.plain()
    line30 = next(line for line in out.lines if line[0].text.strip() == "30")
    linked = {s.link.node for s in line30 if s.link}
    assert any(n.endswith("conv1-Conv2d/Conv2D-op77") for n in linked)
    listing = registry.run("ps").plain()
    assert "train_lenet.py" in listing


def test_ps_reads_a_file_that_is_here(registry: CommandRegistry, tmp_path: Path) -> None:
    # the stacks name /home/dev/ws/gen/lenet/train_lenet.py; a file here ending in the same
    # components is matched by its tail
    here = tmp_path / "gen" / "lenet" / "train_lenet.py"
    here.parent.mkdir(parents=True)
    here.write_text("\n".join(f"line {i}" for i in range(1, 41)))
    # under a source root the user names (the working folder is one, tmp_path is not)
    out = registry.run(f"ps {here} -b 29 -n 3 --root {tmp_path}")
    assert out.error is None
    assert [line[0].text.strip() for line in out.lines[1:]] == ["29", "30", "31"]
    assert out.lines[2][1].text == "line 30" and any(s.link for s in out.lines[2])


def test_ps_never_opens_a_fifo(registry: CommandRegistry, tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "train_lenet.py"
    os.mkfifo(fifo)
    out = registry.run(f"ps {fifo} --root {tmp_path}")  # would block forever if opened
    assert out.error is None and "not on this machine" in out.plain()


def test_redirection_writes_plain_text(registry: CommandRegistry, tmp_path: Path) -> None:
    target = tmp_path / "lt.txt"
    out = registry.run(f"lt -t MatMul > {target}")
    assert out.error is None and str(target) in out.plain()
    text = target.read_text()
    shown = registry.run("lt -t MatMul")
    assert text == shown.plain() + "\n" and text.startswith("9 of 60 tensors")


def test_completion_of_commands_flags_and_names(registry: CommandRegistry) -> None:
    assert "pt" in registry.complete("p").candidates
    assert "--sort_by" in registry.complete("lt --s").candidates
    first = registry.complete("ni Def")
    assert first.candidates == ("Default/",) and first.start == 3
    deeper = registry.complete("ni Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/")
    assert any(c.endswith("Conv2D-op77") for c in deeper.candidates)


def test_path_completion_stops_at_the_cap_and_keeps_the_prefix(
    registry: CommandRegistry, tmp_path: Path
) -> None:
    for i in range(PATH_CANDIDATES + 60):  # more matches than the cap
        (tmp_path / f"a{i:04}.py").touch()
    for name in ("b2.py", "b1.py"):
        (tmp_path / name).touch()
    (tmp_path / "bdir").mkdir()
    crowded = registry.complete(f"ps {tmp_path}/a").candidates
    assert len(crowded) == PATH_CANDIDATES and list(crowded) == sorted(crowded)
    assert all(c.startswith(f"{tmp_path}/a") for c in crowded)
    # a small set of matches: all of them, sorted, a folder with its slash
    few = registry.complete(f"ps {tmp_path}/b").candidates
    assert few == (f"{tmp_path}/b1.py", f"{tmp_path}/b2.py", f"{tmp_path}/bdir/")
    assert registry.complete(f"ps {tmp_path}/zz").candidates == ()
    assert registry.complete(f"ps {tmp_path}/missing/a").candidates == ()


def test_untrusted_names_are_printable() -> None:
    from tuidebug.commands.output import Output

    out = Output()
    out.add("\x1b]0;pwned\x07", "ok")
    assert "\x1b" not in out.plain() and "\\x1b" in out.plain()


def test_tensor_names_parse() -> None:
    name = parse_tensor_name("a/b/Conv2D-op1:2@3[0, :]")
    assert (name.node, name.slot, name.iteration, name.slice) == ("a/b/Conv2D-op1", 2, 3, "[0, :]")
    assert parse_tensor_name(FC3_BIAS).slot == 0


def test_history_prefix_search() -> None:
    history = History()
    for line in ["lt", "pt a", "ni b", "pt c"]:
        history.add(line)
    assert history.previous("pt") == "pt c"
    assert history.previous("pt") == "pt a"
    assert history.previous("pt") is None
    assert history.next() == "pt c"
    assert history.next() == "pt"  # back to what was typed
    history.add("pt a")  # a repeat moves to the newest place
    assert history.lines == ["lt", "ni b", "pt c", "pt a"]


def test_saved_bfloat16_is_float32_npy(tmp_path: Path) -> None:
    """`-w` writes what numpy can read back: bfloat16 has no .npy type code (numpy would
    write an opaque |V2), so it is stored as float32, as MindSpore dumps it."""
    import ml_dtypes

    from tuidebug.commands.tensor_commands import save_npy

    values = np.array([[1.5, -2.0], [np.inf, np.nan]], dtype=ml_dtypes.bfloat16)
    path = save_npy(values.T, str(tmp_path / "bf"))  # a non-contiguous view too
    back = np.load(path, allow_pickle=False)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, values.T.astype(np.float32))


def test_source_lines_are_numbered_as_python_numbers_them(tmp_path: Path) -> None:
    """A form feed or U+2028 inside a line does not start a new one (Python's line numbers,
    which the stack frames give, count only \\n, \\r\\n and \\r)."""
    from tuidebug.commands.source import read_source

    path = tmp_path / "train.py"
    path.write_bytes("a = 1\f# page\nb = '\u2028'\r\nc = 3\rd = 4\n".encode())
    assert read_source(str(path)) == ["a = 1\f# page", "b = '\u2028'", "c = 3", "d = 4"]
    path.write_bytes(b"no newline at the end")
    assert read_source(str(path)) == ["no newline at the end"]
    path.write_bytes(b"")
    assert read_source(str(path)) == []


def test_sizes_read_as_in_l_and_counts_of_one_are_singular(
    registry: CommandRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lt wrote 4x6x28x28 float32 as "75.3 kB" while L wrote "73.5K": one tensor, two sizes.
    from tuidebug.tui.tensor_list.rows import human_bytes

    out = registry.run("lt -t ^Conv2D$ -s size -r").plain()
    assert f" {human_bytes(4 * 6 * 28 * 28 * 4)} " in out and "kB" not in out
    # stacks that name one source file: "1 source files" before
    from collections import Counter

    from tuidebug.commands import node_commands

    monkeypatch.setattr(node_commands, "source_files", lambda _graphs: Counter({"net.py": 3}))
    assert registry.run("ps").plain().startswith("1 source file (nodes created):")
