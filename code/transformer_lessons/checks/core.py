"""What every self-check shares: the failure, calling the learner, comparing values.

One convention for every self-check of the book:

* a check calls the learner's code through :func:`call_learner`, which hands it
  *copies* of the inputs. An answer that works in place (``Q /= np.sqrt(d_k)``) is
  right, and nothing it does to its inputs can change the reference, which the check
  computes from its own, untouched inputs;
* a passed check prints one line starting with ``Correct!``;
* a failed check raises :class:`CheckFailed` (an ``AssertionError``) whose message says
  what to change; an exception of the learner's code becomes such a message (which
  exception, on which input shapes), and ``raise NotImplementedError`` says that the
  function is not written yet;
* :func:`diagnose` compares *values*, and only when they differ recomputes the classic
  mistakes and names the first one that matches.

**Tolerance.** A correct answer may compute in float32 whatever dtype it is given or
returns (PyTorch's default dtype is float32, and ``.float()`` is common), so a result is
compared at the tolerance of float32 or of its own dtype, whichever is looser: float32
and float64 results at rtol 1e-4, atol 1e-5; float16 and bfloat16 results at their own,
looser tolerance. Every mistake the checks name differs from the reference by far more.
"""

from __future__ import annotations

import copy

import numpy as np


class CheckFailed(AssertionError):
    """A self-check failed; the message says what is wrong and what to change."""


# (rtol, atol) by the dtype of the result; float64 results use float32's (see above).
TOLERANCES = {"float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2)}

TRANSPOSE_HINT = (
    "; on a 3-D array K.T reverses *all* axes, (B, S, d) -> (d, S, B), and np.dot is not a "
    "batched product: swap only the last two axes, np.swapaxes(K, -1, -2) (K.transpose(-2, -1) "
    "in torch), and multiply with @"
)
_SHAPE_ERRORS = ("matmul", "broadcast", "not aligned", "size of tensor", "mat1 and mat2", "batch1", "batch2")


def transpose_hint(exc: Exception, args: tuple) -> str:
    """The ``K.T`` hint, for a shape error of a learner's function given a 3-D (or wider) input."""
    wide = any(getattr(a, "ndim", 0) >= 3 for a in args)
    return TRANSPOSE_HINT if wide and any(s in str(exc) for s in _SHAPE_ERRORS) else ""


def pristine_copy(value):
    """A copy of a check's input for the learner: arrays, tensors, modules, containers."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if hasattr(value, "detach") and hasattr(value, "clone"):  # a torch tensor
        return value.detach().clone()
    if hasattr(value, "state_dict") or isinstance(value, (list, dict, tuple)):
        return copy.deepcopy(value)  # an nn.Module with its weights, a list of arrays
    return value  # a number, a string, a function: nothing to protect


def call_learner(fn, *args, what: str = "your function", hint=None):
    """Call the learner's ``fn`` on copies of ``args``; its exception becomes a :class:`CheckFailed`.

    ``hint(exc, args) -> str``, if given, adds to the message of an exception what it
    most likely means in this exercise (for example :func:`transpose_hint`).
    """
    copies = tuple(pristine_copy(a) for a in args)
    try:
        with np.errstate(all="ignore"):
            return fn(*copies)
    except CheckFailed:
        raise
    except NotImplementedError as exc:
        raise CheckFailed(
            f"{what} is not written yet: replace `raise NotImplementedError(...)` with your code, "
            "run that cell, then run this check again"
        ) from exc
    except Exception as exc:  # the learner's bug, reported, not hidden
        shapes = ", ".join(str(tuple(a.shape)) if hasattr(a, "shape") else _short(a) for a in args)
        extra = hint(exc, args) if hint is not None else ""
        raise CheckFailed(
            f"{what} raised {type(exc).__name__}: {exc} (called with inputs of shapes {shapes}){extra}"
        ) from exc


def _short(value) -> str:
    if hasattr(value, "state_dict"):  # a module: its class, not its whole repr
        return type(value).__name__
    if isinstance(value, dict) and all(hasattr(v, "shape") or isinstance(v, list) for v in value.values()):
        return "{" + ", ".join(f"{k}: {tuple(v.shape)}" if hasattr(v, "shape") else f"{k}: a list of {len(v)}"
                               for k, v in value.items()) + "}"  # named weights
    if callable(value) and hasattr(value, "__name__"):  # a function handed to the learner's
        return value.__name__
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def as_array(result, what: str = "your function") -> tuple[np.ndarray, str]:
    """``(values as float64 NumPy, dtype name)`` of a NumPy array, tensor or list."""
    if result is None:
        raise CheckFailed(f"{what} returned None: did you forget the `return` statement?")
    if isinstance(result, tuple):
        raise CheckFailed(f"{what} returned a tuple of {len(result)} items; return only the array")
    if hasattr(result, "detach"):  # a torch tensor
        dtype = str(result.dtype).replace("torch.", "")
        return result.detach().cpu().double().numpy(), dtype
    try:
        arr = np.asarray(result, dtype=float)
    except (TypeError, ValueError) as exc:
        raise CheckFailed(f"{what} returned {type(result).__name__}, not an array of numbers") from exc
    source = np.asarray(result).dtype
    dtype = source.name if np.issubdtype(source, np.floating) else "float64"
    return arr, dtype


def tolerance(dtype: str) -> tuple[float, float]:
    """``(rtol, atol)`` for a result of ``dtype``: float32's, or its own if that is looser."""
    return TOLERANCES.get(dtype, TOLERANCES["float32"])


def close(got: np.ndarray, expected: np.ndarray, dtype: str = "float64", equal_nan: bool = False) -> bool:
    """Same shape and the same values within the tolerance of ``dtype``."""
    rtol, atol = tolerance(dtype)
    return got.shape == expected.shape and np.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)


def diagnose(got: np.ndarray, dtype: str, expected: np.ndarray, mistakes: dict, what: str) -> None:
    """Pass if ``got`` matches ``expected``; else name the first matching mistake, or the gap.

    ``mistakes`` maps a message to what that mistake computes: an array, a list of arrays
    (the same mistake computed several ways, e.g. blocked scores filled with ``-inf`` or
    ``-1e9``), or ``None`` where the mistake cannot be told apart on these inputs.
    """
    if close(got, expected, dtype):
        return
    for message, wrong in mistakes.items():
        variants = wrong if isinstance(wrong, list) else [wrong]
        if any(w is not None and close(got, np.asarray(w, dtype=float), dtype, equal_nan=True) for w in variants):
            raise CheckFailed(f"{what}: {message}.")
    if got.shape != expected.shape:
        raise CheckFailed(f"{what}: expected shape {expected.shape}, got {got.shape}.")
    if not np.all(np.isfinite(got)):
        rows = sorted({int(i[0]) for i in np.argwhere(~np.isfinite(got))})
        raise CheckFailed(f"{what}: the result contains nan or inf (at first index {rows[:5]}).")
    rtol, atol = tolerance(dtype)
    worst = np.unravel_index(np.argmax(np.abs(got - expected) - rtol * np.abs(expected)), got.shape)
    raise CheckFailed(
        f"{what}: values differ from the reference; largest difference at index "
        f"{tuple(int(i) for i in worst)}: expected {expected[worst]:.10g}, got {got[worst]:.10g} "
        f"(your result is {dtype}, compared with rtol={rtol:g}, atol={atol:g})."
    )


def naive_softmax(scores: np.ndarray, axis: int = -1, shift: str = "row", dtype=np.float64) -> np.ndarray:
    """Softmax as learners write it, NaN and all, computed in ``dtype``.

    ``shift`` is "row" (each row's maximum subtracted), "global" (the matrix's maximum) or
    "none"; a row of only ``-inf`` gives NaN, as a plain ``exp / sum`` does.
    """
    with np.errstate(all="ignore"):
        scores = np.asarray(scores).astype(dtype)
        if shift == "row":
            scores = scores - scores.max(axis=axis, keepdims=True)
        elif shift == "global":
            scores = scores - scores.max()
        e = np.exp(scores)
        return (e / e.sum(axis=axis, keepdims=True)).astype(np.float64)
