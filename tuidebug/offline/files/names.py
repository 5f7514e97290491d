"""The grammar of MindSpore dump file names (spec §5.1, §5.2).

Two tensor file grammars exist, both parsed from the right because op names may contain
dots (`Parameter.moments.fc1.weight.…`):

* ≤ 2.3: `{op_type}.{op_name}.{task}.{stream}.{timestamp}.{input|output}.{slot}.{format}.npy`
* ≥ 2.4: `{op_type}.{op_name}.{task}.{stream}.{timestamp}.{input|output}.{slot}.{format}.{dtype}.npy`

They are told apart by position alone: with `.npy` cut off, the old grammar has
`input|output` 3rd from the right followed by a digit slot, the new one has it 4th from the
right. A component cannot be both `input|output` and a run of digits, so the two tests never
both pass, whatever the op name holds.

Nothing here touches the file system.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

IO_NAMES = frozenset({"input", "output"})
# The numbers of a dump file name (task, stream, timestamp, slot) are at most uint64's 20
# digits. A longer one is no MindSpore name: a `mapping.csv` row (untrusted text, not bound
# by the file system's 255 bytes) may hold thousands of digits, and int() of more than 4,300
# raises ValueError (CPython's limit), which would stop the listing of the whole folder.
MAX_NAME_DIGITS = 20

# Names MindSpore itself writes into iteration folders that are not tensors.
STATISTIC_CSV = "statistic.csv"
MAPPING_CSV = "mapping.csv"
_OVERFLOW_PREFIX = "Opdebug.Node_OpDebug."

# `{op_type}.{op_name}.{task}.{stream}.{timestamp}` with no extension: an Ascend async dump
# in `bin` format, which needs CANN's msaccucmp to become .npy.
_ASYNC_BIN = re.compile(r"[^.]+\..+\.\d+\.\d+\.\d+")
_DATA_CONSTANT = re.compile(r"(data-\d+)$")
# one string object for each repeated part of tensor file names (the same op name at every
# iteration, the same types everywhere), so a big dump keeps each once
_intern = sys.intern


@dataclass(frozen=True, slots=True)
class TensorFile:
    """One tensor file of a dump, described by its name only (the file is never opened here).

    `op_name` is the name as written on disk: a short kernel name (`Conv2D-op77`, ≤ 2.3), the
    full scope name with `/` → `_` (≥ 2.4), a parameter name, or `data-N`/`cstN` for constants.
    `dtype` is the original MindSpore type name of ≥ 2.4 names (`Float32`, `BFloat16`…), None
    in the older grammar.

    A dump may hold hundreds of thousands of these, so each holds its folder (one string
    shared by the whole folder) and its name rather than a `Path` (~0.5 KiB and ~5 µs each);
    the repeated parts of names (types, io, format, op names across iterations) are interned.
    `path` builds the `Path` on demand; `fspath` is the plain string, cheaper to open.
    """

    folder: str
    name: str  # the name on disk (a `mapping.csv` may give the tensor another)
    op_type: str
    op_name: str
    task_id: str
    stream_id: str
    timestamp: int
    io: str
    slot: int
    format: str
    dtype: str | None

    @property
    def path(self) -> Path:
        return Path(self.folder, self.name)

    @property
    def fspath(self) -> str:
        """The path as a string (what `open` takes), without building a `Path`. (Not
        `os.path.join`: its checks cost ~5 µs, which a dump of 100,000 files pays per file;
        `name` is a bare file name and `folder` a listed folder.)"""
        folder = self.folder
        return folder + self.name if folder.endswith(os.sep) else folder + os.sep + self.name

    @property
    def is_output(self) -> bool:
        return self.io == "output"


def parse_tensor_file_name(name: str, directory: str | os.PathLike[str] = "") -> TensorFile | None:
    """Parse a tensor file name of either grammar; None when `name` is not one.

    `directory` only builds `TensorFile.path`; nothing is read. Pass one string object for
    every file of a folder: each file then shares it.
    """
    if not name.endswith(".npy"):
        return None
    parts = name[:-4].split(".")
    n = len(parts)
    # Smallest names: 8 components (old grammar), 9 (with dtype).
    if n >= 9 and parts[-4] in IO_NAMES and parts[-3].isdigit():
        io_at, dtype = n - 4, _intern(parts[-1])
    elif n >= 8 and parts[-3] in IO_NAMES and parts[-2].isdigit():
        io_at, dtype = n - 3, None
    else:
        return None
    timestamp = parts[io_at - 1]
    if not timestamp.isdigit() or not timestamp.isascii():
        return None
    op_type = parts[0]
    op_name = ".".join(parts[1 : io_at - 3])
    if not op_type or not op_name:
        return None
    fmt = parts[io_at + 2]
    if not fmt or (dtype is not None and not dtype):
        return None
    slot = parts[io_at + 1]
    if not slot.isascii() or len(slot) > MAX_NAME_DIGITS or len(timestamp) > MAX_NAME_DIGITS:
        return None
    folder = directory if isinstance(directory, str) else os.fspath(directory)
    return TensorFile(
        folder,
        name,
        _intern(op_type),
        _intern(op_name),
        _intern(parts[io_at - 3]),
        _intern(parts[io_at - 2]),
        int(timestamp),
        _intern(parts[io_at]),
        int(slot),
        _intern(fmt),
        dtype,
    )


class FileKind(str, Enum):
    """What a file found in an iteration folder is, judged by its name."""

    TENSOR = "tensor"  # a .npy of either grammar
    STATISTIC = "statistic"  # statistic.csv
    MAPPING = "mapping"  # mapping.csv (async dumps with over-long names)
    KERNEL_ARGS = "kernel_args"  # {op_type}.{op_name}.json (save_kernel_args, ≥ 2.4)
    OVERFLOW = "overflow"  # Opdebug.Node_OpDebug.{task}.{stream}.{timestamp} (Ascend)
    ASYNC_BIN = "async_bin"  # unconverted Ascend async dump file
    UNKNOWN = "unknown"


def classify_file_name(name: str) -> FileKind:
    """Name-only classification of a file in an iteration folder (tensor names excepted:
    callers parse those with `parse_tensor_file_name` first)."""
    if name == STATISTIC_CSV:
        return FileKind.STATISTIC
    if name == MAPPING_CSV:
        return FileKind.MAPPING
    if name.startswith(_OVERFLOW_PREFIX):
        return FileKind.OVERFLOW
    if name.endswith(".npy"):
        return FileKind.TENSOR if parse_tensor_file_name(name) else FileKind.UNKNOWN
    if name.endswith(".json") and name.count(".") >= 2:
        return FileKind.KERNEL_ARGS
    if _ASYNC_BIN.fullmatch(name):
        return FileKind.ASYNC_BIN
    return FileKind.UNKNOWN


def parse_mapping_csv(text: str, names: Collection[str] | None = None) -> dict[str, str]:
    """`mapping.csv` rows `<on-disk name>,<real file name>` → {on-disk name: real name}.

    With `names` (the files of the folder), only rows for those names (or those names
    without `.npy`) are kept. Rows that do not have two non-empty fields are skipped.
    Raises ValueError, with the csv module's reason, for text it cannot split (a field
    longer than its limit, which no file name is).
    """
    # read with an iteration folder's files, after the TUI's first frame: the dump's
    # layout, which the start lists, needs this module's other names (issue 28)
    import csv
    import io

    mapping: dict[str, str] = {}
    try:
        for row in csv.reader(io.StringIO(text)):
            if len(row) >= 2 and row[0].strip() and row[1].strip():
                key = row[0].strip()
                if names is None or key in names or key + ".npy" in names:
                    mapping[key] = row[1].strip()
    except csv.Error as err:
        raise ValueError(str(err)) from None
    return mapping


def encode_dump_name(name: str) -> str:
    """A graph name as MindSpore ≥ 2.4 spells it in a file name: `/`, `\\`, `.` and spaces
    become `_` (`Default/fc1-Dense/MatMul-op0` → `Default_fc1-Dense_MatMul-op0`,
    `fc1.weight` → `fc1_weight`). Encoding is lossy, so names are only ever encoded, never
    decoded: the index encodes every graph node and looks files up by the result."""
    return name.translate(_ENCODE)


_ENCODE = str.maketrans({"/": "_", "\\": "_", ".": "_", " ": "_"})


def constant_data_name(dump_name: str) -> str | None:
    """The `data-N` a constant's files are named by, from its dump name (`Default--data-3`
    in 2.0, `Default_data-3` in 2.10), or None."""
    m = _DATA_CONSTANT.search(dump_name)
    return m.group(1) if m else None


def show_name(name: str) -> str:
    """A file name fit for a message: names that are not valid UTF-8 (decoded by Python with
    surrogate escapes) are shown as their escaped bytes."""
    if is_utf8_name(name):
        return name
    return repr(os.fsencode(name))[2:-1]


def is_utf8_name(name: str) -> bool:
    """False for names that are not valid UTF-8 on disk (they hold lone surrogates after
    `os.fsdecode`)."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
