"""tuidebug's tests, one package per subject (core, offline, online, tui, cli, torch, api).

A package so that shared helpers are imported by where they live
(`from tests.tui.support import FakeSession`) and test files may share a name across folders."""
