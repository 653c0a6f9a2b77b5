"""book_build.notebook_text: the MyST a page uses, written out as the Markdown a notebook
renders; the solutions left out."""

from __future__ import annotations

import pytest

from book_build.notebook_text import NotebookTextError, for_jupyter
from tests.book_files import ROOT

BOOK = ROOT / "book"

PAGE = """# A page

```{note}
**Time: 5 minutes.** Read this.
```

```{exercise-start} Self-attention
:label: ex-x
```

Write it.

```{code-cell} ipython3
def f():
    raise NotImplementedError
```

```{exercise-end}
```

:::{admonition} Hints
:class: dropdown tip

- one
- two
:::

```{solution-start} ex-x
:class: dropdown
```

The answer:

```{code-cell} ipython3
def f():
    return 42
```

```{solution-end}
```

```{only} html
Folded on the web.
```

```{only} notebook
In the notebook.
```

```{raw} html
<p>site only</p>
```

```{literalinclude} ../code/transformer_lessons/attention.py
:language: python
:pyobject: softmax
```

The end.
"""


@pytest.fixture(scope="module")
def text() -> str:
    return for_jupyter(PAGE, BOOK)


def test_the_solution_is_left_out(text):
    assert "return 42" not in text and "The answer" not in text and "solution" not in text


def test_exercises_and_boxes_become_markdown(text):
    assert "**Exercise: Self-attention**" in text and "exercise-" not in text
    assert "> **Note.**\n>\n> **Time: 5 minutes.** Read this." in text
    assert "> **Hints.**\n>\n> - one\n> - two" in text and ":class:" not in text


def test_only_the_notebooks_text_is_kept(text):
    assert "In the notebook." in text and "Folded on the web" not in text and "site only" not in text


def test_a_literalinclude_is_the_objects_source(text):
    assert "```python\ndef softmax(" in text and "{literalinclude}" not in text


def test_code_cells_are_left_as_they_are(text):
    assert "```{code-cell} ipython3\ndef f():\n    raise NotImplementedError\n```" in text
    assert text.endswith("The end.\n")


@pytest.mark.parametrize("page, message", [
    ("```{figure} x.png\nA figure.\n```\n", "no plain-Markdown form"),
    ("```{note}\nnever closed\n", "never closed"),
    ("```{solution-start} ex-x\n```\n\nno end\n", "no {solution-end}"),
    ("```{literalinclude} ../code/transformer_lessons/attention.py\n```\n", "without :pyobject:"),
])
def test_what_a_notebook_cannot_show_is_an_error(page, message):
    with pytest.raises(NotebookTextError, match=message):
        for_jupyter(page, BOOK)
