"""The condition engine's scan kernel, compiled by numba (imported only by `kernels.load`).

`unit` gathers everything `scan_engine._Scan` needs from one unit of a tensor (and its
previous value) in one call that releases the GIL: per float64 sub-block the sums Σx, Σ|x|,
Σ|x − p|, Σ|p| and the moments, the counts c(t) = #{x >= t} behind the zero and range
percentages, max/min without NaN, NaN/Inf presence and the all-close tests. Each quantity
is one short loop over a sub-block that stays in cache, written so that LLVM vectorises it.
The results are the numpy stage's to rounding: only the order of additions inside a
sub-block differs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numba
import numpy as np

from tuidebug.core import cache_folder

LANES = 64  # independent max/min lanes: what lets LLVM vectorise the extrema

_CACHE_DIR = cache_folder.cache_dir()  # None: compile in every process


def _disk_cache(func: Callable[..., Any]) -> Any:
    """A numba function cache for `func` kept in `_CACHE_DIR`, or None (no disk cache).

    `njit(cache=True)` picks its folder from numba's list of locators, the first of which
    that can write wins: `$NUMBA_CACHE_DIR`, else the `__pycache__` beside the source, i.e.
    inside the installed package. Setting numba's own CACHE_DIR would move the user's
    numba caches too, so our functions get a cache whose only locator is ours; anything
    unexpected in numba's internals (they are not a public API) means no disk cache."""
    if _CACHE_DIR is None:
        return None
    try:
        from numba.core import caching

        class Locator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
            """numba's user-wide locator, rooted in tuidebug's cache folder: one subfolder
            per installed copy of the source (numba's naming), stamped by its content."""

            def __init__(self, py_func: Callable[..., Any], py_file: str) -> None:
                self._py_file = py_file
                self._lineno = py_func.__code__.co_firstlineno
                sub = self.get_suitable_cache_subpath(py_file)
                self._cache_path = os.path.join(str(_CACHE_DIR), sub)

            def get_cache_path(self) -> str:
                return self._cache_path

        class Impl(caching.CompileResultCacheImpl):
            # numba annotates this attribute as an instance variable; it is read from the class
            _locator_classes: ClassVar[list[type]] = [Locator]  # type: ignore[misc, assignment]

        class Cache(caching.FunctionCache):
            _impl_class = Impl

            def load_overload(self, sig: Any, target_context: Any) -> Any:
                try:
                    return super().load_overload(sig, target_context)
                except Exception:  # a damaged or foreign cache file: compile instead
                    return None

            def save_overload(self, sig: Any, data: Any) -> None:
                # the folder became unwritable or full: no disk cache, the kernel still runs
                with contextlib.suppress(OSError):
                    super().save_overload(sig, data)

        cache = Cache(func)
        # $NUMBA_CACHE_LOCATOR_CLASSES overrides any class's locator list: refuse anything
        # but ours, and a folder that is not inside ours
        if not isinstance(cache._impl.locator, Locator) or not Path(
            cache.cache_path
        ).is_relative_to(_CACHE_DIR):
            return None
        return cache
    except Exception:  # numba's internals changed, or the folder went away: no disk cache
        return None


def _jit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """`numba.njit` without the GIL, cached on disk in tuidebug's per-user cache folder (a
    cached kernel loads in ~0.1 s, a compile takes ~2 s), or per process when that folder
    cannot be used.

    `fastmath={"reassoc"}` on the sums lets LLVM split them over SIMD lanes; it is the only
    fast-math freedom taken (no FMA contraction; NaN and Inf follow IEEE). Loops run over
    slices with `range(n)`: a `range(start, stop)` index defeats the vectoriser."""

    def wrap(func: Callable[..., Any]) -> Any:
        # cache=False: numba would pick the package's own __pycache__ (see _disk_cache)
        dispatcher = numba.njit(nogil=True, cache=False, **options)(func)
        cache = _disk_cache(func)
        if cache is not None:
            dispatcher._cache = cache  # what Dispatcher.enable_caching sets, with our cache
        return dispatcher

    return wrap


@_jit(fastmath={"reassoc"})
def sums_x(xs: np.ndarray) -> tuple[float, float]:
    s1 = 0.0
    sa = 0.0
    for i in range(xs.size):
        v = np.float64(xs[i])
        s1 += v
        sa += abs(v)
    return s1, sa


@_jit(fastmath={"reassoc"})
def sums_xp(xs: np.ndarray, ps: np.ndarray) -> tuple[float, float, float, float]:
    s1 = 0.0
    sa = 0.0
    sd = 0.0
    sp = 0.0
    for i in range(xs.size):
        v = np.float64(xs[i])
        w = np.float64(ps[i])
        s1 += v
        sa += abs(v)
        sd += abs(v - w)
        sp += abs(w)
    return s1, sa, sd, sp


@_jit(fastmath={"reassoc"})
def square_sum(xs: np.ndarray, shift: float) -> float:
    s2 = 0.0
    for i in range(xs.size):
        d = np.float64(xs[i]) - shift
        s2 += d * d
    return s2


@_jit()
def extrema(xs: np.ndarray) -> tuple[float, float]:
    """Max and min as float64, NaN ignored (MindSpore's running max/min never take a
    NaN); (-inf, inf) when every element is NaN. Comparisons are in the raw dtype,
    which orders exactly as the float64 conversions do."""
    n = xs.size
    first = 0
    while first < n and xs[first] != xs[first]:
        first += 1
    if first == n:
        return -np.inf, np.inf
    hi = np.full(LANES, xs[first])
    lo = np.full(LANES, xs[first])
    body = first + (n - first) // LANES * LANES
    ys = xs[first:body]
    for i in range(0, ys.size, LANES):
        for j in range(LANES):
            v = ys[i + j]
            hi[j] = v if v > hi[j] else hi[j]
            lo[j] = v if v < lo[j] else lo[j]
    a = hi.max()
    b = lo.min()
    for i in range(body, n):
        v = xs[i]
        a = v if v > a else a
        b = v if v < b else b
    return np.float64(a), np.float64(b)


@_jit()
def count_ge(xs: np.ndarray, t: Any) -> np.int64:
    c = np.int64(0)
    for i in range(xs.size):
        c += np.int64(xs[i] >= t)
    return c


@_jit()
def nan_inf(xs: np.ndarray) -> tuple[bool, bool]:
    nan = False
    inf = False
    for i in range(xs.size):
        v = np.float64(xs[i])
        nan |= v != v
        inf |= abs(v) == np.inf
    return nan, inf


@_jit()
def close_count(xs: np.ndarray, ps: np.ndarray, rtol: float, atol: float) -> np.int64:
    # |x − p| <= atol + rtol·|p| in MindSpore's operation order; NaN is never close
    c = np.int64(0)
    for i in range(xs.size):
        w = np.float64(ps[i])
        c += np.int64(abs(np.float64(xs[i]) - w) <= atol + rtol * abs(w))
    return c


@_jit()
def unit(
    x: np.ndarray,
    p: np.ndarray,
    sub: int,
    is_float: bool,
    stop_on_error: bool,
    sd: bool,
    thresholds: np.ndarray,
    rtols: np.ndarray,
    atols: np.ndarray,
    alive: np.ndarray,
    sums: np.ndarray,
    moments: np.ndarray,
    counts: np.ndarray,
    extremes: np.ndarray,
    found: np.ndarray,
) -> None:
    """Everything the engine gathers from x (and p, when p is not empty), sub-block by
    sub-block (`sub` elements: they stay in cache across the loops below):

    sums[k] = (Σx, Σ|x|, Σ|x − p|, Σ|p|) and, with `sd`, moments[k] = (count, mean,
    M2) of sub-block k; counts[j] += #{x >= thresholds[j]}; extremes = (max, min) are
    folded in; found[0] (NaN) and found[1] (Inf) are set; alive[j] is cleared when an
    element fails the j-th all-close test (rtols[j], atols[j]). After NaN/Inf with
    `stop_on_error`, the remaining sub-blocks are only searched for the other one."""
    n = x.size
    use_prev = p.size > 0
    k = 0
    for s in range(0, n, sub):
        e = min(s + sub, n)
        m = e - s
        xs = x[s:e]
        if stop_on_error and (found[0] or found[1]):
            if not (found[0] and found[1]):
                nan, inf = nan_inf(xs)
                found[0] |= nan
                found[1] |= inf
            k += 1
            continue
        if use_prev:
            ps = p[s:e]
            s1, sa, d, a = sums_xp(xs, ps)
            sums[k, 2] = d
            sums[k, 3] = a
        else:
            s1, sa = sums_x(xs)
        sums[k, 0] = s1
        sums[k, 1] = sa
        # a finite Σx rules out NaN and Inf; otherwise look (or it is a float64 overflow)
        clean = True
        if is_float and s1 - s1 != 0.0:
            nan, inf = nan_inf(xs)
            found[0] |= nan
            found[1] |= inf
            clean = not (nan or inf)
            if not clean and stop_on_error:
                k += 1
                continue
        hi, lo = extrema(xs)
        extremes[0] = max(extremes[0], hi)
        extremes[1] = min(extremes[1], lo)
        for j in range(thresholds.size):
            t = thresholds[j]
            if clean and lo >= t:
                counts[j] += m
            elif not (clean and hi < t):
                counts[j] += count_ge(xs, t)
        if sd:
            mean = s1 / m
            s2 = square_sum(xs, 0.0)
            m2 = s2 - s1 * mean
            # s2 − s1²/m cancels when |mean| >> sd: then a centred second pass
            if not (m2 >= 0.0 and s2 <= 16.0 * m2):
                m2 = square_sum(xs, mean)
            moments[k, 0] = m
            moments[k, 1] = mean
            moments[k, 2] = m2
        if use_prev:
            for j in range(alive.size):
                if alive[j] and close_count(xs, ps, rtols[j], atols[j]) != m:
                    alive[j] = False
        k += 1
