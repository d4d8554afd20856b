"""Kernel timing (issue 24): what a backend's timing hook returns and the results.json timing record
(record), the noise-aware gate that compares two records (gate), and a simulated device to prove
both without hardware (simulated, simdevice).

May import: suite.common, suite.contract, suite.backends (the simulated backend computes its numbers
with the reference backend). Not suite.report or suite.plugin: they import it. scipy is imported
only inside the gate's test, so nothing else pays its import time.
"""
