"""Writing dumps in MindSpore's layout: the writer, and the built-in demo dump.

Modules (this docstring is the table of contents; the package imports nothing):
- `demo`: The demo dump: a small numpy MLP whose learning rate blows up, dumped like
  MindSpore 2.10.
- `dump_writer`: Writing dumps in the MindSpore 2.10 synchronous ("e2e") layout.
"""
