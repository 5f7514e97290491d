"""tuidebug's per-user cache folder, where the compiled scan kernels are kept (numba's cache,
the C kernel's library).

Never inside the package: files written into `site-packages/tuidebug/` outlive `pip uninstall`,
and the leftover folder then shadows an editable install of tuidebug. Its own module so the
kernel module can ask for it without importing its own loader (`kernels`).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

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


def cache_dir(environ: Mapping[str, str] | None = None, *, sub: str = "numba") -> Path | None:
    """The folder for compiled-kernel caches (`cache_root()/numba` for numba's, `/c` for the
    C kernel's library), created if needed, or None when it cannot be used: then numba
    compiles in every process and the C kernel is not built.

    numba's cache files are pickles that it loads and the C kernel is a library we load, so
    a folder other users can write to would let them run code in ours: it must be a
    directory we own, writable by no one else (a folder created here is 0700)."""
    root = cache_root(environ)
    if root is None:
        return None
    path = root / sub
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
