"""Watchpoint checks on torch tensors, with MindSpore's math (spec §3.5).

CPU tensors are checked by the shared engine itself (`core.scan_engine.evaluate`) on a
zero-copy numpy view, so the result is exactly what an offline check of the same values
gives. Tensors on other devices (CUDA…) are not copied to the host: the statistics the
requests need are computed with torch on the tensor's own device, in float64 and in chunks,
and fed to the engine's decision procedure (the same `_plan` / `_decide` the numpy path uses,
so the choice of statistics, error bits and comparisons cannot drift apart).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from tuidebug.core import scan_engine as _cond
from tuidebug.core.condition_catalogue import (
    UPDATE_RATIO_EPSILON,
    CheckRequest,
    CheckResult,
    untouched_params,
)
from tuidebug.core.scan_engine import evaluate
from tuidebug.torch.graph import numpy_dtype_of

__all__ = ["CHUNK_ELEMENTS", "evaluate_tensor", "evaluate_with_torch", "local_shard", "to_numpy"]

CHUNK_ELEMENTS = 1 << 24  # float64 temporaries stay ≤ 128 MiB on the device

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def local_shard(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's part of a distributed tensor (`DTensor`: FSDP2's `fully_shard`, tensor
    parallelism), the tensor itself otherwise. Why every check, view and dump goes through
    it: a DTensor has no `.numpy()`, and a reduction on it (`.any()`, `.max()`) would be a
    collective that every rank must enter at once — a debugger deciding one rank's
    watchpoints must never block on the others. Each rank checks and shows its own shard;
    the node details name the sharding (`graph.sharding_of`)."""
    to_local = getattr(tensor, "to_local", None)  # duck-typed: no torch.distributed import
    if callable(to_local):
        local = to_local()
        if isinstance(local, torch.Tensor):
            return local
    return tensor


def to_numpy(tensor: torch.Tensor) -> np.ndarray | None:
    """The tensor's values as numpy (CPU tensors: a view, no copy); None for a type the
    debugger cannot carry. bfloat16 becomes ml_dtypes' bfloat16 bit for bit. A DTensor
    gives this rank's shard (`local_shard`)."""
    dtype = numpy_dtype_of(tensor.dtype)
    if dtype is None:
        return None
    t = local_shard(tensor.detach())
    if t.device.type != "cpu":
        t = t.cpu()
    if t.is_conj():
        t = t.resolve_conj()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(dtype)
    return t.numpy()


def evaluate_tensor(
    tensor: torch.Tensor,
    requests: Sequence[CheckRequest],
    previous: torch.Tensor | None = None,
) -> list[CheckResult]:
    """One `CheckResult` per request: the numpy engine for CPU tensors, torch statistics on
    the device otherwise. DTensors are checked on this rank's shard (`local_shard`)."""
    tensor = local_shard(tensor)
    if previous is not None:
        previous = local_shard(previous)
    if tensor.device.type == "cpu" and (previous is None or previous.device.type == "cpu"):
        values = to_numpy(tensor)
        if values is None:
            return [CheckResult(False, 0, untouched_params(r)) for r in requests]
        prev = to_numpy(previous) if previous is not None else None
        if previous is not None and prev is None:
            prev = np.full(1, np.nan)  # unreadable previous: as the engine treats it
        return evaluate(values, requests, prev)
    return evaluate_with_torch(tensor, requests, previous)


def evaluate_with_torch(
    tensor: torch.Tensor,
    requests: Sequence[CheckRequest],
    previous: torch.Tensor | None = None,
    *,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> list[CheckResult]:
    """The torch twin of `core.scan_engine.evaluate` (works on any device, CPU included,
    which is how it is tested against the numpy engine)."""
    x = local_shard(tensor.detach())
    n = x.numel()
    if n == 0 or numpy_dtype_of(x.dtype) is None:
        return [CheckResult(False, 0, untouched_params(r)) for r in requests]
    prev = local_shard(previous.detach()) if previous is not None else None
    if prev is not None and numpy_dtype_of(prev.dtype) is None:
        prev = torch.full((1,), math.nan, dtype=torch.float64, device=x.device)
    has_prev = prev is not None
    plan = _cond._plan(requests, has_prev)
    same = prev if prev is not None and prev.numel() == n else None  # compared element-wise
    st = _gather(
        x.reshape(-1),
        same.reshape(-1).to(x.device) if same is not None else None,
        plan,
        max(1, int(chunk_elements)),
    )
    if has_prev and same is None:
        st.ratio = math.nan
        st.all_close = dict.fromkeys(plan.closes, False)
    return [_cond._decide(r, st, _PrevShape(prev) if prev is not None else None) for r in requests]


class _PrevShape:
    """`_decide` only asks the previous tensor for its size."""

    def __init__(self, prev: torch.Tensor) -> None:
        self.size = prev.numel()


def _gather(
    x: torch.Tensor, prev: torch.Tensor | None, plan: _cond._Plan, chunk: int
) -> _cond._Stats:
    n = x.numel()
    st = _cond._Stats(n)
    is_float = x.dtype in _FLOATS
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    if is_float:
        st.has_nan = bool(torch.isnan(x).any())
        st.has_inf = bool(torch.isinf(x).any())
        if (st.has_nan or st.has_inf) and not plan.through_errors:
            return st  # no parameter will be evaluated (spec §3.5 step 3)
    if not plan.needs_params:
        return st
    f64 = torch.float64
    mx, mn = st.max, st.min
    zeros = 0
    s_abs = 0.0
    in_range = [0] * len(plan.ranges)
    s_diff = s_prev = 0.0
    closes = dict.fromkeys(plan.closes, True)
    moments: list[tuple[int, float, float]] = []
    for start in range(0, n, chunk):
        xb = x[start : start + chunk]
        xd = xb.to(f64)
        m = xd.numel()
        if plan.extrema:
            valid = xd[~torch.isnan(xd)] if is_float else xd
            if valid.numel():
                mx = max(mx, float(valid.max()))
                mn = min(mn, float(valid.min()))
        if plan.zeros:
            zeros += int((xd == 0).sum())
        for i, (lo, hi) in enumerate(plan.ranges):
            in_range[i] += int(((xd >= lo) & (xd <= hi)).sum())
        if plan.moments:
            b1 = float(xd.sum())
            bmean = b1 / m
            d = xd - bmean
            moments.append((m, bmean, float((d * d).sum())))
        if plan.abs_sum:
            s_abs += float(xd.abs().sum())
        if prev is not None and (plan.ratio or plan.closes):
            pd = prev[start : start + chunk].to(f64)
            diff = (xd - pd).abs()
            ap = pd.abs()
            if plan.ratio:
                s_diff += float(diff.sum())
                s_prev += float(ap.sum())
            for key, alive in closes.items():
                if alive:
                    rtol, atol = key
                    closes[key] = bool((diff <= atol + ap * rtol).all())
    st.max, st.min = mx, mn
    st.zero_count = zeros
    if plan.moments and moments:
        # Chan et al.'s merge of per-chunk (count, mean, M2), as the numpy engine does
        c_n, c_mean, c_m2 = moments[0]
        for b_n, b_mean, b_m2 in moments[1:]:
            tot = c_n + b_n
            delta = b_mean - c_mean
            c_mean += delta * b_n / tot
            c_m2 += b_m2 + delta * delta * (c_n * b_n / tot)
            c_n = tot
        st.mean = c_mean
        st.sd = math.sqrt(c_m2 / (c_n - 1)) if c_n > 1 else 0.0
    if plan.abs_sum:
        st.abs_mean = s_abs / n
    for key, cnt in zip(plan.ranges, in_range, strict=True):
        st.range_percentage[key] = 100.0 * cnt / n
    if plan.ratio and prev is not None:
        st.ratio = (s_diff / n) / (s_prev / n + UPDATE_RATIO_EPSILON)
    st.all_close = closes
    return st
