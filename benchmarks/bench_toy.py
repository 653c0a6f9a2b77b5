"""Benchmark: how fast does the toy encoder learn to reverse sequences?

Target: at least 99% token accuracy on fresh sequences within 60 s of training on a
2-core CPU. Trains the default ToyConfig for growing step budgets (each run seeded, from
scratch) and records training time against accuracy, side by side in one run.

    .venv/bin/python benchmarks/bench_toy.py      # or: make bench (all sections)
"""

from __future__ import annotations

import time

from transformer_lessons.toy import ToyConfig, anti_diagonal_mass, evaluate_reversal, mean_attention, train_reversal

TARGET_ACCURACY = 0.99
TARGET_SECONDS = 60.0
STEP_BUDGETS = (50, 100, 150, 200, 300, 450, 600)


def run() -> dict:
    # An untimed warm-up: the first run pays for torch's one-off start-up (thread pool,
    # first kernels), which would make 50 steps look slower than 100.
    train_reversal(ToyConfig(steps=5))
    rows = []
    for steps in STEP_BUDGETS:
        cfg = ToyConfig(steps=steps)
        start = time.perf_counter()
        result = train_reversal(cfg)
        seconds = time.perf_counter() - start
        acc = evaluate_reversal(result.model)
        mass = float(anti_diagonal_mass(mean_attention(result.model)[0]).max())
        rows.append({"steps": steps, "train_seconds": round(seconds, 3), "accuracy": round(float(acc), 4),
                     "anti_diagonal_mass_best_head": round(mass, 3)})
    first = next((r for r in rows if r["accuracy"] >= TARGET_ACCURACY), None)
    return {
        "config": {k: v for k, v in vars(ToyConfig()).items() if k != "steps"},
        "curve": rows,
        "target": {"accuracy": TARGET_ACCURACY, "seconds": TARGET_SECONDS},
        "first_at_target": first,
        "pass": first is not None and first["train_seconds"] <= TARGET_SECONDS,
    }


def summary(result: dict) -> str:
    lines = [f"{'steps':>6} {'train s':>8} {'accuracy':>9} {'anti-diag mass':>15}"]
    for r in result["curve"]:
        lines.append(f"{r['steps']:>6} {r['train_seconds']:>8.2f} {r['accuracy']:>9.4f} {r['anti_diagonal_mass_best_head']:>15.3f}")
    first = result["first_at_target"]
    if first is None:
        lines.append("FAIL: no step budget reached 99% token accuracy")
    else:
        verdict = "PASS" if result["pass"] else "FAIL"
        lines.append(f"{verdict}: >= 99% token accuracy after {first['steps']} steps, "
                     f"{first['train_seconds']:.2f} s of training (target: <= {TARGET_SECONDS:.0f} s)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(run()))
