"""Loading the condition engine's compiled scan kernel (`_scan_kernel.unit`, numba).

For tensors of `scan_engine.KERNEL_MIN_ELEMENTS` or more, `scan_engine._Scan` hands each
unit of elements to one call of the kernel instead of its numpy stages: one read of the
data instead of a dozen numpy passes, without the GIL, so threads scale. The results are
the numpy engine's to rounding (sums are added in another order inside a sub-block).

numba is imported on first use, not with `scan_engine`: importing it and loading the cached
kernel takes ~0.3 s, which small tensors never earn back. `TUIDEBUG_KERNEL=numpy` (or numba
missing) keeps every tensor on the numpy engine.

The compiled kernel is cached on disk in a per-user folder (`cache_dir`), never inside the
package: files written into `site-packages/tuidebug/` outlive `pip uninstall`, and the
leftover folder then shadows an editable install of tuidebug.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
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


CACHE_ENV_VAR = "TUIDEBUG_CACHE_DIR"


def cache_root(environ: Mapping[str, str] | None = None) -> Path | None:
    """tuidebug's per-user cache folder: `$TUIDEBUG_CACHE_DIR`, else
    `$XDG_CACHE_HOME/tuidebug`, else `%LOCALAPPDATA%/tuidebug` on Windows, else
    `~/.cache/tuidebug`; None when no home folder is known."""
    env = os.environ if environ is None else environ
    explicit = env.get(CACHE_ENV_VAR, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    # the XDG spec: a relative XDG_CACHE_HOME is invalid and must be ignored
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "tuidebug"
    local = env.get("LOCALAPPDATA", "").strip() if sys.platform == "win32" else ""
    if local:
        return Path(local) / "tuidebug"
    try:
        return Path.home() / ".cache" / "tuidebug"
    except (RuntimeError, KeyError):  # no home folder (a service account without one)
        return None


def cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder for compiled-kernel caches (`cache_root()/numba`), created if needed, or
    None when it cannot be used: then the kernel is compiled in every process.

    numba's cache files are pickles that it loads, so a folder other users can write to
    would let them run code in ours: it must be a directory we own, writable by no one
    else (a folder created here is 0700)."""
    root = cache_root(environ)
    if root is None:
        return None
    path = root / "numba"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
        if not stat.S_ISDIR(st.st_mode) or not os.access(path, os.W_OK | os.X_OK):
            return None
        if hasattr(os, "getuid") and (
            st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return None
    except (OSError, ValueError):  # not creatable (read-only home, a file in the way…)
        return None
    return path


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
