"""Tensors: references, the DataType ↔ numpy mapping, slices and overall statistics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class TensorRef:
    """Names one tensor: a node's output (or input) slot at an iteration on a rank.

    `iteration` is the dump iteration (offline) or the step (online); None = current.
    """

    node: str
    slot: int = 0
    iteration: int | None = None
    rank: int = 0
    graph: str = ""
    is_output: bool = True

    @property
    def name(self) -> str:
        """`<node>:<slot>`, the tensor name used on the wire and in the UI."""
        return f"{self.node}:{self.slot}"
