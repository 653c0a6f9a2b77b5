"""Benchmark: the library's NumPy and PyTorch code beside PyTorch's own, as ratios.

The library is teaching code: each function reads like its equation, with no speed
tricks. These ratios are recorded as information (how far plain code is from
PyTorch's tuned kernels on this machine), not checked against a target:

* NumPy ``scaled_dot_product_attention`` against ``F.scaled_dot_product_attention``
  (PyTorch's fused CPU kernel), float32, at three sizes (B, H, T, d_k);
* our ``MultiHeadAttention`` against ``nn.MultiheadAttention`` (forward, eval mode,
  same weights via ``from_torch``). Both return the output and the per-head weights:
  PyTorch is called with ``need_weights=True, average_attn_weights=False``, because
  our module always returns per-head weights. PyTorch without weights
  (``need_weights=False``, its fused fast path) is recorded too;
* the vectorised ``positional_encoding`` against the two-loop version;
* the tiled ``flash_attention`` against the plain NumPy attention: time and
  tracemalloc peak memory.

Timing: the two sides of each ratio run interleaved (A, B, A, B, ...) after a warm-up
round, so a burst of load from another process hits both alike; the ratio of the
minima is reported (other processes only ever add time), the ratio of the medians
beside it. Each call is preceded by an untimed 10 ms pause: PyTorch's OpenMP threads
and NumPy's OpenBLAS threads keep spinning for a while after a call, and on 2 cores
they would slow down whichever library is timed next. PyTorch runs with its default
number of threads, recorded; so does NumPy's BLAS.

    .venv/bin/python benchmarks/bench_library.py      # or: benchmarks/run.py library
"""

from __future__ import annotations

import statistics
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from transformer_lessons import MultiHeadAttention, positional_encoding, positional_encoding_loop, scaled_dot_product_attention
from transformer_lessons.cost import interleaved_times, peak_memory_bytes
from transformer_lessons.flash import flash_attention

ATTENTION_SIZES = [(1, 8, 128, 64), (8, 8, 256, 64), (2, 8, 1024, 64)]  # (B, H, T, d_k)
MHA_SIZES = [(2, 64, 128, 4), (8, 256, 512, 8)]  # (B, T, E, H)
PE_SIZES = [(128, 64), (1024, 512)]  # (T, d_model)
FLASH_LENGTHS = [1024, 2048]  # T = S, one head, d = 64, float32, 64 x 64 tiles
PAUSE_S = 0.01  # untimed, before every timed call (see the module docstring)


def _ratio(times: dict, numerator: str, denominator: str) -> dict:
    """Times in ms and the ratios numerator / denominator, by minimum and by median."""
    mins = {name: min(ts) for name, ts in times.items()}
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    return {
        **{f"{name}_ms_min": round(mins[name] * 1e3, 3) for name in times},
        **{f"{name}_ms_median": round(medians[name] * 1e3, 3) for name in times},
        "ratio_min": round(mins[numerator] / mins[denominator], 3),
        "ratio_median": round(medians[numerator] / medians[denominator], 3),
    }


def bench_attention(repeats: int = 25) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for b, h, t, d in ATTENTION_SIZES:
        q, k, v = (rng.standard_normal((b, h, t, d), dtype=np.float32) for _ in range(3))
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        ours = scaled_dot_product_attention(q, k, v)[0]
        assert ours.dtype == np.float32  # float32 in, float32 throughout
        np.testing.assert_allclose(ours, F.scaled_dot_product_attention(tq, tk, tv).numpy(), atol=1e-5)
        with torch.no_grad():
            times = interleaved_times({
                "numpy": partial(scaled_dot_product_attention, q, k, v),
                "torch": partial(F.scaled_dot_product_attention, tq, tk, tv),
            }, repeats=repeats, pause_s=PAUSE_S)
        rows.append({"size": [b, h, t, d], **_ratio(times, "numpy", "torch")})
    return rows


def bench_mha(repeats: int = 25) -> list[dict]:
    rows = []
    for b, t, e, h in MHA_SIZES:
        torch.manual_seed(0)
        reference = nn.MultiheadAttention(e, h, batch_first=True).eval()
        ours = MultiHeadAttention.from_torch(reference).eval()
        x = torch.randn(b, t, e)
        with torch.no_grad():
            out, weights = ours(x, x, x)
            ref_out, ref_weights = reference(x, x, x, need_weights=True, average_attn_weights=False)
            torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)  # like with like
            torch.testing.assert_close(weights, ref_weights, atol=1e-5, rtol=1e-4)
            times = interleaved_times({
                "ours": partial(ours, x, x, x),
                "torch": partial(reference, x, x, x, need_weights=True, average_attn_weights=False),
                "torch_no_weights": partial(reference, x, x, x, need_weights=False),
            }, repeats=repeats, pause_s=PAUSE_S)
        row = {"size": [b, t, e, h], **_ratio(times, "ours", "torch")}
        row["ratio_min_vs_torch_no_weights"] = round(min(times["ours"]) / min(times["torch_no_weights"]), 3)
        rows.append(row)
    return rows


def bench_positional(repeats: int = 5) -> list[dict]:
    rows = []
    for t, d in PE_SIZES:
        np.testing.assert_allclose(positional_encoding(t, d), positional_encoding_loop(t, d), atol=1e-12)
        times = interleaved_times({
            "loop": partial(positional_encoding_loop, t, d),
            "vectorised": partial(positional_encoding, t, d),
        }, repeats=repeats, pause_s=PAUSE_S)
        row = {"size": [t, d], **_ratio(times, "loop", "vectorised")}
        rows.append(row)  # ratio = loop / vectorised = the speed-up
    return rows


def bench_flash(repeats: int = 5) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for t in FLASH_LENGTHS:
        q, k, v = (rng.standard_normal((t, 64), dtype=np.float32) for _ in range(3))
        np.testing.assert_allclose(flash_attention(q, k, v), scaled_dot_product_attention(q, k, v)[0], atol=1e-5)
        times = interleaved_times({
            "tiled": partial(flash_attention, q, k, v),
            "plain": partial(scaled_dot_product_attention, q, k, v),
        }, repeats=repeats, pause_s=PAUSE_S)
        plain_bytes = peak_memory_bytes(scaled_dot_product_attention, q, k, v)
        tiled_bytes = peak_memory_bytes(flash_attention, q, k, v)
        rows.append({"T": t, **_ratio(times, "tiled", "plain"),
                     "plain_peak_bytes": plain_bytes, "tiled_peak_bytes": tiled_bytes,
                     "memory_ratio": round(tiled_bytes / plain_bytes, 4)})
    return rows


def run() -> dict:
    return {
        "torch_threads": torch.get_num_threads(),
        "attention_numpy_vs_torch_float32": bench_attention(),
        "multihead_ours_vs_torch": bench_mha(),
        "positional_loop_vs_vectorised": bench_positional(),
        "flash_tiled_vs_plain_numpy": bench_flash(),
    }


def summary(result: dict) -> str:
    lines = [f"torch threads: {result['torch_threads']}; times are minima of interleaved repeats (ms)"]
    lines.append(f"{'attention (B,H,T,d_k)':<24}{'NumPy':>9}{'PyTorch':>9}{'ratio':>7}{'(median)':>10}")
    for r in result["attention_numpy_vs_torch_float32"]:
        lines.append(f"{str(tuple(r['size'])):<24}{r['numpy_ms_min']:>9.2f}{r['torch_ms_min']:>9.2f}"
                     f"{r['ratio_min']:>7.2f}{r['ratio_median']:>10.2f}")
    lines.append(f"{'multi-head (B,T,E,H)':<24}{'ours':>9}{'PyTorch':>9}{'ratio':>7}{'(median)':>10}"
                 f"{'no-weights PyTorch':>20}")
    for r in result["multihead_ours_vs_torch"]:
        lines.append(f"{str(tuple(r['size'])):<24}{r['ours_ms_min']:>9.2f}{r['torch_ms_min']:>9.2f}"
                     f"{r['ratio_min']:>7.2f}{r['ratio_median']:>10.2f}"
                     f"{r['torch_no_weights_ms_min']:>11.2f} ({r['ratio_min_vs_torch_no_weights']:.2f}x)")
    lines.append(f"{'positional (T,d_model)':<24}{'loop':>9}{'vector':>9}{'speed-up':>9}")
    for r in result["positional_loop_vs_vectorised"]:
        lines.append(f"{str(tuple(r['size'])):<24}{r['loop_ms_min']:>9.2f}{r['vectorised_ms_min']:>9.3f}"
                     f"{r['ratio_min']:>9.1f}")
    lines.append(f"{'flash vs plain (T)':<24}{'tiled':>9}{'plain':>9}{'time':>7}{'peak MiB tiled/plain':>24}")
    for r in result["flash_tiled_vs_plain_numpy"]:
        lines.append(f"{r['T']:<24}{r['tiled_ms_min']:>9.2f}{r['plain_ms_min']:>9.2f}{r['ratio_min']:>7.2f}"
                     f"{r['tiled_peak_bytes'] / 2**20:>13.2f} / {r['plain_peak_bytes'] / 2**20:.2f}")
    lines.append("ratio = ours / PyTorch's (for positional: loop / vectorised, the speed-up): "
                 "information, not a target; the library is teaching code")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(run()))
