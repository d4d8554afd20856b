"""Kernel timing (issue 24): what a backend's timing hook returns and the results.json timing record
(record), the noise-aware gate that compares two records (gate), a simulated device to prove
both without hardware (simulated, simdevice), and pytest --timing's measuring side (protocol,
launch, peak, case; docs/timing.md).

May import: suite.common, suite.contract, suite.backends (the simulated backend computes its numbers
with the reference backend); the measuring side also suite.cases and suite.run (case.py times a
case through the runner's host; launch.py runs in the backend's process). Not suite.report or suite.plugin: they import it. scipy is imported
only inside the gate's test, so nothing else pays its import time.
"""
