"""tuidebug.torch: PyTorch models as debugger graphs, dumps and live trainings (skipped without torch)."""
