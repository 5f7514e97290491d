"""The version rule: what the debugger answers to a training's `ms_version` (spec §0, §1.4,
§2.3).

The wire protocol was the same from MindInsight 1.5 to 2.3, and MindSpore's online debugger
client exists from 1.x through the 2.3 era, so by default every MindSpore `ms_version` is
accepted (`version_matched=true`): 1.5 to 2.x silently; older versions (no tensor
base/statistics replies before MindInsight 1.5's protocol, no heartbeats before 1.3's, a
different graph transfer before 1.1's), versions from 3.0 on (newer than any MindSpore with an
online debugger client) and versions that cannot be read (empty, `garbage`) with one warning
that names what was received (`check_version`). `strict_version="X.Y"` (`tuidebug online
--strict-version X.Y`) applies MindInsight X.Y's own rule instead (`version_match`): a
mismatch gets `version_matched=false` and the training can only be terminated. Clients whose
`ms_version` starts with `torch-` are our own PyTorch adapter and are accepted without any
MindSpore rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "MINDINSIGHT_VERSION",
    "TORCH_VERSION_PREFIX",
    "VersionCheck",
    "check_version",
    "parse_strict_version",
    "parse_version",
    "version_match",
]

MINDINSIGHT_VERSION = "2.3"  # the last MindInsight; the protocol tuidebug speaks
_VERSION = re.compile(r"(\d+)\.(\d+)", re.ASCII)
TORCH_VERSION_PREFIX = "torch-"


def parse_version(text: str) -> tuple[int, int] | None:
    """`major.minor` of a version such as `2.2.14`, `2.3.0rc1` or `1.8`; None when `text`
    does not start with two dot-separated numbers."""
    found = _VERSION.match(text.strip())
    return (int(found[1]), int(found[2])) if found else None


def parse_strict_version(text: str) -> str:
    """A `--strict-version` value as `X.Y` (`2.3`, or `2.3.0` which the rule reads the
    same); ValueError with one sentence else."""
    if not re.fullmatch(r"\d{1,4}\.\d{1,4}(\.\d{1,4})?", text.strip(), re.ASCII):
        raise ValueError(f"--strict-version must be a MindInsight version like 2.3, not {text!r}.")
    major, minor = text.strip().split(".")[:2]
    return f"{int(major)}.{int(minor)}"


@dataclass(frozen=True)
class VersionCheck:
    """The answer to a client's `ms_version`: `matched` goes on the wire as
    `version_matched`; `warning` (one sentence, naming the version received) is shown once."""

    matched: bool
    warning: str = ""


def check_version(ms_version: str, strict_version: str | None = None) -> VersionCheck:
    """Spec §2.3 with this debugger's policy (module docstring): every MindSpore version is
    accepted, with a warning for those the MindInsight 1.5–2.3 protocol may not fit;
    `strict_version` = MindInsight's own rule against that MindInsight version."""
    shown = ms_version or "(none)"
    if ms_version.startswith(TORCH_VERSION_PREFIX):
        return VersionCheck(True)
    if strict_version is not None:
        result = version_match(ms_version, strict_version)
        if result == 2:
            return VersionCheck(
                False,
                f"MindSpore {shown} does not match MindInsight {strict_version} "
                "(--strict-version); only terminate is possible.",
            )
        if result == 1:
            return VersionCheck(
                True,
                f"MindSpore {shown} is newer than MindInsight {strict_version} "
                "(--strict-version); continuing.",
            )
        return VersionCheck(True)
    version = parse_version(ms_version)
    if version is None:
        return VersionCheck(
            True,
            f"The training sent MindSpore version {ms_version!r}, which cannot be read; "
            "assuming the MindInsight 1.5–2.3 protocol (if the graph or commands fail, "
            "the training may not be a MindSpore online debugger client).",
        )
    if version < (1, 1):
        return VersionCheck(
            True,
            f"MindSpore {shown} is older than MindInsight 1.1's protocol (graphs were not "
            "sent in chunks, watchpoints had only the NaN/Inf conditions, no heartbeats or "
            "tensor statistics); the graph, watchpoints and tensors may not work.",
        )
    if version < (1, 3):
        return VersionCheck(
            True,
            f"MindSpore {shown} predates MindInsight 1.3's protocol: it sends no heartbeats "
            "(a training that vanishes is not noticed) and ignores graph names in "
            "watchpoints; tensor statistics and sizes (MindInsight 1.5) may not load either.",
        )
    if version < (1, 5):
        return VersionCheck(
            True,
            f"MindSpore {shown} predates MindInsight 1.5's protocol: ViewCMD levels and the "
            "tensor base/statistics replies came with 1.5, so tensor statistics and sizes "
            "may not load (full tensor values still do).",
        )
    if version >= (3, 0):
        return VersionCheck(
            True,
            f"MindSpore {shown} is newer than any MindSpore with an online debugger client "
            "(the last are 2.3-era releases); continuing with the MindInsight 2.3 protocol.",
        )
    return VersionCheck(True)


def version_match(ms_version: str, mi_version: str = MINDINSIGHT_VERSION) -> int:
    """MindInsight's `version_match` (spec §2.3): 0 same major.minor, 1 same major and a newer
    MindSpore minor (accepted with a warning), 2 anything else (mismatch)."""

    def major_minor(text: str) -> tuple[int, int] | None:
        parts = text.strip().split(".")
        try:
            return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
        except ValueError:
            return None

    ms, mi = major_minor(ms_version), major_minor(mi_version)
    if ms is None or mi is None or ms[0] != mi[0]:
        return 2
    if ms[1] == mi[1]:
        return 0
    return 1 if ms[1] > mi[1] else 2
