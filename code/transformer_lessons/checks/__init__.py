"""The learners' self-checks: one package, one convention for every exercise of the book.

* :mod:`.core`: :class:`CheckFailed`, :func:`call_learner` (the learner's code runs on
  copies of the inputs), :func:`as_array`, the tolerances and :func:`diagnose`, which
  names the classic mistake a wrong answer matches;
* :mod:`.exercises`: :data:`EXERCISES`, every graded exercise declared once beside its
  check (label, title, page, points, the function it grades);
* :mod:`.encoder`: the exercises page (self-attention, multi-head attention, positional
  encoding, the trained model's weights);
* :mod:`.bughunt`: the bug hunt, :data:`bughunt.CHECKS` in the book's order;
* :mod:`.assignment`: the graded assignment (causal multi-head attention) and its
  per-student variants (padding mask, cross-attention, a fixed number of heads);
* :mod:`.decoder`: the decoder and language-model pages (causal masks, the key-value cache);
* :mod:`.modern`: today's parts (RMSNorm, SwiGLU, grouped-query attention);
* :mod:`.capstone`: "Build your own model" (the encoder block, post-norm and pre-norm; the
  decoder-only model; the training loop: loss, warm-up, AdamW steps, evaluation).

Every check prints a line starting with ``Correct!`` or raises :class:`CheckFailed`
(an ``AssertionError``) whose message says what to change. A check module's ``__all__``
is what this package exports: a new check needs no edit here.

The modules are imported in the book's order, which is the order of the exercises'
declarations and so of the grader's rubric.
"""

from .core import TOLERANCES, CheckFailed, as_array, call_learner, close, diagnose, tolerance
from .encoder import *  # noqa: F403  (the exercises page)

from . import bughunt  # noqa: I001  (its bug hunt: after the page's exercises, in the book's order)
from .assignment import *  # noqa: F403  (its graded assignment)
from .decoder import *  # noqa: F403  (the decoder and language-model pages)
from .modern import *  # noqa: F403  (today's parts: RMSNorm, SwiGLU, grouped-query attention)
from .capstone import *  # noqa: F403  (build your own model: the block, the model, its training)
from .exercises import EXERCISES, Exercise, Graded

from . import assignment, capstone, decoder, encoder, modern  # noqa: E402, I001  (their __all__)

__all__ = [
    "EXERCISES",
    "TOLERANCES",
    "CheckFailed",
    "Exercise",
    "Graded",
    "as_array",
    "bughunt",
    "call_learner",
    "close",
    "diagnose",
    "tolerance",
    *encoder.__all__,
    *assignment.__all__,
    *decoder.__all__,
    *modern.__all__,
    *capstone.__all__,
]
