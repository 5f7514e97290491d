"""The hit list: watchpoint hits grouped by watchpoint, in execution order, with filters.

Real hits come first: the watchpoints with hits, then those with check errors only, and a
group's check errors are folded into one expandable line (at the NaN step of the demo, 59
"Tensor contains NaN." rows would bury the 35 overflow hits). Above the list one alert line
names the first tensor with NaN/Inf and counts them by kind, as TensorBoard Debugger V2 does.

Each row says which tensor hit, the condition's abbreviation, and either the threshold
against the measured value (`abs_mean_gt 1 ← 2.303`) or the error text (`previous step
value cannot be found`). Enter on a row asks the app to jump to the node and open the
tensor at the hit's iteration. `s` asks the app to save every hit (not only the filtered
ones) as `tuidebug check --json` prints them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Select, Static, Tree
from textual.widgets.tree import TreeNode

from tuidebug.core.graph import Graph, distinct_short_names
from tuidebug.core.watchpoints import WatchpointHit
from tuidebug.tui.kit.labels import plain, shown, shown_lines
from tuidebug.tui.kit.name_filter import name_filter
from tuidebug.tui.messages import HitChosen

if TYPE_CHECKING:
    from tuidebug.core.hit_rules import NanInfSummary

ALL = "*"
MAX_ROWS_PER_GROUP = 2000


def hit_detail(hit: WatchpointHit) -> tuple[str, bool]:
    """(text, is_error): the statistic that hit against its threshold
    (`abs_mean_gt: 2.3025 > 1`), or the error text."""
    # the row shows the abbreviation in its own column
    return hit.detail() or "hit", hit.is_error


def _with(problem: str, status: str) -> str:
    """The status line, after the filter's problem sentence when there is one."""
    return f"{shown_lines(problem)}\n{status}" if problem else status


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def hits_announcement(hits: Sequence[WatchpointHit], shown: int) -> tuple[str, bool] | None:
    """(toast text, is a real hit) for hits a stopped run found; None for no hits.

    The toast counts what the hit list shows: real hits apart from check errors (a
    weight-change watchpoint at the first dumped step reports error 4, "no previous step
    value", for every weight: those are listed as errors, not announced as hits), and how
    many the hit list's filters let through when they hide some."""
    if not hits:
        return None
    from tuidebug.core.hit_rules import only_no_previous  # with the first hits (issue 28)

    errors = [hit for hit in hits if hit.is_error]
    real = len(hits) - len(errors)
    if real:
        text = _count(real, "watchpoint hit")
        if errors:
            text += f" and {_count(len(errors), 'check error')}"
        text += " — press 2 to see them."
    elif all(only_no_previous(hit) for hit in errors):
        text = (
            f"No watchpoint hit; {_count(len(errors), 'check')} had no previous step value "
            "to compare with (error 4) — listed in 2."
        )
    else:
        text = f"No watchpoint hit, but {_count(len(errors), 'check')} failed — press 2 for why."
    if shown < len(hits):
        text += f" The hit list's filters show {shown} of {len(hits)}."
    return text, bool(real)


def nan_inf_alert(summary: NanInfSummary | None, label: str = "") -> str:
    """The alert line over the list: `first NaN/Inf: fc2-Dense/MatMul-op0 at step 4 — 12
    NaN, 23 ±Inf tensors` (`… at step 4 on rank 1 — …` when the tensors are on several
    ranks); "" when no hit says NaN/Inf. `label` is the row's short name of
    the first tensor's node (default: its last path component)."""
    if summary is None:
        return ""
    ref = summary.first.tensor
    name = label or ref.node.rsplit("/", 1)[-1]
    # the words the header and the hit rows use ("step 4 (iteration 3)" offline)
    step = summary.first.step if summary.first.step is not None else ref.iteration
    where = summary.first.step_label or (f"step {step}" if step is not None else "")
    kinds = [
        f"{count} {kind}"
        for count, kind in (
            (summary.nan, "NaN"),
            (summary.inf, "±Inf"),
            # a tensor-overflow hit alone does not say which
            (summary.either, "NaN-or-Inf"),
        )
        if count
    ]
    noun = "tensor" if summary.tensors == 1 else "tensors"
    where = f" at {where}" if where else ""
    if summary.ranks > 1:  # hits on several ranks: which rank's call began it
        where += f" on rank {ref.rank}"
    slot = f":{ref.slot}" if ref.slot else ""  # most nodes have one output: short, fits 80×24
    return f"first NaN/Inf: {name}{slot}{where} — {', '.join(kinds)} {noun}"


def error_fold_label(errors: Sequence[WatchpointHit]) -> Text:
    """The one line a group's check errors fold into: how many, and the commonest error."""
    said = Counter(hit.detail() for hit in errors)
    text, count = said.most_common(1)[0]
    more = "" if count == len(errors) else f" (and {len(said) - 1} other errors)"
    return Text.assemble(
        (_count(len(errors), "check error"), "yellow"),
        (f": {shown(text)}{more}", "dim yellow"),
        ("  → or Enter shows them", "dim"),
    )


def distinct_names(names: Iterable[str]) -> dict[str, str]:
    """A short label per full node name for the narrow hit rows: `core.graph`'s
    `distinct_short_names` (the short name, or the shortest scope tail that no other name
    ends with), with a tail of three or more components folded to its first and last
    (`fc2/…/MatMul-op0`) where the folded label is still no other's: the fold alone could
    give two nodes one label (`b/x/fc/M` and `b/y/fc/M` both `b/…/M`)."""
    labels = distinct_short_names(names)
    folded: dict[str, str] = {}
    for full, label in labels.items():
        parts = label.split("/")
        folded[full] = f"{parts[0]}/…/{parts[-1]}" if len(parts) > 2 else label
    taken: dict[str, int] = {}
    for label in folded.values():
        taken[label] = taken.get(label, 0) + 1
    return {
        full: folded[full] if taken[folded[full]] == 1 else label for full, label in labels.items()
    }


class HitList(Vertical):
    """Left pane, tab 2."""

    DEFAULT_CSS = """
    HitList { height: 1fr; }
    HitList #hit-filters { height: 1; }
    HitList #hit-filters Select { width: 1fr; }
    HitList #hit-filter-text { height: 1; }
    HitList #hit-status { height: auto; max-height: 3; color: $text-muted; padding: 0 1; }
    HitList #hit-alert {
        height: auto; max-height: 2; padding: 0 1; color: $error; text-style: bold;
        display: none;
    }
    HitList #hit-alert.-shown { display: block; }
    HitList #hit-tree { height: 1fr; }
    HitList #hit-detail {
        height: auto; max-height: 3; padding: 0 1; background: $boost; display: none;
    }
    HitList #hit-detail.-shown { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "save", "Save hits", id="hits.save"),
        Binding("R", "group_by_rank", "By rank", id="hits.by_rank"),
    ]

    CONTEXT_TITLE = "hit list"
    CONTEXT_HELP = (
        "Watchpoint hits grouped by watchpoint, in execution order. Each row shows the\n"
        "condition, the tensor, and the threshold against the actual value (or the error).\n"
        "Real hits come first; a watchpoint's check errors are folded into one line that\n"
        "Enter or → opens. The red line above names the first tensor with NaN/Inf.\n"
        "Enter jumps to the node in the tree and opens the tensor at the hit's iteration;\n"
        "Esc comes back here. / moves to the filters: the node name (plain text, or a regular\n"
        "expression such as fc[12]\\.weight$), then Tab to the watchpoint, graph and rank.\n"
        "{hits.by_rank} groups the hits by rank, then by watchpoint (several ranks: --all-ranks).\n"
        "The line under the list shows the highlighted hit in full (rows are cut at the edge).\n"
        "{hits.save} saves every hit (not only the filtered ones) as JSON, the schema of\n"
        "tuidebug check --json."
    )

    class SaveRequested(Message):
        """The user asked to save the hits (the app knows the watchpoints and the step)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._hits: list[WatchpointHit] = []
        self._graphs: dict[str, Graph] = {}
        self._ranks: tuple[int, ...] = (0,)
        self._name_filter = name_filter("")
        # the watchpoints whose folded check errors the user opened: kept open on a rebuild
        self._open_folds: set[int] = set()
        self._folds: dict[int, int] = {}  # tree node id → watchpoint id of a fold line
        # the first NaN/Inf of every hit (not only the filtered ones): set with the hits
        self._summary: NanInfSummary | None = None
        self._alert = ""
        # R: group by rank first (several ranks), kept for the session across steps
        self.by_rank = False
        # step → (real hits, check errors, some hit says NaN/Inf) of every hit list shown
        # this session: the history (h) marks the steps (a session keeps only the last)
        self._per_step: dict[int, tuple[int, int, bool]] = {}
        # the app mounts this list just after its first frame (issue 28's cold start): until
        # its children are there, what is set is kept and shown on mount (`on_mount`)
        self._built = False
        self._set_before_mount = False

    def compose(self) -> ComposeResult:
        with Horizontal(id="hit-filters"):
            yield Select[str](
                [("all watchpoints", ALL)],
                value=ALL,
                allow_blank=False,
                compact=True,
                id="hit-filter-watchpoint",
            )
            yield Select[str](
                [("all graphs", ALL)],
                value=ALL,
                allow_blank=False,
                compact=True,
                id="hit-filter-graph",
            )
            yield Select[str](
                [("all ranks", ALL)],
                value=ALL,
                allow_blank=False,
                compact=True,
                id="hit-filter-rank",
            )
        yield Input(
            placeholder="filter by node name or regex  (/)", compact=True, id="hit-filter-text"
        )
        # markup off: the filter's problem sentence quotes the typed text (`_with`)
        yield Static(
            "no hits yet: step (n), continue (c) or recheck (r)", id="hit-status", markup=False
        )
        yield Static("", id="hit-alert", markup=False)
        tree: Tree[Any] = Tree("hits", id="hit-tree")
        tree.show_root = False
        tree.guide_depth = 2
        yield tree
        # the highlighted hit in full: a row is cut at the pane's edge, this line wraps
        yield Static("", id="hit-detail", markup=False)

    def on_mount(self) -> None:
        self._built = True
        if self._set_before_mount:  # hits or graphs came before the list was mounted
            self._show_alert(self._summary)
            self._fill_filters()
            self._rebuild()

    @property
    def built(self) -> bool:
        """True once the list's children are mounted (`tree_view` can be asked)."""
        return self._built

    # ---------------------------------------------------------------- public
    @property
    def hit_count(self) -> int:
        return len(self._hits)

    @property
    def tree_view(self) -> Tree[Any]:
        return self.query_one("#hit-tree", Tree)

    def set_context(self, graphs: Mapping[str, Graph], ranks: Sequence[int]) -> None:
        self._graphs = dict(graphs)
        self._ranks = tuple(ranks)
        self.refresh_bindings()  # R is offered with several ranks only (check_action)
        self._set_before_mount = not self._built
        if self._built:
            self._fill_filters()
            self._rebuild()

    def set_hits(self, hits: Sequence[WatchpointHit]) -> None:
        from tuidebug.core.hit_rules import nan_inf_summary  # with the first hits (issue 28)

        self._hits = list(hits)
        by_step: dict[int, list[WatchpointHit]] = {}
        for hit in self._hits:
            if hit.step is not None:
                by_step.setdefault(hit.step, []).append(hit)
        for step, found in by_step.items():
            errors = sum(1 for h in found if h.is_error)
            self._per_step[step] = (len(found) - errors, errors, nan_inf_summary(found) is not None)
        self._summary = nan_inf_summary(self._hits)
        self._show_alert(self._summary)
        self._set_before_mount = not self._built
        if self._built:
            self._fill_filters()
            self._rebuild()

    def hit_counts(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for hit in self._hits:
            counts[hit.watchpoint_id] = counts.get(hit.watchpoint_id, 0) + 1
        return counts

    def step_record(self) -> dict[int, tuple[int, int, bool]]:
        """Step → (real hits, check errors, NaN/Inf seen) of the steps hits were shown at."""
        return dict(self._per_step)

    @property
    def shown_count(self) -> int:
        """How many hits the filters let through."""
        return len(self._filtered())

    def action_save(self) -> None:
        self.post_message(self.SaveRequested())

    def focus_filters(self) -> None:
        """/: the name filter (Tab goes on to the watchpoint, graph and rank selectors)."""
        if not self._built:
            return
        self.query_one("#hit-filter-text", Input).focus()

    def clear_name_filter(self) -> bool:
        """Esc in the name filter: empty it; True when there was something to clear."""
        if not self._built:
            return False
        box = self.query_one("#hit-filter-text", Input)
        had = bool(box.value)
        if had:
            with box.prevent(Input.Changed):
                box.value = ""
            self._name_filter = name_filter("")
            self._rebuild()
        return had

    # -------------------------------------------------------------- building
    def _fill_filters(self) -> None:
        wp_select = self.query_one("#hit-filter-watchpoint", Select)
        seen: dict[int, str] = {}
        for hit in self._hits:
            if hit.watchpoint_id not in seen:
                seen[hit.watchpoint_id] = hit.condition.abbr
        options = [("all watchpoints", ALL)] + [
            (f"#{wp_id} {abbr}", str(wp_id)) for wp_id, abbr in sorted(seen.items())
        ]
        self._set_options(wp_select, options)
        graph_names = sorted(
            {hit.tensor.graph for hit in self._hits if hit.tensor.graph} | set(self._graphs)
        )
        self._set_options(
            self.query_one("#hit-filter-graph", Select),
            [("all graphs", ALL)] + [(plain(name), name) for name in graph_names],
        )
        # each rank with its hit count: which ranks a check of every rank found hits on
        per_rank = Counter(hit.tensor.rank for hit in self._hits)
        ranks = sorted(set(per_rank) | set(self._ranks))
        self._set_options(
            self.query_one("#hit-filter-rank", Select),
            [("all ranks", ALL)]
            + [
                (f"rank {r} ({per_rank[r]})" if per_rank[r] else f"rank {r}", str(r)) for r in ranks
            ],
        )

    @staticmethod
    def _set_options(select: Select[str], options: Sequence[tuple[str | Text, str]]) -> None:
        keep = select.value
        with select.prevent(Select.Changed):
            select.set_options(options)
            select.value = keep if any(v == keep for _, v in options) else ALL

    def _filtered(self) -> list[WatchpointHit]:
        if self._built:
            wp = self.query_one("#hit-filter-watchpoint", Select).value
            graph = self.query_one("#hit-filter-graph", Select).value
            rank = self.query_one("#hit-filter-rank", Select).value
        else:  # not mounted yet: the selectors' first value
            wp = graph = rank = ALL
        found = []
        for hit in self._hits:
            if wp != ALL and str(hit.watchpoint_id) != wp:
                continue
            if graph != ALL and hit.tensor.graph and hit.tensor.graph != graph:
                continue
            if rank != ALL and str(hit.tensor.rank) != rank:
                continue
            if not self._name_filter.matches(hit.tensor.node):
                continue
            found.append(hit)
        return found

    def _rebuild(self) -> None:
        tree = self.tree_view
        cursor = tree.cursor_node
        keep = id(cursor.data) if cursor is not None and cursor.data is not None else None
        tree.clear()
        self._folds = {}
        hits = self._filtered()
        status = self.query_one("#hit-status", Static)
        self._show_detail(None)  # the highlighted hit (if any) says it again below
        if not self._hits:
            status.update("no hits yet: step (n), continue (c) or recheck (r)")
            return
        problem = self._name_filter.problem  # a bad expression: one sentence, plain text used
        if not hits:
            status.update(_with(problem, f"{len(self._hits)} hits, none match the filters"))
            return
        errors = sum(1 for h in hits if h.is_error)
        shown = f"{len(hits)} hits" + (f" ({errors} check errors)" if errors else "")
        if len(hits) != len(self._hits):
            shown += f" of {len(self._hits)}"
        if self.by_rank and len(set(self._ranks)) > 1:
            shown += " by rank"
        status.update(_with(problem, shown + " · Enter jumps to the node"))
        multi_graph = len(self._graphs) > 1
        multi_rank = len(set(self._ranks)) > 1
        labels = distinct_names(hit.tensor.node for hit in hits)
        target: TreeNode[Any] | None = None
        first = self._summary.first if self._summary is not None else None
        first_leaf: TreeNode[Any] | None = None
        for section, section_hits in self._sections(hits, multi_rank):
            groups: dict[int, list[WatchpointHit]] = {}
            for hit in section_hits:  # dicts keep first-seen order: groups follow execution
                groups.setdefault(hit.watchpoint_id, []).append(hit)
            # a rank's own section says its rank: the rows need not
            row_rank = multi_rank and section is tree.root
            # watchpoints with real hits first, those with check errors only after them
            order = sorted(groups, key=lambda wp: (all(h.is_error for h in groups[wp]), wp))
            for wp_id in order:
                group = groups[wp_id]
                real = [h for h in group if not h.is_error]
                failed = [h for h in group if h.is_error]
                head = group[0]
                title = f"{head.condition.abbr} {head.condition.name}"
                label = Text.assemble((f"#{wp_id} ", "bold"), (title, "bold cyan"))
                if real:
                    label.append(f"  {len(real)}", "bold red")
                if failed:
                    label.append(f"  {_count(len(failed), 'check error')}", "yellow")
                parent = section.add(label, None, expand=True)
                for hit in real[:MAX_ROWS_PER_GROUP]:
                    leaf = parent.add_leaf(self._row(hit, multi_graph, row_rank, labels), hit)
                    if keep is not None and id(hit) == keep:
                        target = leaf
                    if hit is first:
                        first_leaf = leaf
                if len(real) > MAX_ROWS_PER_GROUP:
                    parent.add_leaf(
                        Text(f"… {len(real) - MAX_ROWS_PER_GROUP} more: filter to see them", "dim")
                    )
                if not failed:
                    continue
                fold = parent.add(error_fold_label(failed), None, expand=wp_id in self._open_folds)
                self._folds[fold.id] = wp_id
                for hit in failed[:MAX_ROWS_PER_GROUP]:
                    leaf = fold.add_leaf(self._row(hit, multi_graph, row_rank, labels), hit)
                    if keep is not None and id(hit) == keep:
                        target = leaf
                        fold.expand()  # the cursor's hit stays in view
                if len(failed) > MAX_ROWS_PER_GROUP:
                    fold.add_leaf(
                        Text(
                            f"… {len(failed) - MAX_ROWS_PER_GROUP} more: filter to see them", "dim"
                        )
                    )
        tree.root.expand()
        if target is None:
            # the first NaN/Inf hit the alert names, else the first real hit (or the first
            # fold line), ready for Enter
            target = first_leaf or self._first_row()
        if target is not None:
            _ = tree._tree_lines  # line numbers are assigned by this (lazy) rebuild
            tree.move_cursor(target)
            self.call_after_refresh(self._title_in_view)
            # said here too: a cursor left on the same line number posts no highlight
            self._show_detail(target.data)

    def _sections(
        self, hits: Sequence[WatchpointHit], multi_rank: bool
    ) -> list[tuple[TreeNode[Any], list[WatchpointHit]]]:
        """Where the watchpoint groups go: the tree's root, or with grouping by rank one
        section per rank that has hits (the header line counts them), lowest rank first."""
        tree = self.tree_view
        if not (self.by_rank and multi_rank):
            return [(tree.root, list(hits))]
        per_rank: dict[int, list[WatchpointHit]] = {}
        for hit in hits:
            per_rank.setdefault(hit.tensor.rank, []).append(hit)
        sections = []
        for rank in sorted(per_rank):
            found = per_rank[rank]
            errors = sum(1 for h in found if h.is_error)
            label = Text.assemble((f"rank {rank}", "bold magenta"))
            if len(found) > errors:
                label.append(f"  {_count(len(found) - errors, 'hit')}", "bold red")
            if errors:
                label.append(f"  {_count(errors, 'check error')}", "yellow")
            sections.append((tree.root.add(label, None, expand=True), found))
        return sections

    def _first_row(self) -> TreeNode[Any] | None:
        """The first hit or fold line, under its rank's section and watchpoint's group."""
        root = self.tree_view.root
        node = root.children[0] if root.children else None
        while node is not None and node.data is None and node.id not in self._folds:
            node = node.children[0] if node.children else None
        return node

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # R only where there are ranks to group: the footer does not offer it otherwise
        if action == "group_by_rank":
            return len(set(self._ranks)) > 1
        return True

    def action_group_by_rank(self) -> None:
        """R: the hits grouped by rank, then by watchpoint (again: by watchpoint only)."""
        self.by_rank = not self.by_rank
        self._rebuild()

    def on_show(self) -> None:
        self._title_in_view()

    def _title_in_view(self) -> None:
        """The first group's title line in view above its first hit: the tree scrolls only
        as far as the cursor's line, and a list filled while its tab was hidden (no height
        yet) is left scrolled past the title."""
        tree = self.tree_view
        if tree.cursor_line < 2:
            tree.scroll_home(animate=False)

    def _show_alert(self, summary: NanInfSummary | None) -> None:
        alert = self.query_one("#hit-alert", Static) if self._built else None
        label = ""
        if summary is not None:
            label = distinct_names(h.tensor.node for h in self._hits)[summary.first.tensor.node]
        self._alert = nan_inf_alert(summary, shown(label))
        if alert is None:
            return
        alert.set_class(bool(self._alert), "-shown")
        alert.update(self._alert)

    @property
    def alert_text(self) -> str:
        """The NaN/Inf alert line as shown ("" when hidden)."""
        return self._alert

    @staticmethod
    def _row(
        hit: WatchpointHit,
        multi_graph: bool,
        multi_rank: bool,
        labels: Mapping[str, str] | None = None,
    ) -> Text:
        ref = hit.tensor
        detail, is_error = hit_detail(hit)
        row = Text()
        row.append(f"{hit.condition.abbr:<4}", style="bold")
        label = (labels or {}).get(ref.node) or ref.node.rsplit("/", 1)[-1]
        scope, _, short = label.rpartition("/")
        if scope:
            row.append(shown(scope) + "/", style="dim cyan")
        row.append(shown(short), style="cyan")
        row.append(f":{ref.slot}")
        if hit.step is not None:
            row.append(f" {hit.step_label}", style="dim")
        if hit.micro_batch is not None:  # gradient accumulation: which micro-batch
            row.append(f" mb{hit.micro_batch}", style="dim")
        if multi_rank:
            row.append(f" r{ref.rank}", style="dim")
        if multi_graph and ref.graph:
            row.append(f" {shown(ref.graph)}", style="dim")
        row.append("  ")
        # an error text may quote a file name
        row.append(shown(detail), style="yellow" if is_error else "red")
        return row

    # ---------------------------------------------------------------- events
    @on(Select.Changed)
    def _filter_changed(self, event: Select.Changed) -> None:
        event.stop()
        self._rebuild()

    @on(Input.Changed, "#hit-filter-text")
    def _name_filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._name_filter = name_filter(event.value)
        self._rebuild()

    @on(Input.Submitted, "#hit-filter-text")
    def _name_filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.tree_view.focus()

    @on(Tree.NodeExpanded, "#hit-tree")
    def _fold_opened(self, event: Tree.NodeExpanded[Any]) -> None:
        event.stop()
        if event.node.id in self._folds:
            self._open_folds.add(self._folds[event.node.id])

    @on(Tree.NodeCollapsed, "#hit-tree")
    def _fold_closed(self, event: Tree.NodeCollapsed[Any]) -> None:
        event.stop()
        if event.node.id in self._folds:
            self._open_folds.discard(self._folds[event.node.id])

    @on(Tree.NodeHighlighted, "#hit-tree")
    def _highlighted(self, event: Tree.NodeHighlighted[Any]) -> None:
        event.stop()
        self._show_detail(event.node.data)

    def _show_detail(self, hit: WatchpointHit | None) -> None:
        detail = self.query_one("#hit-detail", Static)
        detail.set_class(hit is not None, "-shown")
        if hit is not None:
            detail.update(self.full_text(hit))

    @staticmethod
    def full_text(hit: WatchpointHit) -> Text:
        """Everything a hit row says, uncut: the full node name, where, and the detail."""
        ref = hit.tensor
        text, is_error = hit_detail(hit)
        where = hit.step_label
        if hit.micro_batch is not None:
            of = f" of {hit.micro_batches}" if hit.micro_batches else ""
            where += f" · micro-batch {hit.micro_batch}{of}"
        if ref.graph:
            where += f" · {shown(ref.graph)}"
        where += f" · rank {ref.rank}"
        return Text.assemble(
            (f"#{hit.watchpoint_id} {hit.condition.abbr} ", "bold"),
            (f"{shown(ref.node)}:{ref.slot}", "cyan"),
            (f"  {where.strip(' ·')}\n", "dim"),
            (shown(text), "yellow" if is_error else "red"),
        )

    @on(Tree.NodeSelected, "#hit-tree")
    def _chosen(self, event: Tree.NodeSelected[Any]) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(HitChosen(event.node.data))
