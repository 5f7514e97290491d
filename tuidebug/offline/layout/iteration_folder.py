"""One iteration (or `constants/`) folder of a dump, listed once: its tensor files by name,
its `statistic.csv`, its overflow records, and what could not be read.

`.npy` tensor files are never opened here; each name is parsed (`filenames`), through the
folder's `mapping.csv` when MindSpore shortened over-long names. An Ascend `.bin` file
(`file_format: "bin"`) holds several tensors: its header alone is read, once, and gives one
`bin_files.BinTensorFile` per input and output; one whose header cannot be read is one
sentence (and a blocker), and the folder's other files are listed as usual. What is refused is kept,
not only reported: `IterationListing.refused` (entries named as a tensor that cannot be
read) and `IterationListing.blockers` (data that cannot be tied to one tensor) let the
checker tell a complete check from one that skipped watched data.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from tuidebug.offline.files.listing import MAX_NAMED_PER_FOLDER, Entry, Scanner, reason
from tuidebug.offline.files.names import (
    MAPPING_CSV,
    FileKind,
    TensorFile,
    classify_file_name,
    parse_mapping_csv,
    parse_tensor_file_name,
    show_name,
)
from tuidebug.offline.files.regular_file import FileTooLargeError, NotRegularFileError, read_regular

# A mapping.csv row is one short name and one file name (< 300 bytes): 64 MiB is > 200,000
# files with over-long names, far more than a real iteration folder holds.
MAX_MAPPING_BYTES = 64 << 20


@dataclass
class IterationListing:
    """One listed iteration (or constants) folder."""

    path: Path
    tensor_files: list[TensorFile] = field(default_factory=list)
    statistic_csv: Path | None = None
    overflow_files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # refused entries whose name is a tensor file's (after mapping.csv), with the sentence
    # saying why: the tensor exists but cannot be read
    refused: list[tuple[TensorFile, str]] = field(default_factory=list)
    # sentences about data here that could not be read and cannot be tied to one tensor
    # (the folder itself, a refused mapping.csv, a refused entry with a name that says
    # nothing): any watched tensor of this folder may be among it
    blockers: list[str] = field(default_factory=list)


def list_iteration_folder(
    folder: Path, scanner: Scanner, *, skip_dirs: bool = False
) -> IterationListing:
    """List `folder` once: its tensor files, statistics, overflow records and problems.
    `skip_dirs`: its sub-folders are part of the layout (an Ascend device folder holds its
    `{model_name}/` folders), not files that are no tensor files."""
    listing = IterationListing(folder)
    problems = listing.problems
    entries = scanner.scan(str(folder), problems)
    if entries is None:
        listing.blockers.extend(problems)  # the folder's data exists but is unread
        return listing
    mapping: dict[str, str] = {}
    for e in entries:
        if e.name != MAPPING_CSV:
            continue
        if e.refused is not None:
            # the files it names by number cannot be tied to their tensors
            listing.blockers.append(e.refused)
        elif e.is_file:
            names = {x.name for x in entries}
            mapping = _read_mapping(Path(e.path), names, scanner, problems, listing.blockers)
    directory = str(folder)  # one string shared by every file of the folder
    files = listing.tensor_files
    garbage: list[str] = []
    folders: list[str] = []
    bad_bins: list[str] = []
    # what this folder's .bin headers may cost (a share of the dump's: files/budget.py)
    bins = scanner.bin_budget.iteration()
    for e in entries:
        name = e.name
        if e.refused is not None:
            _refused_entry(listing, e, mapping, directory)
            continue
        if not e.is_file:
            if not (skip_dirs and e.is_dir):
                # its name may well be a tensor file's: the reason is what it is
                (folders if e.is_dir else garbage).append(name)
            continue
        parsed = (
            _tensor_name(name, directory, mapping)
            if mapping
            else parse_tensor_file_name(name, directory)
        )
        if parsed is not None:
            # the name tells what the tensor is; the path stays the file on disk
            files.append(parsed if parsed.name == name else _on_disk(parsed, name))
            continue
        kind = classify_file_name(name)
        real = mapping.get(name)
        if real is not None and kind is FileKind.UNKNOWN:
            kind = classify_file_name(real)  # a number standing for a long .bin name
        if kind is FileKind.ASYNC_BIN:
            # one tensor per input and output, from the header (read once, here); the
            # readers (numpy, protobuf) load with the first such file, not with the layout
            # (`tuidebug offline` lists the dump before its first frame: issue 28)
            from tuidebug.offline.files.bin import BinBudgetError
            from tuidebug.offline.files.bin_tensors import bin_tensor_files
            from tuidebug.offline.files.npy import TensorFileError

            try:
                files.extend(bin_tensor_files(directory, name, real or name, bins))
            except BinBudgetError:
                pass  # left unread by the budget: all such files are said in one sentence
            except TensorFileError as err:
                located = _located(scanner.show(folder / name), name, err.sentence)
                bad_bins.append(_naming_operator(located, real or name))
            continue
        if kind is FileKind.STATISTIC:
            listing.statistic_csv = Path(e.path)
        elif kind is FileKind.OVERFLOW:
            listing.overflow_files.append(Path(e.path))
        elif kind in (FileKind.MAPPING, FileKind.KERNEL_ARGS):
            pass
        elif real is not None or (name.endswith(".npy") and name[:-4] in mapping):
            # mapping.csv says this file is a tensor but names none: whichever tensor it
            # holds is lost, so a check of this folder is incomplete, never clean
            said = real if real is not None else mapping[name[:-4]]
            if len(said) > 120:  # a hostile name of thousands of characters: quoted short
                said = f"{said[:80]}…{said[-30:]}"
            sentence = (
                f"{scanner.show(folder / name)} is named {show_name(said)!r} by mapping.csv, "
                "which is not a MindSpore tensor file name, so its tensor is unknown and it "
                "was skipped."
            )
            problems.append(sentence)
            listing.blockers.append(sentence)
        elif name not in mapping:
            garbage.append(name)
    unread = bins.sentence(scanner.show(folder))
    if unread is not None:
        bad_bins.append(unread)  # their tensors are unknown, like an unreadable .bin's
    for sentence in bad_bins:
        # its operator is known by name, its tensors are not: any watched tensor of the
        # folder may be among them, so a check that misses one says why
        problems.append(sentence)
        listing.blockers.append(sentence)
    for name in sorted(garbage)[:MAX_NAMED_PER_FOLDER]:
        problems.append(
            f"{scanner.show(folder / name)} is not a MindSpore tensor file name; it was skipped."
        )
    for name in sorted(folders)[:MAX_NAMED_PER_FOLDER]:
        problems.append(
            f"{scanner.show(folder / name)} is a folder, where MindSpore writes only files; "
            "it was skipped."
        )
    if len(garbage) > MAX_NAMED_PER_FOLDER:
        problems.append(
            f"{scanner.show(folder)}: {len(garbage) - MAX_NAMED_PER_FOLDER} more files that "
            "are not MindSpore tensor file names were skipped."
        )
    return listing


def _naming_operator(sentence: str, file_name: str) -> str:
    """An unreadable `.bin`'s sentence naming what is lost: the tensors of the operator its
    name gives (`{op_type}.{op_name}.…`), which no header can list now."""
    parts = file_name.split(".")
    if len(parts) < 2 or not parts[1]:
        return sentence
    return f"{sentence.rstrip('.')}, so the tensors of {show_name(parts[1])} were not read."


def _located(shown: str, name: str, sentence: str) -> str:
    """A reader's sentence (it names the file by its base name) naming the file as the
    listing shows it, with its folder: every iteration folder may hold a file of that name."""
    return shown + sentence[len(name) :] if sentence.startswith(name) else sentence


def _tensor_name(name: str, directory: str, mapping: dict[str, str]) -> TensorFile | None:
    """The tensor an entry of an iteration folder holds, by its name or the name
    `mapping.csv` gives it; None when it is not a tensor file."""
    real = mapping.get(name) or (mapping.get(name[:-4]) if name.endswith(".npy") else None)
    if real is not None:
        if not real.endswith(".npy") and name.endswith(".npy"):
            real += ".npy"
        parsed = parse_tensor_file_name(real, directory)
        if parsed is not None:
            return parsed
    return parse_tensor_file_name(name, directory)


def _refused_entry(
    listing: IterationListing, e: Entry, mapping: dict[str, str], directory: str
) -> None:
    """Keep what a refused entry (already reported by the listing) means for checks.

    Named as a tensor: that tensor is unreadable (`refused`). Named as one of MindSpore's
    other files (statistic.csv, kernel args, overflow records): no watched tensor is
    lost. Any other name: it may be a tensor under a name only a `mapping.csv` knows,
    so it counts against every tensor of the folder (`blockers`) — a check may then
    report "incomplete" for a stray FIFO, never "clean" for a lost tensor."""
    assert e.refused is not None
    parsed = _tensor_name(e.name, directory, mapping)
    if parsed is not None:
        listing.refused.append((_on_disk(parsed, e.name), e.refused))
        return
    kind = classify_file_name(e.name)
    # a refused `.bin` holds tensors whose slots only its header could tell
    if kind in (FileKind.UNKNOWN, FileKind.TENSOR, FileKind.ASYNC_BIN) and e.name != MAPPING_CSV:
        listing.blockers.append(e.refused)


def _read_mapping(
    path: Path, names: set[str], scanner: Scanner, problems: list[str], blockers: list[str]
) -> dict[str, str]:
    """The rows of `mapping.csv` for the folder's own `names` (a hostile file of
    millions of rows costs a pass, not a dict of millions of entries)."""
    shown = scanner.show(path)
    try:
        text = read_regular(path, MAX_MAPPING_BYTES).decode("utf-8-sig")
        return parse_mapping_csv(text, names)
    except FileTooLargeError:
        problem = (
            f"{shown} is larger than {MAX_MAPPING_BYTES:,} bytes, too large to be a "
            "mapping.csv, so it was ignored."
        )
    except FileNotFoundError:
        return {}  # removed since the folder was listed: as if never there
    except NotRegularFileError as err:
        problem = f"{shown} is {err.strerror}; it was skipped."
    except OSError as err:
        problem = f"cannot read {shown}: {reason(err)}."
    except UnicodeDecodeError:
        problem = f"{shown} is not UTF-8 text, so it was ignored."
    except ValueError as err:  # a row the csv module refuses
        problem = f"{shown} is not a valid mapping.csv ({err}), so it was ignored."
    problems.append(problem)
    blockers.append(problem)  # the files it names by number are lost to their tensors
    return {}


def _on_disk(parsed: TensorFile, name: str) -> TensorFile:
    """`parsed` (named by `mapping.csv`) as the file it is on disk, `name`."""
    return replace(parsed, name=name)
