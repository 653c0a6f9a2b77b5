"""Measurement helpers: timing, peak memory, log-log slope, FLOP count."""

import tracemalloc

import numpy as np
import pytest

from transformer_lessons import cost
from transformer_lessons.cost import attention_flops, best_time, interleaved_times, loglog_slope, peak_memory_bytes


class FakeClock:
    """Stands in for the ``time`` module inside transformer_lessons.cost: its clock moves
    only when a timed function or a pause says so, so timing tests do not depend on the
    load of the machine."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

    def work(self, seconds):
        """A function that 'takes' ``seconds``."""
        return lambda: self.sleep(seconds)


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(cost, "time", fake)
    return fake


def test_best_time_is_the_minimum_of_repeats(clock):
    delays = iter([0.05, 0.03, 0.01, 0.02])  # the first (0.05) is the untimed warm-up
    seconds = best_time(lambda: clock.sleep(next(delays)), repeats=3)
    assert seconds == pytest.approx(0.01)
    with pytest.raises(ValueError, match="repeats"):
        best_time(lambda: None, repeats=0)


def test_interleaved_times_rounds_call_each_function_in_turn():
    calls = []
    times = interleaved_times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=3)
    assert calls == ["a", "b"] * 4  # a warm-up round, then 3 timed rounds
    assert set(times) == {"a", "b"} and all(len(v) == 3 and min(v) >= 0 for v in times.values())


def test_interleaved_times_pause_is_not_timed(clock):
    times = interleaved_times({"a": clock.work(0.001), "b": clock.work(0.002)}, repeats=3, pause_s=0.02)
    assert clock.now == pytest.approx(4 * (0.001 + 0.002) + 3 * 2 * 0.02)  # warm-up, 3 rounds, 6 pauses
    assert times["a"] == pytest.approx([0.001] * 3)  # the pauses are not counted
    assert times["b"] == pytest.approx([0.002] * 3)


def test_peak_memory_counts_numpy_arrays():
    n = 1_000_000
    peak = peak_memory_bytes(np.ones, n)  # one float64 array of n entries
    assert n * 8 <= peak < n * 8 + 64 * 1024
    # Temporaries count even when they are freed before the call returns.
    assert peak_memory_bytes(lambda: float(np.ones(n).sum())) >= n * 8
    assert peak_memory_bytes(lambda: None) < 64 * 1024


def test_peak_memory_is_deterministic_and_leaves_tracing_as_found():
    x = np.ones((300, 300))
    # the same call, the same bytes, up to a little Python bookkeeping
    assert abs(peak_memory_bytes(np.exp, x) - peak_memory_bytes(np.exp, x)) < 1024
    assert not tracemalloc.is_tracing()
    tracemalloc.start()
    try:
        assert peak_memory_bytes(np.exp, x) >= x.nbytes
        assert tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("power", [1.0, 2.0, 0.5])
def test_loglog_slope_recovers_the_power(power):
    sizes = np.array([64, 128, 256, 512])
    assert loglog_slope(sizes, 3.0 * sizes**power) == pytest.approx(power)


def test_loglog_slope_refuses_bad_input():
    with pytest.raises(ValueError, match="positive"):
        loglog_slope([1, 2], [0.0, 1.0])
    with pytest.raises(ValueError, match="same length"):
        loglog_slope([1, 2, 3], [1.0, 2.0])


def test_attention_flops():
    assert attention_flops(256, 256, 64) == 4 * 256 * 256 * 64
    assert attention_flops(3, 5, 4, 6) == 2 * 3 * 5 * 4 + 2 * 3 * 5 * 6
