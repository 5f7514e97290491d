"""Saving what the tensor view shows: the default file name and the `.npy` writer.

The default name says what the file holds, so a folder of saved tensors reads like a list
of them: the node's full name (scopes joined by `--`), the output slot, the step, the
rank where there are several, the slice, and what was shown when it is not the value
itself. Everything is reduced to letters, digits and `_ - . ,` so the name is a plain file
of the current folder on any file system and needs no quoting in a shell:

    Default--network-WithLossCell--conv1-Conv2d--Conv2D-op1_out0_step2_0,all,all.npy
    fc3.bias_out0_step3_rank1_diff.npy
"""

from __future__ import annotations

import re

from tuidebug.core.tensor import Index

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-.]+")
# A file name has at most 255 bytes; a stem this long leaves room for slice and suffixes.
MAX_NODE_CHARS = 150


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part).strip("_-.")


def file_stem(node: str, slot: int, step: int | None = None, rank: int | None = None) -> str:
    """`Default--fc1-Dense--MatMul-op1_out0_step2` (`_rank1` when `rank` is given)."""
    name = "--".join(p for p in (_safe(part) for part in node.split("/")) if p) or "tensor"
    if len(name) > MAX_NODE_CHARS:
        name = name[-MAX_NODE_CHARS:].lstrip("-_.")  # the tail names the node itself
    parts = [name, f"out{slot}"]
    if step is not None:
        parts.append(f"step{step}")
    if rank is not None:
        parts.append(f"rank{rank}")
    return "_".join(parts)


def slice_tag(index: Index) -> str:
    """`[0, :, 1:10:2]` → `0,all,1to10by2` (`[]`, a scalar's selection → `scalar`)."""
    entries: list[str] = []
    for item in index:
        if not isinstance(item, slice):
            entries.append(str(item))
            continue
        start = "" if item.start is None else str(item.start)
        stop = "" if item.stop is None else str(item.stop)
        entry = f"{start}to{stop}" if start or stop else "all"
        if item.step not in (None, 1):
            entry += f"by{item.step}"
        entries.append(entry)
    return ",".join(entries) or "scalar"


def save_file_name(stem: str, index: Index | None, shown: str = "") -> str:
    """The default file for the slice `index` (None: the whole tensor) of what is `shown`
    ("" for the value itself, else e.g. `diff`)."""
    parts = [stem or "tensor"]
    if index is not None:
        parts.append(slice_tag(index))
    if shown:
        parts.append(_safe(shown.replace(" ", "-")))
    return "_".join(parts) + ".npy"


def short_name_of(title: str) -> str:
    """A node's short name from a tensor title like `Default/conv1-Conv2d/Conv2D-op1:0`."""
    tail = title.rsplit("/", 1)[-1]
    return tail.split(":", 1)[0].strip()


__all__ = ["file_stem", "save_file_name", "short_name_of", "slice_tag"]
