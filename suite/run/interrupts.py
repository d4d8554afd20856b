"""SIGINT and SIGTERM, counted: the first ends the run like Ctrl-C, later ones are only noted.

Why: pytest marks a session INTERRUPTED only after its keyboard-interrupt hook has run, so a second
interrupt inside that hook (an impatient Ctrl-C, a CI cancel that sends SIGTERM twice) left the exit
status 0 and reports that said `complete: true` with the unfinished cases missing; an xdist worker
hit by two gave an INTERNALERROR. Here the first signal raises KeyboardInterrupt where the run is,
every later one is counted and ignored (the shutdown only writes the reports and stops the backend),
and the reports read the count, not pytest's status: a run that saw any signal is never complete.
"""
from __future__ import annotations

import atexit
import signal
from typing import Any, Optional

from suite.common import signals

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """One process's count of SIGINT/SIGTERM, from `install()` on."""

    def __init__(self) -> None:
        self.count = 0
        self.first: Optional[int] = None
        self.finishing = False          # the run is over: only its reports are left to write

    def install(self) -> None:
        """Take over SIGINT and SIGTERM where nobody else handles them (Python's or the OS's default)."""
        took = False
        for sig in SIGNALS:
            try:
                if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
                    signal.signal(sig, self._handle)
                    took = True
            except ValueError:          # not the main thread: pytest's defaults stay
                pass
        if took:
            atexit.register(self.quiet_at_exit)

    def quiet_at_exit(self) -> None:
        """At the process's exit, ignore the signals this object still handles. Why: the
        interpreter's finalization puts a Python handler back to SIG_DFL, so a second SIGTERM in
        those last milliseconds (a CI cancel sends two) killed a run whose reports were written,
        with -15 instead of its exit status (seen in a fresh-clone CI run). An ignored signal stays
        ignored to the end; a run reused in-process (pytest.main) keeps its handlers until then."""
        for sig in SIGNALS:
            try:
                if signal.getsignal(sig) == self._handle:
                    signal.signal(sig, signal.SIG_IGN)
            except ValueError:
                pass

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.count == 1:
            self.first = signum
            if not self.finishing:
                e = KeyboardInterrupt(f"signal {signum} ({signal.Signals(signum).name})")
                if signals.holding():           # a few lines that must not be cut in two
                    signals.later(e)
                    return
                raise e

    def why(self, cases: int) -> Optional[str]:
        """The incomplete reason of an interrupted run (None: no signal came)."""
        if not self.count:
            return None
        name = signal.Signals(self.first or signal.SIGINT).name
        more = f", and {self.count - 1} more signal{'s' if self.count > 2 else ''}" if self.count > 1 else ""
        return f"interrupted by {name}{more} after {cases} cases"
