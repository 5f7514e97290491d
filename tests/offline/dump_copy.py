"""Writable copies of the (read-only) fixture dumps, for tests that damage or extend them.

Tensor files are copied empty unless asked otherwise: discovery and indexing work from names
alone, and empty copies keep the tests fast.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path


def copy_dump(
    src: Path,
    dst: Path,
    *,
    with_data: bool = False,
    keep: Callable[[str], bool] | None = None,
) -> Path:
    """Copy the dump root `src` to `dst` (created). `keep(relative_posix_path)` filters files
    and folders; returns `dst`."""
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        dirnames[:] = [d for d in dirnames if keep is None or keep((rel / d).as_posix())]
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            rel_file = (rel / name).as_posix()
            if keep is not None and not keep(rel_file):
                continue
            target = dst / rel / name
            if name.endswith(".npy") and not with_data:
                target.touch()
            else:
                # copyfile, not copy2: the copy must be writable whatever the source mode
                shutil.copyfile(Path(dirpath) / name, target)
    return dst
