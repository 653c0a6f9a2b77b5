"""The running example: one sentence and one set of sizes for the whole book.

Every page that shows the same computation uses these, so the same example always
shows the same numbers, and the diagrams are drawn with the same sizes:

* the sentence "the cat sat on the mat": ``T = 6`` tokens, 5 distinct words;
* ``d_model = 16``, ``H = 4`` heads of ``d_k = d_v = 4``, ``d_ff = 64`` (4 * d_model,
  as in the paper);
* embeddings drawn from ``numpy.random.default_rng(SEED)``: random, not trained, so
  they show the mechanics of attention, not what a trained model finds.
"""

from __future__ import annotations

import numpy as np

SENTENCE = "the cat sat on the mat"
D_MODEL = 16
NUM_HEADS = 4
D_K = D_MODEL // NUM_HEADS  # 4, also d_v
D_FF = 4 * D_MODEL  # 64
SEED = 0


def tokens() -> list[str]:
    """The sentence's tokens, one per word: ``['the', 'cat', 'sat', 'on', 'the', 'mat']``."""
    return SENTENCE.split()


def embeddings(rng: np.random.Generator | None = None) -> np.ndarray:
    """Token embeddings ``X`` of the sentence, ``(T, d_model) = (6, 16)``, float64.

    One random row per distinct word (the vocabulary sorted alphabetically), looked up
    for each token, so both copies of "the" get the same row. With ``rng`` given, the
    table is drawn from it (a page that draws its projections next from the same
    generator continues the same stream); by default from ``default_rng(SEED)``.
    """
    rng = np.random.default_rng(SEED) if rng is None else rng
    words = tokens()
    vocab = sorted(set(words))
    table = rng.normal(size=(len(vocab), D_MODEL))  # (5, d_model)
    return table[[vocab.index(w) for w in words]]  # (T, d_model)
