"""Stage 4, running a backend: finding it (backend), its process (host, the launcher that forks it and starter, pytest's side of it, wire, protocol, output),
the calls, the runner that draws, calls and judges a case, memory limits, the confinement and reaper
of the backend's process, and interrupts.

May import: suite.common, suite.contract, suite.values, suite.ops, suite.cases, suite.golden,
suite.judge. Never imports a backend's module except the one the user names (by name, at run time).
"""
