"""Ascend asynchronous dump layouts (issue 16 item 2): no `rank_N/` folder, no graph file.

MindSpore's dump documentation (docs/mindspore/source_en/model_train/debug/dump.md, r2.3–2.5,
"Introduction to Data Object Directory and Data File" of the Ascend O2 / asynchronous
section) describes these folders under the configured `{path}`:

* GE dump at O2 (`ENABLE_MS_GE_DUMP=1`, and MindSpore ≤ 2.3's async dump):
  `{time}/{device_id}/{model_name}/{model_id}/{iteration_id}/` (5 levels, model_name a name)
* ACL dump at O2: `{step_id}/{time}/{device_id}/{model_id}/{iteration_id}/` (5 numeric levels;
  the zh page writes a `{model_name}/` level before `{model_id}` too: 6 levels)
* ACL dump at O0/O1: the same 6 levels for communication operators, and the aclop / aclnn
  operators directly in `{step_id}/{time}/{device_id}/` (3 levels). aclop files are named
  `{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`, aclnn files
  `{op_name}.{op_type}.{task_id}.{stream_id}.{timestamp}` (type and name swapped).

In every iteration folder: tensor files (`.npy` in the sync grammar of spec §5.2 with
`file_format: "npy"`, else protobuf `.bin` files with no extension), `statistic.csv`,
`mapping.csv` (`<number>,<real file name>` for names too long for the file system) and
overflow records `Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}[.output.0.json]`.
`task_id`/`stream_id` are 65535 when MindSpore could not get them.

What is assumed, said once in a Notice: `device_id` is the rank (MindSpore documents no
rank in these layouts; `support_device` selects devices), `step_id` (the user-side training
step) is the iteration when present, else GE's `iteration_id`; `model_id` is the graph-folder
id (the ACL device-level operators get one more id of their own). Folders of one
(device, model, iteration) under several `{time}` folders are read as one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tuidebug.offline.files.listing import MAX_NAMED_PER_FOLDER, Scanner
from tuidebug.offline.files.metadata import DumpSettings
from tuidebug.offline.files.names import FileKind, TensorFile, classify_file_name
from tuidebug.offline.layout.sync_rank import RankLayout

if TYPE_CHECKING:
    from tuidebug.offline.layout.iteration_folder import IterationListing

__all__ = ["AsyncDiscovery", "AsyncRankLayout", "async_trees", "discover_async", "is_aclnn_name"]

# Deepest documented folder: {step}/{time}/{device}/{model_name}/{model_id}/{iteration}.
_MAX_DEPTH = 6
# Folders visited at most while looking for the layout: a real dump has a few per device
# and step; a hostile tree of millions of folders costs a bounded walk and one sentence.
MAX_FOLDERS = 200_000
# `-op12` at the end of a MindSpore kernel name (scoped or not)
_OP_NUMBER = re.compile(r"-op\d+$")
_DATA_KINDS = frozenset(
    {FileKind.TENSOR, FileKind.ASYNC_BIN, FileKind.OVERFLOW, FileKind.STATISTIC}
)


@dataclass
class _Where:
    """One folder holding dump files, read as (rank, graph-folder id, iteration)."""

    path: Path
    device: int
    model_id: int | None  # None: ACL operators at the device level
    iteration: int
    net_name: str | None
    layout: str  # which documented layout: "GE O2", "ACL O2", "ACL O0/O1"
    device_level: bool = False


@dataclass
class AsyncDiscovery:
    ranks: dict[int, AsyncRankLayout]
    notice: str
    problems: list[str] = field(default_factory=list)


def _number(name: str) -> int | None:
    return int(name) if name.isascii() and name.isdigit() and name == str(int(name)) else None


def _classify(rel: list[str]) -> _Where | None:
    """Which documented layout a folder at `rel` (its path under the dump root) is."""
    nums = [_number(p) for p in rel]
    if len(rel) == 5 and None not in nums[:2] and nums[2] is None and None not in nums[3:]:
        _, device, _, model_id, iteration = nums
        assert device is not None and model_id is not None and iteration is not None
        return _Where(Path(), device, model_id, iteration, rel[2], "GE O2")
    if len(rel) == 5 and None not in nums:
        step, _, device, model_id, _ = nums
        assert step is not None and device is not None
        return _Where(Path(), device, model_id, step, None, "ACL O2")
    if len(rel) == 6 and nums[3] is None and None not in nums[:3] and None not in nums[4:]:
        step, _, device, _, model_id, _ = nums
        assert step is not None and device is not None
        return _Where(Path(), device, model_id, step, rel[3], "ACL")
    if len(rel) == 3 and None not in nums:
        step, _, device = nums
        assert step is not None and device is not None
        return _Where(Path(), device, None, step, None, "ACL O0/O1", device_level=True)
    return None


def is_aclnn_name(op_type: str, op_name: str) -> bool:
    """Whether a device-level file named `{a}.{b}.…` is aclnn's `{op_name}.{op_type}.…`
    rather than aclop's `{op_type}.{op_name}.…` (dump.md: both live in `{device_id}/`).
    The names themselves tell: a MindSpore kernel name ends in `-op<N>` or is scoped
    (`Default_…`, `Gradients_…`); an op type is a bare identifier."""
    first_is_name = bool(_OP_NUMBER.search(op_type)) or op_type.startswith(
        ("Default_", "Gradients_", "Default/", "Gradients/")
    )
    second_is_name = bool(_OP_NUMBER.search(op_name)) or "_" in op_name or "/" in op_name
    return first_is_name and not second_is_name


def _has_data(entries: list) -> bool:
    return any(e.is_file and classify_file_name(e.name) in _DATA_KINDS for e in entries)


def async_trees(root: str, scanner: Scanner, skip: frozenset[str]) -> list[str]:
    """The top-level folders of `root` (other than `skip`, its `rank_N/` folders) holding
    dump files where an Ascend asynchronous layout puts them: a synchronous dump reads
    only its rank folders, so such a tree beside them is named, never silently ignored."""
    found, _ = _walk(root, scanner, [], skip)  # its unreadable folders are not the dump's
    return sorted({w.path.relative_to(root).parts[0] for w in found})


def _walk(
    root: str, scanner: Scanner, problems: list[str], skip: frozenset[str]
) -> tuple[list[_Where], list[str]]:
    """The folders under `root` (its top-level `skip` folders aside) holding dump files at
    a documented place, and those holding them elsewhere (paths under `root`)."""
    found: list[_Where] = []
    skipped: list[str] = []
    visited = 0
    stack: list[tuple[str, list[str]]] = [(root, [])]
    while stack:
        folder, rel = stack.pop()
        visited += 1
        if visited > MAX_FOLDERS:
            problems.append(
                f"{scanner.show(root)} holds more than {MAX_FOLDERS:,} folders; the rest were "
                "not searched for an Ascend asynchronous dump."
            )
            break
        entries = scanner.scan(folder, problems) if rel or folder == root else None
        if entries is None:
            continue
        if rel and _has_data(entries):
            where = _classify(rel)
            if where is None:
                skipped.append("/".join(rel))
            else:
                where.path = Path(folder)
                found.append(where)
        if len(rel) < _MAX_DEPTH:
            for e in sorted(entries, key=lambda x: x.name, reverse=True):
                if rel == [] and e.name in skip:
                    continue
                if e.is_dir and e.refused is None and not e.name.startswith("."):
                    stack.append((e.path, [*rel, e.name]))
    return found, skipped


def discover_async(root: str, scanner: Scanner, problems: list[str]) -> AsyncDiscovery | None:
    """Find an Ascend asynchronous layout under `root`; None when there is none."""
    found, skipped = _walk(root, scanner, problems, frozenset())
    if not found:
        return None
    for name in sorted(skipped)[:MAX_NAMED_PER_FOLDER]:
        problems.append(
            f"{name} holds dump files but is not where a documented Ascend asynchronous "
            "layout puts them; it was skipped."
        )
    by_rank: dict[int, list[_Where]] = {}
    for w in found:
        by_rank.setdefault(w.device, []).append(w)
    ranks = {
        device: AsyncRankLayout(device, sorted(ws, key=lambda w: str(w.path)), scanner)
        for device, ws in sorted(by_rank.items())
    }
    return AsyncDiscovery(ranks, _notice(found, ranks))


def _span(values: list[int]) -> str:
    values = sorted(set(values))
    if not values:
        return "none"
    if values == list(range(values[0], values[-1] + 1)) and len(values) > 2:
        return f"{values[0]}–{values[-1]}"
    return ", ".join(map(str, values))


def _notice(found: list[_Where], ranks: dict[int, AsyncRankLayout]) -> str:
    kinds = sorted({w.layout for w in found})
    devices = ", ".join(f"device {d} as rank {d}" for d in sorted(ranks))
    stepped = any(w.layout != "GE O2" for w in found)
    what = "step folders" if stepped else "iteration folders"
    iterations = _span([w.iteration for w in found])
    extra = ""
    if any(w.device_level for w in found):
        extra = "; operators at the device level read as graph " + ", ".join(
            f"{r.device_level_gid}" for r in ranks.values() if r.device_level_gid is not None
        )
    return (
        f"Read as an Ascend asynchronous dump ({', '.join(kinds)} layout): {devices}, "
        f"{what} {iterations} as iterations{extra}; it has no graph file, so the graph is "
        "built from the operator names (give a synchronous dump of the same network with "
        "--graph for the real one)."
    )


class AsyncRankLayout(RankLayout):
    """One device of an asynchronous dump, shaped like a `rank_N` folder for the rest of
    the reader: graph-folder ids are model ids, iterations are step (or GE iteration) ids,
    and one (graph, iteration) may gather several folders (several `{time}` folders)."""

    def __init__(self, device: int, where: list[_Where], scanner: Scanner) -> None:
        self._where = where
        model_ids = {w.model_id for w in where if w.model_id is not None}
        # the device-level aclop/aclnn operators are no model's: one more graph id
        self.device_level_gid: int | None = (
            (max(model_ids) + 1 if model_ids else 0) if any(w.device_level for w in where) else None
        )
        self._folders: dict[tuple[int, int], list[Path]] = {}
        self.layout_kinds = sorted({w.layout for w in where})
        super().__init__(device, where[0].path, scanner)

    def _gid(self, w: _Where) -> int:
        if w.model_id is None:
            assert self.device_level_gid is not None
            return self.device_level_gid
        return w.model_id

    def _discover(self, net_name_hint: str | None) -> None:
        # nothing to find beyond what `discover_async` walked: no metadata, graphs, history
        self.settings = DumpSettings(device_target="Ascend", is_sync=False)
        names = sorted({w.net_name for w in self._where if w.net_name})
        self.net_name = names[0] if names else "async"
        for w in self._where:
            gid = self._gid(w)
            self._folders.setdefault((gid, w.iteration), []).append(w.path)
        for gid, it in sorted(self._folders):
            self.dumped_iterations.setdefault(gid, []).append(it)
        self.net_dir = self._where[0].path

    @property
    def is_async(self) -> bool:
        return True

    def iteration_dir(self, graph_id: int, iteration: int) -> Path | None:
        folders = self._folders.get((graph_id, iteration))
        return folders[0] if folders else None

    def iteration_folders(self, graph_id: int, iteration: int) -> list[Path]:
        return list(self._folders.get((graph_id, iteration), ()))

    def listing(self, graph_id: int, iteration: int | None) -> IterationListing | None:
        if iteration is None:
            return None  # Ascend asynchronous dumps hold no constants (dump.md)
        key = (graph_id, iteration)
        if key not in self._listings:
            folders = self._folders.get(key)
            if not folders:
                return None
            # loaded with the first listing, not the layout (sync_rank's `listing`)
            from tuidebug.offline.layout.iteration_folder import (
                IterationListing,
                list_iteration_folder,
            )

            merged = IterationListing(folders[0])
            device_level = graph_id == self.device_level_gid
            for folder in folders:
                one = list_iteration_folder(folder, self._scanner, skip_dirs=device_level)
                merged.problems.extend(one.problems)
                files = one.tensor_files
                if device_level:
                    files = [_aclnn_swapped(f) for f in files]
                merged.tensor_files.extend(files)
                merged.overflow_files.extend(one.overflow_files)
                merged.refused.extend(one.refused)
                merged.blockers.extend(one.blockers)
                if merged.statistic_csv is None:
                    merged.statistic_csv = one.statistic_csv
            self.problems.extend(merged.problems)
            self._listings[key] = merged
        return self._listings[key]


def _aclnn_swapped(f: TensorFile) -> TensorFile:
    if is_aclnn_name(f.op_type, f.op_name):
        return replace(f, op_type=f.op_name, op_name=f.op_type)
    return f
