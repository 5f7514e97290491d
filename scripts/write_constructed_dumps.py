"""Write the constructed dump fixtures (tests/data/constructed/*) from their writers.

    python scripts/write_constructed_dumps.py [--out tests/data/constructed]

Statistic-only, Ascend asynchronous (O2 / ACL, npy and bin) and overflow dumps cannot be
produced on a machine without an Ascend or GPU device, so these fixtures are written from the
documented formats by the writers in tests/constructed/ (each folder's README.md says which
documentation). The tests regenerate each one and compare it with the committed files, so a
writer change shows up as a test failure until this script is run again.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# writer module → the folders it writes under the output root
WRITERS = {
    "statistic_dump": ("statistic_old", "statistic_new"),
    "async_dump": ("async_o2", "async_acl"),
    "overflow_dump": ("overflow",),
    "bin_dump": ("bin",),
    "async_bin": ("async_bin",),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "constructed")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    for module_name, folders in WRITERS.items():
        try:
            module = importlib.import_module(f"tests.constructed.{module_name}")
        except ModuleNotFoundError:
            print(f"skipping {module_name}: no writer", file=sys.stderr)
            continue
        for folder in folders:
            target = args.out / folder
            # keep the hand-written README, rewrite everything else
            readme = (target / "README.md").read_text() if (target / "README.md").exists() else None
            shutil.rmtree(target, ignore_errors=True)
            if readme is not None:
                target.mkdir(parents=True)
                (target / "README.md").write_text(readme)
        module.write(args.out)
        print(f"wrote {', '.join(folders)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
