"""A pretend accelerator for CPU-only machines: runs chapter code exactly as on the CPU (same numbers) while checking
that it would also run on a second device such as CUDA.

Inside :func:`pretend_accelerator` the device ``meta`` stands for the accelerator: a run started with
``device=torch.device("meta")`` computes on the CPU, but every tensor moved to (or created on) ``meta`` is tracked
as *on the accelerator*, and so is every result computed from one. An operation that mixes a tracked tensor with an
untracked one (other than a 0-dim CPU tensor, which CUDA accepts too) raises the error CUDA would raise; so does
``.numpy()`` on a tracked tensor. ``.cpu()`` / ``.to("cpu")`` of a tracked tensor returns an untracked copy, as on a
real accelerator. Cross-device copies (``copy_``) and indexing with CPU indices are allowed, as on CUDA.

Tracking is by storage (so views, ``.data`` and ``.detach()`` share it) through weak references: a storage freed and
reused never inherits the mark.
"""

from __future__ import annotations

import contextlib

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

ACCELERATOR = torch.device("meta")
_CPU = torch.device("cpu")
# Operations CUDA accepts with operands on different devices: copies between devices, CPU indices into device tensors.
_MIXED_OK = {"aten::copy_", "aten::index", "aten::index_put_", "aten::index_put",
             "aten::_index_put_impl_", "aten::lift_fresh", "aten::lift_fresh_copy", "aten::detach", "aten::alias"}


class DeviceMismatch(RuntimeError):
    """An operation mixed tensors on the pretend accelerator with tensors on the CPU."""


def _is_accel(device) -> bool:
    return device is not None and torch.device(device).type == ACCELERATOR.type


class _Marks:
    def __init__(self):
        self.refs: dict[int, StorageWeakRef] = {}

    def key(self, t: torch.Tensor) -> int:
        return t.untyped_storage()._cdata

    def has(self, t: torch.Tensor) -> bool:
        ref = self.refs.get(self.key(t))
        return ref is not None and not ref.expired()

    def discard(self, t: torch.Tensor) -> None:
        self.refs.pop(self.key(t), None)

    def add(self, t: torch.Tensor) -> None:
        self.refs[self.key(t)] = StorageWeakRef(t.untyped_storage())
        if len(self.refs) > 4096:  # drop the expired entries now and then
            self.refs = {k: r for k, r in self.refs.items() if not r.expired()}


def _tensors(tree) -> list[torch.Tensor]:
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


class _Functions(TorchFunctionMode):
    """Python-level calls: redirects ``meta`` to the CPU, makes moves between the devices real copies and reports a
    tracked tensor's ``.device`` as the accelerator."""

    def __init__(self, marks: _Marks):
        super().__init__()
        self.marks = marks

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        src = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if getattr(func, "__self__", None) is torch.Tensor.device:  # the `.device` property
            return ACCELERATOR if self.marks.has(src) else func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name == "numpy" and src is not None and self.marks.has(src):
            raise DeviceMismatch("can't convert a tensor on the accelerator to numpy; use .cpu() first")
        target = None
        if name == "cpu" and src is not None:
            target = _CPU
        elif name == "to" and src is not None:
            for value in (*args[1:], kwargs.get("device")):
                if isinstance(value, (str, torch.device)):
                    target = torch.device(value)
                elif isinstance(value, torch.Tensor):
                    target = ACCELERATOR if self.marks.has(value) else value.device
        if target is not None:
            args = tuple(_CPU if isinstance(a, (str, torch.device)) and _is_accel(a) else a for a in args)
        accel_kwarg = _is_accel(kwargs.get("device")) and name != "_parse_to"
        if accel_kwarg:
            kwargs["device"] = _CPU
        out = func(*args, **kwargs)
        if target is not None:
            src_on, to_accel = self.marks.has(src), _is_accel(target)
            if src_on != to_accel:  # a real move: a copy, tracked only on the accelerator
                if out.untyped_storage()._cdata == src.untyped_storage()._cdata:
                    out = out.clone()
                if to_accel:
                    self.marks.add(out)
                else:
                    self.marks.discard(out)
        elif accel_kwarg:
            for t in _tensors(out):
                self.marks.add(t)
        return out


class _Dispatch(TorchDispatchMode):
    """aten-level operations (autograd's too): checks the operands' devices and marks results on the accelerator."""

    def __init__(self, marks: _Marks):
        super().__init__()
        self.marks = marks

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _is_accel(kwargs.get("device")):  # a factory call that reached aten with the accelerator
            kwargs = {**kwargs, "device": _CPU}
            out = func(*args, **kwargs)
            for t in _tensors(out):
                self.marks.add(t)
            return out
        inputs = _tensors((args, kwargs))
        on = [t for t in inputs if self.marks.has(t)]
        out = func(*args, **kwargs)
        if on:
            name = func._schema.name
            off = [t for t in inputs if not self.marks.has(t) and t.dim() > 0]
            if off and name not in _MIXED_OK:
                raise DeviceMismatch(
                    f"Expected all tensors to be on the same device, but {name} got tensors on the accelerator "
                    f"(shapes {[tuple(t.shape) for t in on]}) and on the CPU (shapes {[tuple(t.shape) for t in off]})")
            if name != "aten::_local_scalar_dense":
                tree_map(lambda x: self.marks.add(x) if isinstance(x, torch.Tensor) else None, out)
        return out


@contextlib.contextmanager
def pretend_accelerator():
    """Within this block ``torch.device("meta")`` behaves as a second device that computes on the CPU."""
    marks = _Marks()
    with _Functions(marks), _Dispatch(marks):
        yield marks
