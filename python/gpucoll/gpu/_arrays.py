"""GPU arrays in, GPU arrays out: torch CUDA tensors, CuPy arrays and anything with
``__cuda_array_interface__`` (or DLPack on a CUDA device, through torch) become a device pointer, a
wire type code, the device, the stream their framework would run on, and a way to make a new array
of the same kind."""

import numpy as np

from .. import _wire as w
from .._arrays import SUPPORTED
from ..errors import InvalidArgumentError, UnsupportedArrayError

_BY_NAME = {name.lower(): i for i, name in enumerate(w.DATA_TYPES)}
_NUMPY = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int32": np.int32,
          "int64": np.int64, "int8": np.int8, "uint8": np.uint8, "bfloat16": np.int16}
_SIZES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8, "int8": 1, "uint8": 1}
CU_STREAM_LEGACY = 1


class DeviceArray:
    """A caller's GPU array: ``pointer`` to ``count`` elements of wire type ``code`` on ``device``;
    ``stream`` the one its framework runs on now; ``new(shape)`` an empty array of the same kind."""

    __slots__ = ("obj", "pointer", "count", "code", "itemsize", "device", "stream", "shape", "new", "readonly")

    def __init__(self, obj, pointer, count, code, itemsize, device, stream, shape, new, readonly=False):
        self.obj, self.pointer, self.count, self.code, self.itemsize = obj, pointer, count, code, itemsize
        self.device, self.stream, self.shape, self.new, self.readonly = device, stream, shape, new, readonly

    @property
    def nbytes(self):
        return self.count * self.itemsize

    def host_dtype(self):
        return _NUMPY[w.DATA_TYPES[self.code].lower()]


# Adapters of the in-place allReduce's fast path, by array type (filled when torch is first seen):
# (pointer, count, code, device, stream), or None for anything the general path must check.
FAST = {}
_TORCH_CODES = {}


def _register_torch():
    import torch
    for name, code in _BY_NAME.items():
        dt = getattr(torch, name, None)
        if dt is not None:
            _TORCH_CODES[dt] = code
    # The current stream's raw handle without making a Stream object (what torch's own kernels ask).
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    stream = raw if raw is not None else (lambda i: torch.cuda.current_stream(i).cuda_stream)
    codes = _TORCH_CODES

    def fast(t):
        if not t.is_cuda or not t.is_contiguous():
            return None
        code = codes.get(t.dtype)
        if code is None:
            return None
        i = t.get_device()
        return t.data_ptr(), t.numel(), code, i, stream(i)
    FAST[torch.Tensor] = fast
    FAST[torch.nn.Parameter] = fast


def is_device(x):
    """True for an array this module takes (on a GPU); False for CPU arrays."""
    mod = type(x).__module__ or ""
    if mod.startswith("torch"):
        return getattr(getattr(x, "device", None), "type", "cpu") == "cuda"
    if hasattr(x, "__cuda_array_interface__"):
        return True
    dev = getattr(x, "__dlpack_device__", None)
    return dev is not None and int(dev()[0]) == 2  # kDLCUDA


def _code(name, what):
    code = _BY_NAME.get(name)
    if code is None:
        raise UnsupportedArrayError("gpucoll: %s has dtype %s; supported: %s" % (what, name, SUPPORTED))
    return code


def adapt(x, what, writable=False):
    mod = type(x).__module__ or ""
    if not mod.startswith("torch") and not hasattr(x, "__cuda_array_interface__"):
        try:
            import torch
        except ImportError:
            raise UnsupportedArrayError("gpucoll: %s is a DLPack array on a GPU; pass it as a torch tensor or a"
                                        " CuPy array (torch is not installed here)" % what)
        x = torch.from_dlpack(x)
        mod = "torch"
    if mod.startswith("torch"):
        return _torch(x, what)
    return _cai(x, what, writable)


def _torch(t, what):
    import torch
    if torch.Tensor not in FAST:
        _register_torch()
    name = str(t.dtype).replace("torch.", "")
    code = _code(name, what)
    if not t.is_contiguous():
        raise InvalidArgumentError("gpucoll: %s is not contiguous (shape %s, strides %s): pass tensor.contiguous()"
                                   % (what, tuple(t.shape), tuple(t.stride())))
    dev = t.device
    stream = torch.cuda.current_stream(dev).cuda_stream
    return DeviceArray(t, t.data_ptr(), t.numel(), code, t.element_size(), dev.index, stream, tuple(t.shape),
                       lambda shape: torch.empty(shape, dtype=t.dtype, device=dev))


def _cai(x, what, writable):
    cai = x.__cuda_array_interface__
    shape = tuple(cai["shape"])
    typestr = cai["typestr"]
    dt = np.dtype(typestr)
    name = dt.name
    code = _code(name, what)
    count = int(np.prod(shape)) if shape else 1
    strides = cai.get("strides")
    if strides is not None and count > 1:
        expected, step = [], dt.itemsize
        for n in reversed(shape):
            expected.append(step)
            step *= n
        if tuple(s for s, n in zip(strides, shape) if n > 1) != tuple(
                s for s, n in zip(reversed(expected), shape) if n > 1):
            raise InvalidArgumentError("gpucoll: %s is not contiguous (shape %s, strides %s): pass a contiguous copy"
                                       % (what, shape, tuple(strides)))
    pointer, readonly = cai["data"]
    if writable and readonly:
        raise InvalidArgumentError("gpucoll: %s is read-only: the result is written into it" % what)
    stream = cai.get("stream") or CU_STREAM_LEGACY
    from . import _driver
    if count and not pointer:
        raise UnsupportedArrayError("gpucoll: %s is a GPU array (%s) with a null data pointer"
                                    % (what, type(x).__name__))
    try:
        device = _driver.device_of(pointer) if pointer else -1
    except _driver.CudaError as e:
        raise UnsupportedArrayError("gpucoll: %s is a GPU array (%s), and this process cannot use the GPU: %s"
                                    % (what, type(x).__name__, e))
    new = None
    mod = type(x).__module__ or ""
    if mod.startswith("cupy"):
        import cupy
        stream = cupy.cuda.get_current_stream().ptr or CU_STREAM_LEGACY
        new = lambda s: cupy.empty(s, dtype=dt)  # noqa: E731 - the current device is the array's
    return DeviceArray(x, pointer, count, code, dt.itemsize, device, stream, shape, new, readonly)


def new_result(template, shape, what="recv"):
    if template.new is None:
        raise InvalidArgumentError("gpucoll: pass %s: a result array of a %s cannot be made here (torch tensors and"
                                   " CuPy arrays can)" % (what, type(template.obj).__name__))
    obj = template.new(shape)
    return adapt(obj, what, writable=True), obj
