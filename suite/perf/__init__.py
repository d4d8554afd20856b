"""Kernel timing: the backend's time_launches hook, the measuring protocol and its record (docs/timing.md)."""
