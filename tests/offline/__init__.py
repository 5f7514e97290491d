"""Offline dumps: layout, file names, tensor files, the checker, the offline session; copies and damaged copies of dumps."""
