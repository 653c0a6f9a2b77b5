"""The learners' self-checks: one package, one convention for every exercise of the book.

* :mod:`.core`: :class:`CheckFailed`, :func:`call_learner` (the learner's code runs on
  copies of the inputs), :func:`as_array`, the tolerances and :func:`diagnose`, which
  names the classic mistake a wrong answer matches;
* :mod:`.encoder`: the exercises page (self-attention, multi-head attention, positional
  encoding, the trained model's weights, the causal multi-head assignment);
* :mod:`.decoder`: the decoder and language-model pages (causal masks, the key-value cache);
* :mod:`.bughunt`: the bug hunt, :data:`bughunt.CHECKS` in the book's order;
* :mod:`.assignment`: the graded assignment's per-student variants (padding mask,
  cross-attention, a fixed number of heads).

Every check prints a line starting with ``Correct!`` or raises :class:`CheckFailed`
(an ``AssertionError``) whose message says what to change.
"""

from . import bughunt
from .assignment import (
    check_cross_multihead_attention,
    check_fixed_heads_causal_attention,
    check_padded_multihead_attention,
)
from .core import TOLERANCES, CheckFailed, as_array, call_learner, close, diagnose, tolerance
from .decoder import check_cached_attention, check_causal_mask, check_pytorch_causal_mask
from .encoder import (
    check_attention_weights,
    check_causal_multihead_attention,
    check_multihead_attention,
    check_multihead_module,
    check_positional_encoding,
    check_self_attention,
    mh_reference,
    self_attention_cases,
)

__all__ = [
    "TOLERANCES",
    "CheckFailed",
    "as_array",
    "bughunt",
    "call_learner",
    "check_attention_weights",
    "check_cached_attention",
    "check_causal_mask",
    "check_causal_multihead_attention",
    "check_cross_multihead_attention",
    "check_fixed_heads_causal_attention",
    "check_multihead_attention",
    "check_multihead_module",
    "check_padded_multihead_attention",
    "check_positional_encoding",
    "check_pytorch_causal_mask",
    "check_self_attention",
    "close",
    "diagnose",
    "mh_reference",
    "self_attention_cases",
    "tolerance",
]
