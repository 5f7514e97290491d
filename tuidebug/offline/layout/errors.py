"""The one exception a dump can raise when nothing in it is usable."""

from __future__ import annotations


class DumpError(Exception):
    """A dump folder that cannot be used at all (missing, not a folder, no rank folders…).

    The message is one sentence naming the path, fit to show as is in the UI or on stderr.
    Problems that leave the rest of the dump usable are collected as `problems` instead.
    """
