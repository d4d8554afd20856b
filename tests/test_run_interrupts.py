"""SIGINT and SIGTERM counted, in pytest's own process (suite/run/interrupts.py): the first ends the
run, later ones are noted, and the incomplete reason says how many came. The end-to-end signals
are tests/test_interrupts.py's (a pytest of their own, where mutmut cannot see them)."""
from __future__ import annotations

import atexit
import signal

import pytest

from suite.run.interrupts import SIGNALS, Interrupts


def _quiet(i: Interrupts, signum: int) -> None:
    """A signal that must raise nothing: a KeyboardInterrupt here would stop pytest itself (read as
    an interrupted run, not as this test's failure), so it is made an assertion."""
    try:
        i._handle(signum, None)
    except KeyboardInterrupt as e:
        raise AssertionError(f"signal {signum} raised KeyboardInterrupt({e})") from None


@pytest.fixture
def handlers(monkeypatch):
    """The process's SIGINT/SIGTERM handlers put back after the test, and atexit left alone."""
    saved = {s: signal.getsignal(s) for s in SIGNALS}
    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    yield registered
    for s, h in saved.items():
        signal.signal(s, h)


def test_no_signal_is_no_reason() -> None:
    i = Interrupts()
    assert (i.count, i.first, i.finishing, i.why(3)) == (0, None, False, None)


def test_the_first_signal_ends_the_run_and_later_ones_are_counted() -> None:
    i = Interrupts()
    with pytest.raises(KeyboardInterrupt) as e:
        i._handle(signal.SIGTERM, None)
    assert str(e.value) == f"signal {int(signal.SIGTERM)} (SIGTERM)"
    assert (i.count, i.first) == (1, signal.SIGTERM)
    assert i.why(7) == "interrupted by SIGTERM after 7 cases"
    _quiet(i, signal.SIGINT)                                # no raise: the shutdown goes on
    assert (i.count, i.first) == (2, signal.SIGTERM)
    assert i.why(7) == "interrupted by SIGTERM, and 1 more signal after 7 cases"
    _quiet(i, signal.SIGINT)
    assert i.why(0) == "interrupted by SIGTERM, and 2 more signals after 0 cases"


def test_a_signal_while_finishing_is_counted_and_raises_nothing() -> None:
    i = Interrupts()
    i.finishing = True
    _quiet(i, signal.SIGINT)
    assert (i.count, i.first) == (1, signal.SIGINT) and i.why(2) == "interrupted by SIGINT after 2 cases"


def test_a_count_without_a_first_signal_reads_as_sigint() -> None:
    i = Interrupts()
    i.count = 1
    assert i.why(1) == "interrupted by SIGINT after 1 cases"


def test_install_takes_the_default_handlers_only_and_quiets_them_at_exit(handlers) -> None:
    mine = lambda s, f: None                                 # noqa: E731  (someone else's handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, mine)
    i = Interrupts()
    i.install()
    assert signal.getsignal(signal.SIGINT) == i._handle and signal.getsignal(signal.SIGTERM) is mine
    assert handlers == [i.quiet_at_exit]
    i.quiet_at_exit()
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN and signal.getsignal(signal.SIGTERM) is mine
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    j = Interrupts()
    j.install()
    assert signal.getsignal(signal.SIGTERM) == j._handle and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert handlers == [i.quiet_at_exit, j.quiet_at_exit]


def test_install_where_nothing_is_default_registers_nothing(handlers) -> None:
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    Interrupts().install()
    assert handlers == [] and all(signal.getsignal(s) == signal.SIG_IGN for s in SIGNALS)


def _in_a_thread(f) -> list:
    """Run f in another thread; what it raised (a thread's exception fails no test by itself)."""
    import threading
    raised: list = []

    def run():
        try:
            f()
        except BaseException as e:          # noqa: B036  (reported to the test)
            raised.append(e)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    return raised


def test_off_the_main_thread_the_handlers_stay(handlers) -> None:
    for s in SIGNALS:
        signal.signal(s, signal.SIG_DFL)
    i = Interrupts()
    assert _in_a_thread(i.install) == []
    assert handlers == [] and all(signal.getsignal(s) == signal.SIG_DFL for s in SIGNALS)
    for s in SIGNALS:
        signal.signal(s, i._handle)
    assert _in_a_thread(i.quiet_at_exit) == []                  # ValueError there too: nothing changes
    assert all(signal.getsignal(s) == i._handle for s in SIGNALS)


def test_install_takes_both_defaults_and_quiets_them_at_exit_only_if_it_took_one(handlers):
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    i = Interrupts()
    i.install()
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == [i._handle, i._handle]
    assert handlers == [i.quiet_at_exit]
    j = Interrupts()
    j.install()                                     # both are i's now: j takes nothing, registers nothing
    assert signal.getsignal(signal.SIGINT) == i._handle and handlers == [i.quiet_at_exit]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    k = Interrupts()
    k.install()                                     # an ignored signal stays ignored
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN and signal.getsignal(signal.SIGTERM) == k._handle
    assert handlers == [i.quiet_at_exit, k.quiet_at_exit]


def test_at_exit_only_the_signals_it_still_handles_are_ignored(handlers):
    def mine(signum, frame):
        pass
    i = Interrupts()
    signal.signal(signal.SIGINT, i._handle)
    signal.signal(signal.SIGTERM, mine)
    i.quiet_at_exit()
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN and signal.getsignal(signal.SIGTERM) is mine
    signal.signal(signal.SIGINT, mine)
    signal.signal(signal.SIGTERM, i._handle)
    i.quiet_at_exit()
    assert signal.getsignal(signal.SIGINT) is mine and signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
