"""Write with the tiny language model from a notebook: the web page's prompt box in Python.

On the book's web site the prompt box runs the trained model in the browser
(the page's script ``charlm.js``). In Binder and Colab :func:`explore_writing`
gives the same controls (prompt, temperature, top-k, top-p, a Write button) as ipywidgets
over the Python model; where ipywidgets is not installed it prints the text written
with the arguments given, so the cell is a plain function call the reader edits.

Both write past the model's context the same way: when the ``context`` positions are
full, the last half of them is read again from position 0 and writing goes on.
"""

from __future__ import annotations

import torch

from .decoder import KVCache
from .language_model import CharLM, CharTokenizer, check_sampling, next_token_probs


@torch.no_grad()
def write(model: CharLM, tokenizer: CharTokenizer, prompt: str, num_new: int = 200, temperature: float = 1.0,
          top_k: int | None = None, top_p: float | None = None, seed: int = 0) -> str:
    """The ``num_new`` characters the model writes after ``prompt`` (of which it reads the
    last ``context``). Within the context it draws the same characters as
    :func:`~transformer_lessons.language_model.generate` with the same seed.

    Raises:
        ValueError: an empty prompt, characters outside the vocabulary (named), a bad
            ``num_new`` or sampling argument.
    """
    if not isinstance(prompt, str) or not prompt:
        raise ValueError("the prompt is empty: the model continues the text you give it")
    if isinstance(num_new, bool) or not isinstance(num_new, int) or num_new < 0:
        raise ValueError(f"num_new must be an int >= 0, got {num_new!r}")
    check_sampling(torch.zeros(model.cfg.vocab_size), temperature, top_k, top_p)
    model.eval()
    context = model.cfg.context
    ids = tokenizer.encode(prompt)[-context:].tolist()  # ValueError names unknown characters
    gen = torch.Generator().manual_seed(seed)
    cache, window = KVCache(len(model.blocks)), []

    def read(token):
        window.append(token)
        return model.step(torch.tensor([[token]]), cache)[0, -1]  # (V,)

    for token in ids:
        logits = read(token)
    out = []
    for _ in range(num_new):
        token = int(torch.multinomial(next_token_probs(logits, temperature, top_k, top_p), 1, generator=gen))
        out.append(token)
        if len(window) == context:  # full: read the last half again, from position 0
            keep = window[context // 2:]
            cache, window = KVCache(len(model.blocks)), []
            for t in keep:
                read(t)
        logits = read(token)
    return tokenizer.decode(out)


def explore_writing(model: CharLM, tokenizer: CharTokenizer, prompt: str = "The ", num_new: int = 200,
                    temperature: float = 0.8, top_k: int | None = None, top_p: float | None = 0.95, seed: int = 0):
    """Show controls to write with the model in a notebook (ipywidgets), or, without
    ipywidgets, print the prompt and what the model writes after it with these arguments."""
    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:
        print(prompt + write(model, tokenizer, prompt, num_new, temperature, top_k, top_p, seed))
        return None

    box = widgets.Textarea(value=prompt, description="Prompt")
    temp = widgets.FloatSlider(value=temperature, min=0.1, max=2.0, step=0.1, description="Temperature")
    k = widgets.IntSlider(value=top_k or 0, min=0, max=model.cfg.vocab_size, description="Top-k (0 = all)")
    p = widgets.FloatSlider(value=top_p or 1.0, min=0.05, max=1.0, step=0.05, description="Top-p")
    button, out = widgets.Button(description="Write"), widgets.Output()

    def on_click(_):
        out.clear_output()
        with out:
            try:
                print(box.value + write(model, tokenizer, box.value, num_new, temp.value, k.value or None,
                                        None if p.value >= 1 else p.value, seed))
            except ValueError as e:
                print(e)

    button.on_click(on_click)
    ui = widgets.VBox([box, temp, k, p, button, out])
    display(ui)
    return None
