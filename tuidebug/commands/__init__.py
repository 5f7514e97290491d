"""The analyzer's command line, without a UI: tfdbg's grammar over a `DebugSession`.

`command_registry(session)` gives a `CommandRegistry` whose `run("lt -t MatMul -s size")`
returns an `Output` (styled lines with links to nodes and tensors). The TUI's `:` line
and `tuidebug exec DUMP 'cmd'` both run commands through it, so what a script prints is
what the TUI shows. Nothing here imports Textual.
"""

from __future__ import annotations

from tuidebug.commands.context import CommandContext, CommandError, parse_tensor_name
from tuidebug.commands.history import History
from tuidebug.commands.node_commands import NODE_COMMANDS
from tuidebug.commands.output import Link, Output, Span
from tuidebug.commands.registry import Command, CommandRegistry, Completion
from tuidebug.commands.tensor_commands import TENSOR_COMMANDS
from tuidebug.core.session import DebugSession

__all__ = [
    "Command",
    "CommandContext",
    "CommandError",
    "CommandRegistry",
    "Completion",
    "History",
    "Link",
    "Output",
    "Span",
    "command_registry",
    "parse_tensor_name",
]


def command_registry(session: DebugSession, width: int = 100) -> CommandRegistry:
    registry = CommandRegistry(CommandContext(session, width))
    for command in (*TENSOR_COMMANDS, *NODE_COMMANDS):
        registry.register(command)
    return registry
