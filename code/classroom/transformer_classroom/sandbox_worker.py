"""The child side of the sandbox: run a submission's code, call its functions, send the results.

Started by :mod:`transformer_classroom.sandbox` as ``python -I sandbox_worker.py RFD WFD ROOT``
in a scratch directory. It reads requests (pickles: they come from the grader, the trusted
side) on file descriptor ``RFD`` and answers on ``WFD`` in a format the grader can read
without running anything: a JSON header, then NumPy ``.npy`` blobs (no pickles). Results
are values only: arrays, tensors (sent as arrays with their dtype), numbers, strings,
``None`` and tuples or lists of these. Everything here runs in the untrusted process; the
grader checks every reply it gets.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import os
import pickle
import resource
import struct
import sys
import types

_ATOMS = (type(None), bool, int, float, str)


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _send(fd: int, header: dict, blobs: list[bytes]) -> None:
    head = json.dumps(header).encode()
    parts = [struct.pack("<Q", len(head)), head, struct.pack("<I", len(blobs))]
    for b in blobs:
        parts += [struct.pack("<Q", len(b)), b]
    data = b"".join(parts)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _npy(arr, blobs: list[bytes]) -> int:
    import numpy as np

    buf = io.BytesIO()
    arr = np.asarray(arr)
    np.save(buf, np.ascontiguousarray(arr).reshape(arr.shape), allow_pickle=False)  # 0-d stays 0-d (a loss)
    blobs.append(buf.getvalue())
    return len(blobs) - 1


def encode(value, blobs: list[bytes], depth: int = 0):
    """A JSON tree for ``value``; arrays go to ``blobs``."""
    import numpy as np

    if depth > 16:
        raise TypeError("the result is nested too deeply")
    if isinstance(value, _ATOMS):
        return {"py": value}
    if type(value).__module__.startswith("torch"):
        import torch

        if isinstance(value, torch.Tensor):
            t = value.detach().cpu()
            dtype = str(t.dtype).replace("torch.", "")
            if t.dtype == torch.bfloat16:
                t = t.float()  # NumPy has no bfloat16: the values are exact in float32
            return {"torch": _npy(t.numpy(), blobs), "dtype": dtype}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return {"nd": _npy(np.asarray(value), blobs)}
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return {"nd": _npy(np.asarray(value), blobs), "scalar": True}
    if isinstance(value, (tuple, list)):
        return {type(value).__name__ if type(value) in (tuple, list) else "tuple": [encode(v, blobs, depth + 1) for v in value]}
    return {"opaque": type(value).__name__}


def describe_exception(exc: BaseException) -> dict:
    return {
        "type": type(exc).__name__,
        "not_implemented": isinstance(exc, NotImplementedError),
        "msg": str(exc)[:2000],
    }


def describe_module(obj, blobs: list[bytes]) -> list[dict]:
    """The ``nn.MultiheadAttention`` layers inside a module: their settings and weights."""
    import torch
    from torch import nn

    inner = []
    for m in obj.modules() if isinstance(obj, nn.Module) else ():
        if not isinstance(m, nn.MultiheadAttention):
            continue
        inner.append(
            {
                "embed_dim": m.embed_dim,
                "num_heads": m.num_heads,
                "dropout": float(m.dropout),
                "bias": m.in_proj_bias is not None,
                "add_bias_kv": m.bias_k is not None,
                "add_zero_attn": bool(m.add_zero_attn),
                "kdim": m.kdim,
                "vdim": m.vdim,
                "batch_first": bool(m.batch_first),
                "training": bool(m.training),
                "state": {k: encode(v, blobs) for k, v in m.state_dict().items() if isinstance(v, torch.Tensor)},
            }
        )
    return inner


def book_names(obj, module_name: str, seen=None) -> set[str]:
    """The ``transformer_lessons`` objects a function's or class's code reaches through its globals."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return set()
    seen.add(id(obj))
    found = set()
    functions = []
    if isinstance(obj, type):
        for base in obj.__mro__[1:]:
            if getattr(base, "__module__", "").startswith("transformer_lessons"):
                found.add(f"{base.__module__}.{base.__qualname__}")
        functions = [v for v in vars(obj).values() if isinstance(v, types.FunctionType)]
    elif isinstance(obj, types.FunctionType):
        functions = [obj]
    for fn in functions:
        codes, names = [fn.__code__], set()
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        values = [(n, fn.__globals__[n]) for n in names if n in fn.__globals__]
        values += [("default", d) for d in (fn.__defaults__ or ())]
        values += [("closure", c.cell_contents) for c in (fn.__closure__ or ()) if _filled(c)]
        for name, value in values:
            if isinstance(value, types.ModuleType):
                if value.__name__.startswith("transformer_lessons"):
                    found |= {f"{value.__name__}.{a}" for a in names if hasattr(value, a)}
            elif getattr(value, "__module__", None) and str(value.__module__).startswith("transformer_lessons"):
                found.add(f"{value.__module__}.{getattr(value, '__qualname__', name)}")
            elif getattr(value, "__module__", None) == module_name:
                found |= book_names(value, module_name, seen)
    return found


# ---------------------------------------------------------------- by hand
BUILT_IN = {  # what an exercise that asks for attention written by hand may not call
    "scaled_dot_product_attention": "torch.nn.functional.scaled_dot_product_attention",
    "multi_head_attention_forward": "torch.nn.functional.multi_head_attention_forward (nn.MultiheadAttention)",
    "_native_multi_head_attention": "torch._native_multi_head_attention (nn.MultiheadAttention)",
}
_SPAWNS = ("os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "subprocess.Popen")


class _Watch:
    """What a call of the learner's function used that an exercise by hand forbids.

    A torch function mode sees every ``torch`` function the call reaches, however it was named
    (``getattr``, a wrapped ``nn.MultiheadAttention``, a tensor made from NumPy inside); the
    names it records are :data:`BUILT_IN`'s. A mode is per thread and dies with a process, so
    a call that starts a thread or a process (seen by a wrapper of ``_thread`` and an audit
    hook, which Python code cannot remove), or that leaves the mode stack or those wrappers
    changed, is reported too: the grader then gives the item 0 with that reason."""

    def __init__(self):
        import _thread
        import threading

        from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

        watch = self
        self._stack = _get_current_function_mode_stack  # taken before the submission can replace it
        self.active, self.used = False, []

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = BUILT_IN.get(getattr(func, "__name__", ""))
                if name and watch.active and name not in watch.used:
                    watch.used.append(name)
                return func(*args, **(kwargs or {}))

        self.mode_class = Mode
        start = _thread.start_new_thread

        def started(*args, **kwargs):
            if watch.active:
                watch.used.append("a thread (its calls cannot be watched)")
            return start(*args, **kwargs)

        self._thread_fn = started
        _thread.start_new_thread = threading._start_new_thread = started

        def audit(event, args):
            if watch.active and event.startswith(_SPAWNS):
                watch.used.append(f"a new process ({event})")

        sys.addaudithook(audit)

    def call(self, target, args, kwargs):
        """``target(*args, **kwargs)`` watched; returns ``(value, what it used)``."""
        import _thread
        import threading

        self.used = []
        mode = self.mode_class()
        mode.__enter__()
        try:
            self.active = True
            try:
                value = target(*args, **kwargs)
            finally:
                self.active = False
        finally:
            intact = self._stack()[-1:] == [mode]
            if intact:
                mode.__exit__(None, None, None)
        if not intact or not (_thread.start_new_thread is threading._start_new_thread is self._thread_fn):
            self.used.append("changes to the grader's watch (torch function modes or threads)")
        return value, list(self.used)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def main() -> None:
    rfd, wfd = int(sys.argv[1]), int(sys.argv[2])
    if len(sys.argv) > 4:  # in the OS sandbox: at most this many processes and threads at once
        resource.setrlimit(resource.RLIMIT_NPROC, (int(sys.argv[4]), int(sys.argv[4])))
    sys.path.insert(0, sys.argv[3])  # the grader's own transformer_lessons, as the learner imports it
    module_name = "submission"
    namespace: dict = {"__name__": module_name, "__builtins__": builtins}
    handles: dict[int, object] = {}
    import numpy  # noqa: F401  loaded before the submission: the time limits count the learner's code only
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401  what a torch optimiser's first call imports (seconds): not the learner's time

    watch = _Watch()  # before the submission's code: its wrappers and audit hook are in place first
    _send(wfd, {"ready": True, "seq": 0}, [])
    while True:
        size = _read_exact(rfd, 8)
        if size is None:
            os._exit(0)  # the grader is done; no atexit hook of the submission runs
        data = _read_exact(rfd, struct.unpack("<Q", size)[0])
        if data is None:
            os._exit(0)
        request = pickle.loads(data)  # from the grader, the trusted side
        blobs: list[bytes] = []
        try:
            op = request["op"]
            if op == "load":
                notes = []
                for number, source, run in request["cells"]:
                    tree = ast.parse(source)
                    for i in run:
                        node = tree.body[i]
                        try:
                            exec(compile(ast.Module(body=[node], type_ignores=[]), "submission.py", "exec"), namespace)
                        except BaseException as err:  # SystemExit included: the cell's other statements still run
                            notes.append(f"cell {number}, line {node.lineno}: {type(err).__name__}: {err}")
                kinds, refs = {}, {}
                for name in request["names"]:
                    if name not in namespace:
                        continue
                    value = namespace[name]
                    kinds[name] = "class" if isinstance(value, type) else "callable" if callable(value) else "other"
                    refs[name] = sorted(book_names(value, module_name))
                reply = {"notes": notes, "kinds": kinds, "refs": refs}
            elif op == "call":
                target = handles[request["handle"]] if "handle" in request else namespace[request["name"]]
                if request.get("by_hand"):
                    value, used = watch.call(target, request["args"], request["kwargs"])
                    reply = {"built_in": used} if used else {"ok": encode(value, blobs)}
                else:
                    reply = {"ok": encode(target(*request["args"], **request["kwargs"]), blobs)}
            elif op == "construct":
                obj = namespace[request["name"]](*request["args"])
                handles[len(handles)] = obj
                reply = {"handle": len(handles) - 1, "inner": describe_module(obj, blobs)}
            elif op == "method" and request["method"] in ("eval", "train"):
                getattr(handles[request["handle"]], request["method"])()
                reply = {"ok": {"py": None}}
            elif op == "describe":
                reply = {"inner": describe_module(handles[request["handle"]], blobs)}
            else:
                reply = {"exc": {"type": "ValueError", "not_implemented": False, "msg": f"unknown request {op!r}"}}
        except BaseException as exc:  # the learner's error, SystemExit and KeyboardInterrupt included
            blobs = []
            reply = {"exc": describe_exception(exc)}
        reply["seq"] = request.get("seq")
        try:
            _send(wfd, reply, blobs)
        except (TypeError, ValueError) as exc:  # e.g. a str that JSON cannot hold
            _send(wfd, {"exc": describe_exception(exc), "seq": request.get("seq")}, [])


if __name__ == "__main__":
    main()
