"""The scan kernel in C (`_scan_kernel.c`): built once per user with the system C compiler,
loaded through ctypes in about a millisecond.

numba's kernel (`_scan_kernel.py`) costs every process ~0.5 s to import numba and load its
cached specialisation, which is most of a first check of a 1 GB dump. The C kernel does the
same work statement for statement (`tests/core/test_conditions.py` checks the two and the
numpy stages agree), and ctypes releases the GIL for each call, so the engine's threads
scale as with numba.

The shared library lives in the per-user cache folder (`cache_folder.cache_dir("c")`: ours,
0700), named by a hash of the source, the compiler, its flags and the machine, so that an
upgrade or another compiler builds a fresh one. `build` compiles to a temporary name and
renames, so concurrent builds never expose half a file. Without a compiler nothing is built
and the engine keeps numba (or numpy).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tuidebug.core import cache_folder

SOURCE = Path(__file__).with_name("_scan_kernel.c")
# No fused multiply-add (see the source's header). -march=native where the compiler has it
# (AVX2/AVX-512 sums run 2-3x faster than baseline x86-64): the library's name includes the
# CPU, so a cache folder on a home shared by several machines keeps one library per CPU, as
# numba's cache does.
FLAGS = ("-O3", "-fPIC", "-shared", "-ffp-contract=off", "-fno-math-errno")
NATIVE = ("-march=native",)
BUILD_SECONDS = 120  # a compiler that hangs is given up on

_DTYPES: dict[np.dtype, str] = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
}
_F64 = np.dtype(np.float64)
_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_I32 = ctypes.c_int32
# x, p, n, pn, sub, is_float, stop_on_error, sd, thresholds, n_thresholds, rtols, atols,
# alive, n_closes, sums, moments, counts, extremes, found
_ARGTYPES = [_P, _P, _I64, _I64, _I64, _I32, _I32, _I32, _P, _I64, _P, _P, _P, _I64]
_ARGTYPES += [_P] * 5

Kernel = Callable[..., None]


def compiler() -> str | None:
    """The C compiler: `$CC` when set, else `cc`, `gcc` or `clang` on the PATH."""
    chosen = os.environ.get("CC", "").strip()
    if chosen:
        return shutil.which(chosen.split()[0])
    return next((found for name in ("cc", "gcc", "clang") if (found := shutil.which(name))), None)


def library_path(cc: str | None = None) -> Path | None:
    """Where the built library is (or would be) kept; None without a cache folder or a
    compiler."""
    cc = cc or compiler()
    folder = cache_folder.cache_dir(sub="c")
    if cc is None or folder is None:
        return None
    return folder / f"scan-{_stamp(SOURCE, cc)}.so"


@functools.cache
def _stamp(source: Path, cc: str) -> str:
    """The hash naming the library: read once per process (the online client asks for
    each large tensor until a kernel is loaded)."""
    stamp = hashlib.sha256()
    for part in (source.read_bytes(), cc.encode(), " ".join(FLAGS).encode()):
        stamp.update(part)
        stamp.update(b"\0")
    stamp.update(f"{sys.platform} {platform.machine()} {_cpu()}".encode())
    return stamp.hexdigest()[:20]


def _cpu() -> str:
    """The CPU's model and feature flags (what -march=native compiles for)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 16)  # the first processor's block is enough
    except OSError:
        return platform.processor()
    wanted = ("model name", "flags", "Features", "CPU part", "CPU implementer")
    lines = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in wanted and key not in lines:
            lines[key] = value.strip()
    return " | ".join(f"{k}={lines[k]}" for k in sorted(lines)) or platform.processor()


def built() -> Path | None:
    """The built library if there is one for this source and compiler."""
    path = library_path()
    return path if path is not None and path.is_file() else None


def build() -> Path | None:
    """Compile the library into the cache folder (a second or two, once); its path, or None
    when there is no compiler or cache folder or the compiler failed."""
    cc = compiler()
    path = library_path(cc)
    if cc is None or path is None:
        return None
    if path.is_file():
        return path
    fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=path.parent)
    os.close(fd)
    try:
        for extra in (NATIVE, ()):  # a compiler without -march=native: the baseline build
            done = subprocess.run(
                [cc, *FLAGS, *extra, "-o", tmp, str(SOURCE)],
                capture_output=True,
                timeout=BUILD_SECONDS,
                check=False,
            )
            if done.returncode == 0:
                break
        else:
            _failed(path).write_bytes(done.stderr[-4000:])  # no retry in the background
            return None
        os.replace(tmp, path)  # atomic: a concurrent loader sees the old name or the whole file
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _failed(path: Path) -> Path:
    return path.with_suffix(".failed")


def build_in_background() -> None:
    """Start building in a child process that outlives this one if need be, for the next
    processes (this one goes on with numba); not again after the compiler failed on this
    source (`TUIDEBUG_KERNEL=c` tries again, in the foreground)."""
    path = library_path()
    if path is None or path.is_file() or _failed(path).exists():
        return
    code = "from tuidebug.core import c_kernel; c_kernel.build()"
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not killed with this process's terminal (Ctrl+C)
        )


def load(path: Path) -> Kernel | None:
    """The kernel from a built library, with `_scan_kernel.unit`'s signature; None when it
    cannot be loaded (a damaged file: it is removed, to be built again)."""
    try:
        lib = ctypes.CDLL(str(path))
        functions: dict[np.dtype, Any] = {}
        for dtype, name in _DTYPES.items():
            fn = getattr(lib, f"tuidebug_unit_{name}")
            fn.restype = None
            fn.argtypes = _ARGTYPES
            functions[dtype] = fn
    except (OSError, AttributeError):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return _binding(functions)


def _ptr(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _binding(functions: dict[np.dtype, Any]) -> Kernel:
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
        """`_scan_kernel.unit` in C. C writes where these pointers say, so every shape and
        dtype is checked first (a mismatch is a bug in the engine: ValueError, never a write
        out of bounds)."""
        fn = functions[x.dtype]
        n, sub = int(x.size), int(sub)
        blocks = -(-n // sub) if sub > 0 else 0
        th = np.ascontiguousarray(thresholds, x.dtype)
        if not (
            sub > 0
            and x.ndim == 1
            and x.flags.c_contiguous
            and (p.size == 0 or (p.shape == x.shape and p.dtype == x.dtype))
            and p.flags.c_contiguous
            and sums.dtype == _F64
            and sums.flags.c_contiguous
            and sums.shape[0] >= blocks
            and sums.shape[1:] == (4,)
            and (not sd or (moments.dtype == _F64 and moments.shape[0] >= blocks))
            and moments.flags.c_contiguous
            and moments.shape[1:] == (3,)
            and counts.dtype == np.int64
            and counts.size >= th.size
            and counts.flags.c_contiguous
            and extremes.dtype == _F64
            and extremes.size == 2
            and extremes.flags.c_contiguous
            and found.dtype == np.bool_
            and found.size == 2
            and found.flags.c_contiguous
            and alive.dtype == np.bool_
            and alive.flags.c_contiguous
            and rtols.dtype == _F64
            and atols.dtype == _F64
            and rtols.size >= alive.size
            and atols.size >= alive.size
            and rtols.flags.c_contiguous
            and atols.flags.c_contiguous
        ):
            raise ValueError("scan kernel called with arrays of the wrong shape or dtype")
        fn(
            _ptr(x),
            _ptr(p) if p.size else None,
            n,
            int(p.size),
            sub,
            int(bool(is_float)),
            int(bool(stop_on_error)),
            int(bool(sd)),
            _ptr(th),
            int(th.size),
            _ptr(rtols),
            _ptr(atols),
            _ptr(alive),
            int(alive.size),
            _ptr(sums),
            _ptr(moments),
            _ptr(counts),
            _ptr(extremes),
            _ptr(found),
        )

    return unit
