"""Benchmark: the tiny language model and the key-value cache (the decoder pages).

* **lm**: trains the language model of the "A tiny language model" page exactly as the
  page does (same config, same step count) and records the training time and the
  held-out bits per character beside the unigram baseline. Target: at most 2.0 bits per
  character within 60 s of training on 2 cores.
* **kv_cache**: time to produce the token at position 256 of an untrained model with a
  context of 256, recomputing the prefix against the cached step, side by side in one
  run (minimum of repeats); the ratio is information.

    .venv/bin/python benchmarks/run.py decoder
"""

from __future__ import annotations

import time

import torch

from transformer_lessons import language_model as lm
from transformer_lessons.decoder import KVCache

LM_STEPS = 1200  # the step count of book/language_model.md
TARGET_BITS = 2.0
TARGET_SECONDS = 60.0


def _lm() -> dict:
    text = lm.corpus()
    tok = lm.CharTokenizer(text)
    train, test = lm.split(tok.encode(text))
    cfg = lm.LMConfig(vocab_size=len(tok.chars))
    model, losses, seconds = lm.train_lm(cfg, train, steps=LM_STEPS)
    bits = lm.bits_per_character(model, test)
    return {
        "steps": LM_STEPS,
        "train_seconds": round(seconds, 1),
        "held_out_bits_per_char": round(bits, 3),
        "unigram_bits_per_char": round(lm.unigram_bits(train, test, cfg.vocab_size), 3),
        "torch_threads": torch.get_num_threads(),  # 2: the target's two cores
        "pass": bits <= TARGET_BITS and seconds <= TARGET_SECONDS,
    }


@torch.no_grad()
def _kv_cache(position: int = 256, repeats: int = 5) -> dict:
    torch.manual_seed(0)
    model = lm.CharLM(lm.LMConfig(vocab_size=100, context=position)).eval()
    seq = torch.randint(100, (position,), generator=torch.Generator().manual_seed(0))
    cache = KVCache(len(model.blocks))
    for tok in seq[:-1]:  # the cache holds positions 0..254
        model.step(tok.view(1, 1), cache)
    keys, values = list(cache.keys), list(cache.values)
    full, cached = float("inf"), float("inf")
    for _ in range(repeats):  # interleaved: both see the same machine state
        start = time.perf_counter()
        model(seq[None])
        full = min(full, time.perf_counter() - start)
        cache.keys, cache.values = list(keys), list(values)  # the same 255 cached positions each time
        start = time.perf_counter()
        model.step(seq[-1].view(1, 1), cache)
        cached = min(cached, time.perf_counter() - start)
    return {"position": position, "recompute_ms": round(full * 1e3, 3), "cached_ms": round(cached * 1e3, 3),
            "ratio": round(full / cached, 1)}


def run() -> dict:
    # The target is "within 60 s on 2 cores": two threads here. The page itself trains on
    # one thread, which is slower on an idle machine but many times faster on a busy one.
    torch.set_num_threads(2)
    lm_result = _lm()
    torch.set_num_threads(1)  # the cache timing as on the page
    return {"lm": lm_result, "kv_cache": _kv_cache()}


def summary(result: dict) -> str:
    r, kv = result["lm"], result["kv_cache"]
    verdict = "PASS" if r["pass"] else "FAIL"
    return "\n".join([
        f"{verdict}: language model {r['held_out_bits_per_char']:.2f} bits/char on held-out text after "
        f"{r['steps']} steps, {r['train_seconds']:.0f} s of training (target: <= {TARGET_BITS} bits within "
        f"{TARGET_SECONDS:.0f} s); unigram baseline {r['unigram_bits_per_char']:.2f}",
        f"KV cache at position {kv['position']}: recompute {kv['recompute_ms']:.2f} ms, cached step "
        f"{kv['cached_ms']:.3f} ms, {kv['ratio']:.0f}x (information)",
    ])


if __name__ == "__main__":
    print(summary(run()))
