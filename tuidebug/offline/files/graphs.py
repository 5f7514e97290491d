"""A dump's graph files: `graphs/*.pb` (a serialized `ModelProto`) and the `.ir` text beside
it, read into a `core.Graph` (spec §5.6).

The message → Graph reader is core/graph_pb.py (the online session, the simulator and the
PyTorch adapter use it too); this module adds what only a dump has. Dump files are untrusted:
they are opened only as regular files (a FIFO cannot block the open), sizes are capped before
reading, and every failure becomes one `GraphFileError` sentence naming the file.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from tuidebug.core.graph import Graph, StackFrame
from tuidebug.core.graph_pb import (
    MAX_GRAPH_NODES,
    GraphFileError,
    check_graph_proto,
    graph_from_checked_proto,
    parse_ir_stacks,
    parse_model_proto,
)
from tuidebug.offline.files.regular_file import NotRegularFileError, open_regular

__all__ = ["MAX_GRAPH_FILE_BYTES", "MAX_IR_FILE_BYTES", "load_graph_file", "stacks_from_ir"]

MAX_GRAPH_FILE_BYTES = 512 * 1024 * 1024
MAX_IR_FILE_BYTES = 1024 * 1024 * 1024


def load_graph_file(
    path: str | os.PathLike[str],
    *,
    ir_path: str | os.PathLike[str] | None = None,
    use_ir: bool = True,
    limit: int | None = MAX_GRAPH_NODES,
) -> Graph:
    """Read a dump's `graphs/*.pb` (a serialized `ModelProto`) into a `Graph`.

    Nodes whose `source_address` is empty get their stack from the `.ir` text file beside
    the `.pb` (same stem), or from `ir_path`; a missing or unreadable `.ir` only means no
    fallback stacks. Raises `GraphFileError` for an unreadable, oversized or undecodable
    file and `GraphTooLargeError` past `limit` nodes (None = no limit).
    """
    file = Path(path)
    try:
        # a FIFO named like a graph must not block the open; a directory, a device… are no
        # graph: the type is checked on the open descriptor
        with open_regular(file) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_GRAPH_FILE_BYTES:
                raise GraphFileError(
                    f"Graph file {file} is {size / 2**20:.0f} MiB, larger than the "
                    f"{MAX_GRAPH_FILE_BYTES // 2**20} MiB limit."
                )
            # Read one byte past the cap so a file that grew after fstat() is still caught.
            data = fh.read(MAX_GRAPH_FILE_BYTES + 1)
    except NotRegularFileError as exc:
        raise GraphFileError(f"Graph file {file} is {exc.strerror}.") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise GraphFileError(f"Cannot read graph file {file}: {reason}.") from None
    if len(data) > MAX_GRAPH_FILE_BYTES:
        raise GraphFileError(
            f"Graph file {file} is larger than the {MAX_GRAPH_FILE_BYTES // 2**20} MiB limit."
        )
    source = f"Graph file {file}"
    model = parse_model_proto(data, source)
    del data  # the parsed message is all we need; free the raw bytes early
    graph_proto = model.graph
    # Refuse an oversized graph before spending time on its .ir.
    check_graph_proto(graph_proto, limit, source)

    fallback: dict[str, list[StackFrame]] | None = None
    if use_ir and any(not n.source_address for n in graph_proto.node):
        ir_file = Path(ir_path) if ir_path is not None else file.with_suffix(".ir")
        if ir_file.is_file():
            try:
                fallback = stacks_from_ir(ir_file)
            except GraphFileError:
                fallback = None  # the .ir is only a convenience; the graph stands alone
    return graph_from_checked_proto(graph_proto, fallback or {}, source)


def stacks_from_ir(path: str | os.PathLike[str]) -> dict[str, list[StackFrame]]:
    """Code stacks per kernel full name from the `.ir` text file MindSpore writes beside
    the graph `.pb` (fallback for nodes whose `source_address` is empty)."""
    file = Path(path)
    try:
        with open_regular(file) as raw:  # a FIFO named like the .ir must not block
            size = os.fstat(raw.fileno()).st_size
            if size > MAX_IR_FILE_BYTES:
                raise GraphFileError(
                    f"IR file {file} is {size / 2**20:.0f} MiB, larger than the "
                    f"{MAX_IR_FILE_BYTES // 2**20} MiB limit."
                )
            with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as fh:
                return parse_ir_stacks(fh)
    except NotRegularFileError as exc:
        raise GraphFileError(f"IR file {file} is {exc.strerror}.") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise GraphFileError(f"Cannot read IR file {file}: {reason}.") from None
