"""`statistic.csv` (spec §5.3): both column layouts, columns mapped by header name.

Older MindSpore writes a fixed 20-column header; newer MindSpore writes a fixed 10-column
prefix then one column per configured `statistic_category`, and spells `NaN Count` as
`Nan Count`. Header names are therefore matched case-insensitively and unknown columns are
kept only in `raw`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from tuidebug.offline.files.regular_file import FileTooLargeError, NotRegularFileError, read_regular

# A statistic.csv row is ~200 bytes, and a read row costs ~1 KiB of Python objects: 256 MiB
# is ~1.3 M tensors (far beyond a real iteration) and about 1.5 GiB once read, where 1 GiB
# would have been 6 GiB.
MAX_STATISTIC_BYTES = 256 << 20

# header (lower case) → key in StatisticRow.stats
STAT_COLUMNS: dict[str, str] = {
    "max value": "max",
    "min value": "min",
    "avg value": "avg",
    "count": "count",
    "negative zero count": "neg_zero_count",
    "positive zero count": "pos_zero_count",
    "nan count": "nan_count",
    "negative inf count": "neg_inf_count",
    "positive inf count": "pos_inf_count",
    "zero count": "zero_count",
    "l2norm value": "l2norm",
    "l2 value": "l2norm",  # the fixed 22-column header of some 2.x versions
    "md5": "md5",
}
_INT_STATS = frozenset(
    {
        "count",
        "neg_zero_count",
        "pos_zero_count",
        "nan_count",
        "neg_inf_count",
        "pos_inf_count",
        "zero_count",
    }
)
_REQUIRED = {"op name": "Op Name", "io": "IO", "slot": "Slot"}


class StatisticCsvError(ValueError):
    """A statistic.csv that cannot be read at all; the message is one sentence."""


@dataclass(frozen=True)
class StatisticRow:
    """One tensor's statistics. `stats` holds the known statistic columns present in the
    file under the keys of `STAT_COLUMNS` (None when a cell is empty or not a number);
    `raw` is the row as written, keyed by the header as written (MindInsight's row dict)."""

    op_type: str
    op_name: str
    task_id: str
    stream_id: str
    timestamp: int | None
    io: str
    slot: int
    data_size: int | None
    data_type: str
    shape: tuple[int, ...] | None
    stats: dict[str, float | int | str | None]
    raw: dict[str, str] = field(repr=False)

    @property
    def key(self) -> str:
        """MindInsight's key for the row: `"{Op Name}:{IO}:{Slot}"`."""
        return f"{self.op_name}:{self.io}:{self.slot}"


@dataclass
class StatisticTable:
    path: Path
    columns: list[str]
    rows: list[StatisticRow]
    problems: list[str]


def read_statistic_csv(path: Path, label: str | None = None) -> StatisticTable:
    """Read one statistic.csv. Raises StatisticCsvError when the file is unusable as a whole;
    rows that cannot be read are skipped and counted in `problems`. `label` is how the file is
    named in messages (default: the path)."""
    shown = label or str(path)
    try:
        data = read_regular(path, MAX_STATISTIC_BYTES)  # a FIFO is refused, never waited on
    except FileTooLargeError:
        raise StatisticCsvError(
            f"{shown} is larger than the {MAX_STATISTIC_BYTES:,}-byte limit for a "
            "statistic.csv, so it was not read."
        ) from None
    except NotRegularFileError as err:
        raise StatisticCsvError(f"{shown} is {err.strerror}; it was not read.") from None
    except OSError as err:
        raise StatisticCsvError(f"cannot read {shown}: {_reason(err)}.") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise StatisticCsvError(f"{shown} is not UTF-8 text.") from err
    return parse_statistic_csv(text, path, shown)


def _reason(err: OSError) -> str:
    """The reason alone (never `str(err)`, which repeats the path in another form), with
    its first letter lowered to continue a sentence; the path is named by the caller."""
    text = (err.strerror or type(err).__name__).rstrip(".")
    return text[:1].lower() + text[1:]


def parse_statistic_csv(text: str, path: Path, label: str) -> StatisticTable:
    try:
        return _parse(text, path, label)
    except csv.Error as err:
        # e.g. a field over the csv module's size limit: no statistic is that long
        raise StatisticCsvError(f"{label} is not a valid CSV file ({err}).") from None


def _parse(text: str, path: Path, label: str) -> StatisticTable:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise StatisticCsvError(f"{label} is empty: it has no header row.")
    columns = [h.strip() for h in header]
    lower = [c.lower() for c in columns]
    where = {name: i for i, name in enumerate(lower)}
    missing = [c for c in _REQUIRED if c not in where]
    if missing:
        raise StatisticCsvError(
            f"{label} has no {' or '.join(repr(_REQUIRED[m]) for m in missing)} column, "
            "so its rows cannot be tied to tensors."
        )
    stat_at = [(i, STAT_COLUMNS[name]) for i, name in enumerate(lower) if name in STAT_COLUMNS]

    def cell(row: list[str], name: str) -> str:
        i = where.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    rows: list[StatisticRow] = []
    bad = nul = 0
    for row in reader:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if any("\0" in c for c in row):
            # MindSpore never writes a NUL: the row is damaged, whatever it names
            nul += 1
            continue
        slot = _to_int(cell(row, "slot"))
        if len(row) != len(columns) or slot is None:
            bad += 1
            continue
        stats: dict[str, float | int | str | None] = {}
        for i, key in stat_at:
            value = row[i].strip()
            if key == "md5":
                stats[key] = value or None
            elif key in _INT_STATS:
                stats[key] = _to_int(value)
            else:
                stats[key] = _to_float(value)
        rows.append(
            StatisticRow(
                op_type=cell(row, "op type"),
                op_name=cell(row, "op name"),
                task_id=cell(row, "task id"),
                stream_id=cell(row, "stream id"),
                timestamp=_to_int(cell(row, "timestamp")),
                io=cell(row, "io").lower(),
                slot=slot,
                data_size=_to_int(cell(row, "data size")),
                data_type=cell(row, "data type"),
                shape=_to_shape(cell(row, "shape")),
                stats=stats,
                raw=dict(zip(columns, row, strict=False)),
            )
        )
    problems = []
    if bad:
        problems.append(
            f"{label}: skipped {bad} row{'s' if bad != 1 else ''} whose column count or slot "
            "does not fit the header."
        )
    if nul:
        problems.append(
            f"{label}: skipped {nul} row{'s' if nul != 1 else ''} holding NUL bytes, which "
            "MindSpore never writes."
        )
    return StatisticTable(path=path, columns=columns, rows=rows, problems=problems)


def _to_int(text: str) -> int | None:
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
        return int(value) if value.is_integer() else None


def _to_float(text: str) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _to_shape(text: str) -> tuple[int, ...] | None:
    """`"(32,6,28,28)"`, `[32, 6]`, `()` → a tuple; anything else → None."""
    inner = text.strip().strip("()[]").strip()
    if not inner:
        return () if text.strip() in ("()", "[]") else None
    try:
        return tuple(int(p) for p in inner.split(",") if p.strip())
    except ValueError:
        return None
