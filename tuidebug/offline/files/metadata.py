"""What `.dump_metadata/` says about a dump (spec §5.1): net name, MindSpore version,
device, sync or async, file format.

MindSpore 2.10 on CPU and 2.4+ on Ascend write no metadata: every setting is then None
and discovery goes by the folders alone. The two JSON files are read through
`regular_file` (never blocking, bounded by `MAX_JSON_BYTES`); a file that cannot be read
is one problem sentence, never an error.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuidebug.offline.files.listing import Scanner, reason
from tuidebug.offline.files.regular_file import FileTooLargeError, NotRegularFileError, read_regular

MAX_JSON_BYTES = 1 << 20


@dataclass(frozen=True)
class DumpSettings:
    """What `.dump_metadata/` says about the dump (spec §5.1). Every field is None when the
    dump has no metadata (MindSpore 2.10 on CPU, 2.4+ on Ascend write none)."""

    net_name: str | None = None
    ms_version: str | None = None
    device_target: str | None = None
    # MindInsight's rule: sync if device_target is GPU or e2e_dump_settings.enable.
    is_sync: bool | None = None
    file_format: str | None = None
    saved_data: str | None = None
    input_output: int | None = None
    source: Path | None = None  # the .dump_metadata folder these settings came from


def _read_json(path: Path, scanner: Scanner, problems: list[str]) -> dict[str, Any] | None:
    shown = scanner.show(path)
    try:
        if path.is_symlink() and not scanner.inside(os.path.realpath(path)):
            problems.append(
                f"{shown} is a symbolic link outside the dump folder, so it was not read."
            )
            return None
        # opened whatever it is: a FIFO or a folder is refused with its true reason
        value = json.loads(read_regular(path, MAX_JSON_BYTES).decode("utf-8-sig"))
    except FileNotFoundError:
        return None  # absent (or a dangling link): MindSpore 2.10 writes no metadata
    except FileTooLargeError:
        problems.append(f"{shown} is larger than {MAX_JSON_BYTES:,} bytes, so it was not read.")
        return None
    except NotRegularFileError as err:
        problems.append(f"{shown} is {err.strerror}; it was not read.")
        return None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        problems.append(f"cannot read {shown}: {reason(err)}.")
        return None
    if not isinstance(value, dict):
        problems.append(f"{shown} does not hold a JSON object, so it was ignored.")
        return None
    return value


def read_settings(meta: Path, scanner: Scanner, problems: list[str]) -> DumpSettings:
    """The settings in the `.dump_metadata` folder `meta` (all None when neither file can
    be read; why is added to `problems`)."""
    dump = _read_json(meta / "data_dump.json", scanner, problems)
    config = _read_json(meta / "config.json", scanner, problems)
    if dump is None and config is None:
        return DumpSettings()
    common = _dict(dump, "common_dump_settings")
    e2e = _dict(dump, "e2e_dump_settings")
    device = _str(config, "device_target")
    is_sync: bool | None = None
    if dump is not None:
        # MindInsight: device_target defaults to Ascend; GPU or e2e enable ⇒ sync
        is_sync = device == "GPU" or bool(e2e.get("enable"))
    io_setting = common.get("input_output")
    return DumpSettings(
        net_name=_str(common, "net_name"),
        ms_version=_str(config, "ms_version"),
        device_target=device,
        is_sync=is_sync,
        file_format=_str(common, "file_format"),
        saved_data=_str(common, "saved_data"),
        input_output=io_setting if isinstance(io_setting, int) else None,
        source=meta,
    )


def _dict(obj: dict[str, Any] | None, key: str) -> dict[str, Any]:
    value = obj.get(key) if obj else None
    return value if isinstance(value, dict) else {}


def _str(obj: dict[str, Any] | None, key: str) -> str | None:
    value = obj.get(key) if obj else None
    return value if isinstance(value, str) and value else None
