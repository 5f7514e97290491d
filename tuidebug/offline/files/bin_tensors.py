"""`.bin` dump files (Ascend `file_format: "bin"`) as tensors of the dump's index.

One `.bin` file holds every input and output of one operator execution (`bin_dump`), so
discovery turns it into one `BinTensorFile` per input and output slot: a `TensorFile` whose
name parts come from the file name (or the name `mapping.csv` gives it) and which keeps the
`BinTensor` its header described. The header is read once, when the iteration folder is
listed (the listing is cached), and never again: reading a tensor seeks straight to its
bytes (`read_bin_file`).

A tensor whose device format is not converted to the host layout (`BinTensor.converted`
false) is read raw in its device shape and said so (`raw_sentence`): never silently
reshaped. The checker checks it raw, as MindSpore's own offline debugger did with the
tensors CANN could not convert (MindSpore 1.x `offline_debug/convert_async.py`,
`AsyncDumpConverter.convert_one_failed_tensor`: the raw buffer reshaped to the device
`shape.dim` and saved with the device format in its name, then checked like any `.npy`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tuidebug.core.tensor import dtype_label
from tuidebug.core.text import shape_text
from tuidebug.offline.files.bin import (
    MAX_HEADER_BYTES,
    MAX_SLOTS,
    BinBudgetError,
    BinTensor,
    parse_bin_file_name,
    read_bin_header,
    read_bin_slot,
)
from tuidebug.offline.files.budget import IterationBudget
from tuidebug.offline.files.names import TensorFile
from tuidebug.offline.files.npy import (
    TensorHeaderError,
    TensorOutsideRootError,
    TensorTooLargeError,
)

__all__ = [
    "BinTensorFile",
    "bin_tensor_files",
    "converted_fit",
    "raw_sentence",
    "read_bin_file",
]


@dataclass(frozen=True, slots=True)
class BinTensorFile(TensorFile):
    """One input or output of a `.bin` file. `name` is the file on disk (a `mapping.csv`
    number included), `format` the device format's name (`NC1HWC0`), `dtype` None (the
    names follow the graph's own kernel names, like the `.npy` files of the same layouts);
    `bin` says where the bytes are and how they convert."""

    bin: BinTensor = field(compare=False, repr=False)


def bin_tensor_files(
    folder: str, disk_name: str, real_name: str, budget: IterationBudget | None = None
) -> list[BinTensorFile]:
    """The tensors of the `.bin` file `disk_name` of `folder`, named by `real_name` (the
    same, or what `mapping.csv` says it stands for). Reads the file's header only; raises
    `TensorFileError` (one sentence naming the file) when it cannot be read, or when
    `real_name` does not parse (the caller classified it as a `.bin` name first, so only a
    `mapping.csv` name that looks like one can fail here, e.g. with a number of thousands
    of digits): its tensors are unknown, which must make a check incomplete, not vanish.

    `budget` (the iteration folder's, drawing on the dump's): the header is read only when
    it fits what is left, and charged; else `BinBudgetError`, the file recorded in
    `budget.unread` (the caller says them all in one sentence, `budget.sentence`)."""
    parsed = parse_bin_file_name(real_name)
    if parsed is None:
        said = "the name mapping.csv gives it" if real_name != disk_name else "its name"
        raise TensorHeaderError(
            os.path.join(folder, disk_name),
            f"{disk_name} cannot be read: {said} is not an Ascend dump file name.",
        )
    # aclop order (`{op_type}.{op_name}.…`); the async layout swaps aclnn's names itself,
    # as it decides for every file of a device-level folder (async_layout._aclnn_swapped)
    path = os.path.join(folder, disk_name)
    if budget is None:
        dump = read_bin_header(path)
    else:
        tensors, header_bytes = budget.limits()
        if tensors <= 0 or header_bytes <= 0:  # ran out: the file is not even opened
            budget.refuse(disk_name, None)
            raise BinBudgetError(Path(path), 0, None)
        try:
            dump = read_bin_header(
                path,
                max_header_bytes=min(header_bytes, MAX_HEADER_BYTES),
                max_slots=min(tensors, MAX_SLOTS),
            )
        except BinBudgetError as err:
            budget.refuse(disk_name, err.header_bytes if err.slots is None else None)
            raise
        budget.spend(len(dump.inputs) + len(dump.outputs), dump.header_bytes)
    task, stream = str(parsed.task_id), str(parsed.stream_id)
    return [
        BinTensorFile(
            folder,
            disk_name,
            parsed.op_type,
            parsed.op_name,
            task,
            stream,
            parsed.timestamp,
            t.io,
            t.slot,
            t.format_name,
            None,
            t,
        )
        for t in (*dump.inputs, *dump.outputs)
    ]


def read_bin_file(f: BinTensorFile, root: Path | str, max_bytes: int | None = None) -> np.ndarray:
    """The tensor's values (host layout when converted, else raw in its device shape), read
    into memory: at most `max_bytes` (`TensorTooLargeError`, before allocating).

    Discovery refused every link leaving the dump; a file that is a link now (swapped in
    since) is resolved and confined to `root`, as `tensor_store.load_npy` does."""
    path = f.fspath
    if os.path.islink(path):
        try:
            resolved = Path(path).resolve(strict=True)
        except (OSError, RuntimeError):
            resolved = None  # dangling or looping: opening it says so below
        if resolved is not None and not resolved.is_relative_to(Path(root).resolve()):
            raise TensorOutsideRootError(
                path, f"{f.name} points outside the dump folder and is refused."
            )
    if max_bytes is not None and f.bin.size > max_bytes:
        # bin_dump refuses it too; here the sentence matches the .npy reader's
        raise TensorTooLargeError(
            path,
            f"{f.name} holds {f.bin.size:,} bytes in its {f.io} {f.slot}, more than the memory "
            f"limit of {max_bytes:,}.",
            f.bin.size,
            max_bytes,
        )
    return read_bin_slot(path, f.bin, max_bytes=max_bytes)


def read_raw(f: TensorFile) -> bool:
    """Whether `f` is a `.bin` tensor read raw (its device format not converted)."""
    return isinstance(f, BinTensorFile) and not f.bin.converted


def raw_sentence(f: TensorFile, shown: str) -> str | None:
    """One sentence when `f` is a `.bin` tensor read raw (`read_raw`), naming the format and
    why; None for every other tensor. `shown`: the file as messages name it."""
    if not isinstance(f, BinTensorFile) or f.bin.converted:  # read_raw, spelled for mypy
        return None
    t = f.bin
    layout = "its device shape " + _shape_text(t.shape) if t.shape else "flat"
    kind = dtype_label(t.dtype) if t.dtype is not None else "raw bytes"
    if t.format_name.startswith("format "):  # a number the proto does not name
        where = f"an unknown device format (number {t.format})"
    else:
        where = f"device format {t.format_name}"
    # the reason adds nothing when it only says that the format is not converted
    why = "" if t.reason.endswith(("is not converted", "is unknown")) else f" ({t.reason})"
    return (
        f"{shown} {t.io} {t.slot} is in {where}, not converted to the host layout{why}: its "
        f"{kind} values are used raw, in {layout}."
    )


def converted_fit(f: TensorFile) -> tuple[np.dtype, tuple[int, ...]] | None:
    """The (dtype, host shape) a converted `.bin` tensor reads as, known from its header
    without reading it (the index checks them against the graph as it does `.npy` headers);
    None for any other file and for raw tensors (their device shape is no host shape)."""
    if not isinstance(f, BinTensorFile):
        return None
    t = f.bin
    if not t.converted or t.dtype is None or t.host_shape is None:
        return None
    return t.dtype, t.host_shape


def _shape_text(shape: tuple[int, ...]) -> str:
    # shortened: a header may give a shape of a million dimensions (one clause, not 6 MB)
    return shape_text(shape)
