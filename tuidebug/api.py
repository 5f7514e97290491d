"""DumpAnalyzer-compatible Python API (built by the offline issue)."""
