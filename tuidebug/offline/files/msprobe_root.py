"""Finding an msprobe dump (issue 29): the root of `step<N>/` folders, one step folder or
one proc/rank folder, and its steps and ranks, from folder names and the presence of a
`dump.json` alone (no file is read).

`cli.launch` asks `is_msprobe_root` of every folder `tuidebug offline` opens, before the
TUI's first frame; `files.msprobe` (the readers of `dump.json`, `stack.json` and
`construct.json`, and `find_msprobe_root`, which makes an `MsprobeRoot` of what is found
here: nine dataclasses and their regexes) loads only when an msprobe dump is opened,
checked or compared (issue 28's cold start).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["MAX_LISTED", "FoundSteps", "is_msprobe_root", "msprobe_steps"]

# Folders listed at most while looking for steps and ranks: a real run has tens of steps and
# 8+ ranks; a hostile tree of millions of folders costs a bounded listing and one sentence.
MAX_LISTED = 100_000

_STEP_DIR = re.compile(r"step(\d+)", re.ASCII)
_RANK_DIR = re.compile(r"rank(\d*)|proc(\d+)", re.ASCII)

# what `msprobe_steps` finds: the root's real path, step → rank → the folder holding that
# rank's dump.json, and the problems met (plain values: `msprobe.MsprobeRoot` is built from
# them only where the dump is read, and its dataclasses cost the start nothing)
FoundSteps = tuple[str, dict[int, dict[int, Path]], list[str]]


def _dirs(path: str, problems: list[str], budget: list[int]) -> list[tuple[str, str]]:
    """(name, path) of the real sub-folders of `path`, symlinks excluded (a link may leave
    the dump), listing at most `budget[0]` entries over the whole search."""
    out: list[tuple[str, str]] = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                budget[0] -= 1
                if budget[0] < 0:
                    problems.append(
                        f"more than {MAX_LISTED:,} entries were met looking for msprobe "
                        "steps and ranks; the rest were not read."
                    )
                    break
                if entry.is_dir(follow_symlinks=False):
                    out.append((entry.name, entry.path))
    except OSError:
        return []
    return out


def _has_dump_json(path: str) -> bool:
    try:
        return os.path.isfile(os.path.join(path, "dump.json")) and not os.path.islink(
            os.path.join(path, "dump.json")
        )
    except OSError:
        return False


def _rank_folders(step_dir: str, problems: list[str], budget: list[int]) -> dict[int, Path]:
    named: dict[int, Path] = {}
    procs: list[tuple[int, str]] = []
    for name, path in sorted(_dirs(step_dir, problems, budget)):
        m = _RANK_DIR.fullmatch(name)
        if not m or not _has_dump_json(path):
            continue
        if m.group(2) is not None:
            procs.append((int(m.group(2)), path))
            continue
        rank = int(m.group(1) or 0)
        if rank in named:
            # `rank` and `rank0`, `rank1` and `rank01`: one rank, two folders; one is read,
            # and the other is said, never silently dropped
            problems.append(
                f"{path} and {named[rank]} both name rank {rank}; only {named[rank]} is read."
            )
            continue
        named[rank] = Path(path)
    if procs and named:
        problems.append(
            f"{step_dir} holds both rank and proc folders; only the rank folders are read."
        )
    if not named:
        # proc<pid>: numbered in pid order (a pid is no rank), the same pid the same rank
        named = {i: Path(p) for i, (_pid, p) in enumerate(sorted(procs))}
    return named


def msprobe_steps(root: str | os.PathLike[str]) -> FoundSteps | None:
    """The msprobe dump at `root`: a folder of `step<N>/`, one step folder (its proc/rank
    folders are step 0's ranks… named by the folder's number when it is `step<N>`), or one
    proc/rank folder (a dump.json in it), as (its real path, step → rank → the folder
    holding that rank's dump.json, in step order, problems met); None when `root` is none
    of these. `msprobe.find_msprobe_root` makes an `MsprobeRoot` of it."""
    path = os.path.realpath(os.fspath(root))
    if not os.path.isdir(path):
        return None
    problems: list[str] = []
    budget = [MAX_LISTED]
    base = os.path.basename(path)
    if _has_dump_json(path):
        m = _RANK_DIR.fullmatch(base)
        rank = int(m.group(1)) if m and m.group(1) else 0
        parent = _STEP_DIR.fullmatch(os.path.basename(os.path.dirname(path)))
        step = int(parent.group(1)) if parent else 0
        return path, {step: {rank: Path(path)}}, problems
    ranks = _rank_folders(path, problems, budget)
    if ranks:
        m = _STEP_DIR.fullmatch(base)
        step = int(m.group(1)) if m else 0
        return path, {step: ranks}, problems
    steps: dict[int, dict[int, Path]] = {}
    for name, sub in sorted(_dirs(path, problems, budget)):
        m = _STEP_DIR.fullmatch(name)
        if not m:
            continue
        found = _rank_folders(sub, problems, budget)
        step = int(m.group(1))
        if found and step in steps:
            # `step1` and `step01`: the first in name order is read, the other said
            first = next(iter(steps[step].values())).parent
            problems.append(f"{sub} and {first} both name step {step}; only {first} is read.")
        elif found:
            steps[step] = found
    if not steps:
        return None
    return path, dict(sorted(steps.items())), problems


def is_msprobe_root(root: str | os.PathLike[str]) -> bool:
    """Whether `root` is an msprobe dump (see `msprobe_steps`), without reading a file."""
    return msprobe_steps(root) is not None
