"""The C scan kernel's life outside the engine: where it is built, who builds it, what a
second process does, and what happens without a compiler, with a broken one, with a damaged
library, or with arrays the engine should never pass. (That its answers are numba's and the
numpy engine's is checked in test_conditions.py, on every kernel.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tuidebug
from tuidebug.core import c_kernel, cache_folder, kernels

PACKAGE = Path(tuidebug.__file__).resolve().parent

needs_compiler = pytest.mark.skipif(
    c_kernel.compiler() is None, reason="no C compiler on this machine: nothing to build"
)

_CHECK = """
import json, time
import numpy as np
from tuidebug.core import c_kernel, kernels
from tuidebug.core import condition_catalogue as cat
from tuidebug.core import scan_engine as c

x = np.linspace(-1.0, 1.0, 1 << 19, dtype=np.float32)
x[777] = np.nan
c.prepare_kernel(c.KERNEL_WAIT_BYTES)
res = c.evaluate(x, [cat.CheckRequest(int(cat.ConditionType.HAS_NAN), ())])[0]
import sys
print(json.dumps({"kind": kernels.kind(), "hit": res.hit, "numba": "numba" in sys.modules}))
"""


def _run(env_extra: dict[str, str]) -> dict[str, object]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TUIDEBUG_KERNEL", "CC", cache_folder.CACHE_ENV_VAR)
    }
    env.update(env_extra)
    proc = subprocess.run(
        [sys.executable, "-c", _CHECK], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _libraries(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*.so")}


@needs_compiler
@pytest.mark.timeout(300)
def test_first_process_builds_in_the_background_the_next_loads_c_without_numba(
    tmp_path: Path,
) -> None:
    before = _libraries(PACKAGE)
    env = {cache_folder.CACHE_ENV_VAR: str(tmp_path)}
    first = _run(env)
    assert first == {"kind": "numba", "hit": True, "numba": True}
    # the library is built by a child process that outlives the first: wait for it
    folder = tmp_path / "c"
    for _ in range(1200):
        if any(p.suffix == ".so" and not p.name.startswith(".") for p in folder.iterdir()):
            break
        subprocess.run(["sleep", "0.1"], check=True)
    built = _libraries(folder)
    assert len(built) == 1 and next(iter(built)).startswith("scan-"), built
    second = _run(env)
    assert second == {"kind": "c", "hit": True, "numba": False}  # numba never imported
    assert _libraries(folder) == built  # loaded, not built again
    assert _libraries(PACKAGE) == before  # nothing written into the installed package


@needs_compiler
def test_tuidebug_kernel_c_builds_now(tmp_path: Path) -> None:
    out = _run({cache_folder.CACHE_ENV_VAR: str(tmp_path), "TUIDEBUG_KERNEL": "c"})
    assert out == {"kind": "c", "hit": True, "numba": False}


def test_without_a_compiler_numba_does_the_work_and_nothing_is_built(tmp_path: Path) -> None:
    out = _run({cache_folder.CACHE_ENV_VAR: str(tmp_path), "CC": "no-such-compiler-xyz"})
    assert out == {"kind": "numba", "hit": True, "numba": True}
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())


def test_a_compiler_that_fails_is_not_retried_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken-cc"
    broken.write_text("#!/bin/sh\necho 'no such thing' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("CC", str(broken))
    monkeypatch.setenv(cache_folder.CACHE_ENV_VAR, str(tmp_path / "cache"))
    assert c_kernel.build() is None
    path = c_kernel.library_path()
    assert path is not None and not path.exists()
    assert path.with_suffix(".failed").read_bytes().strip() == b"no such thing"
    spawned: list[object] = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: spawned.append(a))
    c_kernel.build_in_background()
    assert spawned == []


def test_an_unusable_cache_folder_means_no_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("in the way")
    monkeypatch.setenv(cache_folder.CACHE_ENV_VAR, str(blocker))
    assert c_kernel.library_path() is None
    assert c_kernel.build() is None


def test_the_library_name_follows_the_source_and_the_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache_folder.CACHE_ENV_VAR, str(tmp_path))
    first = c_kernel.library_path("/usr/bin/cc")
    assert first == c_kernel.library_path("/usr/bin/cc")
    assert first != c_kernel.library_path("/usr/bin/clang")
    changed = tmp_path / "_scan_kernel.c"
    changed.write_bytes(c_kernel.SOURCE.read_bytes() + b"\n/* edited */\n")
    monkeypatch.setattr(c_kernel, "SOURCE", changed)
    assert c_kernel.library_path("/usr/bin/cc") != first


def test_a_damaged_library_is_removed_not_loaded(tmp_path: Path) -> None:
    damaged = tmp_path / "scan-damaged.so"
    damaged.write_bytes(b"\x7fELF but not really")
    assert c_kernel.load(damaged) is None
    assert not damaged.exists()  # built again by the next process


@needs_compiler
def test_arrays_of_the_wrong_shape_are_refused_before_c_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = c_kernel.build()
    assert path is not None
    unit = c_kernel.load(path)
    assert unit is not None
    x = np.ones(1000, np.float32)
    sub = 100

    def args(**change: object) -> list[object]:
        base: dict[str, object] = {
            "x": x,
            "p": x[:0],
            "sub": sub,
            "is_float": True,
            "stop_on_error": True,
            "sd": True,
            "thresholds": np.zeros(2, np.float32),
            "rtols": np.zeros(0),
            "atols": np.zeros(0),
            "alive": np.zeros(0, np.bool_),
            "sums": np.zeros((10, 4)),
            "moments": np.zeros((10, 3)),
            "counts": np.zeros(2, np.int64),
            "extremes": np.array([-np.inf, np.inf]),
            "found": np.zeros(2, np.bool_),
        }
        base.update(change)
        return list(base.values())

    unit(*args())  # the right shapes run
    for bad in (
        {"sums": np.zeros((9, 4))},  # one block short
        {"moments": np.zeros((9, 3))},
        {"counts": np.zeros(1, np.int64)},
        {"p": np.ones(999, np.float32)},
        {"p": np.ones(1000, np.float64)},
        {"x": np.ones((10, 100), np.float32)},
        {"x": np.ones(2000, np.float32)[::2]},
        {"sub": 0},
        {"alive": np.ones(2, np.bool_)},  # more tests than tolerances
        {"found": np.zeros(2, np.int64)},
    ):
        with pytest.raises(ValueError):
            unit(*args(**bad))


def test_numba_is_what_tuidebug_kernel_numba_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUIDEBUG_KERNEL", "numba")
    kernels.forget()
    try:
        assert kernels.load() is not None
        assert kernels.kind() == "numba"
        assert not kernels.cheap() or kernels.loaded()
    finally:
        kernels.forget()
