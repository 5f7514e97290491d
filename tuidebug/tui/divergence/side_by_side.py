"""One pair of the divergence list side by side: the target, the golden, their difference
(target − golden) and a heatmap of |difference|, each a tensor view of its own (the tensor
pane's widget: slices, find, heatmap, save), opened on the largest |difference|.

At 120×36 and more the four views are a 2×2 grid; below that one view fills the screen
and Tab / Shift+Tab go to the next / previous (the title says which is shown). Both
values are read in a thread worker: a side that cannot be read is one sentence in the
screen and a notice. A statistics-only compare (msprobe statistics dumps) has no values:
the screen lists both sides' statistics and their differences instead.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from tuidebug.core.text import printable
from tuidebug.tui.divergence.rows import detail_lines, number_text, short_name
from tuidebug.tui.tensor.view import TensorView

if TYPE_CHECKING:
    from tuidebug.compare.pairing import Pair
    from tuidebug.compare.report import Row

PANELS = ("target", "golden", "diff", "absdiff")
PANEL_TITLES = {
    "target": "target",
    "golden": "golden",
    "diff": "target − golden",
    "absdiff": "|target − golden|",
}
GRID_MIN = (120, 36)  # columns, rows from which the four views share the screen


def difference(target: np.ndarray, golden: np.ndarray) -> np.ndarray | None:
    """target − golden in float64 (None when the shapes differ): bf16 and fp16 values are
    widened first, so the difference is not rounded to the narrower dtype."""
    if target.shape != golden.shape:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(target).astype(np.float64) - np.asarray(golden).astype(np.float64)


def largest_at(absdiff: np.ndarray) -> tuple[int, ...] | None:
    """The index of the largest finite |difference| (None: empty, or none is finite)."""
    if absdiff.size == 0:
        return None
    finite = np.where(np.isfinite(absdiff), absdiff, -1.0)
    flat = int(np.argmax(finite))
    if finite.reshape(-1)[flat] < 0:
        return None
    return tuple(int(i) for i in np.unravel_index(flat, absdiff.shape))


def statistics_text(row: Row) -> str:
    """A statistics-only pair: both sides' Max/Min/Mean/L2norm and their differences
    (relative: msprobe's percentage)."""
    lines = [f"{'':8}{'target':>12}{'golden':>12}{'diff':>12}{'relative':>11}"]
    t, g = row.target_stats, row.golden_stats
    diffs = row.stat_diffs or ()
    for i, label in enumerate(("max", "min", "mean", "l2norm")):
        tv = t.values()[i] if t is not None else None
        gv = g.values()[i] if g is not None else None
        d = diffs[i] if len(diffs) > i else None
        r = diffs[i + 4] if len(diffs) > i + 4 else None
        lines.append(
            f"{label:8}{_stat(tv):>12}{_stat(gv):>12}{_stat(d):>12}{number_text(r, 10):>11}"
        )
    return "\n".join(lines)


def _stat(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.5g}"
    return str(value)


class SideBySideScreen(Screen[None]):
    """See the module docstring."""

    CONTEXT_TITLE = "Side by side"
    CONTEXT_HELP = """\
The target and the golden tensor, target − golden and |target − golden| (a heatmap),
opened on the largest |difference|. In each view its own keys work: slice (e), find (f)
over what it shows, heatmap (m), go to (i), save (s / S).

  {sbs.next} / {sbs.previous}  next / previous view (below 120×36 one view shows at a time)
  {sbs.close}  back to the divergence list"""

    DEFAULT_CSS = """
    SideBySideScreen { layout: vertical; }
    SideBySideScreen #sbs-title { height: auto; max-height: 4; padding: 0 1; background: $panel; }
    SideBySideScreen #sbs-note { height: auto; color: $warning; padding: 0 1; }
    SideBySideScreen #sbs-grid { grid-size: 2 2; height: 1fr; }
    SideBySideScreen #sbs-grid.-single { grid-size: 1 1; }
    SideBySideScreen #sbs-grid.-single > .sbs-panel { display: none; }
    SideBySideScreen #sbs-grid.-single > .sbs-panel.-current { display: block; }
    SideBySideScreen .sbs-panel { border: round $primary-darken-2; height: 1fr; }
    SideBySideScreen .sbs-panel:focus-within { border: round $accent; }
    SideBySideScreen #sbs-stats { height: 1fr; padding: 1 2; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "panel(1)", "Next view", priority=True, id="sbs.next"),
        Binding("shift+tab", "panel(-1)", "Prev view", priority=True, id="sbs.previous"),
        Binding("escape", "close", "Close", id="sbs.close"),
    ]

    def __init__(
        self, row: Row, pair: Pair | None, tensor_mode: bool, step_word: str = "step"
    ) -> None:
        """`step_word`: what the dumps call a step (MindSpore: iteration)."""
        super().__init__()
        self._step_word = step_word
        self._row = row
        self._pair = pair
        self._tensor_mode = tensor_mode
        self._current = "diff"
        self.loaded = False  # both values read and shown (tests wait on it)
        self.problem = ""

    @property
    def _has_values(self) -> bool:
        pair = self._pair
        return (
            pair is not None
            and pair.target is not None
            and pair.golden is not None
            and pair.target.load is not None
            and pair.golden.load is not None
        )

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="sbs-title", markup=False)
        yield Static("", id="sbs-note", markup=False)
        if self._has_values:
            with Grid(id="sbs-grid"):
                for name in PANELS:
                    view = TensorView(id=f"sbs-{name}", classes="sbs-panel")
                    view.border_title = PANEL_TITLES[name]
                    yield view
        else:
            with Vertical(id="sbs-stats"):
                yield Static(self._no_values_text(), markup=False)
        yield Footer()

    def _title_text(self) -> str:
        """The pair's name, where, its numbers, why it diverged, dtypes and shape (its whole
        name is the list's detail line)."""
        row = self._row
        head = printable(f"{short_name(row.name)}  (rank {row.rank}, {self._step_word} {row.step})")
        details = detail_lines(row, self._tensor_mode).split("\n")[:-1]
        return "\n".join([head, *details])

    def _no_values_text(self) -> str:
        row = self._row
        if row.status == "unmatched":
            return printable(f"Only one dump has this tensor: {row.reason}.")
        if row.target_stats is not None or row.golden_stats is not None:
            return "These dumps hold statistics, not values:\n\n" + statistics_text(row)
        return printable(f"This pair has no values to show: {row.reason or 'not compared'}.")

    def on_mount(self) -> None:
        self._fit()
        if self._has_values:
            for name in PANELS:
                self.query_one(f"#sbs-{name}", TensorView).show_loading(PANEL_TITLES[name])
            self._read()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        with contextlib.suppress(Exception):
            grid = self.query_one("#sbs-grid", Grid)
            width, height = self.size.width, self.size.height
            grid.set_class(width < GRID_MIN[0] or height < GRID_MIN[1], "-single")
            for name in PANELS:
                self.query_one(f"#sbs-{name}").set_class(name == self._current, "-current")

    @work(thread=True, exclusive=True, group="side-by-side")
    def _read(self) -> None:
        pair = self._pair
        assert pair is not None and pair.target is not None and pair.golden is not None
        assert pair.target.load is not None and pair.golden.load is not None
        try:
            target = np.asarray(pair.target.load())
            golden = np.asarray(pair.golden.load())
            diff = difference(target, golden)
            absdiff = np.abs(diff) if diff is not None else None
            at = largest_at(absdiff) if absdiff is not None else None
        except (OSError, ValueError, MemoryError) as err:
            self._back(self._failed, printable(str(err).rstrip(".")) + ".")
            return
        except Exception as err:  # a bug, but a sentence (the app keeps running)
            self._back(self._failed, printable(f"The pair could not be read: {err}."))
            return
        self._back(self._show, target, golden, diff, absdiff, at)

    def _back(self, callback: object, *args: object) -> None:
        with contextlib.suppress(RuntimeError):  # the app or the screen is gone
            self.app.call_from_thread(callback, *args)  # type: ignore[arg-type]

    def _failed(self, sentence: str) -> None:
        self.problem = sentence
        self.query_one("#sbs-note", Static).update(sentence)
        for name in PANELS:
            self.query_one(f"#sbs-{name}", TensorView).show_error(sentence)
        self.notify(sentence, severity="warning", timeout=8)

    def _show(
        self,
        target: np.ndarray,
        golden: np.ndarray,
        diff: np.ndarray | None,
        absdiff: np.ndarray | None,
        at: tuple[int, ...] | None,
    ) -> None:
        name = short_name(self._row.name)
        stem = name.replace(":", "_")
        views = {n: self.query_one(f"#sbs-{n}", TensorView) for n in PANELS}
        views["target"].show(f"target {name}", target, file_stem=f"{stem}_target")
        views["golden"].show(f"golden {name}", golden, file_stem=f"{stem}_golden")
        if diff is None or absdiff is None:
            sentence = (
                f"The shapes differ ({list(target.shape)} against {list(golden.shape)}): "
                "there is no difference to show."
            )
            self.problem = sentence
            self.query_one("#sbs-note", Static).update(sentence)
            views["diff"].show_error(sentence)
            views["absdiff"].show_error(sentence)
            self._current = "target"
        else:
            views["diff"].show(f"target − golden {name}", diff, file_stem=f"{stem}_diff")
            views["absdiff"].show(f"|target − golden| {name}", absdiff, file_stem=f"{stem}_absdiff")
            views["absdiff"].action_toggle_heatmap()
            if at is not None:
                where = ", ".join(map(str, at))
                # the slice through the largest difference, its cursor on it
                plane = "[" + ", ".join([*map(str, at[:-2]), ":", ":"]) + "]"
                for view in views.values():
                    if len(at) > 2:
                        view.apply_slice(plane)
                    view.goto(where)
                self.query_one("#sbs-note", Static).update(
                    printable(f"largest |difference| {float(absdiff[at]):.6g} at [{where}]")
                    + "   Tab: next view, Esc: back"
                )
        self._fit()
        self.loaded = True
        self.call_after_refresh(self._focus_current)

    def _focus_current(self) -> None:
        view = self.query_one(f"#sbs-{self._current}", TensorView)
        if view.state == "tensor":
            view.canvas.focus()

    def action_panel(self, direction: int) -> None:
        if not self._has_values:
            return
        self._current = PANELS[(PANELS.index(self._current) + direction) % len(PANELS)]
        self._fit()
        self.call_after_refresh(self._focus_current)

    @property
    def current(self) -> str:
        """The view in front (one at a time below 120×36), focused."""
        return self._current

    def action_close(self) -> None:
        self.dismiss(None)

    @on(TensorView.CompareRequested)
    def _compare_requested(self, event: TensorView.CompareRequested) -> None:
        event.stop()  # the app's compare flows are the tensor pane's, not these views'
        self.notify("Here the golden is what each tensor is compared with.", timeout=4)


__all__ = ["SideBySideScreen", "difference", "largest_at", "statistics_text"]
