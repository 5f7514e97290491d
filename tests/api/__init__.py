"""The MindInsight-compatible DumpAnalyzer API (tuidebug.api), against MindInsight's own answers."""
