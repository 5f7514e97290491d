"""The watchpoint editor: pick a condition, set its thresholds, choose what it watches.

Conditions are listed grouped by target (tensor, weight, activation, gradient) with the
spec's names and abbreviations. Every parameter input is checked as it is typed against
the catalogue's range (`ParamSpec.check`), and the whole set against MindInsight's rules
before the dialog closes, so a bad watchpoint never reaches the session.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from tuidebug.core.condition_catalogue import (
    ConditionSpec,
    ParamSpec,
    WatchpointError,
    conditions_by_target,
    get_condition,
)
from tuidebug.core.graph import Category, Graph
from tuidebug.core.watchpoints import validate_params
from tuidebug.tui.kit.fill_on_mount import fill_when_mounted
from tuidebug.tui.kit.labels import plain, shown_lines

NARROW = 100  # columns: under it a label sits over its input (80×24 had no input box)
TARGET_CATEGORY = "category"
TARGET_ALL = "all"
TARGET_KEEP = "keep"


@dataclass(frozen=True)
class WatchpointDraft:
    """What the editor answers: enough for create_watchpoint / update_watchpoint."""

    condition: str
    params: dict[str, float]
    targets: tuple[str, ...]
    graph_name: str | None
    watchpoint_id: int | None = None  # set when editing
    keep_targets: bool = field(default=False)


def condition_unavailable(
    spec: ConditionSpec, *, backend: str, step: int, init_only_at_step_zero: bool
) -> str:
    """Why MindInsight would not offer this condition now (spec §3.1), or "".
    `init_only_at_step_zero`: the session's capability (online: weight initialisation is
    checked at the initial suspension only)."""
    if spec.ascend_only and backend.lower() != "ascend":
        return "Ascend only"
    if spec.id == "weight_initialization" and init_only_at_step_zero and step != 0:
        return "only at step 0"
    return ""


def parse_number(text: str) -> float:
    """A parameter value as typed: `1e-3`, `0.5`, `-2`, `inf` is refused by the range."""
    value = float(text.strip())
    return value


class ParamRow(Vertical):
    """One parameter: its name, an input, and the inline error for what was typed (on its
    own line under them, so a long sentence is not squeezed into a narrow column)."""

    DEFAULT_CSS = """
    ParamRow { height: auto; }
    ParamRow > Horizontal { height: 1; }
    ParamRow Label { width: 31; padding: 0 1 0 0; }
    ParamRow Input { width: 22; }
    ParamRow .param-error { height: auto; color: $error; padding: 0 0 0 31; display: none; }
    ParamRow .param-error.-shown { display: block; }
    """

    def __init__(self, spec: ParamSpec, value: float | None) -> None:
        super().__init__(classes="param-row")
        self.spec = spec
        self._value = value

    def compose(self) -> ComposeResult:
        kind = "bound" if self.spec.kind == "support" else "threshold"
        placeholder = self.spec.range_text
        value = "" if self._value is None else f"{self._value:g}"
        with Horizontal():
            yield Label(Text.assemble(self.spec.name, (f" {kind}", "dim")))
            yield Input(
                value=value, placeholder=placeholder, compact=True, id=f"param-{self.spec.name}"
            )
        yield Static("", classes="param-error", markup=False)

    def read(self) -> tuple[float | None, str | None]:
        """(value or None when empty, error sentence or None)."""
        text = self.query_one(Input).value.strip()
        if not text:
            return None, None
        try:
            value = parse_number(text)
        except ValueError:
            return None, f"{text!r} is not a number."
        return value, self.spec.check(value)

    def show_error(self, error: str | None) -> None:
        box = self.query_one(".param-error", Static)
        box.update(shown_lines(error or ""))
        box.set_class(bool(error), "-shown")


class WatchpointEditor(ModalScreen[WatchpointDraft | None]):
    """Create (or, with `editing`, change) a watchpoint."""

    DEFAULT_CSS = """
    WatchpointEditor { align: center middle; }
    WatchpointEditor > Vertical {
        width: 100%; max-width: 120; height: 100%; max-height: 34;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    WatchpointEditor #editor-title { text-style: bold; padding: 1 0 0 0; }
    /* Fill what the terminal gives (down to 100×30), the list scrolls below that. */
    WatchpointEditor #editor-body { height: 1fr; }
    WatchpointEditor #condition-list { width: 46; height: 1fr; border: round $primary; }
    WatchpointEditor #editor-right { width: 1fr; height: 1fr; padding: 0 1; }
    /* Editing keeps its condition: a short list, and the dialog as tall as its content. */
    WatchpointEditor > Vertical.-editing { height: auto; max-height: 100%; }
    WatchpointEditor .-editing #editor-body { height: auto; }
    WatchpointEditor .-editing #condition-list { height: auto; max-height: 6; }
    WatchpointEditor .-editing #editor-right { height: auto; }
    /* Narrow: a narrower list, and the right column scrolls as a whole (its parameters do
       not scroll on their own), so the target selector is never cut off under them. */
    WatchpointEditor.-narrow #condition-list { width: 42; }
    /* Each label over its input, as wide as the column (here, not in ParamRow's scoped
       CSS, which cannot see the editor's class): 31 + 22 columns beside the list left no
       room for the input box at 80 columns. */
    WatchpointEditor.-narrow ParamRow > Horizontal { layout: vertical; height: auto; }
    WatchpointEditor.-narrow ParamRow Label { width: 1fr; padding: 0; }
    WatchpointEditor.-narrow ParamRow Input { width: 1fr; }
    WatchpointEditor.-narrow ParamRow .param-error { padding: 0; }
    WatchpointEditor.-narrow #editor-right { padding: 0 0 0 1; }
    WatchpointEditor.-narrow #params { max-height: 100%; }
    WatchpointEditor #condition-help { height: auto; color: $text-muted; margin-bottom: 1; }
    WatchpointEditor #params { height: auto; max-height: 12; }
    WatchpointEditor #target-label { margin-top: 1; }
    WatchpointEditor #target-select { width: 1fr; }
    WatchpointEditor #editor-error { color: $error; height: auto; margin-top: 1; }
    WatchpointEditor #editor-buttons { height: auto; align-horizontal: right; }
    WatchpointEditor #editor-buttons Button { margin-left: 2; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="editor.cancel"),
        Binding("ctrl+s", "save", "Save", id="editor.save"),
    ]

    CONTEXT_TITLE = "watchpoint editor"
    CONTEXT_HELP = (
        "Up/Down and Enter pick a condition; Tab moves to its parameters and the target.\n"
        "Type a threshold: it is checked as you type. Enter in a parameter or Ctrl+S saves,\n"
        "Esc cancels."
    )

    def __init__(
        self,
        graph: Graph,
        *,
        node: str | None = None,
        scope: str | None = None,
        backend: str = "",
        step: int = 0,
        init_only_at_step_zero: bool = False,
        editing: Any = None,
        prefer_scope: bool = False,
    ) -> None:
        """`prefer_scope` (W, watch a scope whole): the scope is the target each condition
        starts with, where it holds nodes of the condition's kind."""
        super().__init__()
        self.prefer_scope = prefer_scope
        self.graph = graph
        self.node = node
        self.scope = scope
        self.backend = backend
        self.step = step
        self.init_only_at_step_zero = init_only_at_step_zero
        self.editing = editing
        self.spec: ConditionSpec | None = None
        if editing is not None:
            self.spec = get_condition(editing.condition)

    # ---------------------------------------------------------------- layout
    def compose(self) -> ComposeResult:
        with Vertical(classes="-editing" if self.editing is not None else ""):
            title = "New watchpoint"
            if self.editing is not None:
                title = f"Edit watchpoint #{self.editing.id}"
            yield Label(title, id="editor-title")
            with Horizontal(id="editor-body"):
                yield OptionList(*self._condition_options(), id="condition-list")
                with VerticalScroll(id="editor-right", can_focus=False):
                    yield Static("", id="condition-help")
                    yield VerticalScroll(id="params")
                    yield Label("Watch", id="target-label")
                    yield Select[str]([], allow_blank=True, prompt="target", id="target-select")
                    yield Static("", id="editor-error", markup=False)
            with Horizontal(id="editor-buttons"):
                yield Button("Cancel (Esc)", id="editor-cancel")
                yield Button(
                    "Save (Ctrl+S)" if self.editing is not None else "Create (Ctrl+S)",
                    variant="primary",
                    id="editor-save",
                )

    def _condition_options(self) -> list[Option]:
        options: list[Option] = []
        for target, specs in conditions_by_target().items():
            if (
                self.editing is not None
                and self.spec is not None
                and self.spec.target is not target
            ):
                continue
            options.append(
                Option(Text(f"{target.value} conditions", style="bold underline"), disabled=True)
            )
            for spec in specs:
                if self.editing is not None and spec is not self.spec:
                    continue
                why = condition_unavailable(
                    spec,
                    backend=self.backend,
                    step=self.step,
                    init_only_at_step_zero=self.init_only_at_step_zero,
                )
                label = Text.assemble((f"{spec.abbr:<4}", "bold cyan"), spec.name)
                if why and why.lower() not in spec.name.lower():
                    label.append(f"  ({why})", style="dim")
                elif why:
                    label.stylize("dim")
                options.append(Option(label, id=spec.id, disabled=bool(why)))
        return options

    def on_mount(self) -> None:
        self._fit(self.app.size.width)
        fill_when_mounted(self, self._initialise)  # the lists sit two containers down

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        """Under 100 columns the parameters stack their labels over their inputs (CSS)."""
        self.set_class(width < NARROW, "-narrow")

    def _initialise(self) -> None:
        conditions = self.query_one("#condition-list", OptionList)
        if self.spec is not None:
            self._select_condition(self.spec, initial=True)
            index = next(
                i
                for i in range(conditions.option_count)
                if conditions.get_option_at_index(i).id == self.spec.id
            )
            conditions.highlighted = index
            conditions.focus()
            # The parameter rows mount after this handler: focus the first one when it is
            # there, since editing a watchpoint means changing its thresholds.
            self.call_after_refresh(self._focus_first_param)
            return
        # Start on the first available condition: tensor overflow is the usual first wish.
        for i in range(conditions.option_count):
            option = conditions.get_option_at_index(i)
            if option.id == "tensor_overflow":
                conditions.highlighted = i
                self._select_condition(get_condition(option.id), initial=True)
                break
        conditions.focus()

    def _focus_first_param(self) -> None:
        inputs = self.query("#params Input")
        if inputs:
            inputs.first().focus()

    # ------------------------------------------------------------- condition
    def _select_condition(self, spec: ConditionSpec, *, initial: bool = False) -> None:
        self.spec = spec
        help_text = Text.assemble(
            (f"{spec.abbr} ", "bold cyan"), (spec.name, "bold"), f"  {spec.id}"
        )
        help_text.append(f"\ntarget: {spec.target.value}")
        if spec.needs_prev:
            help_text.append(" · compares with the previous step", style="yellow")
        if not spec.visible_params:
            help_text.append("\nno parameters")
        elif any(p.kind == "check" for p in spec.visible_params):
            hint = "\nset at least one threshold"
            if any(p.kind == "support" for p in spec.visible_params):
                hint += "; a range percentage also needs both bounds"
            help_text.append(hint)
        self.query_one("#condition-help", Static).update(help_text)
        params = self.query_one("#params", VerticalScroll)
        params.remove_children()
        current = self.editing.params if (self.editing is not None and initial) else {}
        rows = []
        for p in spec.visible_params:
            value = current.get(p.name)
            if (
                value is None
                and self.editing is None
                and p.default is not None
                and p.support_disable
            ):
                # MindInsight pre-fills defaults (zero_percentage_ge=100, rtol=1e-5, ratios)
                value = p.default
            rows.append(ParamRow(p, value))
        if rows:
            params.mount(*rows)
        else:
            params.mount(Static(Text("This condition has no parameters.", style="dim")))
        self._fill_targets(spec)
        self.query_one("#editor-error", Static).update("")

    def _fill_targets(self, spec: ConditionSpec) -> None:
        options: list[tuple[str | Text, str]] = []
        category = spec.target
        if self.editing is not None:
            targets = tuple(getattr(self.editing, "targets", ()) or ())
            names = ", ".join(t.rsplit("/", 1)[-1] for t in targets[:3]) or _category_words(
                category
            )
            if len(targets) > 3:
                names += f" … ({len(targets)})"
            options.append((plain(f"keep: {names}"), TARGET_KEEP))
        if self.node is not None:
            node = self.graph.get(self.node)
            if node is not None:
                options.append((plain(f"node {node.short_name}"), f"node:{node.name}"))
        if self.scope:
            count = self.graph.leaf_count(self.scope)
            options.append((plain(f"scope {self.scope} ({count} nodes)"), f"scope:{self.scope}"))
        if category is Category.TENSOR:
            options.append(
                (plain(f"every node of {self.graph.name} ({len(self.graph)})"), TARGET_ALL)
            )
        else:
            count = len(self.graph.nodes_in(category))
            options.append((f"{_category_words(category)} ({count})", TARGET_CATEGORY))
        select = self.query_one("#target-select", Select)
        select.set_options(options)
        default = options[0][1]
        if self.editing is None and category is not Category.TENSOR:
            default = TARGET_CATEGORY  # weight/gradient/activation: the category is the usual pick
            if self.prefer_scope and self.scope and self._scope_holds(category):
                default = f"scope:{self.scope}"
        select.value = default

    def _scope_holds(self, category: Category) -> bool:
        """Whether the scope has a node of `category` (else watching it would be refused)."""
        scope = self.scope or ""
        return any(category in self.graph.categories(n) for n in self.graph.leaves(scope))

    # ---------------------------------------------------------------- events
    @on(OptionList.OptionHighlighted, "#condition-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if self.editing is not None or event.option.id is None:
            return
        spec = get_condition(event.option.id)
        if spec is not self.spec:
            self._select_condition(spec)

    @on(OptionList.OptionSelected, "#condition-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        inputs = self.query("#params Input")
        if inputs:
            inputs.first().focus()
        else:
            self.query_one("#target-select", Select).focus()

    @on(Input.Changed, "#params Input")
    def _param_changed(self, event: Input.Changed) -> None:
        event.stop()
        row = next((a for a in event.input.ancestors if isinstance(a, ParamRow)), None)
        if row is not None:
            _value, error = row.read()
            row.show_error(error)
        self.query_one("#editor-error", Static).update("")

    @on(Input.Submitted, "#params Input")
    def _param_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_save()

    @on(Button.Pressed, "#editor-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    @on(Button.Pressed, "#editor-save")
    def _save_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_save()

    def action_cancel(self) -> None:
        self.dismiss(None)

    # ------------------------------------------------------------------ save
    def action_save(self) -> None:
        draft, error = self.build_draft()
        error_box = self.query_one("#editor-error", Static)
        if error:
            error_box.update(shown_lines(error))
            return
        self.dismiss(draft)

    def build_draft(self) -> tuple[WatchpointDraft | None, str | None]:
        spec = self.spec
        if spec is None:
            return None, "Pick a condition first."
        why = condition_unavailable(
            spec,
            backend=self.backend,
            step=self.step,
            init_only_at_step_zero=self.init_only_at_step_zero,
        )
        if why and self.editing is None:
            return None, f"{spec.name} is not available here ({why})."
        values: dict[str, float] = {}
        first_error: str | None = None
        for row in self.query(ParamRow):
            value, error = row.read()
            row.show_error(error)
            if error and first_error is None:
                first_error = error
            if value is not None and error is None:
                values[row.spec.name] = value
        if first_error:
            return None, first_error
        if any(math.isnan(v) for v in values.values()):
            return None, "NaN is not a threshold."
        try:
            values = validate_params(spec, values)
        except WatchpointError as exc:
            return None, str(exc)
        target = self.query_one("#target-select", Select).value
        keep = target == TARGET_KEEP
        targets: tuple[str, ...] = ()
        if isinstance(target, str) and target.startswith("node:"):
            name = target[5:]
            node = self.graph.get(name)
            if node is not None and spec.target not in self.graph.categories(node):
                return None, (
                    f"{node.short_name} is not a {spec.target.value} node; "
                    f"watch all {_category_words(spec.target)} instead."
                )
            targets = (name,)
        elif isinstance(target, str) and target.startswith("scope:"):
            scope = target[6:]
            if spec.target is not Category.TENSOR and not any(
                spec.target in self.graph.categories(n) for n in self.graph.leaves(scope)
            ):
                return None, f"The scope {scope} holds no {spec.target.value} node."
            targets = (scope,)
        elif keep and self.editing is not None:
            targets = tuple(getattr(self.editing, "targets", ()) or ())
        wp_id = self.editing.id if self.editing is not None else None
        return (
            WatchpointDraft(
                spec.id, values, targets, self.graph.name, watchpoint_id=wp_id, keep_targets=keep
            ),
            None,
        )


def _category_words(category: Category) -> str:
    return {
        Category.WEIGHT: "all weights",
        Category.GRADIENT: "all gradients",
        Category.ACTIVATION: "all activations",
        Category.PARAMETER: "all parameters",
        Category.TENSOR: "every node",
    }[category]
