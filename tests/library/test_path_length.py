"""The gradient path-length measurement: an RNN's gradient decays with distance, attention's does not."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from transformer_lessons import plots
from transformer_lessons.path_length import input_gradient_norms


@pytest.mark.parametrize("kind", ["rnn", "attention"])
def test_shape_and_determinism(kind):
    a = input_gradient_norms(kind, seq_len=7, width=4, num_heads=2)
    b = input_gradient_norms(kind, seq_len=7, width=4, num_heads=2)
    assert a.shape == (7,)
    assert np.array_equal(a.numpy(), b.numpy())
    assert (a > 0).all()


def test_rnn_gradient_decays_with_distance():
    g = input_gradient_norms("rnn", seq_len=20).numpy()
    assert g[0] < 1e-4 * g[-1]  # 19 steps back vs the last input
    slope = np.polyfit(np.arange(20), np.log(g), 1)[0]
    assert slope > 0.3  # log-norm grows steadily towards the last position


def test_attention_gradient_does_not_decay():
    g = input_gradient_norms("attention", seq_len=20).numpy()
    assert g.min() > 0.1 * g.max()


def test_rnn_matches_a_hand_written_jacobian():
    """The Jacobian's last block (input T-1 -> h[T-1]) is diag(1 - h^2) W_ih."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    rnn = nn.RNN(3, 3, batch_first=True).double()
    x = torch.randn(1, 5, 3, dtype=torch.float64)
    h = rnn(x)[0][0, -1]
    expected = ((1 - h**2)[:, None] * rnn.weight_ih_l0).norm()
    got = input_gradient_norms("rnn", seq_len=5, width=3)[-1]
    assert torch.allclose(got, expected.detach())


def test_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        input_gradient_norms("lstm")


def test_gradient_distance_plot():
    fig = plots.gradient_distance_plot(np.logspace(-6, 0, 5), np.ones(5))
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert len(ax.lines) == 2
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [4, 3, 2, 1, 0])
    with pytest.raises(ValueError):
        plots.gradient_distance_plot(np.ones(3), np.ones(4))
