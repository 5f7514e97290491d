"""The PyTorch training client: `attach` a model to a running tuidebug (or MindInsight-style)
debugger, or `dump` its tensors in the MindSpore layout.

Behaviour follows MindSpore's GPU client (spec §2), through the shared `ProtocolClient`:

* `attach` sends the metadata (`ms_version = "torch-<version>"`, `backend = "GPU"`), the
  graph (see `graph.py`), and suspends once before training (the initial suspension, where
  watchpoints are set and `weight_initialization` is checked by the recheck that follows).
* `step_end()` is the per-step suspension point: the watchpoints are checked on what the
  step produced, hits are sent, and the client waits for the next command. Step, continue
  and pause are the server's business; terminate makes `step_end()` raise `Terminated`.
  A tuidebug server gives this client (`ms_version` "torch-…") the real remaining count in
  `run_steps` instead of 1 (MindSpore ignores it): the client then skips the WaitCMD at
  step ends while that budget lasts, no hit occurred and less than `FREE_RUN_SECONDS`
  passed since its last WaitCMD — the round trip would otherwise be most of the cost of
  "continue" on a small model, and the time limit keeps pause and terminate prompt.
* Inside a step each leaf-module call, each output gradient and each parameter gradient is
  a "kernel" in the GPU sense. While running, a watched tensor's statistics are queued on
  its device when it is produced (`deferred.launch`) and decided at the next check point
  (end of forward, end of backward, optimizer step, step end), one synchronisation; a hit
  then suspends at the first offending kernel in execution order, so "continue" stops on
  the module that produced the first NaN/Inf (the rest of that pass has run). "Next node" /
  "run to node" check and suspend at every kernel.

Why backend "GPU" whatever the device: the server decides from `backend` whether node
stepping is offered (spec §2.12), and this client implements GPU semantics (per-kernel
checks and suspension); "Ascend" would also offer `operator_overflow`, which needs Ascend's
overflow records that a PyTorch training does not have.

Tensors are held by reference (no copies): forward outputs from forward hooks, output
gradients from tensor hooks, parameter gradients from post-accumulate hooks (so
`optimizer.zero_grad()` before `step_end()` does not lose them), parameters live (their
values after the optimizer step at `step_end`); one modified in place since is reported as
unavailable (see `capture.py`). Previous-step copies are kept only for parameters watched
by a change condition. A watched tensor costs one statistics pass (on
its own device) when it is produced.

What is held: watched tensors always; every tensor of the step when someone is looking
(`keep="auto"`: after a suspension that lasted, i.e. a person stepping; while node
stepping; for a dump). Hooks are installed only while they have such work: in continue mode
with nothing watched there is none at all, and a step costs only a step-end WaitCMD round
trip every `FREE_RUN_SECONDS` (every step against MindInsight).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from tuidebug.client.protocol import (
    CheckItem,
    ClientError,
    ClientWatchpoint,
    ProtocolClient,
    RunCommand,
    Selection,
)
from tuidebug.core.condition_catalogue import CHANGE_CONDITIONS
from tuidebug.core.rank_fields import RankInfo, encode_rank_info
from tuidebug.torch.capture import BackwardEnd, StepStore, eager, remove_handles
from tuidebug.torch.check_items import UNAVAILABLE, launch_selection, param_item, tensor_item
from tuidebug.torch.deferred import Launched, settle
from tuidebug.torch.dump import DumpSink, StepSelection
from tuidebug.torch.graph import (
    ForwardRecorder,
    ModelGraph,
    flatten_tensors,
    graph_for,
    leaf_modules,
    trace_model,
)
from tuidebug.torch.policy import HEARTBEAT_GIVE_UP, check_options, is_eval_pass
from tuidebug.torch.ranks import LateAttach, process_rank
from tuidebug.torch.stats import to_numpy
from tuidebug.torch.wrappers import unrecorded_message, unwrap_model, unwrap_optimizer

__all__ = [
    "Debugger",
    "DebuggerUnavailable",
    "DebuggerWarning",
    "OnDisconnect",
    "Terminated",
]

log = logging.getLogger("tuidebug.torch")

OnDisconnect = Literal["continue", "wait", "raise"]
Keep = Literal["auto", "all", "watched"]

BACKEND = "GPU"  # see the module docstring
_RUN_STEP = RunCommand("step")
_WAIT_DELAYS = (1.0, 2.0, 5.0, 10.0)  # "wait" policy: reconnect attempts, then every 10 s
_WAIT_NOTICE_EVERY = 60.0
# keep="auto": a suspension the debugger ended faster than this was "continue" (nobody
# looking); a longer one means a person is stepping and will want to see every tensor
INTERACTIVE_SECONDS = 0.25
# free running (a step budget from a tuidebug server): the longest the client goes without a
# WaitCMD, so a pause or terminate takes effect within this plus one step
FREE_RUN_SECONDS = 0.1


class Terminated(Exception):
    """The debugger terminated the training (raised by `Debugger.step_end`)."""


class DebuggerUnavailable(ConnectionError):
    """The debugger cannot be reached (only with `on_disconnect="raise"`)."""


class DebuggerWarning(UserWarning):
    """The debugger is gone and the training goes on without it (`on_disconnect="continue"`)."""


# =============================================================================== debugger
class Debugger:
    """One model attached to a debugger and/or a dump. Create with `attach` or `dump`."""

    check_eval_passes = False  # True: evaluation passes are checked too (`policy.py`)

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        host: str | None = "127.0.0.1",
        port: int = 50051,
        on_disconnect: OnDisconnect = "continue",
        dump_dir: str | Path | None = None,
        dump_steps: StepSelection = None,
        example_inputs: Any = None,
        trace: str = "auto",
        keep: Keep = "auto",
        keep_output_grads: bool = False,
        heartbeat_period: int = 30,
        retry_delay: float = 1.0,
        wait: bool = True,
        step: int = 0,
    ) -> None:
        check_options(on_disconnect, keep, trace)
        # the real module and optimizer under torch.compile / accelerate / Lightning wrappers
        self.model = unwrap_model(model)
        self.optimizer = unwrap_optimizer(optimizer)
        self.host = host
        self.port = port
        self.target = f"{host}:{port}" if host is not None else ""
        self.on_disconnect: OnDisconnect = on_disconnect
        self.keep: Keep = keep
        # hold a reference to every tensor of the running step (not only watched ones)
        self._hold_all = keep != "watched"
        self.keep_output_grads = keep_output_grads
        self.heartbeat_period = heartbeat_period
        self.retry_delay = retry_delay
        self.example_inputs = example_inputs
        self.trace = trace
        # completed steps (= MindSpore's cur_step at step-end suspensions); `step=` starts
        # it where the training is (a late attach, a resumed run)
        self.step = step
        self._wait = wait  # False: train on without a debugger, connect when one listens
        self._late: LateAttach | None = None
        self._rank: RankInfo | None = None  # this process's rank under torch.distributed
        # a job of several ranks: a hit found inside a step is sent at once, but the ranks
        # suspend together at the step end (online/job.py: none is held mid-collective)
        self._multi = False
        self._hits_pending = False
        self.graph: ModelGraph | None = None

        self._dump: DumpSink | None = None
        self._dump_dir = dump_dir
        self._dump_steps = dump_steps
        self._client: ProtocolClient | None = None
        self._online = False
        self._closed = False
        self._suspended = False
        self._cmd: RunCommand = _RUN_STEP
        self._budget = 0  # step ends that may still pass without a WaitCMD (free running)
        self._last_wait = 0.0  # monotonic time the last command loop returned
        self.waits = 0  # step-end suspensions that did a WaitCMD (tests, benchmarks)
        self._pending: BaseException | None = None
        self._store = StepStore()
        self._counts: dict[str, int] = {}
        self._params: dict[str, nn.Parameter] = {}
        self._prev: dict[str, torch.Tensor] = {}
        self._names: list[str] = []
        self._watch_key: tuple[tuple[int, ClientWatchpoint], ...] | None = None
        self._watched: frozenset[str] = frozenset()
        self._change_params: frozenset[str] = frozenset()
        self._grad_name: dict[str, str] = {}
        self._param_grad_name: dict[str, str] = {}
        self._by_call: dict[tuple[str, int], str] = {}
        self._fwd_handles: list[Any] = []
        self._grad_handles: list[Any] = []
        self._opt_handles: list[Any] = []
        self._forward_side: frozenset[str] = frozenset()  # names captured in forward hooks
        self._param_grad_nodes: frozenset[str] = frozenset()
        self._recorder: ForwardRecorder | None = None
        self._recorder_handles: list[Any] = []
        self._warned: set[str] = set()
        # checks launched since the last check point, decided together there
        self._deferred: list[tuple[Selection, Launched]] = []
        self._backward_end = BackwardEnd(self._after_backward)
        self._eval_pass = False  # the model's forward running is an evaluation pass

    # ============================================================== lifecycle
    def start(self) -> Debugger:
        """Build the graph, install the hooks, connect and suspend (initial suspension).
        Models that `torch.fx` cannot trace (and that came without `example_inputs`) are
        recorded during their first forward pass; the graph is sent right after it."""
        graph: ModelGraph | None
        if self.example_inputs is not None:
            graph = graph_for(self.model, self.example_inputs, method=self.trace)
        else:
            graph = trace_model(self.model, method=self.trace) if self.trace != "hooks" else None
            if graph is None:
                self._start_recording()
                return self
        self._graph_ready(graph)
        return self

    def _graph_ready(self, graph: ModelGraph) -> None:
        self.graph = graph
        self._params = dict(graph.parameters)
        self._names = [*graph.inputs, *graph.by_name]
        self._by_call = {key: node.name for key, node in graph.by_call.items()}
        self._grad_name = {fwd: g.name for fwd, g in graph.output_grad_of.items()}
        self._param_grad_name = {p: g.name for p, g in graph.param_grad_of.items()}
        if self._dump_dir is not None:
            device = "GPU" if any(p.is_cuda for p in self._params.values()) else "CPU"
            self._dump = DumpSink(
                self._dump_dir, graph.root_class, self._dump_steps, device_target=device
            )
        self._forward_side = frozenset(
            [*graph.data_inputs, *(n.name for n in graph.nodes if n.kind != "param_grad")]
        )
        self._param_grad_nodes = frozenset(self._param_grad_name.values())
        self._sync_hooks()
        if self.host is not None:
            self._rank = process_rank()
            self._multi = self._rank is not None and self._rank.world_size > 1
            if not self._wait:
                self._late = LateAttach(self.host, self.port, self._rank)
                if not self._late.due(now=True):
                    return  # no debugger yet: `step_end` looks again
            self._connect_first()
        self._sync_hooks()

    def _start_recording(self) -> None:
        """Untraceable model: record its first forward, then carry on as if traced."""
        recorder = ForwardRecorder(self.model)
        recorder.__enter__()
        self._recorder = recorder
        self._recorder_handles.append(self.model.register_forward_hook(eager(self._recorded)))

    def _recorded(self, module: nn.Module, args: Any, output: Any) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        self._recorder = None
        for handle in self._recorder_handles:
            handle.remove()
        self._recorder_handles.clear()
        recorder.__exit__(None, None, None)
        try:
            self._graph_ready(recorder.graph())
        except DebuggerUnavailable as exc:
            # inside the model's forward: say it where every other failure is said
            self._pending = exc

    def close(self) -> None:
        """Remove the hooks, finish the dump and tell the debugger the training is done."""
        if self._closed:
            return
        self._closed = True
        if self._recorder is not None:
            self._recorder.__exit__(None, None, None)
            self._recorder = None
        for handle in self._recorder_handles:
            handle.remove()
        self._remove_hooks()
        if self._dump is not None:
            self._dump.finish()
        self._close_client(goodbye=True)
        self._online = False
        self._store.clear()
        self._prev.clear()

    def __enter__(self) -> Debugger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        """True while a debugger session is active."""
        return self._online

    @property
    def capturing(self) -> tuple[bool, bool]:
        """(forward hooks, parameter-gradient hooks) installed right now: both are off in
        continue mode when nothing is watched, so the training runs at full speed."""
        return bool(self._fwd_handles), bool(self._grad_handles)

    @property
    def dump_root(self) -> Path | None:
        return self._dump.root if self._dump is not None else None

    def core_graph(self) -> Any:
        """The `core.Graph` the debugger shows (None before the graph is known)."""
        return self.graph.graph() if self.graph is not None else None

    # ================================================================ the step
    def step_end(self) -> None:
        """The end of one training step (call it after `optimizer.step()`): dump, check the
        watchpoints, suspend and obey the debugger. Raises `Terminated` when the debugger
        terminated the training, `DebuggerUnavailable` when it is gone and
        `on_disconnect="raise"`."""
        self._raise_pending()
        if self._closed:
            return
        if self._recorder is not None and "\0unrecorded" not in self._warned:  # forward never ran
            self._warned.add("\0unrecorded")
            self._warn(unrecorded_message(self.model, self.step + 1))
        iteration = self.step
        if self._dump is not None and self.graph is not None and self._dump.wants(iteration):
            self._write_dump(iteration)
        if self._online and self._client is not None:
            running = self.step + 1
            hits: list[Any] = []
            if self._client.watchpoints:
                self._check_point()
                self._raise_pending()
                client = self._client
                if client is None:
                    return
                sels = client.select(self.check_items(), running)
                launched = [launch_selection(sel) for sel in sels]
                hits = client.hits_of(
                    sels, settle([lc if lc is not None else UNAVAILABLE for lc in launched])
                )
                if hits:
                    client.send_hits(hits)
            self.step = running
            if hits or self._hits_pending or not self._free_step():
                self._hits_pending = False
                self.waits += 1
                self._suspend("", boundary=True)
            elif self.optimizer is None:
                self._snapshot_previous()  # as after a suspension: the step's start values
        else:
            self.step += 1
        self._store.clear()
        if not self._online:
            self._choose_holding(0.0)
            self._sync_hooks()
        # every rank takes part at every step end, online or not (see `ranks.py`)
        if self._late is not None and self._late.due(look=not self._online) and not self._online:
            self._connect_first()  # a debugger appeared: suspend here, at this step end
        self._raise_pending()

    def _free_step(self) -> bool:
        """Whether this step end may pass without a WaitCMD (see `FREE_RUN_SECONDS`)."""
        if self._budget <= 0 or time.monotonic() - self._last_wait >= FREE_RUN_SECONDS:
            return False
        self._budget -= 1
        return True

    def _raise_pending(self) -> None:
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        self.close()
        raise pending

    # =============================================================== connection
    def _new_client(self) -> ProtocolClient:
        return ProtocolClient(
            self.target,
            backend=BACKEND,
            ms_version=f"torch-{torch.__version__}",
            heartbeat_period=self.heartbeat_period,
            retry_delay=self.retry_delay,
            reconnect=True,
            # the training thread is the only one that ever waits; the plain blocking call
            # costs a third of a polled one, and it is paid at every step end
            interruptible=False,
            extra_metadata=encode_rank_info(self._rank) if self._rank is not None else b"",
            # a debugger that stopped answering is given up after one retry (~retry_delay),
            # not MindSpore's five with a growing back-off (~15 s of stalled training)
            max_failures=1,
            heartbeat_give_up=HEARTBEAT_GIVE_UP,  # a frozen debugger: policy.py
        )

    def _open_session(self) -> str:
        """Handshake and graph; "" on success, else one sentence saying why not."""
        assert self.graph is not None
        client = self._new_client()
        try:
            matched = client.connect(self.step, graph_num=1)
        except ClientError as exc:
            client.close()
            return str(exc)
        if not matched:
            client.close()
            return f"The debugger at {self.target} refused this training (version check)."
        if not client.send_graphs([self.graph.graph_proto()]):
            client.close()
            return f"The debugger at {self.target} did not accept the graph."
        self._client = client
        self._online = True
        self._cmd = _RUN_STEP
        self._budget = 0
        self._watch_key = None
        self._refresh_watch()
        return ""

    def _connect_first(self) -> None:
        error = self._open_session()
        if error:
            if self.on_disconnect == "raise":
                raise DebuggerUnavailable(error)
            if self.on_disconnect == "continue":
                self._warn(f"{error.rstrip('.')}; the training runs without the debugger.")
                return
            if not self._wait_for_debugger(error):
                return
        self._suspend("", boundary=True)

    def _wait_for_debugger(self, error: str) -> bool:
        """`on_disconnect="wait"`: block until a debugger answers (saying so on stderr)."""
        self._warn(f"{error.rstrip('.')}; waiting for a debugger at {self.target}.")
        attempt = 0
        last_notice = time.monotonic()
        while not self._closed:
            time.sleep(_WAIT_DELAYS[min(attempt, len(_WAIT_DELAYS) - 1)] * self.retry_delay)
            attempt += 1
            error = self._open_session()
            if not error:
                log.warning("tuidebug: connected to the debugger at %s", self.target)
                return True
            if time.monotonic() - last_notice > _WAIT_NOTICE_EVERY:
                log.warning("tuidebug: still waiting for a debugger at %s", self.target)
                last_notice = time.monotonic()
        return False

    def _close_client(self, *, goodbye: bool) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        if goodbye and not client.terminated:
            client.finish(self.step)  # spec §2.11: training_done
        else:
            client.close()

    def _warn(self, message: str) -> None:
        # a warning, not a log record: it is printed even when logging is not configured
        # (the training must never be left without a debugger silently), once per cause
        log.info("tuidebug: %s", message)
        warnings.warn(message, DebuggerWarning, stacklevel=2)

    # =============================================================== suspension
    def _suspend(self, cur_node: str, *, boundary: bool) -> None:
        """Serve the debugger's commands here until it lets the training run on."""
        if self._suspended:
            return
        while self._online and self._client is not None:
            client = self._client
            cur_step = self.step if boundary else self.step + 1
            self._suspended = True
            started = time.monotonic()
            try:
                result = client.command_loop(self, cur_step, cur_node)
            finally:
                self._suspended = False
            if result is not None:
                self._cmd = result
                # this step end (or the end of the step in progress) is the first of them
                self._budget = result.steps - 1 if result.level == "step" else 0
                self._last_wait = time.monotonic()
                self._refresh_watch()
                self._choose_holding(time.monotonic() - started)
                if boundary and self.optimizer is None:
                    self._snapshot_previous()
                self._sync_hooks()
                return
            if not client.connection_lost:
                # an exit command: stop at the step boundary, as MindSpore does
                self._go_offline(goodbye=False)
                self._pending = Terminated("The debugger terminated the training.")
                return
            self._go_offline(goodbye=False)
            message = f"Lost the debugger at {self.target}"
            if self.on_disconnect == "raise":
                self._pending = DebuggerUnavailable(f"{message}.")
                return
            if self.on_disconnect == "continue":
                self._warn(f"{message}; the training continues without it.")
                return
            if not self._wait_for_debugger(message):
                return
            boundary = True  # a new debugger session starts with its initial suspension
            cur_node = ""

    def _choose_holding(self, suspended_for: float) -> None:
        """Whether the next tensors are all held (viewable at the next suspension) or only
        the watched ones. Holding every activation until the step ends keeps memory that
        autograd would have freed and reused during backward — a few percent of a small
        model's step — so `keep="auto"` does it only when someone is looking: after a
        suspension that lasted (a person stepping), while node stepping, or for a dump."""
        if self.keep != "auto":
            return
        self._hold_all = (
            suspended_for >= INTERACTIVE_SECONDS
            or self._cmd.level == "node"
            or (self._dump is not None and self._dump.wants(self.step))
        )

    def _go_offline(self, *, goodbye: bool) -> None:
        self._online = False
        self._close_client(goodbye=goodbye)
        self._watched = frozenset()
        self._change_params = frozenset()
        self._prev.clear()
        self._sync_hooks()
        if not self._fwd_handles:
            self._store.clear()

    def _after_kernel(self, name: str) -> None:
        """A node just produced `name`'s tensor: check it, and suspend on a hit or when
        node stepping asks for it (spec §2.6 GPU suspension points)."""
        if self._client is None:
            return
        cmd = self._cmd
        if cmd.level != "node":
            if name in self._watched:
                self._launch_checks(self._items_of(name))
            return
        hit = name in self._watched and self._check_now(name)
        if hit or cmd.node_name in ("", name):
            self._suspend(name, boundary=False)

    # ============================================================ check points
    # Running (step or continue), a watched tensor's statistics are queued on its device when
    # it is produced and decided at the next check point: the end of the forward pass, of the
    # backward pass (`BackwardEnd`), the optimizer's step and the step's end, with one host
    # synchronisation each. A hit then suspends the training at the first offending kernel
    # in execution order, as a per-kernel check would have, only later: the kernels after it
    # in the same pass have run. Node stepping checks and suspends at every kernel.
    def _launch_checks(self, items: Sequence[CheckItem]) -> None:
        client = self._client
        if client is None:
            return
        for sel in client.select(items, self.step + 1, recheck=True, per_kernel=True):
            launched = launch_selection(sel)
            if launched is not None:
                self._deferred.append((sel, launched))

    def _check_point(self) -> None:
        """Decide the checks launched since the last check point; suspend at each kernel
        with hits, in execution order."""
        client = self._client
        deferred, self._deferred = self._deferred, []
        if client is None or not deferred or self._suspended:
            return
        results = settle([launched for _, launched in deferred])
        hits = client.hits_of([sel for sel, _ in deferred], results)
        while hits and self._online and self._pending is None and self._client is client:
            node = hits[0].tensor.node_name
            group = [h for h in hits if h.tensor.node_name == node]
            hits = [h for h in hits if h.tensor.node_name != node]
            alive = [h for h in group if h.id in client.watchpoints]  # not deleted meanwhile
            if alive:
                client.send_hits(alive)
                if self._multi:
                    self._hits_pending = True  # every rank stops at this step's end
                    continue
                self._suspend(node, boundary=False)

    def _after_backward(self) -> None:
        if self._online and not self._suspended:
            self._check_point()

    def _forward_done(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._eval_pass:
            self._eval_pass = False
        elif self._online and not self._suspended:
            self._check_point()

    def _check_now(self, name: str) -> bool:
        """Check `name`'s tensors of the running step and send the hits; True on a hit."""
        client = self._client
        if client is None:
            return False
        hits = client.check(
            self, self.step + 1, recheck=True, per_kernel=True, items=self._items_of(name)
        )
        if hits:
            client.send_hits(hits)
        return bool(hits)

    # ================================================================= watching
    def _refresh_watch(self) -> None:
        """Which names the debugger's watchpoints cover (recomputed when they change)."""
        client = self._client
        items = tuple(client.watchpoints.items()) if client is not None else ()
        if items == self._watch_key:
            return
        self._watch_key = items
        watched: set[str] = set()
        change: set[str] = set()
        for _, wp in items:
            is_change = wp.condition in CHANGE_CONDITIONS
            for name in self._names:
                if wp.match(name) is not None:
                    watched.add(name)
                    if is_change and name in self._params:
                        change.add(name)
        self._watched = frozenset(watched)
        self._change_params = frozenset(change)
        if not self._change_params:
            self._prev.clear()

    def _snapshot_previous(self) -> None:
        """Previous-step copies, only of parameters watched by a change condition."""
        self._prev = {
            name: self._params[name].detach().clone() for name in sorted(self._change_params)
        }

    def _before_update(self, optimizer: object, args: object, kwargs: object) -> None:
        if self._online:
            if not self._suspended:
                self._check_point()  # the backward pass is over: its gradients are final
            if self._change_params:
                self._snapshot_previous()

    # ===================================================== TensorProvider (protocol)
    def lookup(self, name: str, slot: str, iter: str) -> np.ndarray | None:
        """The tensor `<name>:<slot>` for a ViewCMD (copied to the host only now)."""
        try:
            index = int(slot or 0)
        except ValueError:
            return None
        if iter == "prev":
            prev = self._prev.get(name) if index == 0 else None
            return to_numpy(prev) if prev is not None else None
        if iter:
            return None
        param = self._params.get(name)
        if param is not None:
            return to_numpy(param) if index == 0 else None
        tensor = self._store.get(name, index)
        if tensor is None:
            if name in self._store.slots:
                self._note_stale(name)
            return None
        return to_numpy(tensor)

    def check_items(self) -> list[CheckItem]:
        """The watched tensors now: this step's captures, then the parameters."""
        self._refresh_watch()
        watched = self._watched
        items: list[CheckItem] = []
        for name, slots in self._store.slots.items():
            if name not in watched:
                continue
            order = self._store.order.get(name, 0)
            for slot, held in enumerate(slots):
                if held is not None:
                    items.append(tensor_item(name, slot, order, held, self._note_stale))
        end = self._store.seq
        for i, (name, param) in enumerate(self._params.items()):
            if name in watched:
                items.append(param_item(name, param, end + i, partial(self._previous, name)))
        items.sort(key=lambda item: item.order)
        return items

    def _items_of(self, name: str) -> list[CheckItem]:
        slots = self._store.slots.get(name, [])
        order = self._store.order.get(name, 0)
        return [
            tensor_item(name, slot, order, held, self._note_stale)
            for slot, held in enumerate(slots)
            if held is not None
        ]

    def _previous(self, name: str) -> torch.Tensor | None:
        # looked up when used: `_snapshot_previous` replaces the dict, items may outlive it
        return self._prev.get(name)

    def _note_stale(self, name: str) -> None:
        if name not in self._warned:
            self._warned.add(name)
            log.info(
                "tuidebug: %s was modified in place after it was produced; its value is "
                "reported as unavailable",
                name,
            )

    # ==================================================================== hooks
    # Hooks are installed only while they have something to do: a Python call per module,
    # per output and per gradient is a few percent of a small model's step, and in continue
    # mode with nothing watched there is nothing to capture. Three groups, each synced
    # (installed or removed) whenever what the debugger wants may have changed; the forward
    # group only ever changes outside a forward pass (a suspension inside one implies it is
    # installed), so call numbering is never disturbed.
    def _needs(self) -> tuple[bool, bool, bool]:
        """(forward hooks, parameter-gradient hooks, optimizer hook) needed now."""
        dumping = self._dump is not None and self._dump.wants(self.step)
        if self._closed or not (self._online or dumping):
            return False, False, False
        hold = self._hold_all or dumping
        stepping = self._online and self._cmd.level == "node"
        watched = self._watched
        forward = (
            hold
            or stepping
            or (self._online and self.keep_output_grads)
            or not watched.isdisjoint(self._forward_side)
        )
        grads = hold or stepping or not watched.isdisjoint(self._param_grad_nodes)
        # the optimizer's step is a check point (gradients final, parameters not yet updated)
        optimizer = self._online and bool(watched) and self.optimizer is not None
        return forward, grads, optimizer

    def _sync_hooks(self) -> None:
        if self.graph is None:
            return
        forward, grads, optimizer = self._needs()
        if forward and not self._fwd_handles:
            self._fwd_handles.append(self.model.register_forward_pre_hook(eager(self._root_pre)))
            self._fwd_handles.append(self.model.register_forward_hook(eager(self._forward_done)))
            for qualname, module in leaf_modules(self.model).items():
                hook = self._make_forward_hook(qualname)
                self._fwd_handles.append(module.register_forward_hook(eager(hook)))
        elif not forward:
            remove_handles(self._fwd_handles)
        if grads and not self._grad_handles:
            for name, param in self._params.items():
                gname = self._param_grad_name.get(name)
                if gname is not None and param.requires_grad:
                    hook = partial(self._on_param_grad, gname)
                    self._grad_handles.append(param.register_post_accumulate_grad_hook(eager(hook)))
        elif not grads:
            remove_handles(self._grad_handles)
        if optimizer and not self._opt_handles and self.optimizer is not None:
            self._opt_handles.append(
                self.optimizer.register_step_pre_hook(eager(self._before_update))
            )
        elif not optimizer:
            remove_handles(self._opt_handles)

    def _remove_hooks(self) -> None:
        remove_handles(self._fwd_handles)
        remove_handles(self._grad_handles)
        remove_handles(self._opt_handles)

    def _root_pre(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        self._counts.clear()  # call numbering restarts with every pass through the model
        self._eval_pass = is_eval_pass(module, self.check_eval_passes)
        graph = self.graph
        if graph is None or self._eval_pass:
            return
        for i, arg in enumerate(args):
            if isinstance(arg, torch.Tensor):
                name = f"args{i}"
                if name in graph.inputs and (self._hold_all or name in self._watched):
                    self._store.put_all(name, [arg])
                    if self._online and not self._suspended and name in self._watched:
                        self._check_input(name)

    def _check_input(self, name: str) -> None:
        if self._cmd.level != "node":
            self._launch_checks(self._items_of(name))
            return
        if self._check_now(name):
            # named like a kernel suspension: with cur_node "" the server would take this
            # mid-step stop for the step's end and miscount a step budget given from here
            self._suspend(name, boundary=False)

    def _make_forward_hook(self, qualname: str) -> Callable[..., None]:
        by_call = self._by_call
        counts = self._counts

        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            if self._eval_pass:
                return  # nothing of an evaluation pass is held or checked (policy.py)
            index = counts.get(qualname, 0)
            counts[qualname] = index + 1
            name = by_call.get((qualname, index))
            if name is None:
                return  # a call the graph does not have (the model ran differently)
            outs = [output] if isinstance(output, torch.Tensor) else flatten_tensors(output)
            online = self._online
            if self._hold_all or name in self._watched:
                self._store.put_all(name, outs)
            if online and torch.is_grad_enabled():
                gname = self._grad_name.get(name)
                # a tensor hook makes backward call into Python for that tensor: only for
                # watched output gradients, while node stepping, or when asked for
                if gname is not None and (
                    self.keep_output_grads or gname in self._watched or self._cmd.level == "node"
                ):
                    for slot, t in enumerate(outs):
                        if t.requires_grad:
                            t.register_hook(eager(partial(self._on_output_grad, gname, slot)))
            if online and not self._suspended:
                self._after_kernel(name)

        return hook

    def _on_output_grad(self, gname: str, slot: int, grad: torch.Tensor) -> None:
        if self._closed:
            return
        self._store.put(gname, slot, grad)
        if self._online and not self._suspended:
            self._after_kernel(gname)

    def _on_param_grad(self, gname: str, param: torch.Tensor) -> None:
        grad = param.grad
        if grad is None or self._closed:
            return
        if self._hold_all or gname in self._watched:
            self._store.put(gname, 0, grad)
        if self._online and not self._suspended:
            self._after_kernel(gname)
            self._backward_end.arm()  # gradients final: a check point before clipping/update

    # ===================================================================== dump
    def _write_dump(self, iteration: int) -> None:
        assert self._dump is not None and self.graph is not None
        tensors, stale = self._store.values()
        for name, param in self._params.items():
            tensors[name] = [param.detach()]
        # the graph's own order (forward calls, then backward), not this step's capture
        # order: a step can miss calls (the first one of a model recorded by hooks)
        order = [node.name for node in self.graph.nodes]
        self._dump.write(iteration, self.graph, tensors, order)
        for name in stale:
            self._note_stale(name)
