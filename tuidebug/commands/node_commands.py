"""`ni` (node info), `li`/`lo` (input and consumer trees) and `ps` (annotated source).

ni Conv2D-op77 -a -d -t       the node, its attributes, dumped iterations and stack
li ReLU-op78 -r -d 3 -c       its inputs three levels up, control edges marked
lo conv1.weight -r            everything that reads the weight, recursively
ps train.py                   the file, each line with the nodes it created
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from tuidebug.commands.context import CommandContext, CommandError
from tuidebug.commands.output import Link, Output, Span
from tuidebug.commands.registry import Command, CommandParser, parser
from tuidebug.commands.source import path_maps, source_files, source_lines, source_roots
from tuidebug.core.graph import Graph, Node, stack_sections
from tuidebug.core.tensor import dtype_label

__all__ = ["NODE_COMMANDS"]

DEFAULT_DEPTH = 20
MAX_TREE_LINES = 2000  # a recursive tree of a big graph is cut here, and says so


def _link(node: Node) -> Link:
    return Link(node.graph_name, node.name)


# ====================================================================== ni
def _ni_parser() -> CommandParser:
    p = parser("ni", "Show a node: type, scope, inputs, consumers, outputs.")
    p.add_argument("node", metavar="NODE")
    p.add_argument("-a", "--attributes", action="store_true", help="its attributes")
    p.add_argument("-d", "--dumps", action="store_true", help="the iterations holding its data")
    p.add_argument("-t", "--traceback", action="store_true", help="the stack that created it")
    return p


def node_info(args: argparse.Namespace, ctx: CommandContext) -> Output:
    graph, node = ctx.find_node(args.node)
    out = Output()
    out.add(Span("Node ", "header"), Span(node.name, "header", _link(node)))
    out.add(f"  op type: {node.op_type}    kind: {node.kind.value}    graph: {graph.name}")
    if node.scope:
        out.add(f"  scope: {node.scope}")
    inputs, consumers = graph.inputs(node.name), graph.consumers(node.name)
    # listed with links, as tfdbg's node_info does: a count alone sends the user to li/lo
    _neighbours(out, "input", "<-", inputs)
    _neighbours(out, "consumer", "->", consumers)
    for spec in node.outputs:
        dtype = dtype_label(spec.dtype) if spec.dtype else "?"
        shape = "?" if spec.shape is None else f"[{','.join(map(str, spec.shape))}]"
        out.add(
            "  output ",
            Span(f"{node.name}:{spec.slot}", "", Link(graph.name, node.name, spec.slot)),
            f"  {dtype} {shape}",
        )
    if args.attributes:
        out.add(Span(f"{len(node.attributes)} attribute(s):", "header"))
        for key, value in sorted(node.attributes.items()):
            out.add(f"  {key}: {value}")
    if args.dumps:
        dumped = ctx.session.dumped_iterations(graph.name, node.name)
        if dumped:
            out.add(Span(f"Data at {len(dumped)} iteration(s):", "header"), f" {_ranges(dumped)}")
        else:
            out.add(Span("No dumped data is known for this node.", "dim"))
    if args.traceback:
        if not node.stack:
            out.add(Span("The graph records no stack for this node.", "dim"))
        else:
            out.add(Span("Stack:", "header"))
            # a fused node's candidates are stacks of their own, each under its header
            for section in stack_sections(node.stack):
                indent = "  "
                if section.title:
                    out.add(Span(f"  {section.title}:", "dim"))
                    indent = "    "
                for frame in section.frames:
                    out.add(f"{indent}{frame}")
    return out


MAX_NEIGHBOURS = 50  # rows per list in `ni`; `li`/`lo` list every one


def _neighbours(out: Output, noun: str, arrow: str, nodes: Sequence[Node]) -> None:
    count = len(nodes)
    out.add(Span(f"  {count} {noun}{'s' if count != 1 else ''}{':' if count else ''}", "dim"))
    for other in nodes[:MAX_NEIGHBOURS]:
        out.add(f"    {arrow} ", Span(other.name, "", _link(other)), f"  ({other.op_type})")
    if count > MAX_NEIGHBOURS:
        more = count - MAX_NEIGHBOURS
        out.add(Span(f"    … {more} more ({'li' if noun == 'input' else 'lo'} lists them)", "dim"))


def _ranges(values: list[int]) -> str:
    """`0-3, 7, 9-10`."""
    parts: list[str] = []
    start = prev = values[0]
    for v in values[1:]:
        if v == prev + 1:
            prev = v
            continue
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = v
    parts.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(parts)


# ================================================================= li / lo
def _tree_parser(name: str, what: str) -> CommandParser:
    p = parser(name, f"Show the {what} of a node, as a tree with -r.")
    p.add_argument("node", metavar="NODE")
    p.add_argument("-r", "--recursive", action="store_true", help="follow them recursively")
    p.add_argument("-d", "--depth", type=int, default=DEFAULT_DEPTH, help="levels with -r")
    p.add_argument("-c", "--control", action="store_true", help="include control edges")
    p.add_argument("-t", "--op_type", action="store_true", help="show op types")
    return p


def _tree(
    args: argparse.Namespace,
    ctx: CommandContext,
    title: str,
    next_of: Callable[[Graph, Node], list[tuple[Node, bool]]],
) -> Output:
    graph, node = ctx.find_node(args.node)
    if args.depth < 1:
        raise CommandError("The depth must be at least 1.")
    depth = args.depth if args.recursive else 1
    out = Output()
    what = "control edges included" if args.control else "data edges only"
    limit = f"depth limit {depth}, " if args.recursive else ""
    out.add(
        Span(f"{title} ", "header"), Span(node.name, "header", _link(node)), f" ({limit}{what}):"
    )
    seen: set[str] = {node.name}
    count = 0

    def walk(current: Node, level: int) -> None:
        nonlocal count
        for child, control in next_of(graph, current):
            if control and not args.control:
                continue
            if count >= MAX_TREE_LINES:
                return
            count += 1
            marks = ("(ctrl) " if control else "") + (f"[{child.op_type}] " if args.op_type else "")
            repeat = child.name in seen
            out.add(
                "  " + "|  " * (level - 1) + f"|- ({level}) {marks}",
                Span(child.name, "", _link(child)),
                Span("  (shown above)", "dim") if repeat and level < depth else "",
            )
            if level < depth and not repeat:
                seen.add(child.name)
                walk(child, level + 1)

    walk(node, 1)
    if count == 0:
        out.add(Span("  none", "dim"))
    if count >= MAX_TREE_LINES:
        out.add(Span(f"  … cut at {MAX_TREE_LINES} lines; give a smaller -d.", "warning"))
    return out


def _inputs(graph: Graph, node: Node) -> list[tuple[Node, bool]]:
    controls = set(node.control_inputs)
    return [(n, n.name in controls) for n in graph.inputs(node.name)]


def _consumers(graph: Graph, node: Node) -> list[tuple[Node, bool]]:
    return [(n, node.name in n.control_inputs) for n in graph.consumers(node.name)]


def list_inputs(args: argparse.Namespace, ctx: CommandContext) -> Output:
    return _tree(args, ctx, "Inputs to", _inputs)


def list_outputs(args: argparse.Namespace, ctx: CommandContext) -> Output:
    return _tree(args, ctx, "Consumers of", _consumers)


# ====================================================================== ps
def _ps_parser() -> CommandParser:
    p = parser("ps", "Show a source file with the nodes each line created (no FILE: the files).")
    p.add_argument("file", nargs="?", metavar="FILE")
    p.add_argument("-b", "--begin", type=int, default=1, metavar="LINE", help="first line shown")
    p.add_argument("-n", "--lines", type=int, default=0, metavar="N", help="at most N lines")
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="also show files under DIR that a stack names (repeatable)",
    )
    return p


def print_source(args: argparse.Namespace, ctx: CommandContext) -> Output:
    graphs = ctx.graphs()
    out = Output()
    if not args.file:
        files = source_files(graphs)
        if not files:
            out.add(Span("The graphs record no source stacks.", "dim"))
            return out
        noun = "source file" if len(files) == 1 else "source files"
        out.add(Span(f"{len(files)} {noun} (nodes created):", "header"))
        for path, count in files.most_common():
            out.add(f"  {count:>6}  ", Span(path, "bold"))
        return out
    named = [*ctx.source_roots, *args.root]
    roots = source_roots(ctx.session.metadata.source, named)
    found = source_lines(
        graphs,
        args.file,
        roots,
        typed=True,
        maps=path_maps(named),
        dumped=ctx.session.source_text,  # the dump's own copy first (tfdbg)
    )
    lines, path = found.lines, found.path
    if not lines:
        raise CommandError(
            found.outside or f"No node was created in {args.file!r} and it is not readable here."
        )
    if found.whole:
        note = " (the dump's own copy)" if found.from_dump else ""
    elif found.outside:
        note = " (outside the source folders: the lines the stacks quote)"
    else:
        note = " (not on this machine: the lines the stacks quote)"
    out.add(Span(f"{path}{note}", "header"))
    if found.outside:
        out.add(Span(found.outside, "warning"))
    shown = [line for line in lines if line.line_no >= args.begin]
    if args.lines > 0:
        shown = shown[: args.lines]
    width = len(str(lines[-1].line_no))
    for line in shown:
        spans: list[Span | str] = [
            Span(f"{line.line_no:>{width}} ", "dim"),
            Span(line.text, "bold" if line.nodes else ""),
        ]
        for graph_name, node_name in line.nodes:
            spans.append(Span("  ◀ " if node_name == line.nodes[0][1] else ", ", "dim"))
            short = "/".join(node_name.rsplit("/", 2)[-2:])  # kernel names repeat across scopes
            spans.append(Span(short, "", Link(graph_name, node_name)))
        out.add(*spans)
    return out


NODE_COMMANDS = (
    Command("ni", "a node's type, scope, outputs (-a attrs, -d dumps, -t stack)", _ni_parser(), node_info, ("node_info",)),
    Command("li", "a node's inputs (-r recursive, -d depth, -c control)", _tree_parser("li", "inputs"), list_inputs, ("list_inputs",)),
    Command("lo", "a node's consumers (-r recursive, -d depth, -c control)", _tree_parser("lo", "consumers"), list_outputs, ("list_outputs",)),
    Command("ps", "a source file with the nodes each line created", _ps_parser(), print_source, ("print_source",), "path"),
)  # fmt: skip
