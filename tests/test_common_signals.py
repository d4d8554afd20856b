"""The run's interrupt held back (suite/common/signals.py, suite/run/interrupts.py): a first SIGINT
or SIGTERM that comes inside `held()` is raised as the block ends, not lost and not inside it; a
golden bundle is read and written held, so an interrupt never lands inside zipfile.ZipFile() (whose
half-made object fails in __del__ and prints a traceback at the run's end)."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from suite.common import signals
from suite.common.signals import held, holding, later
from suite.golden import bundle
from suite.run.interrupts import SIGNALS, Interrupts


@pytest.fixture
def run_handler():
    """A fresh Interrupts handling SIGINT and SIGTERM, as in a run; pytest's handlers put back after."""
    i = Interrupts()
    saved = {s: signal.signal(s, i._handle) for s in SIGNALS}
    yield i
    for s, h in saved.items():
        signal.signal(s, h)


def test_an_exception_handed_over_inside_is_raised_as_the_outermost_block_ends():
    done = []
    assert not holding()
    with pytest.raises(KeyboardInterrupt, match="first"):
        with held():
            assert holding()
            with held():
                later(KeyboardInterrupt("first"))
                later(KeyboardInterrupt("second"))       # the first one handed over is kept
                done.append("inner")
            assert holding()
            done.append("outer")                          # not raised at the inner block's end
    assert done == ["inner", "outer"] and not holding()
    with held():                                          # nothing is left over for the next block
        pass


def test_a_block_that_raises_leaves_nothing_held():
    with pytest.raises(ZeroDivisionError):
        with held():
            1 / 0
    assert not holding()
    with held():
        pass


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_runs_first_signal_inside_is_raised_after_the_block_later_ones_only_counted(run_handler, sig):
    done = []
    with pytest.raises(KeyboardInterrupt, match=signal.Signals(sig).name):
        with held():
            os.kill(os.getpid(), sig)
            done.append(sum(range(10_000)))               # bytecodes run: the handler has run by now
            assert run_handler.count == 1
            done.append("inside")
    assert done == [49995000, "inside"] and run_handler.first == sig
    with held():
        os.kill(os.getpid(), sig)                         # a second signal: counted, never raised
        sum(range(10_000))
    assert run_handler.count == 2


def test_outside_a_block_the_first_signal_is_raised_where_the_run_is(run_handler):
    done = []
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(10_000))
        done.append("after")
    assert done == []


def _loading_with(sig, seen, real):
    def load(*a, **k):
        os.kill(os.getpid(), sig)                         # as if Ctrl-C came inside ZipFile()
        sum(range(10_000))
        npz = real(*a, **k)
        seen.append(npz)
        return npz
    return load


def test_an_interrupt_while_a_bundle_is_read_comes_after_the_zip_is_read_and_closed(run_handler, monkeypatch):
    data = bundle._bundle_bytes({"k": {"in.self": np.arange(6, dtype=np.float32).reshape(2, 3)}})
    seen = []
    monkeypatch.setattr(np, "load", _loading_with(signal.SIGINT, seen, np.load))
    with pytest.raises(KeyboardInterrupt):
        bundle._read_bundle(data)
    [npz] = seen                                          # np.load returned: no interrupt inside it
    assert npz.zip is None                                # and the zip was closed before it came
    monkeypatch.undo()
    index, raw = bundle._read_bundle(data)
    assert index == {"k": {"in.self": ["float32", [2, 3], 0]}} and len(raw) == 24


def test_an_interrupt_while_a_bundle_is_written_comes_after_the_zip_is_complete(run_handler, monkeypatch):
    made = []
    monkeypatch.setattr(bundle.zipfile, "ZipFile", _loading_with(signal.SIGTERM, made, bundle.zipfile.ZipFile))
    with pytest.raises(KeyboardInterrupt):
        bundle._bundle_bytes({"k": {"in.self": np.zeros(3, dtype=np.float32)}})
    [z] = made
    assert z.fp is None                                   # written and closed before the signal came
    assert signals.holding() is False
