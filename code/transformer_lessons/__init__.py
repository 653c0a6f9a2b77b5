"""transformer_lessons: the tested code behind every page of the book."""

from .attention import causal_mask, scaled_dot_product_attention, softmax
from .encoder import TransformerEncoderLayer
from .multihead import MultiHeadAttention
from .positional import positional_encoding, positional_encoding_loop

__all__ = [
    "MultiHeadAttention",
    "TransformerEncoderLayer",
    "causal_mask",
    "positional_encoding",
    "positional_encoding_loop",
    "scaled_dot_product_attention",
    "softmax",
]
