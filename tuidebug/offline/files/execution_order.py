"""Readers for `execution_order/` (spec §5.4): the kernel execution order of a graph and the
graph execution history (the iterations in which a root graph ran)."""

from __future__ import annotations

from pathlib import Path

from tuidebug.offline.files.regular_file import FileTooLargeError, NotRegularFileError, read_regular

MAX_ORDER_BYTES = 256 << 20  # one kernel name per line; 256 MiB is millions of kernels
# One iteration number per line: 32 MiB is ~4 million steps. Every listed iteration becomes a
# graph run (a Python object of ~100 bytes), so the cap is what bounds that list.
MAX_HISTORY_BYTES = 32 << 20
EXECUTION_ORDER_HEADER = "NodeExecutionOrder-FullNameWithScope"
_MAX_ITERATION_DIGITS = 20


class OrderFileError(ValueError):
    """An execution-order or history file that cannot be read; the message is one sentence."""


def _read_text(path: Path, label: str, limit: int = MAX_ORDER_BYTES) -> str:
    try:
        data = read_regular(path, limit)  # a FIFO is refused, never waited on
    except FileTooLargeError:
        raise OrderFileError(
            f"{label} is larger than the {limit:,}-byte limit, so it was not read."
        ) from None
    except NotRegularFileError as err:
        raise OrderFileError(f"{label} is {err.strerror}; it was not read.") from None
    except OSError as err:
        reason = (err.strerror or type(err).__name__).rstrip(".")
        raise OrderFileError(f"cannot read {label}: {reason[:1].lower() + reason[1:]}.") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise OrderFileError(f"{label} is not UTF-8 text.") from err


def read_execution_order(path: Path, label: str | None = None) -> list[str]:
    """Kernel full names in execution order. The header line is optional (older versions
    write none) and matched case-insensitively; blank lines are ignored."""
    text = _read_text(path, label or str(path))
    names = [line.strip() for line in text.splitlines()]
    names = [n for n in names if n]
    if names and names[0].lower() == EXECUTION_ORDER_HEADER.lower():
        names = names[1:]
    return names


def read_graph_history(path: Path, label: str | None = None) -> tuple[list[int], int]:
    """(iterations in file order, number of lines that are not an iteration number).

    MindInsight reads column 0 of each row as an int and fails on anything else; here
    such lines are counted so the caller can report them, and the rest is kept."""
    text = _read_text(path, label or str(path), MAX_HISTORY_BYTES)
    iterations: list[int] = []
    bad = 0
    for line in text.splitlines():
        first = line.split(",", 1)[0].strip()
        if not first:
            continue
        # at most 20 digits (uint64): int() of more than 4,300 raises ValueError, and no
        # training runs 10**20 steps, so a longer run of digits is a bad line like any other
        if first.isdigit() and first.isascii() and len(first) <= _MAX_ITERATION_DIGITS:
            iterations.append(int(first))
        else:
            bad += 1
    return iterations, bad
