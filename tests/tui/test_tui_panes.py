"""The panes' own logic, without the whole app: badges, hit rows, stack index, prompts,
header wording, and the scope tree's lazy loading on a wide graph."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import OptionList

from tests.tui.support import CONV, synthetic_graph, wait_until
from tuidebug.core.condition_catalogue import ParamResult, get_condition
from tuidebug.core.graph import Graph, Node, NodeKind
from tuidebug.core.session import Ending, Metadata, SessionState
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import Watchpoint, WatchpointHit
from tuidebug.tui.kit.dialogs import int_check
from tuidebug.tui.kit.labels import dtype_label, number, shape_label, state_label
from tuidebug.tui.panes.header import fit_line, header_segments
from tuidebug.tui.panes.hit_list import distinct_names, hit_detail
from tuidebug.tui.panes.node_details import NodeDetails
from tuidebug.tui.panes.scope_tree import GraphTree, ScopeTree, walk
from tuidebug.tui.panes.stack_list import index_source_lines
from tuidebug.tui.watchpoints.badges import watch_badges
from tuidebug.tui.watchpoints.list_pane import params_text, targets_text


def test_badges_mark_watched_nodes_their_scopes_and_hit_counts() -> None:
    graph = synthetic_graph()
    weights = Watchpoint(1, "WO")  # whole category
    one = Watchpoint(2, "TL", {"max_gt": 1.0}, (CONV,))
    off = Watchpoint(3, "TO", enabled=False)
    hit = WatchpointHit(2, get_condition("TL"), TensorRef(CONV, 0, 0, 0, graph.name), 0)
    nodes, scopes, node_hits, scope_hits = watch_badges(graph, [weights, one, off], [hit, hit])
    assert nodes == {f"layer{i}.weight" for i in range(4)} | {CONV}
    assert "Default/network-Net/layer0-Block" in scopes and "Default" in scopes
    assert "Gradients" not in scopes  # the disabled TO watches everything, but is off
    assert node_hits == {CONV: 2}
    assert scope_hits["Default"] == 2 and scope_hits["Default/network-Net/layer0-Block"] == 2


def test_badges_ignore_targets_of_other_graphs() -> None:
    graph = synthetic_graph()
    elsewhere = Watchpoint(1, "TO", targets=("Other/scope",), graph_name="kernel_graph_9")
    assert watch_badges(graph, [elsewhere], [])[0] == set()


def test_watchpoint_row_texts() -> None:
    wp = Watchpoint(
        1, "TR", {"range_start_inclusive": -1, "range_end_inclusive": 1, "range_percentage_lt": 50}
    )
    assert (
        params_text(wp) == "range_start_inclusive=-1, range_end_inclusive=1, range_percentage_lt=50"
    )
    assert targets_text(wp) == "every node"
    assert targets_text(Watchpoint(2, "WO")) == "all weights"
    many = Watchpoint(3, "TO", targets=("a/b", "a/c", "a/d", "a/e"))
    assert targets_text(many) == "b, c, d … +1"


def test_hit_detail_shows_threshold_against_actual_or_the_error() -> None:
    ref = TensorRef(CONV, 0, 0, 0, "kernel_graph_0")
    value_hit = WatchpointHit(
        1, get_condition("TL"), ref, 0, (ParamResult("abs_mean_gt", 1.0, False, True, 2.30254),)
    )
    assert hit_detail(value_hit) == ("abs_mean_gt: 2.3025 > 1", False)
    error_hit = WatchpointHit(2, get_condition("WCL"), ref, 4)
    text, is_error = hit_detail(error_hit)
    assert is_error and text == "The previous step value cannot be found."
    overflow = WatchpointHit(3, get_condition("TO"), ref, 0)
    assert hit_detail(overflow) == ("contains NaN or +/-Inf", False)


def test_hit_rows_tell_same_named_kernels_apart() -> None:
    labels = distinct_names(
        [
            "Default/net/fc1-Dense/MatMul-op0",
            "Default/net/fc2-Dense/MatMul-op0",
            "Gradients/net/gradFc2/Grad_MatMul/MatMul-op0",
            "fc1.weight",
            "Default/net/relu/ReLU-op0",
        ]
    )
    assert labels["Default/net/fc1-Dense/MatMul-op0"] == "fc1-Dense/MatMul-op0"
    assert labels["Gradients/net/gradFc2/Grad_MatMul/MatMul-op0"] == "Grad_MatMul/MatMul-op0"
    assert labels["fc1.weight"] == "fc1.weight"
    assert labels["Default/net/relu/ReLU-op0"] == "ReLU-op0"  # unique: the short name
    grads = distinct_names(["G/fc1/Grad_MatMul/MatMul-op0", "G/fc2/Grad_MatMul/MatMul-op0"])
    assert set(grads.values()) == {"fc1/…/MatMul-op0", "fc2/…/MatMul-op0"}
    # folding the middle away could give two nodes one label: then the whole tail shows
    four = ["b/x/fc/M", "b/y/fc/M", "c/x/fc/M", "c/y/fc/M"]
    labels = distinct_names(four)
    assert len(set(labels.values())) == 4, labels
    assert labels["b/x/fc/M"] == "b/x/fc/M"


def test_header_fits_the_width_dropping_the_least_important_facts() -> None:
    md = Metadata(
        mode="online",
        source="ipv4:127.0.0.1:45678",
        state=SessionState.WAITING,
        step=3,
        backend="GPU",
        device="0",
        ms_version="2.3.0",
        graph_names=("kernel_graph_0",),
    )
    wide = fit_line(header_segments(md, "kernel_graph_0", "", True), 200).plain
    assert "client 127.0.0.1:45678" in wide and "ipv4" not in wide
    assert "MindSpore 2.3.0" in wide and "device 0" in wide and "paused at hit" in wide
    narrow = fit_line(header_segments(md, "kernel_graph_0", "", True), 80).plain
    assert len(narrow) <= 80 and "MindSpore 2.3.0" in narrow and "step 3" in narrow
    assert "paused at hit" in narrow and "backend" not in narrow
    offline = Metadata(
        mode="offline",
        source="/very/long/path/to/the/dumps/of/the/run/mindspore_lenet_dump/ms2_10_0",
        state=SessionState.WAITING,
        step=2,
        max_step=4,
    )
    line = fit_line(header_segments(offline, "kernel_graph_0", "", False), 90).plain
    assert len(line) <= 90 and line.count("…") == 1 and "ms2_10_0" in line
    assert "step 2/4" in line and "ready" in line
    pending = Metadata(mode="online", source="127.0.0.1:50051")
    assert (
        "listening on 127.0.0.1:50051"
        in fit_line(header_segments(pending, "", "", False), 200).plain
    )


def test_source_line_index_lists_the_nodes_of_each_line() -> None:
    graph = synthetic_graph(scopes=2, per_scope=3)
    lines = {(ln.file_path, ln.line_no): ln for ln in index_source_lines(graph)}
    assert len(lines[("/src/train.py", 40)].nodes) == 6  # every operator passes through it
    layer1 = lines[("/src/net.py", 11)]
    assert layer1.code_line == "x = self.layer1(x)" and len(layer1.nodes) == 3
    assert layer1.matches("layer1") and not layer1.matches("layer7")


def test_int_check_sentences() -> None:
    check = int_check(1, 4, "step")
    assert check("3") is None
    assert check("x") == "The step must be a whole number."
    assert check("9") == "The step must be between 1 and 4."
    assert int_check(1, None, "count")("0") == "The count must be at least 1."


def test_labels() -> None:
    assert dtype_label(11) == "float32" and dtype_label(None) == "?"
    assert shape_label((6, 1, 5, 5)) == "<6,1,5,5>" and shape_label(None) == "<?>"
    assert number(1e-9) == "1e-09" and number(100.0) == "100" and number(float("nan")) == "nan"
    online = Metadata(mode="online", source="x", state=SessionState.PENDING)
    assert state_label(online)[0] == "waiting for training"
    assert state_label(online.with_(state=SessionState.WAITING), hits_at_step=True)[0] == (
        "paused at hit"
    )
    assert state_label(online.with_(state=SessionState.DISCONNECTED))[0] == "disconnected"
    # each ending named for what it was (issue 28: all read "training finished")
    done, gone = SessionState.DONE, SessionState.DISCONNECTED
    endings = {
        (done, Ending.TERMINATED): "terminated by you",
        (done, Ending.FINISHED): "training finished its steps",
        (gone, Ending.CLOSED): "connection closed",
        (gone, Ending.LOST): "lost: no heartbeat",
    }
    for (state, ending), label in endings.items():
        assert state_label(online.with_(state=state, ending=ending))[0] == label
    offline = Metadata(mode="offline", source="x", state=SessionState.RUNNING)
    assert state_label(offline)[0] == "checking"


class TreeOnly(App[None]):
    def __init__(self, graph: Any) -> None:
        super().__init__()
        self.graph = graph

    def compose(self) -> ComposeResult:
        yield ScopeTree(id="scope")

    def on_mount(self) -> None:
        self.query_one(ScopeTree).set_graphs({self.graph.name: self.graph})


async def test_wide_scope_is_loaded_only_when_opened() -> None:
    graph = synthetic_graph(scopes=1, per_scope=2, wide=5000)
    app = TreeOnly(graph)
    async with app.run_test(size=(100, 40)) as pilot:
        tree = app.query_one(GraphTree)
        assert sum(1 for _ in walk(tree.root)) == 2  # Default, Gradients
        default = tree.root.children[0]
        default.expand()

        def wide_scope() -> Any:
            return next((c for c in default.children if c.data.path == "Default/wide"), None)

        await wait_until(pilot, wide_scope, what="Default's children loaded")
        wide = wide_scope()
        assert len(wide.children) == 0
        wide.expand()
        await wait_until(pilot, lambda: wide.children, what="Default/wide's children loaded")
        assert len(wide.children) == 5000
        assert app.query_one(ScopeTree).reveal(CONV.replace("op0", "op0"))
        assert tree.cursor_node is not None and tree.cursor_node.data.node == CONV


async def test_filter_caps_huge_match_lists() -> None:
    graph = synthetic_graph(scopes=1, per_scope=1, wide=2500)
    app = TreeOnly(graph)
    async with app.run_test(size=(100, 40)) as pilot:
        scope = app.query_one(ScopeTree)
        scope.query_one("#name-filter").value = "add"
        status = scope.query_one("#filter-status")
        await wait_until(pilot, lambda: "matches" in str(status.render()), what="the filter")
        leaves = [n for n in walk(scope.tree_view.root) if n.data and n.data.node]
        assert len(leaves) == 2000
        assert "2500 matches, first 2000 shown" in str(scope.query_one("#filter-status").render())


class DetailsOnly(App[None]):
    def compose(self) -> ComposeResult:
        yield NodeDetails(id="details")


def io_rows(details: NodeDetails) -> dict[str, str]:
    """The input and consumer rows of the pane: the linked node → the row's text."""
    io_list = details.query_one("#io-list", OptionList)
    rows = (io_list.get_option_at_index(i) for i in range(io_list.option_count))
    return {o.id.removeprefix("in:"): str(o.prompt) for o in rows if o.id and o.id[:3] == "in:"}


async def test_node_details_links_tell_namesakes_apart() -> None:
    """fc1's and fc2's `MatMul-op0` both feed the Add and fc3's is its consumer: each
    link names the scope that tells them apart; a name met once stays short."""
    net = "Default/network-Net"
    fc1, fc2 = f"{net}/fc1-Dense/MatMul-op0", f"{net}/fc2-Dense/MatMul-op0"
    fc3, add = f"{net}/fc3-Dense/MatMul-op0", f"{net}/add/Add-op0"

    def op(name: str, op_type: str, *inputs: str) -> Node:
        return Node(
            name, NodeKind.OPERATOR, op_type, scope=name.rsplit("/", 1)[0], inputs=[*inputs]
        )

    graph = Graph(
        "g",
        [
            Node("x", NodeKind.PARAMETER, "Parameter"),
            op(fc1, "MatMul", "x"),
            op(fc2, "MatMul", fc1),
            op(add, "Add", fc1, fc2),
            op(fc3, "MatMul", add),
        ],
    )
    app = DetailsOnly()
    async with app.run_test(size=(100, 40)):
        details = app.query_one(NodeDetails)
        details.show_node(graph, graph.node(add))
        rows = io_rows(details)
        assert "fc1-Dense/MatMul-op0" in rows[fc1] and "fc2-Dense/MatMul-op0" in rows[fc2]
        assert "fc3-Dense/MatMul-op0" in rows[fc3]
        details.show_node(graph, graph.node(fc3))  # its one input, no namesake listed
        assert io_rows(details)[add].split() == ["←", "Add-op0", "Add"]
        # the node shown counts: fc1 as fc2's input beside fc2 would read as fc2 itself
        details.show_node(graph, graph.node(fc2))
        rows = io_rows(details)
        assert rows[fc1].split()[1] == "fc1-Dense/MatMul-op0" and rows[add].split()[1] == "Add-op0"
