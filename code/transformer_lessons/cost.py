"""Measuring what a computation costs: time, peak memory, FLOPs and growth rates.

Used by the book's page on the cost of attention and by ``benchmarks/``.

* Time: the *minimum* over repeats of a call's wall-clock time. Other processes
  can only make a call slower, never faster, so the minimum is the least noisy
  estimate of the call's own cost on a shared machine.
* Memory: the peak of the memory traced by :mod:`tracemalloc` during a call.
  NumPy reports every array buffer it allocates to ``tracemalloc``, so the peak
  counts the arrays a NumPy function creates. It is repeatable to within a few
  hundred bytes of Python bookkeeping, unlike timings.
  (PyTorch's allocations are not traced.)
* Growth: the slope of a straight line fitted to ``log(cost)`` against
  ``log(size)``. A cost proportional to ``size ** p`` has slope ``p``.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np


def best_time(fn: Callable, *args, repeats: int = 5, **kwargs) -> float:
    """Seconds taken by ``fn(*args, **kwargs)``: the minimum over ``repeats`` calls.

    One untimed call comes first: it warms caches and thread pools, which
    would otherwise make the first timed call slower than the others.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    fn(*args, **kwargs)  # warm-up, not timed
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved_times(fns: Mapping[Hashable, Callable[[], object]], repeats: int = 5,
                      pause_s: float = 0.0) -> dict[Hashable, list[float]]:
    """Time several zero-argument callables in turn, ``repeats`` rounds.

    Each round calls every function once, so a burst of load from another
    process hits all of them alike; compare their minima (or medians). An
    untimed warm-up round comes first.

    Args:
        pause_s: seconds to sleep (untimed) before each call. Thread pools
            (OpenMP, OpenBLAS) keep their threads spinning for a while after a
            call; on a machine with few cores those spinning threads slow down
            whichever library is timed next. A pause of a few milliseconds lets
            them go idle, so each call starts as it would on its own.

    Returns:
        ``{name: [seconds of round 1, round 2, ...]}``.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for fn in fns.values():  # warm-up round, not timed
        fn()
    times: dict[Hashable, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            if pause_s > 0:
                time.sleep(pause_s)
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def peak_memory_bytes(fn: Callable, *args, **kwargs) -> int:
    """Peak memory, in bytes, that ``fn(*args, **kwargs)`` allocates while it runs.

    Measured with :mod:`tracemalloc` as the highest traced memory during the call
    minus the traced memory before it: the call's temporaries and its result.
    Memory allocated by libraries that do not report to ``tracemalloc`` (PyTorch)
    is not seen.
    """
    started_here = not tracemalloc.is_tracing()
    if started_here:
        tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = fn(*args, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        if started_here:
            tracemalloc.stop()
    return max(peak - before, 0)


def loglog_slope(sizes: Sequence[float], costs: Sequence[float]) -> float:
    """Slope of the least-squares line through ``(log size, log cost)``.

    A cost that grows like ``size ** p`` gives a slope close to ``p``.

    Args:
        sizes, costs: two sequences of the same length (>= 2), all positive.
    """
    x, y = np.asarray(sizes, dtype=float), np.asarray(costs, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or len(x) < 2:
        raise ValueError(f"need two 1-D sequences of the same length >= 2, got shapes {x.shape} and {y.shape}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("sizes and costs must be positive to take logarithms")
    slope, _ = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope)


def attention_flops(t: int, s: int, d_k: int, d_v: int | None = None) -> int:
    """Floating-point operations of the two matrix products of one attention head.

    ``Q K^T`` is ``T * S`` dot products of length ``d_k`` (``2 * T * S * d_k``
    operations: one multiply and one add each); ``weights @ V`` is
    ``2 * T * S * d_v``. With ``d_k = d_v = d`` the total is ``4 * T * S * d``.
    The softmax adds ``O(T * S)``, which the count leaves out.
    """
    d_v = d_k if d_v is None else d_v
    return 2 * t * s * d_k + 2 * t * s * d_v
