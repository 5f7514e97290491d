"""`lt` (list tensors), `pt` (print tensor) and `eval` (numpy over tensors), tfdbg-style.

    lt -t MatMul -s size -r          the step's tensors, largest MatMul outputs first
    pt conv1.weight[0, :, :] -s      a slice and the whole tensor's statistics
    pt Conv2D-op77:0@2 -r [[-inf,-1],[1,inf]]   elements outside [-1, 1] highlighted
    eval "np.abs(`fc3.weight:0` - `fc3.weight:0@2`).max()"

`eval` runs a Python expression the user typed, with `np` and the tensors named in
backquotes bound; like tfdbg's `eval` it trusts its user as a Python prompt does. Nothing
read from a dump or the network ever becomes its code: the references are cut out of the
expression and resolved to tensors first (`references.split_expression`), and Python
compiles only the user's text with a fresh variable in place of each reference.
"""

from __future__ import annotations

import argparse
import ast
import math
import re
from pathlib import Path
from types import CodeType

import numpy as np

from tuidebug.commands.context import CommandContext, CommandError, TensorName, parse_tensor_name
from tuidebug.commands.output import Link, Output, Span
from tuidebug.commands.references import split_expression
from tuidebug.commands.registry import Command, CommandParser, parser
from tuidebug.core.tensor import (
    SliceError,
    TensorRef,
    default_slice,
    format_slice,
    parse_slice,
    tensor_statistics,
    write_npy,
)
from tuidebug.core.tensor_listing import TensorEntry
from tuidebug.core.user_files import WriteRefusedError, write_user_file

__all__ = ["TENSOR_COMMANDS"]

SORT_KEYS = ("order", "size", "op_type", "name", "dtype")
PRINT_THRESHOLD = 1000  # elements printed in full; more are summarised with edges
HIGHLIGHT_LIMIT = 20_000  # elements a highlighted printout formats one by one


# ====================================================================== lt
def _lt_parser() -> CommandParser:
    p = parser("lt", "List the tensors of a step in execution order.")
    p.add_argument("-n", "--node_name_filter", metavar="REGEX", help="node names matching REGEX")
    p.add_argument("-t", "--op_type_filter", metavar="REGEX", help="op types matching REGEX")
    p.add_argument("-s", "--sort_by", choices=SORT_KEYS, default="order", help="sort key")
    p.add_argument("-r", "--reverse", action="store_true", help="reverse the order")
    p.add_argument("-i", "--iteration", type=int, help="the iteration (default: the current)")
    return p


def _regex(pattern: str | None, what: str) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as err:
        raise CommandError(
            f"The {what} filter {pattern!r} is not a regular expression: {err}."
        ) from None


def _size_text(nbytes: int | None) -> str:
    """`600B`, `73.5K`, `12M`: binary units written as `L` writes them (tensor_list/rows.py
    `human_bytes`), so one tensor's size reads the same in `lt` and `L` (a decimal `75.3 kB`
    beside `73.5K` looked like two sizes)."""
    if nbytes is None:
        return "?"
    value = float(nbytes)
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            if unit == "B":
                return f"{int(value)}B"
            return f"{value:.1f}{unit}" if value < 100 else f"{math.floor(value)}{unit}"
        value /= 1024
    return f"{nbytes}B"  # pragma: no cover - the loop always returns


def _shape_text(shape: tuple[int, ...] | None) -> str:
    return "?" if shape is None else f"[{','.join(map(str, shape))}]"


def _sort_key(key: str) -> object:
    if key == "size":
        return lambda e: (-1 if e.nbytes is None else e.nbytes, e.order)
    if key == "op_type":
        return lambda e: (e.op_type, e.order, e.slot)
    if key == "name":
        return lambda e: (e.node, e.slot)
    if key == "dtype":
        return lambda e: (e.dtype, e.order)
    return lambda e: (e.order, e.slot)


def list_tensors(args: argparse.Namespace, ctx: CommandContext) -> Output:
    ctx.graphs()
    iteration = ctx.current_iteration() if args.iteration is None else args.iteration
    entries: list[TensorEntry] = ctx.session.tensor_entries(iteration)
    total = len(entries)
    names = _regex(args.node_name_filter, "node name")
    types = _regex(args.op_type_filter, "op type")
    if names is not None:
        entries = [e for e in entries if names.search(e.node)]
    if types is not None:
        entries = [e for e in entries if types.search(e.op_type)]
    entries.sort(key=_sort_key(args.sort_by), reverse=args.reverse)  # type: ignore[arg-type]
    out = Output()
    shown = f"{len(entries)} of {total}" if len(entries) != total else f"{total}"
    when = ctx.session.step_label(TensorRef("", iteration=iteration))
    out.add(Span(f"{shown} tensors of {when}", "header"))
    if not entries:
        return out
    type_width = min(max(len(e.op_type) for e in entries), 24)
    shape_width = min(max(len(_shape_text(e.shape)) for e in entries), 20)
    out.add(
        Span(
            f"{'#':>5}  {'size':>9}  {'op type':<{type_width}}  {'dtype':<8}  "
            f"{'shape':<{shape_width}}  tensor",
            "dim",
        )
    )
    for i, e in enumerate(entries):
        out.add(
            f"{i:>5}  {_size_text(e.nbytes):>9}  {e.op_type[:type_width]:<{type_width}}  "
            f"{e.dtype[:8]:<8}  {_shape_text(e.shape):<{shape_width}}  ",
            Span(e.name, "bold", Link(e.graph, e.node, e.slot, e.iteration)),
        )
    return out


# ====================================================================== pt
def _pt_parser() -> CommandParser:
    p = parser("pt", "Print a tensor, or a numpy slice of it.")
    # nargs="+": a slice typed with spaces (`x[0, :]`) arrives as several words
    p.add_argument("tensor", nargs="+", metavar="NAME[:SLOT][@ITERATION][SLICE]")
    p.add_argument(
        "-r", "--ranges", metavar="RANGES", help="highlight elements in [lo,hi] or [[lo,hi],...]"
    )
    p.add_argument("-s", "--numeric_summary", action="store_true", help="whole-tensor statistics")
    p.add_argument("-w", "--write_path", metavar="FILE.npy", help="save the (sliced) tensor")
    p.add_argument("-f", "--force", action="store_true", help="with -w: replace FILE.npy")
    p.add_argument("-a", "--all", action="store_true", help="print every element")
    return p


def _index(text: str, shape: tuple[int, ...]) -> tuple[int | slice, ...]:
    """A numpy slice of any rank; a short list is filled with ':' as numpy would."""
    if not text:
        return tuple(slice(None) for _ in shape) if len(shape) <= 2 else default_slice(shape)
    body = text.strip()[1:-1].strip()
    given = [e for e in body.split(",")] if body else []
    if 0 < len(given) < len(shape):
        text = "[" + ", ".join([*given, *([":"] * (len(shape) - len(given)))]) + "]"
    try:
        return parse_slice(text, shape, max_ranges=len(shape))
    except SliceError as err:
        raise CommandError(str(err)) from None


def parse_ranges(text: str) -> list[tuple[float, float]]:
    """`[-1, 1]` or `[[-inf, -1], [1, inf]]` (inclusive bounds, tfdbg's -r)."""
    try:
        value = ast.literal_eval(re.sub(r"(?<![\w.])([+-]?)inf\b", r"\g<1>1e999", text))
    except (ValueError, SyntaxError):
        raise CommandError(
            f"{text!r} is not a range like [-1, 1] or [[-inf, -1], [1, inf]]."
        ) from None
    pairs = value if value and isinstance(value[0], (list, tuple)) else [value]
    out: list[tuple[float, float]] = []
    for pair in pairs:
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not all(isinstance(v, (int, float)) for v in pair)
        ):
            raise CommandError(f"{text!r} is not a range like [-1, 1] or [[-inf, -1], [1, inf]].")
        out.append((float(pair[0]), float(pair[1])))
    return out


def _in_ranges(array: np.ndarray, ranges: list[tuple[float, float]]) -> np.ndarray:
    values = array.astype(np.float64, copy=False) if array.dtype.kind != "c" else np.abs(array)
    mask = np.zeros(array.shape, dtype=bool)
    for lo, hi in ranges:
        mask |= (values >= lo) & (values <= hi)
    return mask


def _shape_list(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, shape)) + "]"


def _title(
    ref_name: str, when: str, array: np.ndarray, shown: np.ndarray, index: tuple[int | slice, ...]
) -> str:
    """`Tensor NAME @ step 4 (iteration 3): dtype float32, shape [2,2,6,6]; slice [0, 0, :, :]
    → shape [6,6]`: the whole tensor's shape always, and the slice printed whenever it is not
    the whole tensor (a 4-D tensor prints one 2-D plane by default, which must not read as a
    tensor of that plane's shape)."""
    title = f"Tensor {ref_name} @ {when}: dtype {array.dtype}, shape {_shape_list(array.shape)}"
    whole = all(isinstance(i, slice) and i == slice(None) for i in index)
    if index and not whole:
        title += f"; slice {format_slice(index)} → shape {_shape_list(shown.shape)}"
    return title


def _print_array(out: Output, array: np.ndarray, width: int, everything: bool) -> None:
    threshold = array.size + 1 if everything else PRINT_THRESHOLD
    text = np.array2string(
        np.asarray(array), max_line_width=max(width, 40), threshold=threshold, separator=", "
    )
    for line in text.splitlines():
        spans = []
        # the special values stand out in a long printout as the viewer's colours do
        for piece in re.split(r"(nan|-?inf)", line):
            if piece == "nan":
                spans.append(Span(piece, "nan"))
            elif piece in ("inf", "-inf"):
                spans.append(Span(piece, "inf"))
            elif piece:
                spans.append(Span(piece))
        out.add(*spans)


def _print_highlighted(out: Output, array: np.ndarray, mask: np.ndarray, width: int) -> None:
    """Element by element in rows of the last dimension, the ones in range highlighted."""
    flat = np.asarray(array).reshape(-1, array.shape[-1] if array.ndim else 1)
    marks = mask.reshape(flat.shape)
    cells = [[f"{v:.6g}" for v in row] for row in flat.tolist()]
    cell = max((len(c) for row in cells for c in row), default=1)
    per_line = max(1, (width - 4) // (cell + 2))
    for r, row in enumerate(cells):
        lead = f"[{r}] " if flat.shape[0] > 1 else ""
        for start in range(0, len(row), per_line):
            spans: list[Span | str] = [lead if start == 0 else " " * len(lead)]
            for c in range(start, min(start + per_line, len(row))):
                spans.append(Span(row[c].rjust(cell), "highlight" if marks[r, c] else ""))
                spans.append("  ")
            out.add(*spans)


def _summary(out: Output, array: np.ndarray) -> None:
    stats = tensor_statistics(array)
    out.add(Span("Summary of the whole tensor:", "header"))
    out.add(f"  {stats.summary_line()}")
    out.add(
        f"  count {stats.count:,}  zero {stats.zero_count:,}  negative {stats.negative_count:,}  "
        f"positive {stats.positive_count:,}  NaN {stats.nan_count:,}  "
        f"+Inf {stats.pos_inf_count:,}  -Inf {stats.neg_inf_count:,}"
    )


def save_npy(array: np.ndarray, target: str, *, replace: bool = False) -> Path:
    """Save `array` to `target` (`.npy` appended when missing), never over an existing file
    unless `replace` (`-f`), never anywhere but a regular file (`core.user_files`)."""
    try:
        return write_user_file(
            target,
            lambda handle: write_npy(handle, array),  # streamed; bfloat16 as float32
            overwrite=replace,
            how_to_overwrite="add -f to replace it",
            suffix=".npy",
        )
    except WriteRefusedError as err:
        raise CommandError(str(err)) from None


def print_tensor(args: argparse.Namespace, ctx: CommandContext) -> Output:
    name = parse_tensor_name("".join(args.tensor))
    ref, array = ctx.value(name)
    index = _index(name.slice, array.shape)
    shown = np.asarray(array[index])
    out = Output()
    when = ctx.session.step_label(ref)
    trips = ctx.session.tensor_trips(ref)
    if trips > 1:
        # a loop ran the kernel several times in the step: say which run this is
        trip = trips if name.trip is None else name.trip
        newest = ", the last; #N picks another" if name.trip is None else ""
        when += f", trip {trip} of {trips}{newest}"
    out.add(Span(_title(ref.name, when, array, shown, index), "header", _link(ctx, ref.node)))
    if args.ranges:
        ranges = parse_ranges(args.ranges)
        mask = _in_ranges(shown, ranges)
        count = int(mask.sum())
        pct = 100.0 * count / shown.size if shown.size else 0.0
        out.add(f"{count:,} of {shown.size:,} elements ({pct:.3g}%) in {args.ranges}")
        if shown.size <= HIGHLIGHT_LIMIT and shown.ndim <= 2:
            _print_highlighted(out, shown, mask, ctx.width)
        else:
            out.add(
                Span(
                    f"Highlighting prints up to {HIGHLIGHT_LIMIT:,} elements of 1 or 2 "
                    "dimensions; slice the tensor to see them.",
                    "dim",
                )
            )
    else:
        _print_array(out, shown, ctx.width, args.all)
    if args.numeric_summary:
        _summary(out, array)
    if args.write_path:
        saved = save_npy(shown, args.write_path, replace=args.force)
        out.add(f"Saved {shown.size:,} elements to {saved}.")
    return out


def _link(ctx: CommandContext, node: str) -> Link | None:
    graph, found = ctx.find_node(node)
    return Link(graph.name, found.name)


# ==================================================================== eval
def _eval_parser() -> CommandParser:
    p = parser("eval", "Evaluate a numpy expression over tensors written `NAME:SLOT@ITERATION`.")
    p.add_argument("expression", nargs="+", help="e.g. np.abs(`fc3.weight:0`).max()")
    p.add_argument("-w", "--write_path", metavar="FILE.npy", help="save an array result")
    p.add_argument("-f", "--force", action="store_true", help="with -w: replace FILE.npy")
    p.add_argument("-a", "--all", action="store_true", help="print every element")
    return p


def _reference_name(ctx: CommandContext, text: str) -> TensorName:
    """A reference's tensor. A whole node name wins over reading its end as `:SLOT`,
    `@ITERATION` or `[SLICE]`: completion writes whole names, which may end like that."""
    for graph in ctx.graphs():
        if graph.get(text) is not None:
            return TensorName(text, 0, None, "")
    return parse_tensor_name(text)


def _placeholder_prefix(user_text: str) -> str:
    """A variable name prefix the user's own text does not use, so a reference's variable
    can neither shadow nor be shadowed by anything the user wrote."""
    prefix = "_tuidebug_ref"
    while prefix in user_text:
        prefix += "_"
    return prefix


def _compile(expression: str, ctx: CommandContext) -> tuple[CodeType, dict[str, object]]:
    """The expression's code and its variables: each backquoted reference becomes a fresh
    variable bound to its tensor before Python sees anything, so what Python compiles is
    only the user's own text and those variable names (a name is never source text)."""
    pieces = split_expression(expression)
    user_text = "".join(piece for piece in pieces if isinstance(piece, str))
    prefix = _placeholder_prefix(user_text)
    bound: dict[str, object] = {}
    variables: dict[str, str] = {}
    code_parts: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            code_parts.append(piece)
            continue
        var = variables.get(piece.text)
        if var is None:
            name = _reference_name(ctx, piece.text)
            _ref, array = ctx.value(name)
            if name.slice:
                array = np.asarray(array[_index(name.slice, array.shape)])
            var = variables[piece.text] = f"{prefix}{len(variables)}"
            bound[var] = array
        # spaces keep the variable its own token: a`x` must not read as one name
        code_parts.append(f" {var} ")
    try:
        # stripped: an expression that starts with a reference starts with its space
        code = compile("".join(code_parts).strip(), "<eval>", "eval")
    except SyntaxError as err:
        raise CommandError(f"The expression is not valid Python: {err.msg}.") from None
    return code, bound


def evaluate(args: argparse.Namespace, ctx: CommandContext) -> Output:
    expression = " ".join(args.expression)
    code, bound = _compile(expression, ctx)
    # the user's own expression, as at a Python prompt, so it keeps Python's builtins
    # (numpy's C code also imports lazily through the calling frame's builtins); nothing
    # from a dump is in `code`, only in the arrays bound to its variables
    scope = {"np": np, "numpy": np, "math": math}
    try:
        with np.errstate(all="ignore"):
            result = eval(code, scope, bound)  # the user's own expression
    except Exception as err:  # any error of the user's expression is one sentence
        raise CommandError(f"The expression failed: {type(err).__name__}: {err}.") from None
    out = Output()
    if isinstance(result, np.ndarray) and result.ndim > 0:
        shape = ",".join(map(str, result.shape))
        out.add(Span(f"{expression} = array of dtype {result.dtype}, shape [{shape}]", "header"))
        _print_array(out, result, ctx.width, args.all)
        if args.write_path:
            saved = save_npy(result, args.write_path, replace=args.force)
            out.add(f"Saved {result.size:,} elements to {saved}.")
    else:
        value = result.item() if isinstance(result, np.generic | np.ndarray) else result
        out.add(Span(expression, "dim"), " = ", Span(repr(value), "bold"))
        if args.write_path:
            raise CommandError("-w saves arrays; the result is not one.")
    return out


TENSOR_COMMANDS = (
    Command("lt", "list the step's tensors (filter, sort)", _lt_parser(), list_tensors, ("list_tensors",), "none"),
    Command("pt", "print a tensor or a slice of it", _pt_parser(), print_tensor, ("print_tensor",)),
    Command("eval", "evaluate numpy over `tensors`", _eval_parser(), evaluate, ("ev",), "reference"),
)  # fmt: skip
