"""Install surface: what tuidebug writes at run time must not break a later install.

numba's default on-disk cache for `njit(cache=True)` is the `__pycache__` beside the source,
i.e. inside `site-packages/tuidebug/`; `pip uninstall` leaves those files, and the leftover
folder then shadows an editable install (every `tuidebug` command dies on ImportError). The
compiled scan kernel is cached in tuidebug's per-user cache folder instead.

Also here: the test suite's own guard against hangs (a per-test timeout).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tuidebug
from tuidebug.core import cache_folder

PACKAGE = Path(tuidebug.__file__).resolve().parent

# the kernel runs on tensors of scan_engine.KERNEL_MIN_ELEMENTS (256 Ki) or more
_RUN_KERNEL = """
import json, sys
import numpy as np
import numba
from tuidebug.core import condition_catalogue as cat
from tuidebug.core import scan_engine as c
from tuidebug.core import kernels

assert c.KERNEL_MIN_ELEMENTS <= 1 << 19
x = np.linspace(-1.0, 1.0, 1 << 19, dtype=np.float32)
x[12345] = np.nan
reqs = [cat.CheckRequest(int(cat.ConditionType.HAS_NAN), ())]
c.prepare_kernel(c.KERNEL_WAIT_BYTES)  # what a check with that much work does
assert kernels.ready(x.dtype) is not None, "the kernel did not load"
hit = c.evaluate(x, reqs)[0].hit
out = {"hit": hit, "numba_cache_dir": numba.config.CACHE_DIR}
if len(sys.argv) > 1:  # the user's own cached numba function, after ours are loaded
    sys.path.insert(0, sys.argv[1])
    import user_mod
    out["user"] = user_mod.twice(21)
print(json.dumps(out))
"""

_USER_MODULE = """
import numba

@numba.njit(cache=True)
def twice(v):
    return 2 * v
"""


def _numba_files(root: Path) -> dict[str, int]:
    """Every numba cache file under `root`, with its modification time."""
    return {
        str(p): p.stat().st_mtime_ns
        for p in root.rglob("*")
        if p.suffix in (".nbi", ".nbc") and p.is_file()
    }


def _run(env_extra: dict[str, str], *args: str) -> dict[str, object]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TUIDEBUG_KERNEL", "NUMBA_CACHE_DIR", cache_folder.CACHE_ENV_VAR)
    }
    env["NUMBA_DISABLE_JIT"] = "0"
    env["TUIDEBUG_KERNEL"] = "numba"  # numba's cache is what these tests are about
    env.update(env_extra)
    proc = subprocess.run(
        [sys.executable, "-c", _RUN_KERNEL, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.timeout(300)
def test_kernel_cache_is_written_to_the_user_cache_folder_never_into_the_package(
    tmp_path: Path,
) -> None:
    pytest.importorskip("numba")
    before = _numba_files(PACKAGE)
    cache = tmp_path / "cache"
    user = tmp_path / "user"
    user.mkdir()
    (user / "user_mod.py").write_text(textwrap.dedent(_USER_MODULE))

    out = _run({cache_folder.CACHE_ENV_VAR: str(cache)}, str(user))

    assert out["hit"] is True
    written = _numba_files(cache / "numba")
    assert any(p.endswith(".nbi") for p in written), sorted(written)
    assert any("_scan_kernel.unit-" in p for p in written), sorted(written)
    # nothing new or rewritten inside the installed package
    assert _numba_files(PACKAGE) == before
    # the user's own numba code keeps numba's default cache location, untouched by ours
    assert out["numba_cache_dir"] == ""
    assert out["user"] == 42
    assert any(p.suffix == ".nbi" for p in (user / "__pycache__").iterdir())
    assert not any("user_mod" in p for p in written)


@pytest.mark.timeout(300)
def test_a_second_process_loads_the_kernel_from_the_user_cache(tmp_path: Path) -> None:
    pytest.importorskip("numba")
    cache = tmp_path / "cache"
    _run({cache_folder.CACHE_ENV_VAR: str(cache)})
    first = _numba_files(cache / "numba")
    assert first
    _run({cache_folder.CACHE_ENV_VAR: str(cache)})
    # loaded, not compiled and saved again
    assert _numba_files(cache / "numba") == first


@pytest.mark.timeout(300)
def test_an_unusable_cache_folder_means_no_disk_cache_not_the_package(tmp_path: Path) -> None:
    pytest.importorskip("numba")
    before = _numba_files(PACKAGE)
    blocker = tmp_path / "a_file"
    blocker.write_text("in the way")  # the cache folder cannot be created under a file

    out = _run({cache_folder.CACHE_ENV_VAR: str(blocker)})

    assert out["hit"] is True  # the kernel still runs, compiled in the process
    assert _numba_files(PACKAGE) == before
    assert not any(tmp_path.rglob("*.nbi"))


def test_cache_root_follows_the_override_then_xdg_then_home(tmp_path: Path) -> None:
    assert (
        cache_folder.cache_root({cache_folder.CACHE_ENV_VAR: str(tmp_path / "c")}) == tmp_path / "c"
    )
    assert cache_folder.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "tuidebug"
    # the XDG spec: a relative XDG_CACHE_HOME is ignored
    assert cache_folder.cache_root({"XDG_CACHE_HOME": "rel"}) == Path.home() / ".cache/tuidebug"
    assert cache_folder.cache_root({}) == Path.home() / ".cache/tuidebug"


def test_cache_dir_is_created_private(tmp_path: Path) -> None:
    path = cache_folder.cache_dir({cache_folder.CACHE_ENV_VAR: str(tmp_path / "c")})
    assert path == tmp_path / "c" / "numba"
    assert path.is_dir()
    if os.name == "posix":
        assert path.stat().st_mode & 0o077 == 0


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_a_cache_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    # numba loads its cache files with pickle: a folder others can write is code execution
    shared = tmp_path / "shared" / "numba"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    assert cache_folder.cache_dir({cache_folder.CACHE_ENV_VAR: str(tmp_path / "shared")}) is None


def test_the_suite_has_a_per_test_timeout(pytestconfig: pytest.Config) -> None:
    # a hang must fail its test, not stall CI (pytest-timeout, set in pyproject.toml)
    assert pytestconfig.pluginmanager.hasplugin("timeout")
    assert float(pytestconfig.getini("timeout")) > 0
