"""check_attention_weights accepts the right weights and names each mistake."""

import pytest
import torch

from transformer_lessons.exercises import check_attention_weights
from transformer_lessons.toy import ToyConfig, ToyEncoder


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return ToyEncoder(ToyConfig()).eval()  # untrained is enough: the check compares with the model itself


def weights(model, tokens):
    model(tokens[None])  # (1, T)
    return model.attention_maps()[0][0]  # (H, T, T)


def test_correct_answer_passes(model, capsys):
    check_attention_weights(weights, model)
    assert "Correct!" in capsys.readouterr().out
    check_attention_weights(lambda m, t: weights(m, t).numpy(), model)  # NumPy is fine too


MISTAKES = {
    "returned None": lambda m, t: None,
    "takes a batch": lambda m, t: m(t),
    "your function raised": lambda m, t: m(t),  # forgot the batch dimension: 1-D input
    "batch dimension": lambda m, t: (m(t[None]), m.attention_maps()[0])[1],
    "averaged": lambda m, t: weights(m, t).mean(0),
    "swapped": lambda m, t: weights(m, t).transpose(-1, -2),
    "do not sum to 1": lambda m, t: weights(m, t) * 2,
    "tuple": lambda m, t: (weights(m, t), None),
    "shape (H, T, T)": lambda m, t: weights(m, t)[:, :5],
    "values differ": lambda m, t: weights(m, t.flip(0)),
}


@pytest.mark.parametrize("message, wrong", MISTAKES.items(), ids=list(MISTAKES))
def test_mistakes_are_named(model, message, wrong):
    with pytest.raises(AssertionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_attention_weights(wrong, model)
