"""Loading the condition engine's compiled scan kernel (`_scan_kernel.unit`, numba).

For tensors of `scan_engine.KERNEL_MIN_ELEMENTS` or more, `scan_engine._Scan` hands each
unit of elements to one call of the kernel instead of its numpy stages: one read of the
data instead of a dozen numpy passes, without the GIL, so threads scale. The results are
the numpy engine's to rounding (sums are added in another order inside a sub-block).

numba is imported on first use, not with `scan_engine`: importing it and loading the cached
kernel takes ~0.3 s, which small tensors never earn back. `TUIDEBUG_KERNEL=numpy` (or numba
missing) keeps every tensor on the numpy engine.

The compiled kernel is cached on disk in a per-user folder (`cache_folder.cache_dir`), never
inside the package: files written into `site-packages/tuidebug/` outlive `pip uninstall`, and the
leftover folder then shadows an editable install of tuidebug.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
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


def disabled() -> bool:
    return os.environ.get("TUIDEBUG_KERNEL", "").strip().lower() in ("numpy", "off", "0")


def load() -> Callable[..., None] | None:
    """The compiled block kernel, or None when numba is unavailable or turned off."""
    if disabled():
        return None
    if "kernel" in _STATE:
        return _STATE["kernel"]  # type: ignore[no-any-return]
    with _LOCK:
        if "kernel" not in _STATE:
            _STATE["kernel"] = _build()
    return _STATE["kernel"]  # type: ignore[no-any-return]


def _build() -> Callable[..., None] | None:
    try:
        from tuidebug.core import _scan_kernel
    except ImportError:
        return None  # numba missing (or broken): the numpy engine does the work
    return _scan_kernel.unit  # type: ignore[no-any-return]
