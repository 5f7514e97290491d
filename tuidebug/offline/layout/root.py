"""`DumpLayout`: the dump root and its ranks (spec §5.5 discovery, first step).

A synchronous dump holds `rank_<N>/` folders, each read by `layout.RankLayout`; without
them the root may be an Ascend asynchronous dump (`{time}/{device_id}/…`, read by
`async_layout`). This module sits above both so neither imports the other's caller.
"""

from __future__ import annotations

import os
from pathlib import Path

from tuidebug.offline.files.listing import Entry, Scanner
from tuidebug.offline.files.metadata import DumpSettings
from tuidebug.offline.files.names import show_name
from tuidebug.offline.layout.async_rank import async_trees, discover_async
from tuidebug.offline.layout.errors import DumpError
from tuidebug.offline.layout.sync_rank import _RANK_DIR, RankLayout

__all__ = ["DumpLayout"]


class DumpLayout:
    """A MindSpore dump folder: its ranks and settings. Build it with `DumpLayout.open`."""

    def __init__(
        self,
        root: Path,
        ranks: dict[int, RankLayout],
        settings: DumpSettings,
        problems: list[str],
    ) -> None:
        self.root = root
        self.ranks = ranks
        self.settings = settings
        self._problems = problems

    def __repr__(self) -> str:
        return f"DumpLayout({str(self.root)!r}, ranks={self.rank_ids})"

    @classmethod
    def open(cls, root: str | os.PathLike[str]) -> DumpLayout:
        """Discover the dump under `root` (the folder holding `rank_<N>/`).

        Raises DumpError when nothing is usable: `root` missing or not a folder, or no rank
        folder in it. Everything else is collected in `problems`.
        """
        path = os.fspath(root)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path.strip():
            raise DumpError("the dump folder path is empty; give the folder holding rank_0/.")
        given = show_name(path)  # a name that is not UTF-8 is shown as its escaped bytes
        if "\0" in path or not os.path.exists(path):
            raise DumpError(f"{given} does not exist.")
        if not os.path.isdir(path):
            raise DumpError(
                f"{given} is not a folder; give the MindSpore dump folder (the one holding "
                "rank_0/)."
            )
        real = os.path.realpath(path)
        scanner = Scanner(real)
        problems: list[str] = []
        entries = scanner.scan(real, problems)
        if entries is None:
            raise DumpError(problems[0] if problems else f"cannot read the folder {given}.")
        rank_entries: dict[int, Entry] = {}
        for e in entries:
            m = _RANK_DIR.fullmatch(e.name)
            if not m or not e.is_dir or not e.name.isascii():
                continue
            rid = int(m.group(1))
            if rid in rank_entries:
                problems.append(
                    f"{e.name} and {rank_entries[rid].name} are the same rank {rid}; "
                    f"only {rank_entries[rid].name} is read."
                )
                continue
            rank_entries[rid] = e
        if not rank_entries:
            # no rank_N/: perhaps an Ascend asynchronous layout ({time}/{device_id}/…)
            found = discover_async(real, scanner, problems)
            if found is not None:
                first = next(iter(found.ranks.values()))
                return cls(Path(real), dict(found.ranks), first.settings, [found.notice, *problems])
            hint = ""
            if _RANK_DIR.fullmatch(os.path.basename(real.rstrip(os.sep))):
                hint = " (it looks like a rank folder itself: give its parent folder)"
            elif refused_ranks := [
                e.refused for e in entries if e.refused and _RANK_DIR.fullmatch(e.name)
            ]:
                # rank_0 is a link leaving the folder: say so, not "no rank". Only a refused
                # rank_<N> explains the missing rank; a link deep in an unrelated folder
                # (met while looking for an asynchronous layout) is noise here.
                hint = f" that can be read ({refused_ranks[0].rstrip('.')})"
            raise DumpError(
                f"{given} holds no rank_<N> folder, so it is not a MindSpore dump folder{hint}."
            )
        # Settings come from the first rank that has .dump_metadata (MindInsight: rank 0).
        settings = DumpSettings()
        ranks: dict[int, RankLayout] = {}
        for rid in sorted(rank_entries):
            rank = RankLayout(rid, Path(rank_entries[rid].path), scanner, settings.net_name)
            if settings.source is None and rank.settings.source is not None:
                settings = rank.settings
            ranks[rid] = rank
        if not any(r.graph_files or r.dumped_iterations for r in ranks.values()):
            names = ", ".join(f"rank_{rid}" for rid in sorted(ranks))
            raise DumpError(
                f"{given} has no graph file and no tensor data in its rank folders ({names})."
            )
        _name_async_trees(
            real, scanner, frozenset(e.name for e in rank_entries.values()), ranks, problems
        )
        return cls(Path(real), ranks, settings, problems)

    @property
    def rank_ids(self) -> list[int]:
        return sorted(self.ranks)

    def rank(self, rank_id: int) -> RankLayout:
        try:
            return self.ranks[rank_id]
        except KeyError:
            raise KeyError(
                f"rank {rank_id} is not in the dump (ranks: {', '.join(map(str, self.rank_ids))})"
            ) from None

    @property
    def problems(self) -> list[str]:
        """Every problem found so far, dump-level first, then rank by rank. Listing iteration
        folders (done lazily) can add more."""
        out = list(self._problems)
        for rid in self.rank_ids:
            out.extend(self.ranks[rid].problems)
        return out

    @property
    def iterations(self) -> list[int]:
        return sorted({i for r in self.ranks.values() for i in r.iterations})

    @property
    def step_count(self) -> int:
        return max((r.step_count for r in self.ranks.values()), default=0)


def _name_async_trees(
    root: str,
    scanner: Scanner,
    rank_names: frozenset[str],
    ranks: dict[int, RankLayout],
    problems: list[str],
) -> None:
    """A synchronous dump reads its `rank_N/` folders only: an Ascend asynchronous tree
    beside them is named in one sentence, and counts as unread data of every watched graph
    (its devices may be these ranks), so a check that skips it is incomplete, never clean."""
    for top in async_trees(root, scanner, rank_names):
        sentence = (
            f"The folder {scanner.show(os.path.join(root, top))} holds an Ascend asynchronous dump beside "
            "the rank_N folders, which alone are read, so its tensors were not checked."
        )
        problems.append(sentence)
        for rank in ranks.values():
            rank.add_blocker(sentence)
