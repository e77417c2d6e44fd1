"""Which path a call of agmm.torch takes: plain_cpu(tensors) says whether
the tensors are plain CPU tensors outside any tracing (the direct paths:
the CPU kernels called without the dispatcher, agmm's own memory and
plans in the backwards), needs_grad(tensors) whether autograd records a
call on them, and compiling() whether torch.compile (Dynamo)
is tracing the caller, where every call goes to torch.ops.agmm.* (one
node of the graph) and the backwards use torch ops and torch.ops.agmm.*
only (traceable by AOTAutograd).
"""
import weakref

import torch

_PLAIN_KEYS = torch._C._dispatch_keys(torch.empty(0))
_NO_KEY = torch._C.DispatchKey.Undefined
_PYTHON_KEY = torch._C.DispatchKey.Python
_Tensor = torch.Tensor
_keys = torch._C._dispatch_keys
_stack_len = torch._C._len_torch_dispatch_stack
_tls_include = torch._C._dispatch_tls_local_include_set
_tracing = torch.jit.is_tracing
# torch >= 2.1; Dynamo folds the call to True while it traces (torch 1.13
# has no torch.compile: never).
_compiler = getattr(torch, "compiler", None)
compiling = getattr(_compiler, "is_compiling", None) or (lambda: False)


def needs_grad(tensors):
    return torch.is_grad_enabled() and \
        any(t is not None and t.requires_grad for t in tensors)


def plain_cpu(tensors):
    """Whether the kernel below the Autograd kernel is the op's CPU kernel
    for these arguments: each tensor a plain CPU tensor (not a subclass, a
    FakeTensor or a tensor with other dispatch keys), no dispatch mode on,
    no Python key in this thread's dispatch, not tracing (torch.jit or
    torch.compile). The Autograd kernels then call the CPU kernel
    directly, not through the dispatcher a second time (its argument
    parsing both ways is part of the op's cost per call at tiny shapes,
    docs/history/); anything else goes below autograd through the
    dispatcher (FakeTensor: the fake/Meta kernel). agmm.torch's functions
    call the Autograd kernels directly on the same condition (no
    dispatcher at all), passing plain=True (the dispatcher passes the
    schema's arguments only: plain None, checked). About 7 us for two
    tensors. Under torch.compile it is False before anything Dynamo
    cannot trace (the dispatch stack's length is a plain int)."""
    if compiling():
        return False
    if _stack_len() or _tracing() or _tls_include().has(_PYTHON_KEY):
        return False
    for t in tensors:
        if t is None:
            continue
        if type(t) is not _Tensor or not t.is_cpu:
            return False
        r = _known.get(id(t))
        if r is not None and r() is t:
            continue  # its keys were plain at an earlier call (weights)
        if (_keys(t) - _PLAIN_KEYS).highestPriorityTypeId() != _NO_KEY:
            return False
        if len(_known) >= _KNOWN_MAX:
            _known.clear()
        _known[id(t)] = _ref(t)
    return True


# Tensors found plain (by id, with a weak reference: an id reused by a
# new object never hits): a dense tensor's dispatch keys are fixed for its
# life, and a layer's weights come back every call (the key set's
# arithmetic is about 7 us a tensor). Bounded; cleared when full.
_known = {}
_KNOWN_MAX = 512
_ref = weakref.ref
