import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    """Fixed seeds for every test."""
    np.random.seed(0)
    torch.manual_seed(0)
