"""The error bits of a watchpoint check (spec §3.6): one `ErrorCode` flag type for all.

MindSpore sends them in `WatchpointHit.error_code` online and the offline engine gives the
same bits, so the engine, the offline checker, both sessions, `check` and the API all read
and write them through this type. Values travel and are stored as plain ints (a hit's
`error_code`); `ErrorCode(code)` reads one, and unknown bits from a peer are kept.
"""

from __future__ import annotations

from enum import IntFlag


class ErrorCode(IntFlag):
    """Why a watched tensor could not be judged; several bits may be set at once."""

    NAN = 1  # the tensor contains NaN (no parameter evaluated)
    INF = 2  # the tensor contains ±Inf (no parameter evaluated)
    NO_PREV = 4  # a change condition has no previous-step value to compare with
    OUT_OF_MEMORY = 8  # offline: the tensor exceeds the memory limit and was not read
    NO_HISTORY = 16  # offline: the graph's execution history file is missing
    NO_VALUE = 32  # offline, `error_on_no_value`: the tensor has no dumped value


# DumpAnalyzer's `error_msg` texts (spec §3.6), user-visible in hit lists and `check` output
ERROR_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.NAN: "Tensor contains NaN.",
    ErrorCode.INF: "A tensor contains +/-INF.",
    ErrorCode.NO_PREV: "The previous step value cannot be found.",
    ErrorCode.OUT_OF_MEMORY: "The tensor size exceeds the memory limit.",
    ErrorCode.NO_HISTORY: "Graph history file is not available.",
    ErrorCode.NO_VALUE: "Tensor has no value.",
}


def error_messages(error_code: int) -> list[str]:
    """One sentence per known bit set in `error_code`, lowest bit first (DumpAnalyzer's order)."""
    return [text for bit, text in ERROR_MESSAGES.items() if error_code & bit]
