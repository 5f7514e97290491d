"""What the tensor view compares with besides the previous step: the same tensor on another
rank (R), or any tensor the user names (D).

`TensorCompareFlows` is a helper object of the `DebuggerApp` (like the watchpoint flows):
the view posts `TensorView.CompareRequested`, the app hands it here, and this asks which
rank or tensor (prompts), then gives the view a `read` to run in its worker and a label
for what was read. The view does the rest: the shape check (one sentence when they
differ), the diff with its tolerance (`core.tensor.compare`), the modes.

Tensor names are typed as the command layer reads them (`tuidebug.commands.context`):
`NAME[:SLOT][@ITERATION]`, the node found by its full name or a unique tail of it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Literal

from tuidebug.core.tensor import TensorRef
from tuidebug.core.text import printable

if TYPE_CHECKING:
    from tuidebug.commands.context import CommandContext
    from tuidebug.tui.host import AppHost
    from tuidebug.tui.tensor.view import TensorView

# graph, node, slot, iteration (None: the current step) of the tensor the view shows
OpenTensor = tuple[str, str, int, int | None]


class TensorCompareFlows:
    """Answer the tensor view's compare requests (see the module docstring)."""

    def __init__(self, app: AppHost, open_tensor: Callable[[], OpenTensor | None]) -> None:
        self._app = app
        self._open_tensor = open_tensor

    def request(self, view: TensorView, kind: Literal["rank", "tensor"]) -> None:
        opened = self._open_tensor()
        if opened is None:
            self._app.notify("Open a tensor first (Enter on a node output or a hit).")
            return
        if kind == "rank":
            self.with_rank(view, opened)
        else:
            self.with_tensor(view, opened)

    # ------------------------------------------------------------------- ranks
    def with_rank(self, view: TensorView, opened: OpenTensor) -> None:
        """The same tensor (node, slot, step) on another rank; asks which when several."""
        md = self._app.metadata
        others = [r for r in md.ranks if r != md.rank]
        if not others:
            self._app.notify(
                "This session has one rank: there is no other rank to compare with.",
                severity="warning",
            )
            return
        if len(others) == 1:
            self._compare_rank(view, opened, others[0])
            return
        listed = ", ".join(str(r) for r in others)

        def check(value: str) -> str | None:
            if value.strip().isdigit() and int(value) in others:
                return None
            return f"Give one of the other ranks: {listed}."

        def chosen(value: str | None) -> None:
            if value:
                self._compare_rank(view, opened, int(value))

        from tuidebug.tui.kit.dialogs import PromptScreen  # on first use (issue 28)

        prompt = PromptScreen(
            f"Compare with the same tensor on rank ({listed})",
            value=str(others[0]),
            hint="Enter compares, Esc cancels.",
            check=check,
        )
        self._app.push_screen(prompt, chosen)

    def _compare_rank(self, view: TensorView, opened: OpenTensor, rank: int) -> None:
        graph, node, slot, iteration = opened
        ref = TensorRef(node, slot, iteration, rank, graph)
        view.compare_with(f"rank {rank}", partial(self._app.session.tensor, ref))

    # ----------------------------------------------------------------- tensors
    def with_tensor(self, view: TensorView, opened: OpenTensor) -> None:
        """Any tensor the user names (of the same shape: the view says so otherwise)."""
        # the command layer (its parsers and every command's module) loads on the first
        # compare, not with the app: it is a tenth of the TUI's start (issue 28)
        from tuidebug.commands.context import CommandContext, CommandError

        _graph, node, slot, _iteration = opened
        context = CommandContext(self._app.session)
        found: list[TensorRef] = []

        def check(value: str) -> str | None:
            try:
                found[:] = [self._ref_of(context, value)]
            except CommandError as exc:
                return str(exc)
            return None

        def chosen(value: str | None) -> None:
            if value and found:
                ref = found[0]
                label = tensor_label(ref, self._app.session.step_label(ref))
                view.compare_with(label, partial(self._app.session.tensor, ref))

        from tuidebug.tui.kit.dialogs import PromptScreen

        prompt = PromptScreen(
            "Compare with the tensor",
            value=f"{node}:{slot}",
            placeholder="NODE:SLOT@ITERATION",
            hint="NODE[:SLOT][@ITERATION] (a unique tail of the node's name will do), "
            "of the same shape. Enter compares, Esc cancels.",
            check=check,
        )
        self._app.push_screen(prompt, chosen)

    def _ref_of(self, context: CommandContext, text: str) -> TensorRef:
        from tuidebug.commands.context import CommandError, parse_tensor_name  # loaded already

        name = parse_tensor_name(text)
        if name.slice:
            raise CommandError("Give the tensor without a slice: the view's slice applies.")
        graph, node = context.find_node(name.node)
        slots = {spec.slot for spec in node.outputs}
        if slots and name.slot not in slots:
            raise CommandError(f"{node.short_name} has no output slot {name.slot}.")
        rank = self._app.metadata.rank
        return TensorRef(node.name, name.slot, name.iteration, rank, graph.name)


def tensor_label(ref: TensorRef, step: str) -> str:
    """`Conv2D-op1:0 @ step 2 (iteration 1)`: what the view calls a tensor it compares with
    (`step`: `DebugSession.step_label`, the header's words for it). Escaped here,
    once: the node name comes from the graph and the label reaches the status, mode, title,
    statistics and error lines (`markup=False`, which still passes ESC bytes through)."""
    return printable(f"{ref.node.rsplit('/', 1)[-1]}:{ref.slot} @ {step}")


__all__ = ["TensorCompareFlows", "tensor_label"]
