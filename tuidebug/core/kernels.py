"""Loading the condition engine's compiled scan kernel: C (`c_kernel`, built once per user
with the system compiler) or numba's (`_scan_kernel.unit`).

For tensors of `scan_engine.KERNEL_MIN_ELEMENTS` or more, `scan_engine._Scan` hands each
unit of elements to one call of the kernel instead of its numpy stages: one read of the
data instead of a dozen numpy passes, without the GIL, so threads scale. The results are
the numpy engine's to rounding (sums are added in another order inside a sub-block).

The C kernel loads in a millisecond once its library is built; until then (the first
check of a new install, the library building in the background) or without a C compiler,
numba's: importing numba and loading the cached kernel's specialisation for a dtype takes
~0.5 s, more than a whole check of a 1 GB dump, so it is loaded only when there is enough
work to earn it back. The scan engine uses the kernel only once it is loaded *and* warm for
the tensor's dtype (`ready`); whoever has the work calls `warm_up` (the offline checker,
through `scan_engine.prepare_kernel`), in the calling thread or in the background, and the
numpy stages (which agree to rounding) do the work until then. `TUIDEBUG_KERNEL=numpy`
keeps every tensor on numpy; `=numba` and `=c` choose one kernel (`=c` builds the library
now if need be).

The compiled kernel is cached on disk in a per-user folder (`cache_folder.cache_dir`), never
inside the package: files written into `site-packages/tuidebug/` outlive `pip uninstall`, and the
leftover folder then shadows an editable install of tuidebug.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

# Work dtypes the compiled stage takes (x and its previous value in the same one; the
# engine converts float16, bfloat16 and 64-bit integers first, as its numpy stage does).
KERNEL_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        np.float32,
        np.float64,
        np.int8,
        np.int16,
        np.int32,
        np.uint8,
        np.uint16,
        np.uint32,
    )
)

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}  # "kernel": the compiled function or None once tried
_READY: dict[np.dtype, Callable[..., None]] = {}  # warm for these dtypes
_WARMING: set[np.dtype] = set()  # started (or done, or failed) for these dtypes


def _choice() -> str:
    """`TUIDEBUG_KERNEL`, normalised: "" (the default), "numpy"/"off"/"0", "numba" or "c"."""
    return os.environ.get("TUIDEBUG_KERNEL", "").strip().lower()


def disabled() -> bool:
    return _choice() in ("numpy", "off", "0")


def ready(dtype: np.dtype) -> Callable[..., None] | None:
    """The kernel if it is loaded and warm for `dtype`, else None (never loads it)."""
    return None if disabled() else _READY.get(dtype)


def cheap() -> bool:
    """Loading the kernel costs milliseconds: it is loaded, or the C library is built."""
    if disabled():
        return False
    if "kernel" in _STATE:
        return _STATE["kernel"] is not None
    if _choice() == "numba":
        return False
    from tuidebug.core import c_kernel

    return c_kernel.built() is not None


def loaded() -> bool:
    """numba is imported and the kernel built: warming one more dtype costs a few ms."""
    return _STATE.get("kernel") is not None


def warm_up(
    dtypes: Iterable[np.dtype],
    warm: Callable[[Callable[..., None], np.dtype], None],
    *,
    wait: bool,
) -> None:
    """Load the kernel and warm it for `dtypes`: here and now (`wait`), or in a background
    thread while the caller goes on with the numpy engine. Each dtype is loaded once.

    `warm(kernel, dtype)` makes one call on a tiny unit of `dtype` with the argument types of
    a real call, which loads (or compiles) numba's specialisation: importing numba and the
    first signature cost ~0.3 s, each further dtype a few ms. A background load holds the GIL
    for most of that time, which is why the checker waits for it when it has enough work."""
    if disabled():
        return
    dtypes = list(dtypes)
    with _LOCK:
        todo = [d for d in dtypes if d not in _WARMING]
        _WARMING.update(todo)
    if todo and not wait:
        threading.Thread(
            target=_warm, args=(todo, warm), name="tuidebug-kernel-load", daemon=True
        ).start()
    elif todo:
        _warm(todo, warm)
    if wait:  # another thread may be loading some of them: the caller wants them warm
        for dtype in dtypes:
            wait_ready(dtype)


def _warm(dtypes: list[np.dtype], warm: Callable[[Callable[..., None], np.dtype], None]) -> None:
    kernel = load()
    if kernel is None:
        return
    for dtype in dtypes:
        try:
            warm(kernel, dtype)
        except Exception:  # a specialisation that cannot be built: that dtype stays on numpy
            continue
        _READY[dtype] = kernel


def wait_ready(dtype: np.dtype, timeout: float = 30.0) -> bool:
    """Wait until the kernel is warm for `dtype`; False on timeout or when it will never be
    (numba missing or turned off, or that dtype failed)."""
    deadline = time.monotonic() + timeout
    while dtype not in _READY:
        if disabled() or _STATE.get("kernel", True) is None or time.monotonic() > deadline:
            return False
        if dtype not in _WARMING:
            return False
        time.sleep(0.005)
    return True


def load() -> Callable[..., None] | None:
    """The compiled block kernel, or None when numba is unavailable or turned off."""
    if disabled():
        return None
    if "kernel" in _STATE:
        return _STATE["kernel"]
    with _LOCK:
        if "kernel" not in _STATE:
            _STATE["kernel"] = _build()
    return _STATE["kernel"]


def _build() -> Callable[..., None] | None:
    """The C kernel when its library is built (or, with `TUIDEBUG_KERNEL=c` or without
    numba, can be built now); else numba's, while the C library is built in the background
    for the next processes; None when neither can run."""
    choice = _choice()
    if choice != "numba":
        from tuidebug.core import c_kernel

        path = c_kernel.built()
        if path is None and (choice == "c" or not _numba_importable()):
            path = c_kernel.build()
        if path is not None:
            kernel = c_kernel.load(path)
            if kernel is not None:
                _STATE["kind"] = "c"
                return kernel
        if choice == "c":
            return None
        if c_kernel.compiler() is not None:
            c_kernel.build_in_background()
    try:
        from tuidebug.core import _scan_kernel
    except ImportError:
        return None  # numba missing (or broken): the numpy engine does the work
    _STATE["kind"] = "numba"
    return _scan_kernel.unit


def _numba_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def forget() -> None:
    """Unload the kernel, so that the next `load` chooses again (`TUIDEBUG_KERNEL`): the
    tests run each kernel in one process."""
    with _LOCK:
        _STATE.clear()
        _READY.clear()
        _WARMING.clear()


def kind() -> str:
    """Which kernel does the work: "c", "numba", or "numpy" (none loaded, or turned off)."""
    if disabled() or _STATE.get("kernel") is None:
        return "numpy"
    return str(_STATE.get("kind", "numpy"))
