"""Tensor reads from a live training: ViewCMD requests and the answers they are paired with
(spec §2.8).

A ViewCMD goes out as the reply to the training's next WaitCMD; its answer comes back on
another stream (`SendTensors`, `SendTensorStats` or `SendTensorBase`, by level), so the
session keeps one pending request (`ViewRequests`) and the wire side completes it. Full values
carry their names and pair by name; statistics and bases carry none and pair by position.
Only one request is in flight at a time; a caller waits for its answer, at most the tensor
timeout. The pieces here that need no session state (the request for a `TensorRef`, decoding
an answer) are plain functions.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tuidebug._proto import debug_graph_pb2 as graph_pb
from tuidebug._proto import debug_grpc_pb2 as pb
from tuidebug.core.graph import Node, NodeKind
from tuidebug.core.session import SessionError
from tuidebug.core.tensor import TensorRef, UnsupportedDataTypeError, numpy_dtype

if TYPE_CHECKING:
    from tuidebug.online.server import ReceivedTensor

__all__ = [
    "PendingView",
    "TensorBaseInfo",
    "ViewRequests",
    "WireStatistics",
    "base_info",
    "decode_tensor",
    "tensor_request",
    "wire_statistics",
]

log = logging.getLogger("tuidebug.online")


@dataclass(frozen=True)
class TensorBaseInfo:
    """The `base` level of a ViewCMD: DataType number, shape, size in bytes."""

    data_type: int
    shape: tuple[int, ...]
    data_size: int


@dataclass(frozen=True)
class WireStatistics:
    """The `statistics` level of a ViewCMD, as the training computed it (spec §3.7).
    `negative_count`/`positive_count` are the wire's `neg_zero_count`/`pos_zero_count`."""

    base: TensorBaseInfo
    is_bool: bool
    max_value: float
    min_value: float
    avg_value: float
    count: int
    negative_count: int
    positive_count: int
    nan_count: int
    neg_inf_count: int
    pos_inf_count: int
    zero_count: int


@dataclass
class PendingView:
    """One ViewCMD waiting for its answer."""

    requests: list[graph_pb.TensorProto]
    level: int
    delivered: bool = False  # the training has received the ViewCMD
    done: bool = False
    error: str = ""
    results: list[Any] = field(default_factory=list)


class ViewRequests:
    """The one pending ViewCMD of a session and its pairing with the answer streams. Every
    method is called with the session's condition held, or takes it (`cond` is the
    session's: an answer wakes the caller waiting in `request`)."""

    def __init__(self, cond: threading.Condition) -> None:
        self._cond = cond
        self._serial = threading.Lock()  # one request at a time, taken before `cond`
        self.pending: PendingView | None = None

    def request(
        self,
        requests: list[graph_pb.TensorProto],
        level: int,
        *,
        ready: Callable[[], None],
        send: Callable[[pb.EventReply], None],
        withdraw: Callable[[list[graph_pb.TensorProto]], None],
        timeout: float,
    ) -> list[Any]:
        """Queue one ViewCMD (`send`) and block until its answer stream arrived; the answers
        in request order (None where the training sent nothing). `ready` raises
        `SessionError` when no request may be made now; a request not answered in `timeout`
        seconds is taken back (`withdraw`) and fails with one sentence."""
        with self._serial, self._cond:
            ready()
            view = PendingView(requests, level)
            self.pending = view
            command = pb.ViewCMD(tensors=requests, level=level)  # type: ignore[arg-type]
            send(pb.EventReply(status=pb.EventReply.OK, view_cmd=command))
            self._cond.notify_all()
            finished = self._cond.wait_for(lambda: view.done, timeout)
            if self.pending is view:
                self.pending = None
            if not finished:
                withdraw(requests)
                raise SessionError(f"The training did not send the tensor within {timeout:g} s.")
            if view.error:
                raise SessionError(view.error)
            return view.results

    # --------------------------------------------------------------- the wire side
    def expected_keys(self) -> set[tuple[str, str, str]]:
        """(node, slot, iter) of the full values asked for; the server keeps only those."""
        with self._cond:
            view = self.pending
            if view is None or view.level != pb.ViewCMD.value:
                return set()
            return {(t.node_name, t.slot, t.iter) for t in view.requests}

    def answer_values(self, tensors: list[ReceivedTensor], broken: str = "") -> None:
        """A `SendTensors` stream: values pair with the request by name."""
        with self._cond:
            view = self.pending
            if view is None or view.level != pb.ViewCMD.value or view.done:
                log.info("SendTensors without a pending request: ignored")
                return
            if broken:
                self._finish(view, broken)
                return
            by_key = {t.key: t for t in tensors}
            view.results = [by_key.get((r.node_name, r.slot, r.iter)) for r in view.requests]
            self._finish(view, "")

    def answer_by_position(self, level: int, items: list[Any], rpc: str, broken: str) -> None:
        """Spec §2.8: statistics and bases carry no names; they pair with the request by
        position."""
        with self._cond:
            view = self.pending
            if view is None or view.level != level or view.done:
                log.info("%s without a pending request: ignored", rpc)
                return
            if broken:
                self._finish(view, broken)
                return
            n = len(view.requests)
            view.results = list(items[:n]) + [None] * (n - len(items))
            self._finish(view, "")

    def delivered(self) -> None:
        """The ViewCMD went out to the training (as a WaitCMD's answer)."""
        if self.pending is not None and not self.pending.delivered:
            self.pending.delivered = True

    def unanswered(self) -> None:
        """The training suspended again after receiving the ViewCMD without answering it."""
        view = self.pending
        if view is not None and view.delivered and not view.done:
            self._finish(view, "The training answered without sending the tensor.")

    def fail(self, error: str) -> None:
        """End the pending request with `error` (one sentence): closed, disconnected..."""
        if self.pending is not None and not self.pending.done:
            self._finish(self.pending, error)

    def _finish(self, view: PendingView, error: str) -> None:
        view.error = error
        view.done = True
        self._cond.notify_all()


def is_view_of(reply: pb.EventReply, requests: list[graph_pb.TensorProto]) -> bool:
    """Whether a queued reply is the ViewCMD of `requests`."""
    return reply.WhichOneof("cmd") == "view_cmd" and list(reply.view_cmd.tensors) == requests


def tensor_request(
    ref: TensorRef, previous: bool, node: Node | None, step: int
) -> graph_pb.TensorProto | None:
    """Spec §2.8: the TensorProto asking for `ref` at the training's current `step` (its
    `node` when the graph has it); None when the training cannot have it (a previous value
    of anything but a parameter). Parameters and constants are asked by their scoped UI
    name with `truncate=true`; `iter="prev"` exists only for parameters."""
    if not ref.is_output:
        raise SessionError("A live training only sends node outputs, not inputs.")
    if ref.iteration is not None and ref.iteration != step:
        if ref.iteration == step - 1:
            previous = True
        else:
            raise SessionError(
                f"A live training only keeps step {step} (and the previous value of parameters)."
            )
    request = graph_pb.TensorProto(node_name=ref.node, slot=str(ref.slot), iter="")
    if node is not None:
        request.node_name = node.ui_name
        request.truncate = node.kind is not NodeKind.OPERATOR
        if previous:
            if node.kind is not NodeKind.PARAMETER:
                return None  # only parameters keep their previous value
            request.iter = "prev"
    elif previous:
        return None
    return request


def decode_tensor(
    received: ReceivedTensor | None, ref: TensorRef, max_bytes: int, node_name: str = ""
) -> np.ndarray | None:
    """The array of a `SendTensors` answer; None when the training has no such tensor.
    Anything inconsistent is a `SessionError` with one sentence, naming the tensor by
    `node_name` (the node's scoped name, as the user sees it) when given: `ref.node` may be
    the graph's internal id (`2`), which names nothing to the user."""
    if received is None or not received.found:
        return None
    name = f"{node_name}:{ref.slot}" if node_name else ref.name
    if received.oversize:
        raise SessionError(f"Tensor {name} is larger than the {max_bytes >> 20} MiB limit.")
    if not received.finished:
        raise SessionError(f"The training sent tensor {name} only partly.")
    try:
        dtype = numpy_dtype(received.data_type or 0)
    except UnsupportedDataTypeError as exc:
        raise SessionError(str(exc)) from None
    dims = received.dims or ()
    content = received.content
    if dims == (0,) and len(content) == dtype.itemsize:
        dims = ()  # MindInsight: dims [0] is a scalar
    if any(d < 0 for d in dims):
        raise SessionError(f"The training sent tensor {name} with a negative dimension.")
    expected = math.prod(dims) * dtype.itemsize
    if expected != len(content):
        raise SessionError(
            f"The training sent {len(content)} bytes for tensor {name}, "
            f"but its shape {list(dims)} needs {expected}."
        )
    return np.frombuffer(content, dtype=dtype).reshape(dims)


def base_info(base: pb.TensorBase) -> TensorBaseInfo | None:
    if base.data_size == 0 and base.data_type == 0:
        return None  # spec §2.8 "not found"
    return TensorBaseInfo(base.data_type, tuple(base.shape), base.data_size)


def wire_statistics(summary: pb.TensorSummary | None) -> WireStatistics | None:
    """A `SendTensorStats` answer; None when the training has no such tensor."""
    if summary is None:
        return None
    base = base_info(summary.tensor_base)
    if base is None:
        return None
    s = summary.statistics
    return WireStatistics(
        base=base,
        is_bool=s.is_bool,
        max_value=s.max_value,
        min_value=s.min_value,
        avg_value=s.avg_value,
        count=s.count,
        negative_count=s.neg_zero_count,
        positive_count=s.pos_zero_count,
        nan_count=s.nan_count,
        neg_inf_count=s.neg_inf_count,
        pos_inf_count=s.pos_inf_count,
        zero_count=s.zero_count,
    )
