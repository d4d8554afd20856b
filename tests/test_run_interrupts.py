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


# -- moved from tests/test_plugin_exit_status.py (mut5's run): the same module's other checks --
def test_the_first_signal_raises_and_later_ones_are_counted():
    i = Interrupts()
    with pytest.raises(KeyboardInterrupt):
        i._handle(15, None)
    for _ in range(9):
        i._handle(2, None)          # no exception: the shutdown writes the reports undisturbed
    assert i.count == 10 and i.why(3) == "interrupted by SIGTERM, and 9 more signals after 3 cases"
    j = Interrupts()
    j.finishing = True
    j._handle(2, None)              # the run is over: nothing is raised, and it still counts
    assert j.why(0) == "interrupted by SIGINT after 0 cases"
    assert Interrupts().why(5) is None


@pytest.mark.parametrize("count,more", [(1, ""), (2, ", and 1 more signal"), (3, ", and 2 more signals")])
def test_the_reason_counts_the_signals(count, more):
    i = Interrupts()
    for _ in range(count):
        try:
            i._handle(signal.SIGINT, None)
        except KeyboardInterrupt as e:
            assert str(e) == "signal 2 (SIGINT)"
    assert i.why(7) == f"interrupted by SIGINT{more} after 7 cases"


def test_install_takes_over_only_the_default_handlers():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    def mine(signum, frame):
        pass
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, mine)
        i = Interrupts()
        i.install()
        assert signal.getsignal(signal.SIGINT) == i._handle and signal.getsignal(signal.SIGTERM) is mine
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        i.install()
        assert signal.getsignal(signal.SIGTERM) == i._handle
    finally:
        for s, h in saved.items():
            signal.signal(s, h)



@pytest.fixture
def signals_restored(monkeypatch):
    """The handlers of SIGINT and SIGTERM put back after the test; atexit.register recorded, not done."""
    from suite.run import interrupts
    saved = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    registered = []
    monkeypatch.setattr(interrupts.atexit, "register", registered.append)
    yield registered
    for s, h in saved.items():
        signal.signal(s, h)


def test_install_takes_both_defaults_and_quiets_them_at_exit_only_if_it_took_one(signals_restored):
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    i = Interrupts()
    i.install()
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == [i._handle, i._handle]
    assert signals_restored == [i.quiet_at_exit]
    j = Interrupts()
    j.install()                                     # both are i's now: j takes nothing, registers nothing
    assert signal.getsignal(signal.SIGINT) == i._handle and signals_restored == [i.quiet_at_exit]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    k = Interrupts()
    k.install()                                     # an ignored signal stays ignored
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN and signal.getsignal(signal.SIGTERM) == k._handle
    assert signals_restored == [i.quiet_at_exit, k.quiet_at_exit]


def test_at_exit_only_the_signals_it_still_handles_are_ignored(signals_restored):
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


def test_outside_the_main_thread_install_and_quiet_change_nothing(signals_restored):
    import threading
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    i = Interrupts()
    failed = []

    def work():
        try:
            i.install()
            i.quiet_at_exit()
        except Exception as e:          # noqa: BLE001  (the test reports it)
            failed.append(e)
    signal.signal(signal.SIGINT, i._handle)     # i handles SIGINT: quiet_at_exit would ignore it if it could
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert failed == [] and signals_restored == []
    assert signal.getsignal(signal.SIGINT) == i._handle and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_the_first_signal_names_itself_and_a_count_without_a_first_reads_as_sigint():
    i = Interrupts()
    with pytest.raises(KeyboardInterrupt, match=r"^signal 15 \(SIGTERM\)$"):
        i._handle(signal.SIGTERM, None)
    assert (i.count, i.first) == (1, signal.SIGTERM) and i.why(2) == "interrupted by SIGTERM after 2 cases"
    i._handle(signal.SIGINT, None)
    assert i.first == signal.SIGTERM                 # the first stays the first
    j = Interrupts()
    assert (j.count, j.first, j.finishing) == (0, None, False)
    j.count = 1
    assert j.why(1) == "interrupted by SIGINT after 1 cases"
