"""Training a language model: the loss, the learning-rate schedule, the loop and the measurement.

The pieces a learner writes in "Build your own model" (its third step), as plain functions
of any model that maps ``ids (B, T)`` to logits ``(B, T, V)``:

* :func:`lm_loss`: the logits at position ``t`` predict the token at ``t + 1``, so the
  targets are the inputs shifted by one; cross-entropy over the vocabulary, the mean
  over the ``B (T - 1)`` predictions;
* :func:`learning_rate`: linear warm-up to ``peak_lr`` over ``warmup_steps``, then a
  cosine decay to 0 at ``total_steps`` (Loshchilov and Hutter, 2017; Adam's early updates
  are large while its moment estimates are poor, hence the warm-up);
* :func:`train`: AdamW, the schedule set before every step, the gradients zeroed;
* :func:`evaluate`: the mean loss with dropout off (``model.eval()``) and no graph kept
  (``torch.no_grad()``), the model put back in training mode after.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def lm_loss(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) of predicting ``ids[:, t + 1]`` from ``logits[:, t]``.

    ``logits (B, T, V)``, ``ids (B, T)`` -> a scalar tensor.
    """
    V = logits.shape[-1]
    predictions = logits[:, :-1].reshape(-1, V)  # (B (T - 1), V): positions 0..T-2
    targets = ids[:, 1:].reshape(-1)  # (B (T - 1),): the token after each
    return F.cross_entropy(predictions, targets)


def learning_rate(step: int, peak_lr: float, warmup_steps: int, total_steps: int) -> float:
    """The learning rate of step ``step`` (0, 1, ...): linear warm-up, then cosine decay to 0."""
    if step < warmup_steps:
        return peak_lr * (step + 1) / warmup_steps  # step 0: peak / warmup, small but not 0
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return peak_lr * 0.5 * (1 + math.cos(math.pi * progress))  # peak_lr -> 0


def train(model, batches, peak_lr, warmup_steps, loss_fn=lm_loss, schedule=learning_rate) -> list[float]:
    """One AdamW step per batch of ``batches (N, B, T)``; returns the N training losses."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=peak_lr)
    model.train()  # dropout on
    losses = []
    for step, ids in enumerate(batches):
        for group in optimizer.param_groups:  # before the step that uses it
            group["lr"] = schedule(step, peak_lr, warmup_steps, len(batches))
        loss = loss_fn(model(ids), ids)
        optimizer.zero_grad()  # else the gradients of earlier steps add up
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def evaluate(model, batches, loss_fn=lm_loss) -> float:
    """The mean of ``loss_fn`` over ``batches (N, B, T)``, dropout off and no graph kept."""
    model.eval()  # dropout off: the same model always gives the same loss
    with torch.no_grad():  # measuring, not learning: no graph, no gradients
        losses = [loss_fn(model(ids), ids).item() for ids in batches]
    model.train()  # back to training, where the caller left it
    return sum(losses) / len(losses)
