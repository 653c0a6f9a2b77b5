"""The check of "Build your own model" (transformer_lessons.checks.capstone) accepts every
correct way to write the encoder block and names the classic mistakes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_lessons.checks import CheckFailed, check_encoder_block


# ---------------------------------------------------------------- correct blocks, several ways
def _ln(z, g, b, eps=1e-5):
    mean = z.mean(-1, keepdims=True)
    return (z - mean) / np.sqrt(((z - mean) ** 2).mean(-1, keepdims=True) + eps) * g + b


def numpy_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False, *, mistake=None):
    """A learner's NumPy block; ``mistake`` makes it wrong in one way (for the tests below)."""
    p = params
    rng = np.random.default_rng()

    def drop(z):
        if (training or mistake == "dropout in eval") and dropout > 0:
            return z * (rng.random(z.shape) >= dropout) / (1 - dropout)
        if mistake == "fixed dropout in eval" and dropout > 0:
            return z * (np.random.default_rng(0).random(z.shape) >= dropout) / (1 - dropout)
        return z

    def attn(z):
        return drop(attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0])

    def ffn(z):
        if mistake == "nn.Linear layout":
            return np.maximum(z @ p["W_1"].T + p["b_1"], 0) @ p["W_2"].T + p["b_2"]
        hidden = np.maximum(z @ p["W_1"] + p["b_1"], 0)
        return drop(drop(hidden) @ p["W_2"] + p["b_2"])

    def ln(i, z):
        if mistake == "torch.var":
            t = torch.as_tensor(z)
            out = (t - t.mean(-1, keepdim=True)) / torch.sqrt(t.var(-1, keepdim=True) + 1e-5)
            return out.numpy() * p[f"gamma_{i}"] + p[f"beta_{i}"]
        if mistake == "no affine":
            return _ln(z, 1.0, 0.0)
        return _ln(z, p[f"gamma_{i}"], p[f"beta_{i}"])

    pre = norm_first != (mistake == "swapped norms")
    if mistake == "no residual":
        if pre:
            X = attn(ln(1, X))
            return ffn(ln(2, X))
        X = ln(1, attn(X))
        return ln(2, ffn(X))
    if pre:
        n = ln(1, X)
        X = (n if mistake == "normed residual" else X) + attn(n)
        n = ln(2, X)
        return (n if mistake == "normed residual" else X) + ffn(n)
    X = ln(1, (0 if mistake == "no attention residual" else X) + attn(X))
    if mistake == "no W_2":  # the hidden layer, (B, T, F), added to nothing
        return np.maximum(X @ p["W_1"] + p["b_1"], 0)
    if mistake == "no W_2, residual":  # (B, T, E) + (B, T, F): a broadcast error
        return ln(2, X + np.maximum(X @ p["W_1"] + p["b_1"], 0))
    if mistake == "no ffn residual":
        return ln(2, ffn(X))
    return ln(2, X + ffn(X))


def torch_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False, dtype=torch.float32):
    """PyTorch, float32 by default: F.layer_norm, F.dropout, the attention called on tensors."""
    x = torch.as_tensor(X, dtype=dtype)
    p = {k: torch.as_tensor(v, dtype=dtype) for k, v in params.items()}
    e = x.shape[-1]

    def sa(z):
        out = attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0]
        return F.dropout(torch.as_tensor(out, dtype=dtype), dropout, training)

    def ff(z):
        hidden = F.dropout(F.relu(z @ p["W_1"] + p["b_1"]), dropout, training)
        return F.dropout(hidden @ p["W_2"] + p["b_2"], dropout, training)

    def ln(i, z):
        return F.layer_norm(z, (e,), p[f"gamma_{i}"], p[f"beta_{i}"], 1e-5)

    if norm_first:
        x = x + sa(ln(1, x))
        return x + ff(ln(2, x))
    x = ln(1, x + sa(x))
    return ln(2, x + ff(x))


def einsum_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
    """einsum for the matrices, a loop over positions for the LayerNorm, in place where it can."""
    p = params

    def ln(i, z):
        out = np.empty_like(z)
        for idx in np.ndindex(z.shape[:-1]):
            v = z[idx]
            out[idx] = (v - v.mean()) / np.sqrt(v.var() + 1e-5) * p[f"gamma_{i}"] + p[f"beta_{i}"]
        return out

    def ff(z):
        hidden = np.einsum("bte,ef->btf", z, p["W_1"]) + p["b_1"]
        np.maximum(hidden, 0, out=hidden)
        if training and dropout:
            hidden *= np.random.default_rng().random(hidden.shape) >= dropout
        return np.einsum("btf,fe->bte", hidden, p["W_2"]) + p["b_2"]

    def sa(z):
        return attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0]

    if norm_first:
        X += sa(ln(1, X))
        X += ff(ln(2, X))
        return X
    X = ln(1, X + sa(X))
    return ln(2, X + ff(X))


def own_attention_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
    """Ignores the attention handed in and uses the learner's own multi-head attention."""
    def my_mha(X, W_q, W_k, W_v, W_o, h):
        B, T, E = X.shape
        d_k = E // h
        Q, K, V = ((X @ W).reshape(B, T, h, d_k).transpose(0, 2, 1, 3) for W in (W_q, W_k, W_v))
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w

    return numpy_block(X, params, num_heads, my_mha, norm_first, dropout, training)


CORRECT = {
    "numpy": numpy_block,
    "torch float32": torch_block,
    "torch float64": lambda *a: torch_block(*a, dtype=torch.float64),
    "einsum and loops, in place": einsum_block,
    "own multi-head attention": own_attention_block,
}


@pytest.mark.parametrize("name", CORRECT)
def test_accepts_correct_blocks(name, capsys):
    check_encoder_block(CORRECT[name])
    assert "Correct!" in capsys.readouterr().out


# ---------------------------------------------------------------- the classic mistakes, named
def _wrong(mistake):
    def block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        return numpy_block(X, params, num_heads, attention, norm_first, dropout, training, mistake=mistake)
    return block


def _ffn_wrong(kind):
    def block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        p = dict(params)
        if kind == "no relu":
            def ffn(z):
                return (z @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"]
        elif kind == "relu after":
            def ffn(z):
                return np.maximum((z @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"], 0)
        elif kind == "bias after relu":
            def ffn(z):
                return (np.maximum(z @ p["W_1"], 0) + p["b_1"]) @ p["W_2"] + p["b_2"]
        else:
            def ffn(z):
                return np.maximum(z @ p["W_1"], 0) @ p["W_2"]

        def ln(i, z):
            return _ln(z, p[f"gamma_{i}"], p[f"beta_{i}"])

        def sa(z):
            return attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0]

        if norm_first:
            X = X + sa(ln(1, X))
            return X + ffn(ln(2, X))
        X = ln(1, X + sa(X))
        return ln(2, X + ffn(X))
    return block


def no_dropout_ever(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
    return numpy_block(X, params, num_heads, attention, norm_first, 0.0, False)


MISTAKES = {
    "residual connections are missing": _wrong("no residual"),
    "around the attention sub-layer is missing": _wrong("no attention residual"),
    "around the feed-forward sub-layer is missing": _wrong("no ffn residual"),
    "norm is in the wrong place: you computed the pre-norm block": _wrong("swapped norms"),
    "residual adds the normalised x": _wrong("normed residual"),
    "dropout is left on in evaluation: two calls": _wrong("dropout in eval"),
    "dropout is left on in evaluation: with dropout=0.1": _wrong("fixed dropout in eval"),
    "dropout is never applied": no_dropout_ever,
    "hidden width F=20": _wrong("no W_2"),
    r"broadcast.*W_2 \(F, E\) = \(20, 12\)": _wrong("no W_2, residual"),
    r"W_1 \(E, F\) = \(12, 20\)": _wrong("nn.Linear layout"),
    "no ReLU on its hidden layer": _ffn_wrong("no relu"),
    "ReLU is applied after W_2": _ffn_wrong("relu after"),
    "b_1 is added after the ReLU": _ffn_wrong("bias after relu"),
    "biases b_1 and b_2 are missing": _ffn_wrong("no bias"),
    "unbiased variance": _wrong("torch.var"),
    "gamma and beta are not applied": _wrong("no affine"),

}


@pytest.mark.parametrize("needle", MISTAKES)
def test_names_each_mistake(needle):
    with pytest.raises(CheckFailed, match=needle):
        check_encoder_block(MISTAKES[needle])


def test_pre_norm_asked_post_norm_given_is_named():
    """The pre-norm case of a block that always computes post-norm."""
    def post_only(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        return numpy_block(X, params, num_heads, attention, False, dropout, training)

    with pytest.raises(CheckFailed, match=r"you computed the post-norm block.*norm_first=True"):
        check_encoder_block(post_only)


def test_a_shape_error_names_the_shapes():
    def wrong_axis(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        return X.reshape(X.shape[0], -1) @ params["W_1"]  # (B, T*E) @ (E, F)

    with pytest.raises(CheckFailed) as err:
        check_encoder_block(wrong_axis)
    message = str(err.value)
    assert "(2, 5, 12)" in message and "W_1: (12, 20)" in message and "Traceback" not in message


def test_a_wrong_output_shape_is_named():
    def first_position(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        return numpy_block(X, params, num_heads, attention, norm_first, dropout, training)[:, 0]

    with pytest.raises(CheckFailed, match=r"expected shape \(2, 5, 12\), got \(2, 12\)"):
        check_encoder_block(first_position)


def test_not_written_yet_is_said():
    def starter(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        raise NotImplementedError("your code here")

    with pytest.raises(CheckFailed, match="not written yet"):
        check_encoder_block(starter)


# ================================================================ step 2: the decoder-only model
from transformer_lessons.checks import (  # noqa: E402
    check_evaluate, check_language_model, check_learning_rate, check_lm_loss, check_train)


def numpy_lm(ids, params, num_heads, block, attention, positions, *, mistake=None):
    """A learner's model in NumPy; ``mistake`` makes it wrong in one way."""
    T, E = ids.shape[1], params["embedding"].shape[1]
    below = np.tril(np.ones((T, T), dtype=bool))
    mask = {"no mask": None, "inverted": ~below, "shifted": np.tril(below, k=-1)}.get(mistake, below)

    def causal(X, W_q, W_k, W_v, W_o, h):
        if mask is None:
            return attention(X, W_q, W_k, W_v, W_o, h)
        return attention(X, W_q, W_k, W_v, W_o, h, mask)

    x = params["embedding"][ids]
    if mistake != "no positions":
        x = x + positions(T, E)
    for p in params["blocks"]:
        x = block(x, p, num_heads, causal, mistake != "post-norm")
    if mistake != "no final norm":
        x = _ln(x, params["gamma_f"], params["beta_f"])
    if mistake == "transposed head":
        return x @ params["W_out"].T + params["b_out"]
    return x @ params["W_out"] + params["b_out"]


def torch_lm(ids, params, num_heads, block, attention, positions):
    """float32 tensors, F.embedding and F.layer_norm, the mask as a tensor, keywords."""
    ids = torch.as_tensor(ids)
    emb = torch.as_tensor(params["embedding"], dtype=torch.float32)
    T, E = ids.shape[1], emb.shape[1]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    x = F.embedding(ids, emb) + torch.as_tensor(positions(T, E), dtype=torch.float32)
    for p in params["blocks"]:
        p32 = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in p.items()}
        x = block(x, p32, num_heads, lambda X, *W: attention(X, *W, mask=mask), norm_first=True)
    g, b = (torch.as_tensor(params[k], dtype=torch.float32) for k in ("gamma_f", "beta_f"))
    x = F.layer_norm(torch.as_tensor(x, dtype=torch.float32), (E,), g, b)
    return x @ torch.as_tensor(params["W_out"], dtype=torch.float32) + torch.as_tensor(params["b_out"])


def one_hot_lm(ids, params, num_heads, block, attention, positions):
    """The embedding as a one-hot product, a loop over the blocks by index, functools.partial."""
    import functools

    V, E = params["embedding"].shape
    T = ids.shape[1]
    x = np.eye(V)[ids] @ params["embedding"] + positions(T, E)[None]
    causal = functools.partial(_masked, attention=attention, mask=np.tril(np.ones((T, T))) > 0)
    for i in range(len(params["blocks"])):
        x = block(x, params["blocks"][i], num_heads, causal, norm_first=True)
    return np.einsum("bte,ev->btv", _ln(x, params["gamma_f"], params["beta_f"]), params["W_out"]) + params["b_out"]


def _masked(X, W_q, W_k, W_v, W_o, h, *, attention, mask):
    return attention(X, W_q, W_k, W_v, W_o, h, mask)


LM_CORRECT = {"numpy": numpy_lm, "torch float32": torch_lm, "one-hot, partial, einsum": one_hot_lm}


def _lm_wrong(mistake):
    def model(ids, params, num_heads, block, attention, positions):
        return numpy_lm(ids, params, num_heads, block, attention, positions, mistake=mistake)
    return model


def _leaky_lm(ids, params, num_heads, block, attention, positions):
    """Causal blocks, then the mean of the whole sequence added: a leak no listed mistake makes."""
    right = numpy_lm(ids, params, num_heads, block, attention, positions)
    return right + 0.1 * right.mean(axis=1, keepdims=True)


def _orderless_lm(ids, params, num_heads, block, attention, positions):
    """Positions missing and the biases doubled: only the repeated-token test can name it."""
    p = dict(params, b_out=2 * params["b_out"])
    return numpy_lm(ids, p, num_heads, block, attention, positions, mistake="no positions")


LM_MISTAKES = {
    "causal mask is missing": _lm_wrong("no mask"),
    "mask is inverted": _lm_wrong("inverted"),
    "shifted by one: a token cannot see itself": _lm_wrong("shifted"),
    "positional encoding is missing": _lm_wrong("no positions"),
    "final LayerNorm is missing": _lm_wrong("no final norm"),
    "blocks are post-norm": _lm_wrong("post-norm"),
    r"W_out \(E, V\) = \(12, 13\): the head is x @ W_out": _lm_wrong("transposed head"),
    "a future token changes an earlier logit": _leaky_lm,
    "one token repeated gives the same logits at every position": _orderless_lm,
}


def test_language_model_without_a_head_is_named():
    def no_head(ids, params, num_heads, block, attention, positions):
        return numpy_lm(ids, params, num_heads, block, attention, positions) @ params["W_out"].T

    with pytest.raises(CheckFailed, match="the model's width E=12"):
        check_language_model(no_head)


# ================================================================ step 3: the training loop
def loss_reshape(logits, ids):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))


def loss_transpose(logits, ids):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:])  # classes on axis 1


def loss_by_hand(logits, ids):
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    return -logp.gather(-1, ids[:, 1:, None]).squeeze(-1).mean()


LOSS_CORRECT = {"reshape": loss_reshape, "transpose": loss_transpose, "by hand, float32": loss_by_hand}


LOSS_MISTAKES = {
    "targets are not shifted": lambda lg, ids: F.cross_entropy(lg.reshape(-1, lg.shape[-1]), ids.reshape(-1)),
    "not shifted: position t": lambda lg, ids: loss_reshape(lg, torch.cat([ids[:, :1], ids[:, :-1]], 1)),
    "shift goes the wrong way": lambda lg, ids: loss_reshape(lg.flip(1), ids.flip(1)),
    "softmax is over the wrong axis": lambda lg, ids: -torch.log_softmax(lg[:, :-1], 1).gather(
        -1, ids[:, 1:, None]).mean(),
    "loss is summed": lambda lg, ids: F.cross_entropy(lg[:, :-1].transpose(1, 2), ids[:, 1:], reduction="sum"),
    "in bits": lambda lg, ids: loss_reshape(lg, ids) / np.log(2),
    "softmax is applied before": lambda lg, ids: loss_reshape(lg.softmax(-1), ids),
    "returned a Python number": lambda lg, ids: loss_reshape(lg, ids).item(),
    r"logits \(B, T, V\) = \(2, 7, 11\).*reshape the logits of positions 0..T-2 to \(12, 11\)":
        lambda lg, ids: F.cross_entropy(lg[:, :-1], ids[:, 1:]),
}


def lr_if(step, peak_lr, warmup_steps, total_steps):
    import math
    if step < warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return peak_lr * 0.5 * (1 + math.cos(math.pi * progress))


def lr_numpy(step, peak_lr, warmup_steps, total_steps):
    warm = np.minimum(1.0, (step + 1) / warmup_steps)
    progress = np.clip((step - warmup_steps) / (total_steps - warmup_steps), 0, 1)
    return np.float32(peak_lr * np.where(step < warmup_steps, warm, 0.5 * (1 + np.cos(np.pi * progress))))


def lr_torch(step, peak_lr, warmup_steps, total_steps):
    s = torch.tensor(float(step), dtype=torch.float64)
    if step < warmup_steps:
        return peak_lr * (s + 1) / warmup_steps
    return peak_lr * (1 + torch.cos(torch.pi * (s - warmup_steps) / (total_steps - warmup_steps))) / 2


LR_CORRECT = {"if and math": lr_if, "numpy, float32": lr_numpy, "torch tensor": lr_torch}


def _lr_wrong(kind):
    import math

    def lr(step, peak_lr, warmup_steps, total_steps):
        progress = (step - warmup_steps) / (total_steps - warmup_steps)
        if kind == "no warm-up":
            return peak_lr * 0.5 * (1 + math.cos(math.pi * step / total_steps))
        if step < warmup_steps:
            return peak_lr * (step if kind == "zero first" else step + 1) / warmup_steps
        if kind == "never ends":
            return peak_lr * (step + 1) / warmup_steps
        if kind == "no decay":
            return peak_lr
        if kind == "negative":
            return peak_lr * math.cos(math.pi * progress)
        return lr_if(step, peak_lr, warmup_steps, total_steps)
    return lr


LR_MISTAKES = {
    "there is no warm-up": _lr_wrong("no warm-up"),
    "rate at step 0 is 0": _lr_wrong("zero first"),
    "warm-up never ends": _lr_wrong("never ends"),
    "no decay after the warm-up": _lr_wrong("no decay"),
    "cosine goes below 0": _lr_wrong("negative"),
    r"step 0 gave an array of shape \(2,\)": lambda *a: np.array([lr_if(*a)] * 2),
}


def train_loop(model, batches, peak_lr, warmup_steps, loss_fn, schedule, *, mistake=None):
    """A learner's loop; ``mistake`` makes it wrong in one way."""
    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr)
    model.train()
    losses = []
    for step, ids in enumerate(batches):
        if mistake != "no schedule":
            for g in opt.param_groups:
                g["lr"] = schedule(step, peak_lr, warmup_steps, len(batches))
        loss = loss_fn(model(ids), ids)
        if mistake != "no zero_grad":
            opt.zero_grad()
        loss.backward()
        if mistake == "late zero_grad":
            opt.zero_grad()
        opt.step()
        losses.append(loss.item())
    return losses


def train_lambda_lr(model, batches, peak_lr, warmup_steps, loss_fn, schedule):
    """LambdaLR, set_to_none zeroing, losses as a tensor."""
    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: schedule(s, peak_lr, warmup_steps, len(batches)) / peak_lr)
    losses = []
    for ids in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(ids), ids)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def train_fresh_optimizer_groups(model, batches, peak_lr, warmup_steps, loss_fn, schedule):
    """The optimiser made with the step-0 rate, model.zero_grad(), a while loop."""
    opt = torch.optim.AdamW(model.parameters(), lr=schedule(0, peak_lr, warmup_steps, len(batches)))
    step, out = 0, []
    while step < len(batches):
        opt.param_groups[0]["lr"] = schedule(step, peak_lr, warmup_steps, len(batches))
        model.zero_grad()
        loss = loss_fn(model(batches[step]), batches[step])
        loss.backward()
        opt.step()
        out.append(float(loss.detach()))
        step += 1
    return out


TRAIN_CORRECT = {"param groups": train_loop, "LambdaLR": train_lambda_lr, "while loop": train_fresh_optimizer_groups}


def _train_wrong(mistake):
    def loop(model, batches, peak_lr, warmup_steps, loss_fn, schedule):
        return train_loop(model, batches, peak_lr, warmup_steps, loss_fn, schedule, mistake=mistake)
    return loop


def train_lr_after_step(model, batches, peak_lr, warmup_steps, loss_fn, schedule):
    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr)
    losses = []
    for step, ids in enumerate(batches):
        loss = loss_fn(model(ids), ids)
        opt.zero_grad()
        loss.backward()
        opt.step()
        for g in opt.param_groups:
            g["lr"] = schedule(step, peak_lr, warmup_steps, len(batches))
        losses.append(loss.item())
    return losses


TRAIN_MISTAKES = {
    "gradients are never zeroed": _train_wrong("no zero_grad"),
    "zeroed after loss.backward": _train_wrong("late zero_grad"),
    "learning rate never changes": _train_wrong("no schedule"),
    "learning rate is set after optimizer.step": train_lr_after_step,
}


def evaluate_items(model, batches, loss_fn):
    model.eval()
    with torch.no_grad():
        total = sum(loss_fn(model(ids), ids).item() for ids in batches)
    model.train()
    return total / len(batches)


@torch.no_grad()
def evaluate_decorated(model, batches, loss_fn):
    """The decorator, a stacked tensor returned, the mode restored as found."""
    was_training = model.training
    model.eval()
    losses = torch.stack([loss_fn(model(ids), ids) for ids in batches])
    model.train(was_training)
    return losses.mean()


def evaluate_inference_mode(model, batches, loss_fn):
    model.eval()
    with torch.inference_mode():
        losses = np.array([float(loss_fn(model(b), b)) for b in batches])
    model.train()
    return losses.mean()


EVAL_CORRECT = {"items": evaluate_items, "decorator": evaluate_decorated, "inference_mode": evaluate_inference_mode}


def evaluate_no_eval(model, batches, loss_fn):
    with torch.no_grad():
        return sum(loss_fn(model(ids), ids).item() for ids in batches) / len(batches)


def evaluate_no_grad_missing(model, batches, loss_fn):
    model.eval()
    losses = [loss_fn(model(ids), ids) for ids in batches]
    model.train()
    return torch.stack(losses).mean()


def evaluate_last_batch(model, batches, loss_fn):
    model.eval()
    with torch.no_grad():
        for ids in batches:
            loss = loss_fn(model(ids), ids).item()
    return loss


EVAL_MISTAKES = {
    "dropout is active while measuring": evaluate_no_eval,
    "the logits carry a graph while measuring": evaluate_no_grad_missing,
    "returns the last batch's loss": evaluate_last_batch,
}


# ---------------------------------------------------------------- steps 2 and 3: each answer above, checked
STEPS = {check_language_model: (LM_CORRECT, LM_MISTAKES), check_lm_loss: (LOSS_CORRECT, LOSS_MISTAKES),
         check_learning_rate: (LR_CORRECT, LR_MISTAKES), check_train: (TRAIN_CORRECT, TRAIN_MISTAKES),
         check_evaluate: (EVAL_CORRECT, EVAL_MISTAKES)}
ACCEPTED = [(check, name) for check, (correct, _) in STEPS.items() for name in correct]
NAMED = [(check, needle) for check, (_, mistakes) in STEPS.items() for needle in mistakes]


@pytest.mark.parametrize("check, name", ACCEPTED, ids=[f"{c.__name__}: {n}" for c, n in ACCEPTED])
def test_steps_accept_correct_answers(check, name, capsys):
    check(STEPS[check][0][name])
    assert "Correct!" in capsys.readouterr().out


@pytest.mark.parametrize("check, needle", NAMED, ids=[f"{c.__name__}: {n}" for c, n in NAMED])
def test_steps_name_each_mistake(check, needle):
    with pytest.raises(CheckFailed, match=needle):
        check(STEPS[check][1][needle])
