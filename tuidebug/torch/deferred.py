"""Watchpoint statistics launched on the device when a tensor is produced and read back,
for every tensor of a check point together, with one host synchronisation.

`evaluate_with_torch` decides a tensor at once, which reads each statistic back to the host
(several synchronisations per tensor: on a GPU the training then waits for the debugger at
every module). Here `launch` only queues the reductions the requests need on the tensor's
own stream and keeps their 0-d results; `settle` stacks the results of many tensors, copies
them to the host in one transfer, and decides every request with the engine's own
`_decide`. The reductions are queued right away, not at the check point, because a module
further on may change the tensor in place (ResNet's `ReLU(inplace=True)` and `out +=
identity` rewrite the BatchNorm outputs they follow).

The statistics are MindSpore's, as `evaluate_with_torch` computes them: NaN/Inf presence,
extrema, zero and in-range counts exactly; means, |x| sums and update ratios accumulated in
float64. One is cheaper: NaN/Inf presence is a single NaN-propagating max |x| (the
`torch._foreach_norm(ord=inf)` of the floor), which says "NaN or Inf" but not which; a
tensor where that matters (an error code reports the two bits separately) and which did
show one is decided again by `evaluate_with_torch` at the check point, from the tensor if it
is still as it was produced. If a later in-place change made it stale meanwhile, the bits
are read from the max: NaN if it is NaN (an Inf beside a NaN then goes unreported), Inf if
it is Inf.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from tuidebug.core import scan_engine as _cond
from tuidebug.core.condition_catalogue import (
    UPDATE_RATIO_EPSILON,
    CheckRequest,
    CheckResult,
    ConditionType,
    untouched_params,
)
from tuidebug.torch.graph import numpy_dtype_of
from tuidebug.torch.stats import _PrevShape, local_shard

__all__ = ["Launched", "launch", "settle"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_F64 = torch.float64
# conditions whose results depend on "NaN or Inf" alone (no error bits, no parameters)
_EITHER = ConditionType.GENERAL_OVERFLOW


class Launched:
    """One tensor's check: results known at once (CPU, nothing to check), or statistics
    queued on the device and decided by `settle`."""

    __slots__ = ("_results", "exact", "n", "names", "plan", "prev", "requests", "values")

    def __init__(
        self,
        requests: Sequence[CheckRequest],
        *,
        results: Sequence[CheckResult] | None = None,
    ) -> None:
        self.requests = requests
        self._results = list(results) if results is not None else None
        self.values: list[torch.Tensor] = []  # 0-d device tensors, in `names` order
        self.names: list[object] = []
        self.plan: _cond._Plan | None = None
        self.prev: _PrevShape | None = None
        self.n = 0
        # the exact decision, for a tensor whose NaN/Inf bits matter (see the module text)
        self.exact: Callable[[], Sequence[CheckResult] | None] | None = None

    @property
    def results(self) -> list[CheckResult] | None:
        return self._results

    def _put(self, name: object, value: torch.Tensor) -> None:
        self.names.append(name)
        self.values.append(value)


def launch(
    tensor: torch.Tensor,
    requests: Sequence[CheckRequest],
    previous: torch.Tensor | None = None,
    exact: Callable[[], Sequence[CheckResult] | None] | None = None,
) -> Launched:
    """Queue the statistics `requests` need on `tensor`'s device (no synchronisation).
    `exact` decides the tensor at once if it is still available (None when it is not)."""
    x = local_shard(tensor.detach())  # a DTensor: this rank's shard, no collective
    n = x.numel()
    if n == 0 or numpy_dtype_of(x.dtype) is None:
        return Launched(
            requests, results=[CheckResult(False, 0, untouched_params(r)) for r in requests]
        )
    prev = local_shard(previous.detach()) if previous is not None else None
    if prev is not None and numpy_dtype_of(prev.dtype) is None:
        prev = torch.full((1,), math.nan, dtype=_F64, device=x.device)
    plan = _cond._plan(requests, prev is not None)
    out = Launched(requests)
    out.plan, out.n, out.exact = plan, n, exact
    out.prev = _PrevShape(prev) if prev is not None else None
    flat = x.reshape(-1)
    if x.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    is_float = x.dtype in _FLOATS
    if is_float:
        # NaN propagates through the max (CUDA's foreach/LInf kernels use max_propagate_nan)
        out._put("maxabs", torch.linalg.vector_norm(flat, ord=math.inf))
    if not plan.needs_params:
        return out
    if plan.extrema:
        mn, mx = torch.aminmax(flat)
        out._put("min", mn)
        out._put("max", mx)
    if plan.zeros:
        out._put("nonzero", torch.count_nonzero(flat))
    xd = flat.to(_F64) if (plan.mean or plan.abs_sum or plan.uses_prev or plan.ranges) else None
    if xd is not None:
        for key in plan.ranges:
            lo, hi = key
            out._put(("range", key), torch.count_nonzero((xd >= lo) & (xd <= hi)))
        if plan.mean:
            # as `evaluate_with_torch`: the mean as sum / n, then Σ(x - mean)² (two passes)
            total = xd.sum()
            d = xd - total / n
            out._put("sum", total)
            out._put("m2", (d * d).sum())
        if plan.abs_sum:
            out._put("abs_sum", xd.abs().sum())
        same = prev is not None and prev.numel() == n
        if same and prev is not None and plan.uses_prev:
            pd = prev.reshape(-1).to(device=xd.device, dtype=_F64)
            diff = (xd - pd).abs()
            ap = pd.abs()
            if plan.ratio:
                out._put("s_diff", diff.sum())
                out._put("s_prev", ap.sum())
            for key in plan.closes:
                rtol, atol = key
                out._put(("close", key), (diff <= atol + ap * rtol).all())
    return out


def settle(launched: Sequence[Launched]) -> list[list[CheckResult] | None]:
    """Decide every launched check; the statistics of all of them cross to the host in one
    transfer (one synchronisation per device)."""
    pending = [item for item in launched if item.results is None and item.values]
    host: dict[int, list[float]] = {}
    by_device: dict[torch.device, list[Launched]] = {}
    for item in pending:
        by_device.setdefault(item.values[0].device, []).append(item)
    for items in by_device.values():
        # a few kernels per dtype, not one per value: stack, widen, join, copy once
        by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
        where: list[tuple[torch.dtype, int]] = []
        for item in items:
            for v in item.values:
                group = by_dtype.setdefault(v.dtype, [])
                where.append((v.dtype, len(group)))
                group.append(v)
        order = list(by_dtype)
        joined = torch.cat([torch.stack(by_dtype[d]).to(_F64) for d in order])
        values = joined.cpu().tolist()  # the one read-back
        start, at = {}, 0
        for d in order:
            start[d] = at
            at += len(by_dtype[d])
        flat = [values[start[d] + i] for d, i in where]
        at = 0
        for item in items:
            host[id(item)] = flat[at : at + len(item.values)]
            at += len(item.values)
    out: list[list[CheckResult] | None] = []
    for item in launched:
        if item.results is not None or item.plan is None:  # decided, or not available
            out.append(item.results)
            continue
        out.append(_decide(item, host.get(id(item), [])))
    return out


def _decide(item: Launched, values: list[float]) -> list[CheckResult] | None:
    plan = item.plan
    assert plan is not None
    got = dict(zip(item.names, values, strict=True))
    st = _cond._Stats(item.n)
    maxabs = got.get("maxabs", 0.0)
    if not math.isfinite(maxabs):
        if item.exact is not None and _bits_matter(item.requests):
            exact = item.exact()
            if exact is not None:
                return list(exact)
        st.has_nan = math.isnan(maxabs)
        st.has_inf = not st.has_nan
        if not plan.through_errors:
            return [_cond._decide(r, st, item.prev) for r in item.requests]
        if item.exact is not None:
            exact = item.exact()
            if exact is not None:
                return list(exact)
        return None  # statistics beside NaN/Inf, of a tensor changed since: not decidable
    if "max" in got:
        st.max, st.min = got["max"], got["min"]
    if "nonzero" in got:
        st.zero_count = item.n - int(got["nonzero"])
    if "sum" in got:
        st.mean = got["sum"] / item.n
        st.sd = math.sqrt(got["m2"] / (item.n - 1)) if item.n > 1 else 0.0
    if "abs_sum" in got:
        st.abs_mean = got["abs_sum"] / item.n
    for key in plan.ranges:
        st.range_percentage[key] = 100.0 * got[("range", key)] / item.n
    if item.prev is not None:
        if "s_diff" in got:
            st.ratio = (got["s_diff"] / item.n) / (got["s_prev"] / item.n + UPDATE_RATIO_EPSILON)
        elif plan.ratio:
            st.ratio = math.nan
        st.all_close = {key: bool(got.get(("close", key), False)) for key in plan.closes}
    return [_cond._decide(r, st, item.prev) for r in item.requests]


def _bits_matter(requests: Sequence[CheckRequest]) -> bool:
    """Whether NaN and Inf must be told apart: any request but GENERAL_OVERFLOW (TensorOverflow)
    reports them as separate error bits or decides on one of them."""
    return any(r.condition != _EITHER for r in requests)
