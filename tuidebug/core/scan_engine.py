"""The watchpoint check engine: MindSpore's check math (spec §3.5) over one tensor.

`evaluate(tensor, requests, previous)` checks any number of wire-level `CheckRequest`s
(condition number + full parameter list, as a SetCMD carries them; see
`core.condition_catalogue`, which holds the conditions themselves) against one tensor in a
single pass, reproducing `tensor_summary.cc`: the same statistics over the float64
conversion of every element, inclusive range bounds, error bits 1/2/4 (`ErrorCode`),
parameters evaluated only without error bits, a NaN statistic leaving its parameter
untouched.

The pass runs over cache-sized blocks of the flattened tensor (C order), so its extra memory
is a few small float64 buffers whatever the tensor size (a memory-mapped `.npy` is read once,
block by block), and it computes only the statistics the requests read. Tensors of
`KERNEL_MIN_ELEMENTS` or more are scanned by a compiled kernel (one GIL-free call per unit
of elements, see `kernels.py`): the C one of `_scan_kernel.c` once built, else numba's of
`_scan_kernel.py`; smaller ones, and every tensor when neither can run or
`TUIDEBUG_KERNEL=numpy`, by the numpy stages below. They agree to rounding, and the tests
hold all three to the same reference.

Where the result cannot differ from MindSpore's it takes cheaper routes: min/max, zero and
range counts on the raw dtype when that is exact (float32 bounds rounded inwards, integer
bounds to integers); a block's max/min settling a range count or Σ|x| without a pass; sums
per block merged with `math.fsum` instead of MindSpore's running means (they agree to
rounding, ~1e-16 relative); NaN/Inf presence instead of counts (only presence is read);
the standard deviation only when a legacy SD condition asks for it. Deliberate differences:

* IS_OVERFLOW (2) never hits here: MindSpore decides it from Ascend overflow files.
* A previous tensor is converted from its own dtype (MindSpore reinterprets its bytes as the
  current dtype, which only matters if the two dtypes differ).
* Complex tensors (complex64/complex128), which MindSpore's summary never checks, are
  checked here: an element is NaN (Inf) when either part is, and every other statistic is
  that of the magnitudes |z| (the change conditions: |x − p| of the complex difference);
  see `_evaluate_complex`.
* HAS_NAN / HAS_INF / GENERAL_OVERFLOW clear the error bits and then evaluate any parameters
  they carry (MindInsight never sends any); on a tensor with NaN/Inf their statistics follow
  plain IEEE arithmetic rather than the artefacts of MindSpore's running updates.
"""

from __future__ import annotations

import math
import os
import queue
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Protocol

import numpy as np

from tuidebug.core import kernels
from tuidebug.core.condition_catalogue import (
    CHANGE_CONDITIONS,
    CLEARS_ERRORS,
    COMPARISONS,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    LEGACY_GT,
    LEGACY_LT,
    LEGACY_STAT,
    UPDATE_RATIO_EPSILON,
    CheckRequest,
    CheckResult,
    ConditionType,
    Param,
    ParamResult,
    untouched_params,
)
from tuidebug.core.error_codes import ErrorCode

try:  # ml_dtypes is a declared dependency; the guard only keeps core importable without it
    import ml_dtypes

    _BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    _BFLOAT16 = None


_CT = ConditionType
_INF = math.inf


# ------------------------------------------------------------------------------ the engine
# Three layers: a *plan* says which statistics the requests read (cached per request tuple);
# per-block *kernels* gather just those from one cache-sized block into a thread's
# `_Partial`; the *merge* folds the partials into `_Stats`, which `_decide` turns into results.


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# Elements per block: a block gets the raw-dtype stage (NaN/Inf, max/min, counts) and then
# the float64 stage while its elements are still in a core's L2 cache.
CHUNK_ELEMENTS = 1 << 16
# Elements per float64 sub-block: its three float64 rows (768 KiB) stay in L2 too, which
# matters more than numpy's per-call overhead (~5 µs a sub-block). Any tensor size costs
# only these buffers (the spec's "≤ 64 MB of temporaries").
F64_ELEMENTS = 1 << 15
# Tensors of at least PARALLEL_MIN_ELEMENTS are scanned by THREADS threads in units of
# PARALLEL_UNIT elements (see `_Scan._run_threads`); below that a second thread costs more
# than it saves. Processes that already run one worker per core (the offline checker) set
# THREADS = 1.
PARALLEL_MIN_ELEMENTS = 1 << 21
PARALLEL_UNIT = 1 << 20
THREADS = min(2, _cores())
# Tensors of at least KERNEL_MIN_ELEMENTS get the float64 stage from the compiled kernel
# (`kernels.py`) once it is loaded; smaller ones do not earn back loading it.
KERNEL_MIN_ELEMENTS = 1 << 18
# The C kernel, once built, loads in milliseconds. Loading numba's costs ~0.5 s and saves
# ~0.6 s per GB of float64-stage work (sums) over the numpy stages: `prepare_kernel` loads
# it in the calling thread for a check with at least KERNEL_WAIT_BYTES of such work, in the
# background from KERNEL_PRELOAD_BYTES (the next checks of a session get it), and not at
# all below.
KERNEL_WAIT_BYTES = 512 << 20
# Tensors of at most SMALL_ELEMENTS whose requests read only NaN/Inf skip the scan.
SMALL_ELEMENTS = 1 << 12
KERNEL_PRELOAD_BYTES = 64 << 20

_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
_MAX = np.maximum.reduce
_MIN = np.minimum.reduce
_COUNT = np.count_nonzero
_SUM = partial(np.einsum, "i->")  # a plain SIMD sum; np.dot would wake BLAS threads
_ROW_SUMS = partial(np.einsum, "ij->i")  # several sums in one call (faster per element too)


def supported_dtype(dtype: np.dtype) -> bool:
    """MindSpore checks bool, (u)int8–64, float16/32/64 and bfloat16; others get no result."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return True
    if dtype.kind == "f":
        return dtype.itemsize in (2, 4, 8)
    return _BFLOAT16 is not None and dtype == _BFLOAT16


def _param_at(req: CheckRequest, index: int) -> Param | None:
    """MindSpore reads some parameters by position; a short list reads as disabled."""
    if index < len(req.params):
        p = req.params[index]
        return None if p.disabled else p
    return None


def _range_key(req: CheckRequest) -> tuple[float, float] | None:
    start, end = _param_at(req, 0), _param_at(req, 1)
    if start is None and end is None:
        return None  # MindSpore keeps no range counter: the percentage is NaN
    return (
        float(start.value) if start is not None else -_INF,
        float(end.value) if end is not None else _INF,
    )


def _close_key(req: CheckRequest) -> tuple[float, float]:
    rtol, atol = _param_at(req, 0), _param_at(req, 1)
    return (
        float(rtol.value) if rtol is not None else DEFAULT_RTOL,
        float(atol.value) if atol is not None else DEFAULT_ATOL,
    )


def _enabled_stats(req: CheckRequest) -> set[str]:
    names = set()
    for p in req.params:
        if p.disabled:
            continue
        if p.name == "param":
            names.add(LEGACY_STAT.get(req.condition, ""))
        elif "_" in p.name:
            names.add(p.name.rsplit("_", 1)[0])
    return names


# ---------------------------------------------------------------------------------- plan
@dataclass(frozen=True)
class _Plan:
    """Which statistics the requests need (spec §3.5 'Computed when'). Immutable: one plan
    serves every call with the same requests."""

    extrema: bool = False
    zeros: bool = False
    mean: bool = False
    sd: bool = False  # only legacy SD_GT/SD_LT read it; MindSpore's Welford pass makes both
    abs_sum: bool = False
    ranges: tuple[tuple[float, float], ...] = ()
    ratio: bool = False
    closes: tuple[tuple[float, float], ...] = ()
    # keep gathering statistics after NaN/Inf shows up (only if some request evaluates
    # parameters despite NaN/Inf: HAS_NAN, HAS_INF or GENERAL_OVERFLOW *with* parameters)
    through_errors: bool = False

    @property
    def moments(self) -> bool:
        """Mean (and standard deviation) wanted; kept for the torch twin of this engine."""
        return self.mean

    @property
    def uses_prev(self) -> bool:
        return self.ratio or bool(self.closes)

    @property
    def needs_f64(self) -> bool:
        return self.mean or self.abs_sum or self.uses_prev

    @property
    def needs_params(self) -> bool:
        return self.extrema or self.zeros or self.needs_f64 or bool(self.ranges)

    @property
    def block_extrema(self) -> bool:
        """A block's max/min are wanted: as statistics, or to settle counts and Σ|x|."""
        return self.extrema or self.zeros or bool(self.ranges) or self.abs_sum


def _make_plan(requests: Sequence[CheckRequest], has_prev: bool) -> _Plan:
    extrema = zeros = mean = sd = abs_sum = ratio = through_errors = False
    ranges: list[tuple[float, float]] = []
    closes: list[tuple[float, float]] = []
    for req in requests:
        cond = req.condition
        stats = _enabled_stats(req)
        extrema = extrema or bool(stats & {"max", "min", "max_min"})
        zeros = zeros or "zero_percentage" in stats
        first, fourth = _param_at(req, 0), _param_at(req, 3)
        if (
            cond in (_CT.MEAN_GT, _CT.MEAN_LT, _CT.SD_GT, _CT.SD_LT)
            or (cond in (_CT.TOO_LARGE, _CT.TOO_SMALL) and fourth is not None)
            or stats & {"mean", "sd"}
        ):
            mean = True
            sd = sd or "sd" in stats
        if (cond in (_CT.TOO_LARGE, _CT.TOO_SMALL) and first is not None) or "abs_mean" in stats:
            abs_sum = True
        if cond == _CT.RANGE and "range_percentage" in stats:
            key = _range_key(req)
            if key is not None and key not in ranges:
                ranges.append(key)
        if has_prev and cond in (_CT.CHANGE_TOO_LARGE, _CT.CHANGE_TOO_SMALL):
            ratio = ratio or "abs_mean_update_ratio" in stats
        if has_prev and cond == _CT.NOT_CHANGED:
            key = _close_key(req)
            if key not in closes:
                closes.append(key)
        if cond in CLEARS_ERRORS and stats:
            through_errors = True
    return _Plan(
        extrema, zeros, mean, sd, abs_sum, tuple(ranges), ratio, tuple(closes), through_errors
    )


# Plans by the identity of the request objects: callers check the same watchpoints tensor
# after tensor, and hashing their values would cost as much as planning (~50 µs). The cached
# entry keeps its requests alive, so their ids cannot be reused by other objects.
_PLAN_CACHE: dict[tuple[bool, tuple[int, ...]], tuple[tuple[CheckRequest, ...], _Plan]] = {}
_PLAN_CACHE_SIZE = 64


def _plan(requests: Sequence[CheckRequest], has_prev: bool) -> _Plan:
    reqs = tuple(requests)
    key = (has_prev, tuple(map(id, reqs)))
    hit = _PLAN_CACHE.get(key)
    if hit is not None:
        return hit[1]
    plan = _make_plan(reqs, has_prev)
    if len(_PLAN_CACHE) >= _PLAN_CACHE_SIZE:
        _PLAN_CACHE.clear()  # callers reuse few request lists; no need for an LRU
    _PLAN_CACHE[key] = (reqs, plan)
    return plan


@dataclass
class _Stats:
    n: int
    has_nan: bool = False
    has_inf: bool = False
    max: float = -np.finfo(np.float64).max  # MindSpore starts from the lowest double
    min: float = np.finfo(np.float64).max
    zero_count: int = 0
    mean: float = math.nan
    sd: float = math.nan
    abs_mean: float = math.nan
    range_percentage: dict[tuple[float, float], float] = field(default_factory=dict)
    ratio: float = math.nan
    all_close: dict[tuple[float, float], bool] = field(default_factory=dict)


# ------------------------------------------------------------------------ block kernels
def _flat(a: np.ndarray) -> tuple[np.ndarray, bool]:
    """A 1-D C-order view when possible (no copy, memmaps stay lazy), else the array itself
    to be sliced through `.flat` one block at a time."""
    a = np.asarray(a)
    if a.flags.c_contiguous:
        return a.reshape(-1), True
    return a, False


def _block(a: np.ndarray, contiguous: bool, start: int, stop: int) -> np.ndarray:
    return a[start:stop] if contiguous else a.flat[start:stop]


def _native_bounds(
    dtype: np.dtype, lo: float, hi: float
) -> tuple[np.generic | float | None, np.generic | float | None, bool]:
    """Bounds for comparing raw elements of `dtype` so that the result equals comparing the
    float64 conversions against (lo, hi). Returns (lo', hi', empty); None = no constraint."""
    if dtype == np.float64:
        return lo, hi, lo > hi
    if dtype == np.float32:
        # x32 >= lo  <=>  x32 >= (smallest float32 >= lo), and the same from above for hi
        with np.errstate(over="ignore"):
            lo32, hi32 = np.float32(lo), np.float32(hi)
        if float(lo32) < lo:
            lo32 = np.nextafter(lo32, np.float32(_INF))
        if float(hi32) > hi:
            hi32 = np.nextafter(hi32, np.float32(-_INF))
        return lo32, hi32, bool(lo32 > hi32)
    # integers up to 32 bits (bool arrives as uint8): float64 holds them exactly
    info = np.iinfo(dtype)
    lo_i = math.ceil(lo) if math.isfinite(lo) else (info.min if lo < 0 else info.max + 1)
    hi_i = math.floor(hi) if math.isfinite(hi) else (info.max if hi > 0 else info.min - 1)
    if lo_i > hi_i or lo_i > info.max or hi_i < info.min:
        return None, None, True
    typ = dtype.type
    return (
        typ(lo_i) if lo_i > info.min else None,
        typ(hi_i) if hi_i < info.max else None,
        False,
    )


def _above(dtype: np.dtype, bound: np.generic | float | None) -> np.generic | float | None:
    """The smallest value of `dtype` above `bound` (x > bound <=> x >= it); None when no
    element is above it (an integer bound None is the type's maximum, a float one +inf)."""
    if bound is None:
        return None
    if dtype.kind in "iu":
        return dtype.type(int(bound) + 1)
    if bound == _INF:
        return None
    if dtype == np.float32:
        with np.errstate(over="ignore"):  # above float32's max is +inf: x > max <=> x == inf
            return np.nextafter(np.float32(bound), np.float32(_INF))
    return math.nextafter(float(bound), _INF)


class _Thresholds:
    """Zero and range counts as differences of c(t) = #{x >= t}: zeros = c(0) − c(smallest
    positive), a range = c(lo) − c(just above hi). NaN is never >= anything, so it counts in
    neither. One broadcast comparison per block serves every threshold the block's max/min
    do not settle, and ranges sharing a bound (e.g. hi = 0 with the zero count) share it."""

    def __init__(self, dtype: np.dtype, zeros: bool, bounds: Sequence[tuple]) -> None:
        values: list[np.generic | float] = []

        def index(value: np.generic | float | None) -> int | None:
            if value is None:
                return None
            for i, v in enumerate(values):
                if v == value:  # NaN bounds (never equal) simply get their own entry
                    return i
            values.append(value)
            return len(values) - 1

        self.zero: tuple[int, int] | None = None
        if zeros:
            tiny = 1 if dtype.kind in "iu" else _above(dtype, dtype.type(0))
            self.zero = (index(dtype.type(0)), index(dtype.type(tiny)))  # type: ignore[assignment]
        # per range: (index of lo or None = every element, index above hi or None = none)
        self.ranges: list[tuple[int | None, int | None] | None] = [
            None if empty else (index(lo), index(_above(dtype, hi))) for lo, hi, empty in bounds
        ]
        self.values = values  # typed scalars, for comparing a block with one threshold
        # plain floats (exact: the work dtypes are float32/64 and integers up to 32 bits)
        # for checking thresholds against the block's min/max without numpy scalars
        self.floats = [float(v) for v in values]
        self.array = np.array(values, dtype=dtype).reshape(-1, 1)
        self.flat = self.array.reshape(-1)

    def tally(self, part: _Partial, counts: list[int], m: int) -> None:
        """Add the zero and range counts of `m` elements with these c(t) to `part`."""
        if self.zero is not None:
            part.zeros += counts[self.zero[0]] - counts[self.zero[1]]
        for i, pair in enumerate(self.ranges):
            if pair is not None:
                lo, above_hi = pair
                inside = m if lo is None else counts[lo]
                part.in_range[i] += inside - (0 if above_hi is None else counts[above_hi])

    def counts(self, xv: np.ndarray, lo: float, hi: float, flags: np.ndarray) -> list[int]:
        """c(t) for every threshold; `lo`/`hi` are the block's min/max (NaN: unknown)."""
        m = xv.size
        counts = [m if lo >= t else 0 for t in self.floats]
        todo = [i for i, t in enumerate(self.floats) if not (lo >= t or hi < t)]
        if len(todo) == 1:
            i = todo[0]
            counts[i] = int(_COUNT(np.greater_equal(xv, self.values[i], out=flags[0])))
        elif todo:
            rows = flags[: len(todo)]
            thresholds = self.array if len(todo) == len(counts) else self.array[todo]
            np.greater_equal(xv, thresholds, out=rows)
            for i, row in zip(todo, rows, strict=True):
                counts[i] = int(_COUNT(row))
        return counts


@lru_cache(maxsize=256)
def _thresholds(plan: _Plan, dtype: np.dtype) -> _Thresholds:
    """The (read-only) thresholds of a plan's counts for one work dtype."""
    bounds = [_native_bounds(dtype, lo, hi) for lo, hi in plan.ranges]
    return _Thresholds(dtype, plan.zeros, bounds)


class _Partial:
    """What one thread gathered from its blocks. Every field merges exactly whatever the
    order (max/min, integer counts, lists of sums added with `math.fsum`, which rounds the
    exact total once); the standard deviation's per-block moments are keyed by block so
    that they merge in block order."""

    __slots__ = (
        "in_range",
        "max",
        "min",
        "moments",
        "sums_abs",
        "sums_diff",
        "sums_prev",
        "sums_x",
        "zeros",
    )

    def __init__(self, ranges: int) -> None:
        self.max = -_INF
        self.min = _INF
        self.zeros = 0
        self.in_range = [0] * ranges
        self.sums_x: list[float] = []
        self.sums_abs: list[float] = []
        self.sums_diff: list[float] = []
        self.sums_prev: list[float] = []
        self.moments: dict[int, tuple[int, float, float]] = {}  # block start: (n, mean, M2)


class _Scratch:
    """One thread's buffers, reused across calls (allocating and faulting in megabytes per
    tensor would cost more than checking a small one)."""

    def __init__(self) -> None:
        self.rows = np.empty((3, 0), np.float64)  # float64 rows: x, p, x − p
        self.conv: dict[np.dtype, np.ndarray] = {}  # blocks of non-native dtypes, converted
        self.conv_prev: dict[np.dtype, np.ndarray] = {}  # the same for the previous tensor
        self.flags = np.empty((0, 0), np.bool_)

    def get_rows(self, size: int) -> np.ndarray:
        if self.rows.shape[1] < size:
            self.rows = np.empty((3, size), np.float64)
        return self.rows

    def get_conv(self, dtype: np.dtype, size: int) -> np.ndarray:
        buf = self.conv.get(dtype)
        if buf is None or buf.size < size:
            buf = self.conv[dtype] = np.empty(size, dtype)
        return buf

    def get_conv_prev(self, dtype: np.dtype, size: int) -> np.ndarray:
        buf = self.conv_prev.get(dtype)
        if buf is None or buf.size < size:
            buf = self.conv_prev[dtype] = np.empty(size, dtype)
        return buf

    def get_flags(self, rows: int, size: int) -> np.ndarray:
        if self.flags.shape[0] < rows or self.flags.shape[1] < size:
            self.flags = np.empty((max(rows, self.flags.shape[0]), size), np.bool_)
        return self.flags[:, :size]

    def trim(self, size: int) -> None:
        """Drop buffers for blocks above `size` (a caller's unusually large chunks)."""
        if self.rows.shape[1] > size:
            self.rows = np.empty((3, 0), np.float64)
        self.conv = {k: v for k, v in self.conv.items() if v.size <= size}
        self.conv_prev = {k: v for k, v in self.conv_prev.items() if v.size <= size}
        if self.flags.shape[1] > size:
            self.flags = np.empty((0, 0), np.bool_)


_SCRATCH = threading.local()
_KEEP_ELEMENTS = PARALLEL_UNIT  # larger buffers (a caller's huge chunks) are not kept


_ALL_SCRATCH: weakref.WeakSet[_Scratch] = weakref.WeakSet()


def _scratch() -> _Scratch:
    sc = getattr(_SCRATCH, "buffers", None)
    if sc is None:
        sc = _SCRATCH.buffers = _Scratch()
        _ALL_SCRATCH.add(sc)
    return sc


def release_buffers() -> None:
    """Free the scan buffers every thread keeps between calls (a few MiB), e.g. before
    measuring memory. Not for use while a check is running."""
    for sc in list(_ALL_SCRATCH):
        sc.trim(0)


class _Units:
    """Units of a threaded scan, claimed in order by whichever thread gets there first."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._next = 0
        self._lock = threading.Lock()
        self.by_helpers = 0  # units claimed by helper threads so far

    def claim(self, helper: bool = False) -> int | None:
        """The next unclaimed unit, or None when every unit is claimed."""
        with self._lock:
            u = self._next
            if u >= self.count:
                return None
            self._next = u + 1
            self.by_helpers += helper
            return u


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max(1, THREADS - 1), thread_name_prefix="tuidebug-scan")
        return _POOL


_WARM_REQUEST = CheckRequest(ConditionType.GENERAL_OVERFLOW)


def needs_float64_stage(requests: Sequence[CheckRequest], has_prev: bool) -> bool:
    """The requests read sums (means, Σ|x|, change ratios): the work the kernel speeds up."""
    return _plan(tuple(requests), has_prev).needs_f64


def prepare_kernel(float64_bytes: int) -> None:
    """Load the compiled kernel for a check with `float64_bytes` of float64-stage work on
    tensors of `KERNEL_MIN_ELEMENTS` or more: the C kernel now (it loads in milliseconds);
    numba's now, in the background, or not at all (see KERNEL_WAIT_BYTES). float32 is
    warmed ahead; other dtypes a few ms each when met."""
    if float64_bytes <= 0 or kernels.ready(_F32) is not None:
        return
    if kernels.cheap():  # the C library is built: milliseconds, whatever the work
        kernels.warm_up([_F32], _warm_kernel, wait=True)
    elif float64_bytes >= KERNEL_PRELOAD_BYTES:
        kernels.warm_up([_F32], _warm_kernel, wait=float64_bytes >= KERNEL_WAIT_BYTES)


def _warm_kernel(kernel: Callable[..., None], dtype: np.dtype) -> None:
    """One compiled call on a tiny unit of `dtype`, with the argument types every real call
    of that dtype has (they depend on the dtype only): it loads numba's specialisation."""
    x = np.zeros(8, dtype)
    scan = _Scan(x, None, _plan((_WARM_REQUEST,), False), CHUNK_ELEMENTS, find_kernel=False)
    scan.kernel = kernel
    scan._compiled_unit(_Partial(0), _scratch(), 0, x.size)


class _Scan:
    """One pass over a tensor (and its previous value) gathering what the plan asks for.

    Each block of `chunk` elements goes through two stages: the raw-dtype stage (NaN/Inf,
    max/min, counts: comparisons and reductions on the elements as they are) and the float64
    stage (sums, on sub-blocks of `F64_ELEMENTS` so that the float64 rows stay in cache).
    The threads of a scan share only the flags set below, each of which changes one way
    (False -> True, or True -> False for `use_prev` and the all-close verdicts)."""

    def __init__(
        self,
        x: np.ndarray,
        prev: np.ndarray | None,
        plan: _Plan,
        chunk: int,
        *,
        find_kernel: bool = True,
    ) -> None:
        self.plan = plan
        # sub-blocks tile blocks and units exactly, so that the float64 stage sees the same
        # sub-blocks whichever thread ran a block's raw stage, and on whichever block size
        self.sub = min(max(1, int(chunk)), F64_ELEMENTS)
        self.chunk = max(1, int(chunk)) // self.sub * self.sub
        self.unit = max(self.chunk, PARALLEL_UNIT // self.chunk * self.chunk)
        self.n = int(x.size)
        self.x, self.x_contig = _flat(x)
        dtype = x.dtype
        if dtype == np.bool_:
            # bool as uint8: same 0/1 values, and numpy's integer kernels apply
            self.x = self.x.view(np.uint8)
            dtype = np.dtype(np.uint8)
        self.is_float = dtype.kind == "f" or dtype == _BFLOAT16
        # Blocks are compared and reduced in a dtype where that is exact and fast: float32,
        # float64 and integers up to 32 bits as they are; bfloat16 as float32 (exact);
        # float16 and 64-bit integers as float64 (MindSpore's conversion; numpy's float16
        # kernels are slower than converting).
        if dtype in (np.float32, np.float64) or (dtype.kind in "iu" and dtype.itemsize <= 4):
            self.work: np.dtype | None = None
        elif dtype == _BFLOAT16:
            self.work = np.dtype(np.float32)
        else:
            self.work = _F64
        self.dtype = dtype if self.work is None else self.work
        self.prev: np.ndarray | None = None
        self.prev_contig = True
        self.same_dtype = False  # x and prev blocks can be compared raw
        if prev is not None and plan.needs_params and plan.uses_prev:
            pv = prev.view(np.uint8) if prev.dtype == np.bool_ else prev
            self.prev, self.prev_contig = _flat(pv)
            self.same_dtype = pv.dtype == dtype and self.work is None
        self.thresholds = _thresholds(plan, self.dtype)
        self.counting = plan.zeros or bool(plan.ranges)
        self.kernel = None
        if (
            find_kernel  # not while warming it (`_warm_kernel`): that would wait on itself
            and self.n >= KERNEL_MIN_ELEMENTS
            and (plan.needs_params or self.is_float)  # else there is nothing to scan for
            and self.dtype in kernels.KERNEL_DTYPES
            # else p converts on its own (self.prev is set only when prev is)
            and (self.prev is None or (prev is not None and prev.dtype == x.dtype))
        ):
            self.kernel = kernels.ready(self.dtype)
            if self.kernel is None and kernels.loaded():  # a new dtype: a few ms to warm
                kernels.warm_up([self.dtype], _warm_kernel, wait=True)
                self.kernel = kernels.ready(self.dtype)
        # "x == p everywhere" settles every tolerance test only when no tolerance is negative
        self.closes_trivial = all(rtol >= 0.0 and atol >= 0.0 for rtol, atol in plan.closes)
        # shared between threads
        self.stop = False  # the float64 stage is over: helpers stop claiming blocks
        self.has_nan = False
        self.has_inf = False
        self.errors = False  # NaN/Inf seen and no parameter will be evaluated past them
        self.use_prev = self.prev is not None
        self.closes = dict.fromkeys(plan.closes, True)
        self.close_keys = (
            np.array([k[0] for k in plan.closes], np.float64),
            np.array([k[1] for k in plan.closes], np.float64),
        )

    @property
    def sums_wanted(self) -> bool:
        return self.plan.mean or self.plan.abs_sum or self.use_prev

    # ------------------------------------------------------------------- driving
    def run(self, threads: int) -> _Stats:
        plan = self.plan
        if not (plan.needs_params or self.is_float):
            return self._merge([])  # integers and nothing to compute: no NaN/Inf to find
        if self.kernel is not None:
            return self._merge(self._run_compiled(threads))
        if not plan.needs_params and (threads <= 1 or self.n < PARALLEL_MIN_ELEMENTS):
            self._nan_inf_units()  # float data, NaN/Inf presence alone (TensorOverflow)
            return self._merge([])
        if threads <= 1 or self.n < PARALLEL_MIN_ELEMENTS or self.n <= self.unit:
            part, sc = _Partial(len(plan.ranges)), _scratch()
            try:
                self._local(part, sc, 0, self.n)
            finally:
                sc.trim(_KEEP_ELEMENTS)
            return self._merge([part])
        return self._merge(self._run_threads(threads))

    def _nan_inf_units(self) -> None:
        """NaN/Inf presence in two flat reductions per unit, the least a pass can do with
        numpy: max is NaN if any element is (NaN propagates), +Inf if any is and none is NaN;
        then min tells -Inf. No sub-block extrema: nothing else reads them."""
        sc = _scratch()
        try:
            for start in range(0, self.n, self.unit):
                xv = self._elements(sc, start, min(start + self.unit, self.n))
                bmax = float(_MAX(xv))
                if bmax != bmax:
                    self.has_nan = True
                    if not self.has_inf:
                        self.has_inf = bool(np.isinf(xv).any())
                elif bmax == _INF or (not self.has_inf and float(_MIN(xv)) == -_INF):
                    self.has_inf = True
                if self.has_nan and self.has_inf:
                    break
        finally:
            sc.trim(_KEEP_ELEMENTS)
        self.errors = self.has_nan or self.has_inf

    def _local(self, part: _Partial, sc: _Scratch, start: int, stop: int) -> None:
        """Both stages of [start, stop), block by block (a block's data stays in cache)."""
        for b in range(start, stop, self.chunk):
            e = min(b + self.chunk, stop)
            xv = self._elements(sc, b, e)
            mins, maxs = self._raw_block(part, sc, xv)
            if self._done():
                return
            if self.sums_wanted and not self.errors:
                self._sums(part, sc, b, e, mins, maxs, xv)

    def _run_threads(self, threads: int) -> list[_Partial]:
        """Helpers run only the raw-dtype stage, on whole units (1 Mi elements: a few long
        numpy calls each) and queue the per-sub-block min/max; this thread runs the
        float64 stage of those units and, when the queue is empty, both stages of the next
        unclaimed unit itself. Threads that all make short numpy calls spend their time
        handing the GIL over (each call releases and retakes it); this way only this thread
        does, and the split of work adapts to the machine's load. The float64 stage always
        runs here on the same sub-blocks, so the results do not depend on the threads."""
        units = _Units(-(-self.n // self.unit))
        ready: queue.SimpleQueue[tuple[int, object]] = queue.SimpleQueue()
        pool = _pool()
        helper_parts = [_Partial(len(self.plan.ranges)) for _ in range(threads - 1)]
        helpers = [pool.submit(self._helper, units, ready, hp) for hp in helper_parts]
        part, sc = _Partial(len(self.plan.ranges)), _scratch()
        consumed = 0
        try:
            while self.sums_wanted and not self.errors:
                try:
                    item = ready.get_nowait()
                except queue.Empty:
                    u = units.claim()
                    if u is not None:
                        self._local(part, sc, *self._unit_bounds(u))
                        continue
                    if consumed == units.by_helpers:
                        break
                    item = self._wait(ready, helpers)
                consumed += 1
                u, info = item
                if isinstance(info, BaseException):
                    raise info
                if not self.errors:
                    self._sums(part, sc, *self._unit_bounds(u), *info)  # type: ignore[misc]
            # raw-stage work left (all of it without float64 work, or the search for the
            # other error bit after NaN/Inf): every thread takes units
            while not self._done() and (u := units.claim()) is not None:
                self._local(part, sc, *self._unit_bounds(u))
        finally:
            self.stop = True  # helpers finish the unit they are on and return
            parts = [part]
            for future, hp in zip(helpers, helper_parts, strict=True):
                # a helper that never started (the pool busy with another scan) added nothing
                if not future.cancel():
                    future.result()
                    parts.append(hp)
            sc.trim(_KEEP_ELEMENTS)
        return parts

    def _run_compiled(self, threads: int) -> list[_Partial]:
        """The scan with the compiled kernel: each thread claims whole units and gathers
        everything from each in one kernel call, which releases the GIL."""
        units = _Units(-(-self.n // self.unit))
        part = _Partial(len(self.plan.ranges))
        if threads <= 1 or self.n < PARALLEL_MIN_ELEMENTS or units.count == 1:
            self._compiled_units(units, part)
            return [part]
        helper_parts = [_Partial(len(self.plan.ranges)) for _ in range(threads - 1)]
        helpers = [_pool().submit(self._compiled_units, units, hp) for hp in helper_parts]
        try:
            self._compiled_units(units, part)
        finally:
            self.stop = True  # (after an error here) helpers return after their unit
            parts = [part]
            for future, hp in zip(helpers, helper_parts, strict=True):
                if not future.cancel():  # a helper that never started added nothing
                    future.result()
                    parts.append(hp)
        return parts

    def _compiled_units(self, units: _Units, part: _Partial) -> None:
        sc = _scratch()
        try:
            while not (self.stop or self._done()):
                u = units.claim()
                if u is None:
                    break
                self._compiled_unit(part, sc, *self._unit_bounds(u))
        finally:
            sc.trim(_KEEP_ELEMENTS)

    def _compiled_unit(self, part: _Partial, sc: _Scratch, start: int, stop: int) -> None:
        plan, th = self.plan, self.thresholds
        xv = np.asarray(self._elements(sc, start, stop))
        use_prev = self.use_prev
        if use_prev:
            pn = _block(self.prev, self.prev_contig, start, stop)  # type: ignore[arg-type]
            if pn.dtype != xv.dtype:  # float16, bfloat16, 64-bit integers: as x was
                pv = sc.get_conv_prev(xv.dtype, stop - start)[: stop - start]
                np.copyto(pv, pn, casting="unsafe")
                pn = pv
        else:
            pn = xv[:0]
        keys = list(self.closes) if use_prev else []
        alive = np.array([self.closes[k] for k in keys], dtype=np.bool_)
        count = -(-(stop - start) // self.sub)
        sums = np.zeros((count, 4), np.float64)
        moments = np.zeros((count if plan.sd else 0, 3), np.float64)
        counts = np.zeros(len(th.values), np.int64)
        extremes = np.array([-_INF, _INF])
        errors = self.errors  # then only the missing error bit is still searched for
        found = np.array([errors and self.has_nan, errors and self.has_inf], dtype=np.bool_)
        self.kernel(  # type: ignore[misc]
            xv,
            np.asarray(pn),
            self.sub,
            self.is_float,
            not plan.through_errors,
            plan.sd,
            th.flat,
            self.close_keys[0][: len(keys)],
            self.close_keys[1][: len(keys)],
            alive,
            sums,
            moments,
            counts,
            extremes,
            found,
        )
        nan, inf = found.tolist()
        self.has_nan |= nan
        self.has_inf |= inf
        if (nan or inf) and not plan.through_errors:
            self.errors = True
        if self.errors:
            return  # the statistics are no longer read
        if plan.extrema:
            part.max = max(part.max, float(extremes[0]))
            part.min = min(part.min, float(extremes[1]))
        if self.counting:
            th.tally(part, counts.tolist(), stop - start)
        if plan.mean:
            part.sums_x.extend(sums[:, 0].tolist())
        if plan.abs_sum:
            part.sums_abs.extend(sums[:, 1].tolist())
        if plan.sd:
            for k, (m, bmean, m2) in enumerate(moments.tolist()):
                part.moments[start + k * self.sub] = (int(m), bmean, m2)
        if use_prev:
            if plan.ratio:
                part.sums_diff.extend(sums[:, 2].tolist())
                part.sums_prev.extend(sums[:, 3].tolist())
            for key, ok in zip(keys, alive.tolist(), strict=True):
                if not ok:
                    self.closes[key] = False
            if not plan.ratio and not any(self.closes.values()):
                self.use_prev = False  # nothing left to learn from the previous tensor

    @staticmethod
    def _wait(ready: queue.SimpleQueue, helpers: list[Future]) -> tuple[int, object]:
        while True:
            try:
                return ready.get(timeout=0.05)
            except queue.Empty:
                for f in helpers:
                    if f.done():
                        f.result()  # a helper that died raises here

    def _helper(self, units: _Units, ready: queue.SimpleQueue, part: _Partial) -> None:
        sc = _scratch()
        try:
            while not (self.stop or self._done()):
                u = units.claim(helper=True)
                if u is None:
                    break
                try:
                    start, stop = self._unit_bounds(u)
                    info: object = self._raw_block(part, sc, self._elements(sc, start, stop))
                except BaseException as err:
                    info = err
                    raise
                finally:
                    ready.put((u, info))
        finally:
            sc.trim(_KEEP_ELEMENTS)

    def _done(self) -> bool:
        return self.errors and self.has_nan and self.has_inf

    def _unit_bounds(self, u: int) -> tuple[int, int]:
        start = u * self.unit
        return start, min(start + self.unit, self.n)

    def _elements(self, sc: _Scratch, start: int, stop: int) -> np.ndarray:
        """Elements [start, stop) in the dtype the kernels work in."""
        xn = _block(self.x, self.x_contig, start, stop)
        if self.work is None:
            return xn
        xv = sc.get_conv(self.work, stop - start)[: stop - start]
        np.copyto(xv, xn, casting="unsafe")
        return xv

    # ------------------------------------------------------------------- kernels
    def _extrema(self, xv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Max and min of every float64 sub-block of `xv` (which starts on a sub-block
        boundary): the float64 stage decides its shortcuts per sub-block, so they do not
        depend on how large the raw-stage blocks were."""
        sub, m = self.sub, xv.size
        k = m // sub
        if k * sub == m:
            rows = xv.reshape(k, sub)
            return _MAX(rows, axis=1), _MIN(rows, axis=1)
        head, tail = xv[: k * sub].reshape(k, sub), xv[k * sub :]
        return (
            np.append(_MAX(head, axis=1), _MAX(tail)),
            np.append(_MIN(head, axis=1), _MIN(tail)),
        )

    def _raw_block(
        self, part: _Partial, sc: _Scratch, xv: np.ndarray
    ) -> tuple[list[float] | None, list[float] | None]:
        """The raw-dtype stage: NaN/Inf, max/min and counts. Returns the min and max of each
        sub-block for the float64 stage (None when not computed; NaN = the sub-block holds
        NaN: no shortcut applies)."""
        plan = self.plan
        if not (self.is_float or plan.block_extrema):
            if self.counting:  # pragma: no cover - counting implies block extrema
                self._counts(part, sc, xv, math.nan, math.nan)
            return None, None
        maxs, mins = self._extrema(xv)
        # as Python floats (exact) for cheap comparisons; NaN propagates through both
        bmax, bmin = float(_MAX(maxs)), float(_MIN(mins))
        if self.is_float:
            if not (bmin > -_INF and bmax < _INF):
                block_nan = bmax != bmax
                if block_nan:
                    self.has_nan = True
                if not block_nan or np.isinf(xv).any():
                    self.has_inf = True
                if not plan.through_errors:
                    self.errors = True
            if self.errors or not plan.needs_params:
                return None, None
            if plan.extrema:
                if bmax == bmax:
                    part.max, part.min = max(part.max, bmax), min(part.min, bmin)
                else:  # NaN never replaces MindSpore's running max/min
                    fmax, fmin = np.fmax.reduce(xv), np.fmin.reduce(xv)
                    if fmax == fmax:
                        part.max = max(part.max, float(fmax))
                        part.min = min(part.min, float(fmin))
        elif plan.extrema:
            part.max, part.min = max(part.max, bmax), min(part.min, bmin)
        if self.counting:
            self._counts(part, sc, xv, bmin, bmax)
        return mins.tolist(), maxs.tolist()

    def _counts(
        self, part: _Partial, sc: _Scratch, xv: np.ndarray, bmin: float, bmax: float
    ) -> None:
        th = self.thresholds
        th.tally(part, th.counts(xv, bmin, bmax, sc.get_flags(len(th.values), xv.size)), xv.size)

    def _sums(
        self,
        part: _Partial,
        sc: _Scratch,
        start: int,
        stop: int,
        mins: list[float] | None,
        maxs: list[float] | None,
        xv: np.ndarray | None = None,
    ) -> None:
        """The float64 stage of [start, stop), sub-block by sub-block: Σx, Σ|x| (and the
        moments), Σ|x − p|, Σ|p| and the all-close tests. A sub-block of one sign (from its
        max/min) gives Σ|x| = ±Σx; one equal to its previous value gives the change
        statistics without converting p."""
        plan = self.plan
        xn = _block(self.x, self.x_contig, start, stop)
        if xv is None:
            xv = self._elements(sc, start, stop)
        pn = None
        if self.use_prev:
            pn = _block(self.prev, self.prev_contig, start, stop)  # type: ignore[arg-type]
        sub = self.sub
        rows = sc.get_rows(min(sub, stop - start))
        flags = sc.get_flags(1, rows.shape[1])[0]
        for j, s in enumerate(range(0, stop - start, sub)):
            e = min(s + sub, stop - start)
            smin, smax = (
                (mins[j], maxs[j])
                if mins is not None and maxs is not None
                else (math.nan, math.nan)
            )
            one_signed = smin >= 0 or smax <= 0
            abs_x = plan.abs_sum and not one_signed  # Σ|x| needs its own pass
            xs = xv[s:e]
            if not (self.use_prev or plan.sd or abs_x):
                # only Σx wanted: a float64 reduction of the raw elements, no float64 copy
                self._add_sum_x(part, float(_SUM(xs, dtype=np.float64)), smin, one_signed)
                continue
            ps = pn[s:e] if pn is not None and self.use_prev else None
            if (
                ps is not None
                and self.same_dtype
                and self.closes_trivial
                and smin > -_INF
                and smax < _INF
                and xn[s] == ps[0]
                and np.equal(xn[s:e], ps, out=flags[: e - s]).all()
            ):
                # unchanged sub-block: every x − p is 0, |p| = |x| and every tolerance
                # (≥ 0) holds; it has no NaN/Inf, so this hides no IEEE NaN
                self._unchanged(part, rows[:, : e - s], start + s, xs, smin, one_signed)
                continue
            self._sums_f64(
                part, rows[:, : e - s], flags[: e - s], start + s, xs, ps, smin, one_signed
            )

    def _sums_f64(
        self,
        part: _Partial,
        rows: np.ndarray,
        flags: np.ndarray,
        start: int,
        xv: np.ndarray,
        pn: np.ndarray | None,
        bmin: float,
        one_signed: bool,
    ) -> None:
        """One sub-block's float64 work on the rows x, p, x − p, taken to absolute values in
        place, so that the sums wanted are one contiguous run of rows: one call. (A fourth
        row for |x| would save the separate Σx below but costs more in cache misses.)"""
        plan = self.plan
        abs_x = plan.abs_sum and not one_signed
        use_prev = pn is not None and self.use_prev
        x64, p64, d64 = rows
        np.copyto(x64, xv, casting="unsafe")
        need_sx = plan.mean or (plan.abs_sum and one_signed)
        if plan.sd or (need_sx and abs_x):
            s1 = float(_SUM(x64))
            self._add_sum_x(part, s1, bmin, one_signed)
            if plan.sd:
                self._moments(part, start, x64, s1, d64)
            need_sx = False
        ratio = use_prev and plan.ratio
        if use_prev and pn is not None:  # (use_prev implies pn)
            np.copyto(p64, pn, casting="unsafe")
            np.subtract(x64, p64, out=d64)
            tail = rows if abs_x else rows[1:]
            np.abs(tail, out=tail)
        elif abs_x:
            np.abs(x64, out=x64)
        first, stop = (0 if abs_x or need_sx else 1), (3 if ratio else 1)
        if first < stop:
            sums = _ROW_SUMS(rows[first:stop]).tolist()
            if need_sx:
                self._add_sum_x(part, sums.pop(0), bmin, one_signed)
            elif abs_x:
                part.sums_abs.append(sums.pop(0))
            if ratio:
                part.sums_prev.append(sums[0])
                part.sums_diff.append(sums[1])
        if use_prev and self.closes:
            self._close(x64, p64, d64, flags)

    def _close(self, tmp: np.ndarray, ap: np.ndarray, ad: np.ndarray, flags: np.ndarray) -> None:
        """The all-close tests on |p| and |x − p|; `tmp` is a free row."""
        closes = self.closes
        for key, alive in closes.items():
            if alive:
                rtol, atol = key
                # |x - p| <= atol + rtol·|p|, in MindSpore's operation order
                tol = np.multiply(ap, rtol, out=tmp)
                np.add(atol, tol, out=tol)
                if not np.less_equal(ad, tol, out=flags).all():
                    closes[key] = False
        if not self.plan.ratio and not any(closes.values()):
            self.use_prev = False  # nothing left to learn from the previous tensor

    def _unchanged(
        self,
        part: _Partial,
        rows: np.ndarray,
        start: int,
        xv: np.ndarray,
        smin: float,
        one_signed: bool,
    ) -> None:
        """Sums of a sub-block equal to its previous value: Σ|x − p| = 0, Σ|p| = Σ|x|."""
        plan = self.plan
        x64, a64 = rows[0], rows[1]
        np.copyto(x64, xv, casting="unsafe")
        if plan.sd:
            s1 = float(_SUM(x64))
            self._moments(part, start, x64, s1, a64)
            s_abs = abs(s1) if one_signed else float(_SUM(np.abs(x64, out=a64)))
        elif one_signed:
            s1 = float(_SUM(x64))
            s_abs = abs(s1)
        else:
            np.abs(x64, out=a64)
            s1, s_abs = _ROW_SUMS(rows[:2]).tolist()
        self._add_sum_x(part, s1, smin, one_signed)
        if plan.abs_sum and not one_signed:
            part.sums_abs.append(s_abs)
        if plan.ratio:
            part.sums_diff.append(0.0)
            part.sums_prev.append(s_abs)

    def _add_sum_x(self, part: _Partial, s1: float, bmin: float, one_signed: bool) -> None:
        if self.plan.mean:
            part.sums_x.append(s1)
        if self.plan.abs_sum and one_signed:  # Σ|x| = ±Σx
            part.sums_abs.append(s1 if bmin >= 0 else -s1)

    def _moments(
        self, part: _Partial, start: int, x64: np.ndarray, s1: float, tmp: np.ndarray
    ) -> None:
        """The block's (count, mean, M2) for Chan et al.'s parallel merge."""
        m = x64.size
        bmean = s1 / m
        s2 = float(np.einsum("i,i->", x64, x64))
        m2 = s2 - s1 * bmean
        # s2 - s1²/m cancels when |mean| >> sd: then a centred second pass
        if not (m2 >= 0.0 and s2 <= 16.0 * m2):
            d = np.subtract(x64, bmean, out=tmp)
            m2 = float(np.einsum("i,i->", d, d))
        part.moments[start] = (m, bmean, m2)

    # ------------------------------------------------------------------------ merge
    def _merge(self, parts: list[_Partial]) -> _Stats:
        plan, n = self.plan, self.n
        st = _Stats(n, self.has_nan, self.has_inf)
        for part in parts:
            st.max, st.min = max(st.max, part.max), min(st.min, part.min)
            st.zero_count += part.zeros
        sums_x = [s for part in parts for s in part.sums_x]
        if plan.mean and sums_x:
            st.mean = math.fsum(sums_x) / n
        moments = sorted(kv for part in parts for kv in part.moments.items())
        if plan.sd and moments:
            m_n, m_mean, m_m2 = 0, 0.0, 0.0
            for _, (m, bmean, m2) in moments:
                if m_n == 0:
                    m_n, m_mean, m_m2 = m, bmean, m2
                else:
                    tot = m_n + m
                    delta = bmean - m_mean
                    m_mean += delta * m / tot
                    m_m2 += m2 + delta * delta * (m_n * m / tot)
                    m_n = tot
            st.sd = math.sqrt(m_m2 / (m_n - 1)) if m_n > 1 else 0.0
        sums_abs = [s for part in parts for s in part.sums_abs]
        if plan.abs_sum and sums_abs:
            st.abs_mean = math.fsum(sums_abs) / n
        for i, key in enumerate(plan.ranges):
            st.range_percentage[key] = 100.0 * sum(part.in_range[i] for part in parts) / n
        sums_diff = [s for part in parts for s in part.sums_diff]
        if plan.ratio and sums_diff:
            sums_prev = [s for part in parts for s in part.sums_prev]
            mean_diff = math.fsum(sums_diff) / n
            st.ratio = mean_diff / (math.fsum(sums_prev) / n + UPDATE_RATIO_EPSILON)
        st.all_close = self.closes
        if not (self.has_nan or self.has_inf):
            # finite elements whose float64 sum overflows (|x| near 1e308): MindSpore's running
            # mean stays finite, so sum x/n instead (rare: only then is the extra pass paid)
            if math.isinf(st.mean):
                st.mean = self._scaled_mean(absolute=False)
            if math.isinf(st.abs_mean):
                st.abs_mean = self._scaled_mean(absolute=True)
        return st

    def _scaled_mean(self, absolute: bool) -> float:
        total: list[float] = []
        for b in range(0, self.n, F64_ELEMENTS):
            block = self.x[b : b + F64_ELEMENTS].astype(np.float64)
            if absolute:
                np.abs(block, out=block)
            total.append(float(np.sum(block / self.n)))
        return math.fsum(total)


@lru_cache(maxsize=1024)
def _param_rule(condition: int, name: str) -> tuple[str, Callable[[float, float], bool] | None]:
    """(statistic, comparison) of a parameter: MindSpore's `StatLookup` key (the name before
    the last `_`, or the legacy condition's statistic for `param`; "" = none) and the
    comparison its suffix (or the legacy condition) selects. Cached: parsing names per
    tensor is a large part of checking a small one."""
    if name == "param":
        stat = LEGACY_STAT.get(condition, "")
    elif "_" in name:
        stat = name.rsplit("_", 1)[0]
    else:
        stat = ""
    inequality = "gt" if condition in LEGACY_GT else "lt" if condition in LEGACY_LT else ""
    return stat, COMPARISONS.get(inequality or name.rsplit("_", 1)[-1])


def _statistic(stat: str, req: CheckRequest, st: _Stats, has_prev: bool) -> float:
    """MindSpore's `StatLookup`: NaN when the statistic is unknown or was not computed."""
    if stat == "max":
        return st.max
    if stat == "min":
        return st.min
    if stat == "max_min":
        return st.max - st.min
    if stat == "mean":
        return st.mean
    if stat == "sd":
        return st.sd
    if stat == "abs_mean":
        return st.abs_mean
    if stat == "abs_mean_update_ratio":
        return st.ratio if has_prev else math.nan
    if stat == "range_percentage":
        key = _range_key(req) if req.condition == _CT.RANGE else None
        return st.range_percentage.get(key, math.nan) if key is not None else math.nan
    if stat == "zero_percentage":
        return st.zero_count * 100.0 / st.n if st.n else 0.0
    return math.nan


class _Sized(Protocol):
    """All `_decide` asks of the previous tensor: its element count (an ndarray, or the
    stand-in of the torch twin, which has no ndarray to give)."""

    @property
    def size(self) -> int: ...


def _decide(req: CheckRequest, st: _Stats, prev: _Sized | None) -> CheckResult:
    """MindSpore's `IsWatchpointHit` (spec §3.5, decision procedure)."""
    cond = req.condition
    if cond == _CT.IS_OVERFLOW:
        # decided from Ascend's overflow records by the caller, never from values; MindSpore
        # does not run the tensor summary for it, so there are no error bits either
        return CheckResult(False, 0, untouched_params(req))
    error = (ErrorCode.NAN if st.has_nan else 0) | (ErrorCode.INF if st.has_inf else 0)
    hit = False
    if cond == _CT.HAS_NAN:
        error, hit = 0, st.has_nan
    elif cond == _CT.HAS_INF:
        error, hit = 0, st.has_inf
    elif cond == _CT.GENERAL_OVERFLOW:
        error, hit = 0, st.has_nan or st.has_inf
    elif cond == _CT.NOT_CHANGED and prev is not None and not error:
        # a previous tensor of another size reads as NaN, which is never "close"
        hit = prev.size == st.n and st.all_close.get(_close_key(req), False)
    elif cond in CHANGE_CONDITIONS and prev is None:
        error |= ErrorCode.NO_PREV
    if error:
        return CheckResult(hit, int(error), untouched_params(req))  # a plain int, as on the wire
    results = []
    for p in req.params:
        if p.disabled:
            results.append(ParamResult(p.name, p.value, True))
            continue
        stat, compare = _param_rule(cond, p.name)
        actual = _statistic(stat, req, st, prev is not None)
        if math.isnan(actual):
            results.append(ParamResult(p.name, p.value, False))
            continue
        p_hit = bool(compare(actual, p.value)) if compare is not None else False
        results.append(ParamResult(p.name, p.value, False, p_hit, float(actual)))
        hit = hit or p_hit
    return CheckResult(hit, 0, tuple(results))


def decide_from_summary(
    req: CheckRequest,
    *,
    count: int,
    has_nan: bool,
    has_inf: bool,
    max_value: float = math.nan,
    min_value: float = math.nan,
    zero_count: int = 0,
    mean: float = math.nan,
) -> CheckResult:
    """MindSpore's decision for one request from statistics computed elsewhere (a
    statistic-only dump's `statistic.csv`): the same `_decide` the scan uses, with every
    statistic not given left NaN, so a parameter reading it stays untouched. The caller
    makes sure the statistics each enabled parameter reads are among those given."""
    st = _Stats(
        count,
        has_nan=has_nan,
        has_inf=has_inf,
        max=max_value,
        min=min_value,
        zero_count=zero_count,
        mean=mean,
    )
    return _decide(req, st, None)


def evaluate(
    tensor: np.ndarray,
    requests: Sequence[CheckRequest],
    previous: np.ndarray | None = None,
    *,
    chunk_elements: int | None = None,
    threads: int | None = None,
) -> list[CheckResult]:
    """Check every request against `tensor` in one pass; one `CheckResult` per request.

    `previous` is the same tensor's value at the previous step (change conditions 18–20);
    None means there is none (error bit 4). Elements are taken in C order and converted to
    float64 as MindSpore does; a complex tensor is checked on its parts (NaN/Inf) and its
    magnitudes (every other statistic, see `_evaluate_complex`). An empty tensor or an
    unsupported dtype gives results that are not reported (MindSpore skips such tensors).
    IS_OVERFLOW (2) never hits here: it is decided from the Ascend overflow records by the
    caller. `threads` (default `THREADS`) scan tensors of `PARALLEL_MIN_ELEMENTS` or more;
    the results do not depend on it.
    """
    tensor = np.asarray(tensor)
    if tensor.size and tensor.dtype.kind == "c":
        return _evaluate_complex(tensor, requests, previous, chunk_elements, threads)
    if tensor.size == 0 or not supported_dtype(tensor.dtype):
        return [CheckResult(False, 0, untouched_params(r)) for r in requests]
    if previous is not None:
        previous = np.asarray(previous)
        if previous.dtype.kind == "c":
            # a real tensor whose previous value is complex: the change is the complex one
            return _evaluate_complex(tensor, requests, previous, chunk_elements, threads)
        if not supported_dtype(previous.dtype):
            previous = np.full(1, np.nan)  # unreadable: behaves like a mismatched size
    has_prev = previous is not None
    plan = _plan(requests, has_prev)
    if not plan.needs_params and tensor.size <= SMALL_ELEMENTS:
        # NaN/Inf presence alone (TensorOverflow) of a small tensor: the whole machinery of
        # a scan costs ~40 µs, which a dump of many tiny tensors pays for every file
        st = _nan_inf(tensor)
        if not (st.has_nan or st.has_inf):  # the usual answer, decided once per request list
            return list(_clean_results(requests, st, previous))
        return [_decide(r, st, previous) for r in requests]
    prev_for_stats = previous if previous is not None and previous.size == tensor.size else None
    scan = _Scan(tensor, prev_for_stats, plan, chunk_elements or CHUNK_ELEMENTS)
    # NaN/Inf statistics are read only by requests that clear the error bits, and then they
    # are meant to be plain IEEE results (inf − inf = NaN): no warnings for them
    with np.errstate(invalid="ignore", over="ignore"):
        st = scan.run(THREADS if threads is None else threads)
    if has_prev and prev_for_stats is None:
        st.ratio = math.nan
        st.all_close = dict.fromkeys(plan.closes, False)
    return [_decide(r, st, previous) for r in requests]


_CLEAN: dict[tuple[int, ...], tuple[tuple[CheckRequest, ...], tuple[CheckResult, ...]]] = {}


def _clean_results(
    requests: Sequence[CheckRequest], st: _Stats, previous: np.ndarray | None
) -> tuple[CheckResult, ...]:
    """The results of NaN/Inf-only requests on a tensor without NaN or Inf: they depend on
    the requests alone (results are immutable, so one tuple serves every such tensor)."""
    key = tuple(map(id, requests))
    found = _CLEAN.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], requests, strict=True)):
        return found[1]
    results = tuple(_decide(r, st, previous) for r in requests)
    if len(_CLEAN) >= _PLAN_CACHE_SIZE:
        _CLEAN.clear()
    _CLEAN[key] = (tuple(requests), results)  # the requests kept: their ids stay theirs
    return results


def _nan_inf(tensor: np.ndarray) -> _Stats:
    """The statistics of a plan that reads only NaN/Inf presence, in a few numpy calls."""
    st = _Stats(int(tensor.size))
    if tensor.dtype.kind == "f" or tensor.dtype == _BFLOAT16:
        x = tensor.astype(np.float32) if tensor.dtype == _BFLOAT16 else tensor
        if not np.isfinite(x).all():
            st.has_nan = bool(np.isnan(x).any())
            st.has_inf = bool(np.isinf(x).any())
    return st


# ------------------------------------------------------------------------ complex tensors
def _evaluate_complex(
    tensor: np.ndarray,
    requests: Sequence[CheckRequest],
    previous: np.ndarray | None,
    chunk_elements: int | None,
    threads: int | None,
) -> list[CheckResult]:
    """`evaluate` for a complex tensor, or a real one whose previous value is complex.

    MindSpore's summary has no complex rule (its debugger does not even load complex64), so
    this is tuidebug's: an element is NaN (Inf) when either part is; every other statistic
    of a complex tensor is that of its magnitudes |z|, computed in float64 (max, min, mean,
    sd, abs_mean, zero and range percentages; |z| = 0 exactly when z = 0); the change
    conditions use |x − p| of the complex difference and |p|, so a phase rotation that keeps
    every magnitude still counts as a change. Extra memory: the float64 magnitudes (the
    size of a complex64 tensor, half that of a complex128 one)."""
    chunk = chunk_elements or CHUNK_ELEMENTS
    has_prev = previous is not None
    plan = _plan(requests, has_prev)
    is_complex = tensor.dtype.kind == "c"
    if not is_complex and not supported_dtype(tensor.dtype):
        return [CheckResult(False, 0, untouched_params(r)) for r in requests]
    values = _magnitudes(tensor, chunk) if is_complex else tensor
    nan, inf = _complex_nan_inf(tensor, chunk) if is_complex else (False, False)
    n_threads = THREADS if threads is None else threads
    with np.errstate(invalid="ignore", over="ignore"):
        scan = _Scan(values, None, plan, chunk)
        st = scan.run(n_threads)
        if is_complex and (st.has_nan, st.has_inf) != (nan, inf) and not plan.through_errors:
            # |z| overflowed float64 for finite parts (near 1e308): the scan stopped at that
            # "Inf", but the tensor has none; its statistics are wanted (IEEE: max = inf)
            scan = _Scan(values, None, replace(plan, through_errors=True), chunk)
            st = scan.run(n_threads)
    if is_complex:
        st.has_nan, st.has_inf = nan, inf
    if has_prev:
        st.ratio = math.nan
        st.all_close = dict.fromkeys(plan.closes, False)
        if previous.size == tensor.size and (  # type: ignore[union-attr]
            previous.dtype.kind == "c" or supported_dtype(previous.dtype)  # type: ignore[union-attr]
        ):
            with np.errstate(invalid="ignore", over="ignore"):
                _complex_change(tensor, previous, plan, st, chunk)  # type: ignore[arg-type]
    return [_decide(r, st, previous) for r in requests]


def _complex_blocks(a: np.ndarray, chunk: int) -> Iterator[np.ndarray]:
    flat, contiguous = _flat(a)
    for start in range(0, flat.size, chunk):
        yield _block(flat, contiguous, start, min(start + chunk, flat.size))


def _complex_nan_inf(tensor: np.ndarray, chunk: int) -> tuple[bool, bool]:
    """(any part NaN, any part ±Inf), read from the parts: |z| hides a NaN next to an Inf
    (|inf + nan·j| = inf) and overflows for finite parts near the type's maximum."""
    nan = inf = False
    for block in _complex_blocks(tensor, chunk):
        for part in (block.real, block.imag):
            if not np.isfinite(part).all():
                nan = nan or bool(np.isnan(part).any())
                inf = inf or bool(np.isinf(part).any())
        if nan and inf:
            break
    return nan, inf


def _magnitudes(tensor: np.ndarray, chunk: int) -> np.ndarray:
    """|z| of every element as float64, in C order (complex64 parts are widened first, so
    a magnitude above float32's maximum stays finite)."""
    out = np.empty(tensor.size, np.float64)
    start = 0
    for block in _complex_blocks(tensor, chunk):
        stop = start + block.size
        if block.dtype == np.complex128:
            np.abs(block, out=out[start:stop])
        else:
            np.hypot(block.real, block.imag, out=out[start:stop], dtype=np.float64)
        start = stop
    return out


def _complex_change(
    tensor: np.ndarray, previous: np.ndarray, plan: _Plan, st: _Stats, chunk: int
) -> None:
    """The change statistics over the complex difference: Σ|x − p|, Σ|p| and, per
    tolerance, whether every |x − p| <= atol + rtol·|p| (NaN is never close)."""
    closes = dict.fromkeys(plan.closes, True)
    sum_diff: list[float] = []
    sum_prev: list[float] = []
    for xb, pb in zip(
        _complex_blocks(tensor, chunk), _complex_blocks(previous, chunk), strict=True
    ):
        x = xb.astype(np.complex128)
        p = pb.astype(np.complex128)
        diff = np.abs(x - p)
        mag_p = np.abs(p)
        if plan.ratio:
            sum_diff.append(float(diff.sum()))
            sum_prev.append(float(mag_p.sum()))
        for key, alive in closes.items():
            if alive:
                rtol, atol = key
                closes[key] = bool(np.less_equal(diff, atol + rtol * mag_p).all())
    n = tensor.size
    if plan.ratio and n:
        st.ratio = (math.fsum(sum_diff) / n) / (math.fsum(sum_prev) / n + UPDATE_RATIO_EPSILON)
    st.all_close = closes
