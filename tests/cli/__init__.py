"""The command line: `tuidebug check`, `offline`, `online`, `simulate`, `demo` and their options."""
