"""What the `.bin` headers of one dump may cost, over all its files (issue 27 §4).

Each `.bin` file is capped on its own (`bin.MAX_HEADER_BYTES`, `bin.MAX_SLOTS`), but one file
of 8 KiB may describe 4,096 empty tensors, and each becomes a tensor of the dump's index, a
node of the graph built from names and a task of a check (~0.1 ms and ~2 KiB each): 300 such
files (2.5 MB) made 1.2 million tensors, 150 s and 2.5 GB. So the headers of a dump are also
budgeted together: the tensors they describe and the header bytes read, per iteration folder
and per dump. A file the budget has no room for is not opened; the files left unread are
named in one sentence for their folder, a blocker of that iteration's checks, so the run is
incomplete, never clean.

The budgets are far above real dumps: an operator has a handful of inputs and outputs of a
few hundred header bytes each, and an iteration of a large network a few tens of thousands
of tensors. The dump's budget is spent only by the iteration folders that are listed (a
check lists those it checks; `--iteration` narrows it).
"""

from __future__ import annotations

from tuidebug.core.text import shortened

__all__ = [
    "MAX_HEADER_BYTES_PER_DUMP",
    "MAX_HEADER_BYTES_PER_ITERATION",
    "MAX_TENSORS_PER_DUMP",
    "MAX_TENSORS_PER_ITERATION",
    "BinBudget",
    "IterationBudget",
]

MAX_TENSORS_PER_ITERATION = 100_000
MAX_TENSORS_PER_DUMP = 500_000
MAX_HEADER_BYTES_PER_ITERATION = 32 << 20
MAX_HEADER_BYTES_PER_DUMP = 128 << 20
# unread files named in the budget's sentence (then counted)
NAMED = 3


class BinBudget:
    """The budget of one dump (its `Scanner` holds it): what is left of it."""

    # the limits are read when a budget is made, not bound as defaults: tests lower them
    def __init__(self) -> None:
        self.tensors = self.total_tensors = MAX_TENSORS_PER_DUMP
        self.header_bytes = self.total_header_bytes = MAX_HEADER_BYTES_PER_DUMP

    def iteration(self) -> IterationBudget:
        """The budget of one iteration folder, drawing on this dump's."""
        return IterationBudget(self, MAX_TENSORS_PER_ITERATION, MAX_HEADER_BYTES_PER_ITERATION)


class IterationBudget:
    """The budget of one iteration folder: `limits()` is what the next header may take,
    `spend` charges one header read, `refuse` records a file left unread, and `sentence`
    says which files were left unread and why (None when none was)."""

    def __init__(self, dump: BinBudget, tensors: int, header_bytes: int) -> None:
        self._dump = dump
        self.tensors = tensors
        self.header_bytes = header_bytes
        self._total_tensors = tensors
        self._total_header_bytes = header_bytes
        self.unread: list[str] = []
        # the budget that ran out, as a clause of the sentence; set by the first refusal
        self._why: str | None = None

    def limits(self) -> tuple[int, int]:
        """(tensors, header bytes) the next header may have; (0, 0) once a file was refused,
        so the files after it are not opened (the sentence names them all)."""
        if self._why is not None:
            return 0, 0
        return (
            min(self.tensors, self._dump.tensors),
            min(self.header_bytes, self._dump.header_bytes),
        )

    def spend(self, tensors: int, header_bytes: int) -> None:
        self.tensors -= tensors
        self.header_bytes -= header_bytes
        self._dump.tensors -= tensors
        self._dump.header_bytes -= header_bytes

    def refuse(self, name: str, header_bytes: int | None) -> None:
        """`name` is left unread: its header of `header_bytes` (None: not opened, a file
        was refused before it) needs more header bytes or tensors than are left."""
        self.unread.append(name)
        if self._why is not None:
            return
        dump = self._dump
        bytes_left = min(self.header_bytes, dump.header_bytes)
        if bytes_left <= 0 if header_bytes is None else header_bytes > bytes_left:
            if self.header_bytes <= dump.header_bytes:
                self._why = (
                    f"the .bin headers of this folder already take {self._spent_bytes():,} "
                    f"bytes of the {self._total_header_bytes:,} an iteration may have"
                )
            else:
                self._why = (
                    f"the dump's .bin headers already take "
                    f"{dump.total_header_bytes - dump.header_bytes:,} bytes of the "
                    f"{dump.total_header_bytes:,} a dump may have"
                )
        elif self.tensors <= dump.tensors:
            self._why = (
                f"the .bin headers of this folder already describe "
                f"{self._total_tensors - self.tensors:,} tensors of the "
                f"{self._total_tensors:,} an iteration may index"
            )
        else:
            self._why = (
                f"the dump's .bin headers already describe "
                f"{dump.total_tensors - dump.tensors:,} tensors of the "
                f"{dump.total_tensors:,} a dump may index"
            )

    def _spent_bytes(self) -> int:
        return self._total_header_bytes - self.header_bytes

    def sentence(self, folder: str) -> str | None:
        """One sentence naming the files left unread in `folder` (as messages show it)."""
        if not self.unread:
            return None
        names = sorted(self.unread)
        shown = ", ".join(shortened(n) for n in names[:NAMED])
        more = f" and {len(names) - NAMED:,} more" if len(names) > NAMED else ""
        files = "file was" if len(names) == 1 else "files were"
        return (
            f"{folder}: {len(names):,} .bin {files} not read ({shown}{more}), because "
            f"{self._why or 'the budget for .bin headers ran out'}, so their tensors were "
            "not checked."
        )
