"""The training pieces (transformer_lessons.lm_training) against PyTorch's own: the loss against
F.cross_entropy on shifted targets, the schedule against its formula and a LambdaLR of PyTorch's
own schedulers, the loop against a hand-run AdamW, the measurement against eval + no_grad."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_lessons import lm_training as lt
from transformer_lessons.decoder_only import TorchDecoderOnly


def test_lm_loss_is_cross_entropy_of_the_next_token():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 6, 7, generator=gen, requires_grad=True)
    ids = torch.randint(7, (3, 6), generator=gen)
    loss = lt.lm_loss(logits, ids)
    by_hand = -np.mean([torch.log_softmax(logits[b, t], -1)[ids[b, t + 1]].item() for b in range(3) for t in range(5)])
    assert loss.item() == pytest.approx(by_hand, rel=1e-6)
    loss.backward()
    assert torch.all(logits.grad[:, -1] == 0)  # the last position predicts nothing inside the window
    assert logits.grad[:, :-1].abs().sum() > 0


def test_lm_loss_of_uniform_logits_is_log_v():
    assert lt.lm_loss(torch.zeros(2, 5, 11), torch.zeros(2, 5, dtype=torch.long)).item() == pytest.approx(math.log(11))


@pytest.mark.parametrize("peak, warmup, total", [(1e-3, 10, 40), (0.5, 4, 20), (3e-4, 1, 5)])
def test_learning_rate_warms_up_and_decays(peak, warmup, total):
    rates = [lt.learning_rate(s, peak, warmup, total) for s in range(total + 1)]
    assert rates[0] == pytest.approx(peak / warmup)
    assert rates[warmup - 1] == pytest.approx(peak) and rates[warmup] == pytest.approx(peak)
    assert all(a < b for a, b in zip(rates[:warmup - 1], rates[1:warmup]))
    assert all(a >= b for a, b in zip(rates[warmup:], rates[warmup + 1:]))
    assert rates[total] == pytest.approx(0.0, abs=1e-15)
    # PyTorch's own: linear warm-up, then CosineAnnealingLR to 0
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=peak)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [
        torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warmup),
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total - warmup)], milestones=[warmup])
    theirs = []
    for _ in range(total):
        theirs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    np.testing.assert_allclose(rates[:total], theirs, rtol=1e-9, atol=1e-15)


def test_train_takes_the_adamw_steps_and_learns():
    torch.manual_seed(0)
    model = TorchDecoderOnly(5, 8, 2, 16, 1, context=6).train()
    batches = torch.randint(5, (30, 4, 6), generator=torch.Generator().manual_seed(1))
    twin = copy.deepcopy(model)
    losses = lt.train(model, batches, 1e-2, 5)
    opt = torch.optim.AdamW(twin.parameters(), lr=1e-2)
    for step, ids in enumerate(batches):
        opt.param_groups[0]["lr"] = lt.learning_rate(step, 1e-2, 5, 30)
        loss = F.cross_entropy(twin(ids)[:, :-1].reshape(-1, 5), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert losses[step] == pytest.approx(loss.item(), rel=1e-9)
    assert np.mean(losses[-5:]) < np.mean(losses[:5])  # it learns the batches' statistics


def test_evaluate_measures_without_dropout_or_graph_and_restores_training():
    torch.manual_seed(2)
    model = TorchDecoderOnly(5, 8, 2, 16, 1, context=6, dropout=0.5).train()
    batches = torch.randint(5, (3, 2, 6), generator=torch.Generator().manual_seed(3))
    got = lt.evaluate(model, batches)
    assert model.training and all(p.grad is None for p in model.parameters())
    assert got == lt.evaluate(model, batches)
    with torch.no_grad():
        expected = np.mean([lt.lm_loss(copy.deepcopy(model).eval()(ids), ids).item() for ids in batches])
    assert got == pytest.approx(expected, rel=1e-12)
