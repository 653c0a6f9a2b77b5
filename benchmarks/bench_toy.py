"""Benchmark: how fast does the toy encoder learn to reverse sequences?

Target (issue 2): at least 99% token accuracy on fresh sequences within 60 s of
training on a 2-core CPU. Trains the default ToyConfig for growing step budgets
(each run seeded, from scratch) and prints wall time and accuracy side by side,
so the numbers come from one run on one machine.

    .venv/bin/python benchmarks/bench_toy.py
"""

from __future__ import annotations

import platform
import time

import torch

from transformer_lessons.toy import ToyConfig, anti_diagonal_mass, evaluate_reversal, mean_attention, train_reversal


def main() -> None:
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}")
    print(f"{'steps':>6} {'train s':>8} {'accuracy':>9} {'anti-diag (best head)':>22}")
    first_ok = None
    for steps in (100, 200, 300, 450, 600):
        cfg = ToyConfig(steps=steps)
        start = time.perf_counter()
        result = train_reversal(cfg)
        seconds = time.perf_counter() - start
        acc = evaluate_reversal(result.model)
        mass = anti_diagonal_mass(mean_attention(result.model)[0]).max()
        print(f"{steps:>6} {seconds:>8.2f} {acc:>9.4f} {mass:>22.3f}")
        if acc >= 0.99 and first_ok is None:
            first_ok = (steps, seconds)
    if first_ok is None:
        raise SystemExit("FAIL: no budget reached 99% token accuracy")
    steps, seconds = first_ok
    verdict = "PASS" if seconds <= 60 else "FAIL"
    print(f"{verdict}: >= 99% token accuracy after {steps} steps, {seconds:.2f} s of training (target: <= 60 s)")


if __name__ == "__main__":
    main()
