"""tuidebug: a terminal graph debugger for neural-network training."""

__version__ = "0.1.0"
