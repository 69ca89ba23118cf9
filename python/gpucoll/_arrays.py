"""Arrays in, arrays out: NumPy arrays, torch CPU tensors and anything with DLPack or the buffer
protocol become a NumPy view of the same memory and a wire type code; results go back in the
caller's kind (a torch tensor for a torch input)."""

import numpy as np

from . import _wire as w
from .errors import InvalidArgumentError, UnsupportedArrayError

# The one dtype table: NumPy's name of each type the package passes -> its wire type (DataType's
# name). bfloat16 is NumPy's through ml_dtypes only, so it travels as 2-byte words.
DTYPES = {"float32": "FLOAT32", "float64": "FLOAT64", "float16": "FLOAT16", "bfloat16": "BFLOAT16",
          "int32": "INT32", "int64": "INT64", "int8": "INT8", "uint8": "UINT8"}
_CODES = {np.dtype(n): w.DATA_TYPES.index(t) for n, t in DTYPES.items() if n != "bfloat16"}
BFLOAT16 = w.DATA_TYPES.index(DTYPES["bfloat16"])
SUPPORTED = ", ".join(DTYPES)

_GPU = ("gpucoll: %s is on %s; the Python package takes CPU arrays (NumPy, torch CPU tensors, DLPack on the"
        " CPU) and GPU arrays (torch CUDA tensors, CuPy, __cuda_array_interface__)")


class Adapted:
    """A caller's array as a NumPy view of its memory (``array``), its wire type and how to give a
    new NumPy result back in the caller's kind (``wrap``)."""

    __slots__ = ("array", "code", "wrap", "result_dtype")

    def __init__(self, array, code, wrap, result_dtype):
        self.array = array
        self.code = code
        self.wrap = wrap
        self.result_dtype = result_dtype  # the NumPy dtype that ``wrap`` turns into the caller's

    @property
    def count(self):
        return self.array.size

    @property
    def shape(self):
        return self.array.shape

    def bytes(self):
        return self.array.reshape(-1).view(np.uint8)


def _torch_view(t, what):
    if t.device.type != "cpu":
        raise UnsupportedArrayError(_GPU % (what, t.device))
    import torch
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy(), BFLOAT16, lambda a: torch.from_numpy(a).view(torch.bfloat16)
    try:
        a = t.numpy()
    except TypeError:
        raise UnsupportedArrayError("gpucoll: %s has dtype %s; supported: %s" % (what, t.dtype, SUPPORTED))
    return a, None, torch.from_numpy


def adapt(x, what, writable=False):
    """``x`` as an :class:`Adapted`, or a clear error naming ``what`` ("send", "recv")."""
    wrap = _same
    code = None
    result_dtype = None
    mod = type(x).__module__ or ""
    if isinstance(x, np.ndarray):
        a = x
    elif mod.startswith("torch"):
        a, code, wrap = _torch_view(x, what)
    elif hasattr(x, "__dlpack_device__"):
        device = x.__dlpack_device__()
        if int(device[0]) != 1:  # kDLCPU
            raise UnsupportedArrayError(_GPU % (what, "DLPack device %s" % (tuple(device),)))
        a = np.from_dlpack(x)
    elif writable:
        raise UnsupportedArrayError("gpucoll: %s is a %s; the result goes into a NumPy array, a torch tensor or"
                                    " a DLPack array" % (what, type(x).__name__))
    else:
        a = np.asarray(x)
    if code is None:
        code = _CODES.get(a.dtype)
        if code is None and a.dtype.name == "bfloat16":
            code, result_dtype, a = BFLOAT16, a.dtype, a.view(np.int16)
        if code is None:
            raise UnsupportedArrayError("gpucoll: %s has dtype %s; supported: %s" % (what, a.dtype, SUPPORTED))
    if not a.flags.c_contiguous:
        raise InvalidArgumentError("gpucoll: %s is not contiguous (shape %s, strides %s): pass"
                                   " np.ascontiguousarray(x) or tensor.contiguous()" % (what, a.shape, a.strides))
    if writable and not a.flags.writeable:
        raise InvalidArgumentError("gpucoll: %s is read-only: the result is written into it" % what)
    return Adapted(a, code, wrap, result_dtype or a.dtype)


def _same(a):
    return a


def new_result(template, shape):
    """A new result of ``shape`` and the template's type: what the call fills (an :class:`Adapted`)
    and the object to return (the same memory in the template's kind)."""
    a = np.empty(shape, template.result_dtype)
    return Adapted(a, template.code, template.wrap, template.result_dtype), template.wrap(a)
