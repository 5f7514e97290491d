"""Node details: what a node is, where its data comes from and goes, and its source stack.

The static part (type, names, inputs, outputs with dtype/shape, attributes, stack) comes
straight from the graph. The one-line statistics of each output need the tensor, so the app
computes them in a worker and hands them in with `set_summary`; rows wait with "…". A
foreign call's arguments (`Graph.arguments`: its inputs and parameters, other nodes'
outputs) are listed the same way, each with its dtype, shape and statistics
(`set_argument_summary`).

The first frame shows the empty pane's sentence alone: the rows and the two sections mount
just after it (or with the first node shown), as their styling, a list's above all, costs
the start a pane's worth of time for nothing on screen (issue 28).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tuidebug.core.graph import Graph, Node, TensorSpec, distinct_short_names, stack_sections
from tuidebug.tui.kit.labels import dtype_label, markup_safe, shape_label, shown, source_place
from tuidebug.tui.kit.own_class import unstyled
from tuidebug.tui.messages import NodeChosen, TensorRequested

if TYPE_CHECKING:
    from tuidebug.tui.tensor.reads import OutputSummary

MAX_ATTRIBUTE_CHARS = 1024  # spec §6.5: longer attribute values are hidden
MAX_INPUT_ROWS = 200  # a Concat of 5,000 inputs should not become 5,000 rows


class DetailSection(Static, can_focus=True):
    """The attributes or the stack: focusable, so the keyboard reaches them (↓ past the
    last input or consumer, or Tab) and the pane scrolls them into view."""


class NodeDetails(VerticalScroll):
    """Right pane, top: the selected node."""

    CONTEXT_TITLE = "node details"
    CONTEXT_HELP = (
        "The node's type, names, outputs (dtype, shape and statistics at this step, NaN and\n"
        "Inf counts in colour), inputs and consumers, attributes and source stack.\n"
        "Enter on an output opens it in the tensor view; on an input or consumer it goes\n"
        "to that node. ↓ past the last row (or Tab) moves on to the attributes and the\n"
        "stack, ↑ ↓ scroll them, ↑ at their top goes back; PgUp / PgDn / Home / End scroll\n"
        "the pane, from the list too."
    )

    DEFAULT_CSS = """
    NodeDetails { height: 1fr; }
    NodeDetails #details-head { height: auto; }
    NodeDetails #io-list { height: auto; max-height: 16; border: none; padding: 0; }
    NodeDetails #details-attrs { height: auto; color: $text-muted; }
    NodeDetails #details-stack { height: auto; }
    NodeDetails DetailSection:focus { background: $boost; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.graph: Graph | None = None
        self.node: Node | None = None
        self._summaries: dict[int, OutputSummary] = {}
        self._arg_summaries: dict[int, OutputSummary] = {}  # by `Graph.arguments` index
        self._built = False  # the rows and the sections are mounted (`_build`)

    def compose(self) -> ComposeResult:
        yield Static("Select a node in the tree (1) to see its details.", id="details-head")

    def on_mount(self) -> None:
        self.call_after_refresh(self._build)

    def _build(self) -> None:
        """Mount the rows and the sections under the head (see the module docstring);
        they can be queried on return. Built `unstyled`: the list's own class setters
        would restyle it before it is even mounted."""
        if self._built or not self.is_attached:
            return
        self._built = True
        self.mount_all(
            unstyled(
                lambda: [
                    OptionList(id="io-list", compact=True),
                    DetailSection("", id="details-attrs"),
                    DetailSection("", id="details-stack"),
                ]
            )
        )

    # ---------------------------------------------------------------- public
    def show_node(self, graph: Graph, node: Node) -> None:
        self._build()
        same = self.node is node
        self.graph = graph
        self.node = node
        if not same:
            self._summaries = {}
            self._arg_summaries = {}
        self._render_head()
        self._render_io()
        self._render_attrs()
        self._render_stack()

    def show_scope(self, graph: Graph, scope: str) -> None:
        self._build()
        self.graph = graph
        self.node = None
        self._summaries = {}
        count = graph.leaf_count(scope)
        head = Text.assemble(
            ("scope ", "bold"),
            (shown(scope) or "(top)", "bold cyan"),
            f"\n{count} node{'s' if count != 1 else ''} in graph {shown(graph.name)}",
        )
        self.query_one("#details-head", Static).update(head)
        self.query_one("#io-list", OptionList).clear_options()
        self.query_one("#details-attrs", Static).update("")
        self.query_one("#details-stack", Static).update("")

    def clear(self) -> None:
        self._build()
        self.graph = None
        self.node = None
        self._summaries = {}
        self._arg_summaries = {}
        self.query_one("#details-head", Static).update("No node selected.")
        self.query_one("#io-list", OptionList).clear_options()
        self.query_one("#details-attrs", Static).update("")
        self.query_one("#details-stack", Static).update("")

    def set_summary(self, node_name: str, slot: int, summary: OutputSummary) -> None:
        """A worker finished the statistics of one output; ignored if the node changed."""
        if self.node is None or self.node.name != node_name:
            return
        self._summaries[slot] = summary
        self._render_io()

    def set_argument_summary(self, node_name: str, index: int, summary: OutputSummary) -> None:
        """The statistics of the node's argument `index` (`Graph.arguments`)."""
        if self.node is None or self.node.name != node_name:
            return
        self._arg_summaries[index] = summary
        self._render_io()

    def argument_text(self, index: int) -> str | None:
        """The statistics line of the argument `index` (`Graph.arguments`), once read."""
        found = self._arg_summaries.get(index)
        return found.line if found else None

    def summary_text(self, slot: int) -> str | None:
        found = self._summaries.get(slot)
        return found.line if found else None

    def focus_outputs(self) -> None:
        self._build()
        io_list = self.query_one("#io-list", OptionList)
        io_list.focus()
        for index in range(io_list.option_count):
            option = io_list.get_option_at_index(index)
            if option.id and option.id.startswith("out:"):
                io_list.highlighted = index
                break

    # ------------------------------------------------------------- rendering
    def _render_head(self) -> None:
        node = self.node
        assert node is not None and self.graph is not None
        kind = node.kind.value
        # "Parameter  parameter  [parameter, weight]" says one thing three times
        cats = sorted(
            c.value for c in self.graph.categories(node) if c.value not in {"tensor", kind}
        )
        head = Text()
        head.append(shown(node.short_name), style="bold cyan")
        head.append(f"  {shown(node.op_type)}", style="bold")
        if kind.lower() != node.op_type.lower():
            head.append(f"  {kind}", style="dim")
        if cats:
            head.append("  [" + ", ".join(cats) + "]", style="magenta")
        head.append("\nname  ", style="dim")
        head.append(shown(node.name))
        head.append("\nscope ", style="dim")
        head.append(shown(node.scope) or "(none)")
        head.append("\ngraph ", style="dim")
        head.append(shown(self.graph.name))
        if node.value is not None:
            head.append("\nvalue ", style="dim")
            head.append(shown(str(node.value)[:200]))
        self.query_one("#details-head", Static).update(head)

    def _render_io(self) -> None:
        node = self.node
        graph = self.graph
        assert node is not None and graph is not None
        io_list = self.query_one("#io-list", OptionList)
        highlighted = io_list.highlighted
        options: list[Option] = []
        options.append(Option(Text("outputs", style="bold underline"), disabled=True))
        if not node.outputs:
            options.append(Option(Text("  (no tensor outputs)", style="dim"), disabled=True))
        for spec in node.outputs:
            options.append(Option(self._output_row(spec), id=f"out:{spec.slot}"))
        options += self._argument_rows(graph, node)
        inputs, consumers = graph.inputs(node.name), graph.consumers(node.name)
        # MindSpore numbers ops per scope: fc1's and fc2's `MatMul-op0` may both be listed
        # (or be this node), so a name shared within the pane gets its scope tail
        listed = [node, *inputs[:MAX_INPUT_ROWS], *consumers[:MAX_INPUT_ROWS]]
        labels = distinct_short_names(n.name for n in listed)
        options += self._neighbour_rows("inputs", "←", inputs, "  (none)", labels)
        options += self._neighbour_rows("consumers", "→", consumers, None, labels)
        io_list.clear_options()
        io_list.add_options(options)
        if highlighted is not None and highlighted < io_list.option_count:
            io_list.highlighted = highlighted

    @staticmethod
    def _neighbour_rows(
        title: str,
        arrow: str,
        nodes: Sequence[Node],
        empty: str | None,
        labels: Mapping[str, str],
    ) -> list[Option]:
        """A heading with the count, then up to MAX_INPUT_ROWS rows (Enter jumps there),
        each node named by its label in `labels`."""
        rows = [Option(Text(f"{title} ({len(nodes)})", style="bold underline"), disabled=True)]
        if not nodes and empty is not None:
            rows.append(Option(Text(empty, style="dim"), disabled=True))
        for other in nodes[:MAX_INPUT_ROWS]:
            row = Text(f"  {arrow} ")
            row.append(shown(labels.get(other.name, other.short_name)), style="cyan")
            row.append(f"  {shown(other.op_type)}", style="dim")
            rows.append(Option(row, id=f"in:{other.name}"))
        if len(nodes) > MAX_INPUT_ROWS:
            more = len(nodes) - MAX_INPUT_ROWS
            rows.append(Option(Text(f"  … {more} more", style="dim"), disabled=True))
        return rows

    def _argument_rows(self, graph: Graph, node: Node) -> list[Option]:
        """A foreign call's inputs and parameters (`Graph.arguments`), each with its dtype
        and shape and its statistics at this step (Enter opens it, as an output's row)."""
        args = graph.arguments(node.name)
        if not args:
            return []
        rows = [Option(Text(f"arguments ({len(args)})", style="bold underline"), disabled=True)]
        for index, (label, source, slot) in enumerate(args[:MAX_INPUT_ROWS]):
            producer = graph.get(source)
            spec = next((o for o in producer.outputs if o.slot == slot), None) if producer else None
            row = Text(f"  {shown(label)} ", style="bold")
            if spec is not None:
                row.append(f"{dtype_label(spec.dtype):<8} ", style="green")
                row.append(f"{shape_label(spec.shape):<16} ")
            summary = self._arg_summaries.get(index)
            if summary is None:
                row.append("…", style="dim")
            else:
                row.append_text(self._summary_text(summary))
            rows.append(Option(row, id=f"arg:{index}"))  # ids are unique: not `in:`
        if len(args) > MAX_INPUT_ROWS:
            more = len(args) - MAX_INPUT_ROWS
            rows.append(Option(Text(f"  … {more} more", style="dim"), disabled=True))
        return rows

    @staticmethod
    def _summary_text(summary: OutputSummary) -> Text:
        # a summary may quote a file or an error sentence
        line = Text(shown(summary.line), style="dim" if summary.missing else "")
        line.highlight_regex(r"^\w+<[^>]*>", "green")
        # summary_line() ends with `NaN:3 +Inf:1 -Inf:2` when there are any: colour them;
        # dumped statistics say `NaN 3` (`NaN yes` where the dump knows presence only)
        line.highlight_regex(r"NaN[: ](?:[1-9]\d*|yes)", "bold red")
        line.highlight_regex(r"[+-]Inf[: ](?:[1-9]\d*|yes)", "bold yellow")
        return line

    def _output_row(self, spec: TensorSpec) -> Text:
        row = Text(f"  :{spec.slot} ", style="bold")
        declared = f"{dtype_label(spec.dtype)}{shape_label(spec.shape)}"
        summary = self._summaries.get(spec.slot)
        # the summary of a read value starts with its own dtype and shape: the graph's are
        # left out when they say the same, or when the graph does not know them (kernels
        # with several outputs, scalars): "?" beside the file's shape would say it is unknown
        said = summary.line if summary is not None and not summary.missing else ""
        read = bool(said) and not said.startswith("statistics only")  # no shape in that one
        unknown = spec.shape is None or spec.dtype is None
        if not (read and (unknown or said.startswith(declared))):
            row.append(f"{dtype_label(spec.dtype):<8} ", style="green")
            row.append(f"{shape_label(spec.shape):<16} ")
        if summary is None:
            row.append("…", style="dim")
            return row
        row.append_text(self._summary_text(summary))
        return row

    def _render_attrs(self) -> None:
        node = self.node
        assert node is not None
        if not node.attributes:
            self.query_one("#details-attrs", Static).update("")
            return
        lines = ["[b]attributes[/b]"]
        for key, value in node.attributes.items():
            if len(value) > MAX_ATTRIBUTE_CHARS:
                value = "(value too large to show)"
            # keys and values come from the graph: escaped, every bracket kept literal
            lines.append(f"  {markup_safe(key)} = {markup_safe(value)}")
        self.query_one("#details-attrs", Static).update("\n".join(lines))

    def _render_stack(self) -> None:
        node = self.node
        assert node is not None
        stack = self.query_one("#details-stack", Static)
        if not node.stack:
            stack.update(Text("stack: none recorded for this node", style="dim"))
            return
        text = Text("stack", style="bold")
        # a fused node's candidates are separate stacks, each under its header and number
        for section in stack_sections(node.stack):
            indent = "\n  "
            if section.title:
                text.append(f"\n  {shown(section.title)}:", style="dim italic")
                indent = "\n    "
            for frame in section.frames:
                text.append(indent)
                if not frame.file_path:  # a line that names no location
                    text.append(shown(frame.code_line.strip()), style="dim")
                    continue
                text.append(source_place(frame.file_path, frame.line_no), style="cyan")
                text.append(" ")
                text.append(shown(frame.code_line.strip()))
        stack.update(text)

    # ------------------------------------------------------------ keyboard
    def _sections(self) -> list[Widget]:
        """The parts ↑ ↓ move between, in order: the rows, then the non-empty sections."""
        self._build()
        io_list = self.query_one("#io-list", OptionList)
        parts: list[Widget] = [io_list] if io_list.option_count else []
        parts += [w for w in self.query(DetailSection) if w.display and str(w.render()).strip()]
        return parts

    def on_key(self, event: events.Key) -> None:
        if event.key in ("pageup", "pagedown", "home", "end"):
            # the pane scrolls, wherever its focus is: the input/consumer list would take
            # these keys for its own (at most 16) rows and the stack below stayed unread
            event.stop()
            event.prevent_default()
            scroll = {
                "pageup": self.scroll_page_up,
                "pagedown": self.scroll_page_down,
                "home": self.scroll_home,
                "end": self.scroll_end,
            }[event.key]
            scroll(animate=False)
            return
        if event.key not in ("up", "down"):
            return
        focused = self.app.focused
        parts = self._sections()
        if focused not in parts:
            return
        down = event.key == "down"
        if isinstance(focused, OptionList):
            last = focused.option_count - 1
            at_edge = focused.highlighted is None or (
                focused.highlighted >= last if down else False
            )
            if not at_edge:
                return  # the list moves its own cursor
        else:
            # a section taller than the pane scrolls first, then hands on
            region, view = focused.region, self.scrollable_content_region
            beyond = region.bottom > view.bottom if down else region.y < view.y
            if beyond:
                event.stop()
                event.prevent_default()
                self.scroll_relative(y=1 if down else -1, animate=False)
                return
        index = parts.index(focused) + (1 if down else -1)
        if 0 <= index < len(parts):
            event.stop()
            event.prevent_default()
            parts[index].focus()
            if isinstance(parts[index], OptionList) and not down:
                target = parts[index]
                assert isinstance(target, OptionList)
                target.highlighted = target.option_count - 1

    # ---------------------------------------------------------------- events
    @on(OptionList.OptionSelected, "#io-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        if self.graph is None or self.node is None:
            return
        if option_id.startswith("out:"):
            slot = int(option_id[4:])
            self.post_message(TensorRequested(self.graph.name, self.node.name, slot))
        elif option_id.startswith("in:"):
            self.post_message(NodeChosen(self.graph.name, option_id[3:]))
        elif option_id.startswith("arg:"):
            args = self.graph.arguments(self.node.name)
            index = int(option_id[4:])
            if index < len(args):
                _label, source, slot = args[index]
                self.post_message(TensorRequested(self.graph.name, source, slot))
