"""By hand means by hand: an exercise that asks for attention written by hand scores 0 when the
learner's code reaches PyTorch's own attention, however it is named, decided at run time in the
sandbox; the same code scores full marks where the exercise allows it."""

from __future__ import annotations

import pytest

from transformer_classroom import grade

NUMPY_RIGHT = '''
import numpy as np

def _right(Q, K, V):
    s = Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ V
'''

SUBMISSIONS = {
    # PyTorch's fused attention, called by its name.
    "sdpa": '''
import torch
import torch.nn.functional as F

def self_attention(Q, K, V):
    q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
    return F.scaled_dot_product_attention(q[None], k[None], v[None])[0].numpy()
''',
    # The same, named so that no text scan finds it.
    "getattr": '''
import importlib

def self_attention(Q, K, V):
    torch = importlib.import_module("to" + "rch")
    f = getattr(torch.nn.functional, "scaled_dot" + "_product_attention")
    q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
    return f(q[None], k[None], v[None])[0].numpy()
''',
    # nn.MultiheadAttention with the learner's weights loaded: PyTorch does the work.
    "module": '''
import torch

def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads):
    E = X.shape[-1]
    mha = torch.nn.MultiheadAttention(E, num_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(__import__("numpy").concatenate([W_q.T, W_k.T, W_v.T])))
        mha.out_proj.weight.copy_(torch.from_numpy(W_o.T))
    x = torch.from_numpy(X)
    out, w = mha(x, x, x, average_attn_weights=False)
    return out.detach().numpy(), w.detach().numpy()
''',
    # PyTorch's operator called by its internal name.
    "ops": '''
import torch

def self_attention(Q, K, V):
    q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
    return torch.ops.aten.scaled_dot_product_attention(q[None], k[None], v[None])[0].numpy()
''',
    # The right NumPy answer, computed in a process the watch cannot follow.
    "process": NUMPY_RIGHT + '''
import subprocess, sys

def self_attention(Q, K, V):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return _right(Q, K, V)
''',
    # The right NumPy answer, computed in a thread the watch cannot follow.
    "thread": NUMPY_RIGHT + '''
import threading

def self_attention(Q, K, V):
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("y", _right(Q, K, V)))
    t.start()
    t.join()
    return out["y"]
''',
    # The watch switched off from inside: torch function modes popped.
    "tamper": '''
import torch
import torch.nn.functional as F

def self_attention(Q, K, V):
    from torch.overrides import _pop_mode
    try:
        _pop_mode()
    except Exception:
        pass
    q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
    return F.scaled_dot_product_attention(q[None], k[None], v[None])[0].numpy()
''',
    "by_hand": NUMPY_RIGHT + '''
def self_attention(Q, K, V):
    return _right(Q, K, V)
''',
}

ITEMS = "self_attention,multi_head"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("by_hand")
    out = {}
    for name, source in SUBMISSIONS.items():
        path = folder / f"{name}.py"
        path.write_text(source)
        out[name] = grade.grade_submission(path, grade.select_items(ITEMS), time_limit=30)
    return out


@pytest.mark.parametrize("name, item, named", [
    ("sdpa", "self_attention", "scaled_dot_product_attention"),
    ("getattr", "self_attention", "scaled_dot_product_attention"),
    ("module", "multi_head", "multi_head_attention_forward"),
    ("ops", "self_attention", "scaled_dot_product_attention"),
    ("process", "self_attention", "a new process"),
    ("thread", "self_attention", "a thread"),
    ("tamper", "self_attention", "changes to the grader's watch"),
])
def test_pytorchs_attention_scores_zero_with_the_call_named(graded, name, item, named):
    result = graded[name]
    assert result.points[item] == 0
    verdict = result.verdicts[item]
    assert verdict.startswith("this exercise asks for attention written by hand") and named in verdict, verdict


def test_attention_by_hand_scores_full_marks(graded):
    assert graded["by_hand"].points["self_attention"] == 6, graded["by_hand"].verdicts


def test_the_same_code_passes_where_the_exercise_allows_pytorch(graded, tmp_path):
    # the fused call is right: graded without the by-hand rule, it passes the same check
    item = grade.select_items("self_attention")[0]
    free = grade.Item(**{**item.__dict__, "by_hand": False})
    path = tmp_path / "sdpa.py"
    path.write_text(SUBMISSIONS["sdpa"])
    assert grade.grade_submission(path, [free], time_limit=30).points["self_attention"] == 6


def test_the_by_hand_items_are_the_attention_exercises():
    """An exercise is graded by hand exactly when its page says so ("... scores 0"); the bug
    hunt, whose functions the page introduces together, by hand for its attention functions."""
    import re

    from tests.book_files import ROOT

    for label, ex in grade.EXERCISES.items():
        if "bughunt" in ex.sets:
            continue
        text = (ROOT / "book" / f"{ex.page}.md").read_text()
        body = re.search(r":label: " + re.escape(label) + r"\n(.*?)\{exercise-end\}", text, re.S).group(1)
        assert ex.by_hand == ("scores 0" in body), f"{label}: by_hand={ex.by_hand}, and its page says otherwise"
    bugs = {i.key for i in grade.RUBRIC if i.by_hand and i.key.startswith("bug_")}
    assert bugs == {"bug_causal_attention", "bug_batched_attention", "bug_padded_attention"}
    assert not any(i.by_hand for i in grade.RUBRIC if i.key in ("multi_head_warm_up", "bug_causal_self_attention"))
