"""The numba face of a likelihood: its jitted kernels as C function addresses.

Generic numba code (the tilted quadrature, the site updates, the QP tables' fallback, MCMC)
reaches a likelihood through one tuple, its *handle*::

    lk = (log_prob, dlog_prob, starts, kink, moments, params, alpha, smooth, unimodal, taylor, has_taylor)

read by the slot constants ``HANDLE_LOG_PROB`` ... ``HANDLE_HAS_TAYLOR`` (``lk[HANDLE_ALPHA]``:
numba folds a global integer into a constant index, so the names keep the tuple's typing; the
benchmarks' sweeps, the cold compile and every result bit for bit were unchanged when the
positions got names). :func:`untempered` rebuilds the tuple slot by slot: built by slicing
instead, numba compiled the Gaussian Power-EP path to results differing in the last bits.
The kernels' slots (the first five and ``taylor``) hold the *addresses* (Python ints) of
``numba.cfunc`` objects with the fixed C signatures below; the ``lk_*`` accessors call them
through intrinsics that cast the address to the C function pointer (:func:`_address_caller`).
The generic kernels are compiled once for every likelihood and numba's on-disk cache serves them
across processes: the addresses differ between processes, so they are run-time arguments, never
compile-time constants. The cfuncs stay alive in this module's compile cache (:func:`_compile`).
Why addresses: numba's dispatcher types a tuple of ints, floats and an array by its C
fingerprint, but a tuple holding the cfunc objects themselves (first-class function values)
fell back to full typing in Python on every call and unboxed each function through Python:
~100 us per call of a site sweep kernel from Python against ~2.5 us now, results bit for bit
the same (the same C entry points are called). ``params`` is the likelihood's declared
parameters as a float64 array (each kernel reads them by name at its top) and ``alpha`` the power
of a tempered likelihood p(y | f)^alpha (Power EP; 1 for the plain likelihood). ``smooth`` is
1.0 where the likelihood keeps the default :func:`no_kink` (:func:`lk_kink` then answers without
an indirect call) and ``unimodal`` 1.0 for a log-concave likelihood (``Likelihood.log_concave``:
every tilted distribution is log-concave, so the Gauss-Hermite route need not look for far modes
at the start points; for probit that saves the EP mean its ``starts`` computes). Measured: the two
cost ~5 ms per 10^5 site updates of a tempered probit sweep. ``taylor`` is the optional sixth
kernel (``has_taylor`` 1.0 where the likelihood offers one): the Taylor coefficients of log p at a
point, which let :mod:`qpviz.tilted.hermite` take the tilted moments of a narrow cavity from one
kernel call instead of ten.

A likelihood class offers jitted kernels by setting ``jit = JitKernels(...)`` to plain Python
functions of these signatures; they are compiled the first time a handle is asked for (only the
likelihoods a page or a fit uses compile, and only once: ``cache=True``).

Kernel signatures (``params`` is a float64 pointer, ``out`` a float64 output pointer):

* ``log_prob(params, y, f) -> log p(y | f)``;
* ``dlog_prob(params, y, f, out) -> 0``: out[0] = d/df log p, out[1] = d^2/df^2 log p;
* ``starts(params, y, m, v, out) -> 0``: out[0:3] = up to three points near the modes of the
  tilted density (NaN = unused);
* ``kink(params, y) -> f``: the point where log p(y | f) is not smooth, or NaN;
* ``moments(params, y, m, v, out) -> 1`` with out[0:3] = (log Z, mean, var) of the tilted
  distribution in closed form, or ``-> 0`` where there is none (the quadrature takes over);
* ``taylor(params, y, f, out) -> K + 1`` (optional) with out[k] = (1/k!) d^k/df^k log p(y | f) for
  k = 0 ... K, K <= TAYLOR_TERMS, or ``-> 0`` where it gives none.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np
from llvmlite import ir
from numba import cfunc, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from qpviz.config import NUMBA_OPTIONS

__all__ = [
    "JitKernels",
    "LOG_PROB_SIG",
    "DLOG_PROB_SIG",
    "STARTS_SIG",
    "KINK_SIG",
    "MOMENTS_SIG",
    "make_handle",
    "HANDLE_LOG_PROB",
    "HANDLE_DLOG_PROB",
    "HANDLE_STARTS",
    "HANDLE_KINK",
    "HANDLE_MOMENTS",
    "HANDLE_PARAMS",
    "HANDLE_ALPHA",
    "HANDLE_SMOOTH",
    "HANDLE_UNIMODAL",
    "HANDLE_TAYLOR",
    "HANDLE_HAS_TAYLOR",
    "untempered",
    "lk_log_prob",
    "lk_dlog_prob",
    "lk_starts",
    "lk_kink",
    "lk_moments",
    "lk_taylor",
    "TAYLOR_TERMS",
    "log_prob_batch",
    "dlog_prob_batch",
]


_F8 = types.float64
_PTR = types.CPointer(types.float64)
LOG_PROB_SIG = _F8(_PTR, _F8, _F8)
DLOG_PROB_SIG = _F8(_PTR, _F8, _F8, _PTR)
STARTS_SIG = _F8(_PTR, _F8, _F8, _F8, _PTR)
KINK_SIG = _F8(_PTR, _F8)
MOMENTS_SIG = _F8(_PTR, _F8, _F8, _F8, _PTR)
TAYLOR_SIG = _F8(_PTR, _F8, _F8, _PTR)
#: most Taylor coefficients a ``taylor`` kernel may write after the value (out holds TAYLOR_TERMS + 1)
TAYLOR_TERMS = 12

# The slots of a handle (module docstring): the kernels, then their data and flags.
HANDLE_LOG_PROB = 0  #: address of the cfunc log p(y | f)
HANDLE_DLOG_PROB = 1  #: address of the cfunc (d/df, d^2/df^2) log p
HANDLE_STARTS = 2  #: address of the cfunc points near the tilted modes
HANDLE_KINK = 3  #: address of the cfunc the kink of log p, or NaN
HANDLE_MOMENTS = 4  #: address of the cfunc closed-form tilted moments (or 0)
HANDLE_PARAMS = 5  #: float64 array of the declared parameters
HANDLE_ALPHA = 6  #: the power alpha of p(y | f)^alpha (1: not tempered)
HANDLE_SMOOTH = 7  #: 1.0: the default no_kink (no indirect call for the kink)
HANDLE_UNIMODAL = 8  #: 1.0: log-concave likelihood (one mode of every tilted density)
HANDLE_TAYLOR = 9  #: address of the cfunc Taylor coefficients of log p
HANDLE_HAS_TAYLOR = 10  #: 1.0: the Taylor kernel is not the default no_taylor

_CFUNC_OPTIONS = {"cache": NUMBA_OPTIONS["cache"], "error_model": NUMBA_OPTIONS["error_model"]}


def no_kink(params, y):
    """Default ``kink``: log p(y | f) is smooth everywhere."""
    return math.nan


def no_moments(params, y, m, v, out):
    """Default ``moments``: no closed form (the quadrature computes the moments)."""
    return 0.0


def no_taylor(params, y, f, out):
    """Default ``taylor``: none (the Gauss-Hermite rules evaluate log p at their nodes)."""
    return 0.0


def cavity_start(params, y, m, v, out):
    """Default ``starts``: the cavity mean (Newton climbs from there to the mode)."""
    out[0] = m
    out[1] = math.nan
    out[2] = math.nan
    return 0.0


@dataclass(frozen=True)
class JitKernels:
    """Plain Python kernels of one likelihood class (module docstring), compiled on first use."""

    log_prob: Callable
    dlog_prob: Callable
    starts: Callable = cavity_start
    kink: Callable = no_kink
    moments: Callable = no_moments
    #: ``moments`` gives the closed form for every input (never returns 0): EP then needs no
    #: quadrature (qpviz.inference.sites compiles a variant without it). Set False for a closed
    #: form that covers only part of the domain.
    complete: bool = True
    taylor: Callable = no_taylor

    @property
    def complete_moments(self) -> bool:
        """A closed form of the tilted moments for every input."""
        return self.moments is not no_moments and self.complete

    def compiled(self) -> tuple:
        """The five kernels as cfunc objects (compiled once per process, cached on disk)."""
        return tuple(_compile(fn, sig) for fn, sig in ((self.log_prob, LOG_PROB_SIG), (self.dlog_prob, DLOG_PROB_SIG),
                                                       (self.starts, STARTS_SIG), (self.kink, KINK_SIG),
                                                       (self.moments, MOMENTS_SIG)))


_COMPILED: dict = {}
_COMPILE_LOCK = threading.Lock()


def _compile(fn: Callable, signature) -> object:
    key = (fn, str(signature))
    found = _COMPILED.get(key)
    if found is None:
        with _COMPILE_LOCK:
            found = _COMPILED.get(key)
            if found is None:
                found = cfunc(signature, **_CFUNC_OPTIONS)(fn)
                _COMPILED[key] = found
    return found


def make_handle(kernels: JitKernels, params: np.ndarray, alpha: float = 1.0, unimodal: bool = False) -> tuple:
    """The tuple generic numba code takes (module docstring): the kernels by their addresses."""
    packed = np.ascontiguousarray(params, dtype=np.float64)
    if packed.size == 0:
        packed = np.zeros(1)  # kernels without parameters never read it
    addresses = tuple(int(kernel.address) for kernel in kernels.compiled())
    return addresses + (packed, float(alpha), float(kernels.kink is no_kink), float(unimodal),
                        int(_compile(kernels.taylor, TAYLOR_SIG).address), float(kernels.taylor is not no_taylor))


@njit(**NUMBA_OPTIONS)
def untempered(lk):
    """The handle with alpha = 1 (the likelihood itself), every other slot as it is."""
    return (lk[HANDLE_LOG_PROB], lk[HANDLE_DLOG_PROB], lk[HANDLE_STARTS], lk[HANDLE_KINK], lk[HANDLE_MOMENTS],
            lk[HANDLE_PARAMS], 1.0, lk[HANDLE_SMOOTH], lk[HANDLE_UNIMODAL], lk[HANDLE_TAYLOR], lk[HANDLE_HAS_TAYLOR])


# -- calls from numba code ---------------------------------------------------------------------
@intrinsic
def stack_buffer(typingctx, size):
    """A float64 pointer to ``size`` (a literal int) doubles on the calling function's stack: the
    kernels' output arguments without a heap allocation per call (which cost more than a probit
    moment itself)."""
    if not isinstance(size, types.IntegerLiteral):
        return None
    count = size.literal_value

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(types.float64), size=count)

    return _PTR(size), codegen


@intrinsic
def params_pointer(typingctx, params):
    """The data pointer of the float64 array ``params``, as the kernels' ``params`` argument: the
    array's ``.ctypes`` costs ~5 ns more per kernel call (measured: 31 against 26 ns per probit
    log density), which the Gauss-Hermite route pays ~10 times per site. The handle tuple keeps
    the array alive for the duration of every call."""
    if not (isinstance(params, types.Array) and params.dtype == types.float64):
        return None

    def codegen(context, builder, signature, args):
        return context.make_array(signature.args[0])(context, builder, args[0]).data

    return _PTR(params), codegen


def _address_caller(name: str, signature):
    """An intrinsic ``call(address, args)``: the C function of ``signature`` at the integer
    ``address`` (a handle's kernel slot), called with the tuple ``args`` converted to the
    signature's argument types as a call of a numba cfunc value converts them. The address is a
    run-time value: the compiled caller holds no address and is served by the on-disk cache."""

    def call(typingctx, address, args):
        if not (isinstance(address, types.Integer) and isinstance(args, types.BaseTuple)
                and len(args) == len(signature.args)):
            return None

        def codegen(context, builder, sig, llargs):
            c_type = ir.FunctionType(context.get_value_type(signature.return_type),
                                     [context.get_value_type(arg) for arg in signature.args])
            pointer = builder.inttoptr(llargs[0], c_type.as_pointer())
            return builder.call(pointer, cgutils.unpack_tuple(builder, llargs[1], len(signature.args)))

        return signature.return_type(types.int64, types.Tuple(signature.args)), codegen

    call.__name__ = call.__qualname__ = f"call_{name}"
    return intrinsic(call)


_call_log_prob = _address_caller("log_prob", LOG_PROB_SIG)
_call_dlog_prob = _address_caller("dlog_prob", DLOG_PROB_SIG)
_call_starts = _address_caller("starts", STARTS_SIG)
_call_kink = _address_caller("kink", KINK_SIG)
_call_moments = _address_caller("moments", MOMENTS_SIG)
_call_taylor = _address_caller("taylor", TAYLOR_SIG)


@njit(**NUMBA_OPTIONS)
def lk_log_prob(lk, y, f):
    """alpha log p(y | f)."""
    return lk[HANDLE_ALPHA] * _call_log_prob(lk[HANDLE_LOG_PROB], (params_pointer(lk[HANDLE_PARAMS]), y, f))


@njit(**NUMBA_OPTIONS)
def lk_dlog_prob(lk, y, f):
    """(d/df, d^2/df^2) of alpha log p(y | f)."""
    out = stack_buffer(2)
    _call_dlog_prob(lk[HANDLE_DLOG_PROB], (params_pointer(lk[HANDLE_PARAMS]), y, f, out))
    return lk[HANDLE_ALPHA] * out[0], lk[HANDLE_ALPHA] * out[1]


@njit(**NUMBA_OPTIONS)
def lk_starts(lk, y, m, v):
    """Up to three points near the modes of the tilted density (NaN = unused)."""
    out = stack_buffer(3)
    _call_starts(lk[HANDLE_STARTS], (params_pointer(lk[HANDLE_PARAMS]), y, m, v, out))
    return out[0], out[1], out[2]


@njit(**NUMBA_OPTIONS)
def lk_kink(lk, y):
    """The point where log p(y | f) is not smooth, or NaN."""
    if lk[HANDLE_SMOOTH] != 0.0:  # the default, no_kink
        return np.nan
    return _call_kink(lk[HANDLE_KINK], (params_pointer(lk[HANDLE_PARAMS]), y))


@njit(**NUMBA_OPTIONS)
def lk_taylor(lk, y, f, out):
    """Taylor coefficients of alpha log p(y | f + t) in t into ``out`` (TAYLOR_TERMS + 1 doubles);
    returns how many (0: the likelihood offers none here)."""
    if lk[HANDLE_HAS_TAYLOR] == 0.0:
        return 0
    count = int(_call_taylor(lk[HANDLE_TAYLOR], (params_pointer(lk[HANDLE_PARAMS]), y, f, out)))
    if count > TAYLOR_TERMS + 1:  # a kernel past the documented limit: not used
        return 0
    for k in range(count):
        out[k] *= lk[HANDLE_ALPHA]
    return count


@njit(**NUMBA_OPTIONS)
def lk_moments(lk, y, m, v):
    """(available, log Z, mean, var) of the tilted distribution in closed form (never for alpha != 1)."""
    if lk[HANDLE_ALPHA] != 1.0:
        return False, np.nan, np.nan, np.nan
    out = stack_buffer(3)
    ok = _call_moments(lk[HANDLE_MOMENTS], (params_pointer(lk[HANDLE_PARAMS]), y, m, v, out))
    if ok == 0.0:
        return False, np.nan, np.nan, np.nan
    return True, out[0], out[1], out[2]


@njit(**NUMBA_OPTIONS)
def log_prob_batch(lk, y, f):
    """lk_log_prob elementwise over 1-D arrays."""
    out = np.empty(y.size)
    for i in range(y.size):
        out[i] = lk_log_prob(lk, y[i], f[i])
    return out


@njit(**NUMBA_OPTIONS)
def dlog_prob_batch(lk, y, f):
    """lk_dlog_prob elementwise over 1-D arrays: rows d1, d2."""
    out = np.empty((2, y.size))
    for i in range(y.size):
        out[0, i], out[1, i] = lk_dlog_prob(lk, y[i], f[i])
    return out
