"""The CUDA driver calls the Python door makes, through ctypes on libcuda (no toolkit, no second
runtime): the device of an array, the workspace and its IPC handle, the kernel image, launches and
copies on the caller's stream (NCCL is ``_nccl``'s). Every call runs in the device's primary context, the one torch and
CuPy use."""

import ctypes
import threading

from ..errors import CollectiveError

_lib = None
_lock = threading.Lock()
_contexts = {}

CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
CU_MEMHOSTALLOC_PORTABLE = 1
CU_MEMHOSTALLOC_DEVICEMAP = 2
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102

class _IpcHandle(ctypes.Structure):
    """CUipcMemHandle: 64 bytes passed by value (a ctypes array would pass a pointer)."""
    _fields_ = [("reserved", ctypes.c_char * 64)]


_P = ctypes.c_void_p
_U64 = ctypes.c_uint64
_I = ctypes.c_int
_U = ctypes.c_uint
_SZ = ctypes.c_size_t

_SIGNATURES = {
    "cuInit": [_U],
    "cuDriverGetVersion": [ctypes.POINTER(_I)],
    "cuDeviceGet": [ctypes.POINTER(_I), _I],
    "cuDeviceGetCount": [ctypes.POINTER(_I)],
    "cuDeviceGetAttribute": [ctypes.POINTER(_I), _I, _I],
    "cuDeviceGetPCIBusId": [ctypes.c_char_p, _I, _I],
    "cuDeviceGetUuid_v2": [ctypes.c_char_p, _I],
    "cuDeviceGetName": [ctypes.c_char_p, _I, _I],
    "cuDeviceCanAccessPeer": [ctypes.POINTER(_I), _I, _I],
    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(_P), _I],
    "cuCtxSetCurrent": [_P],
    "cuPointerGetAttribute": [_P, _I, _U64],
    "cuMemAlloc_v2": [ctypes.POINTER(_U64), _SZ],
    "cuMemFree_v2": [_U64],
    "cuMemHostAlloc": [ctypes.POINTER(_P), _SZ, _U],
    "cuMemHostGetDevicePointer_v2": [ctypes.POINTER(_U64), _P, _U],
    "cuMemFreeHost": [_P],
    "cuMemsetD8_v2": [_U64, ctypes.c_ubyte, _SZ],
    "cuMemsetD32_v2": [_U64, _U, _SZ],
    "cuMemcpyHtoD_v2": [_U64, _P, _SZ],
    "cuMemcpyDtoH_v2": [_P, _U64, _SZ],
    "cuMemcpyDtoHAsync_v2": [_P, _U64, _SZ, _P],
    "cuMemcpyHtoDAsync_v2": [_U64, _P, _SZ, _P],
    "cuMemcpyDtoDAsync_v2": [_U64, _U64, _SZ, _P],
    "cuStreamSynchronize": [_P],
    "cuStreamQuery": [_P],
    "cuStreamIsCapturing": [_P, ctypes.POINTER(_I)],
    "cuCtxSynchronize": [],
    "cuIpcGetMemHandle": [ctypes.c_char_p, _U64],
    "cuIpcOpenMemHandle_v2": [ctypes.POINTER(_U64), _IpcHandle, _U],
    "cuIpcCloseMemHandle": [_U64],
    "cuModuleLoadData": [ctypes.POINTER(_P), ctypes.c_char_p],
    "cuModuleGetFunction": [ctypes.POINTER(_P), _P, ctypes.c_char_p],
    "cuModuleUnload": [_P],
    "cuLaunchKernel": [_P, _U, _U, _U, _U, _U, _U, _U, _P, ctypes.POINTER(_P), ctypes.POINTER(_P)],
    "cuGetErrorString": [_I, ctypes.POINTER(ctypes.c_char_p)],
}


class CudaError(CollectiveError):
    """A CUDA driver call failed (the call, the code and the driver's words)."""


def lib():
    """libcuda, initialised once; a clear error where there is none."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                try:
                    cuda = ctypes.CDLL("libcuda.so.1")
                except OSError as e:
                    raise CudaError("gpucoll: GPU arrays need the CUDA driver (libcuda.so.1), which this process"
                                    " cannot load: %s" % e)
                for name, args in _SIGNATURES.items():
                    fn = getattr(cuda, name, None)
                    if fn is not None:
                        fn.argtypes = args
                        fn.restype = _I
                fl = getattr(cuda, "cuFuncLoad", None)
                if fl is not None:
                    fl.argtypes, fl.restype = [_P], _I
                check(cuda.cuInit(0), "cuInit")
                _lib = cuda
    return _lib


def check(rc, what):
    if rc != 0:
        msg = ctypes.c_char_p()
        try:
            _lib.cuGetErrorString(rc, ctypes.byref(msg))
        except Exception:  # noqa: BLE001 - the code alone still says what failed
            pass
        raise CudaError("gpucoll: %s failed: CUDA error %d (%s)" % (
            what, rc, msg.value.decode() if msg.value else "unknown"))


def use_device(ordinal):
    """Makes the device's primary context current on this thread (torch's and CuPy's context)."""
    cu = lib()
    ctx = _contexts.get(ordinal)
    if ctx is None:
        dev = _I()
        check(cu.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
        c = _P()
        check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(c), dev), "cuDevicePrimaryCtxRetain")
        ctx = _contexts[ordinal] = c
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def device_of(pointer):
    """The device ordinal of a device pointer."""
    out = _I()
    check(lib().cuPointerGetAttribute(ctypes.byref(out), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer),
          "cuPointerGetAttribute(device ordinal)")
    return out.value


def facts(ordinal):
    """The facts the group's route reads (the GPU backend's keys), for device ``ordinal``."""
    cu = lib()

    def attr(a):
        v = _I()
        check(cu.cuDeviceGetAttribute(ctypes.byref(v), a, ordinal), "cuDeviceGetAttribute")
        return v.value

    bus = ctypes.create_string_buffer(32)
    check(cu.cuDeviceGetPCIBusId(bus, 32, ordinal), "cuDeviceGetPCIBusId")
    raw = ctypes.create_string_buffer(16)
    check(cu.cuDeviceGetUuid_v2(raw, ordinal), "cuDeviceGetUuid")
    u = raw.raw.hex()
    uuid = "GPU-%s-%s-%s-%s-%s" % (u[0:8], u[8:12], u[12:16], u[16:20], u[20:32])
    name = ctypes.create_string_buffer(256)
    check(cu.cuDeviceGetName(name, 256, ordinal), "cuDeviceGetName")
    version = _I()
    check(cu.cuDriverGetVersion(ctypes.byref(version)), "cuDriverGetVersion")
    count = _I()
    check(cu.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    peers = []
    for other in range(count.value):
        if other == ordinal:
            continue
        ok = _I()
        check(cu.cuDeviceCanAccessPeer(ctypes.byref(ok), ordinal, other), "cuDeviceCanAccessPeer")
        obus = ctypes.create_string_buffer(32)
        check(cu.cuDeviceGetPCIBusId(obus, 32, other), "cuDeviceGetPCIBusId")
        peers.append("%s|%d|%d" % (obus.value.decode().lower(), ok.value, ok.value))
    return {
        "gpu.uuid": uuid,
        "gpu.pciBusId": bus.value.decode().lower(),
        "gpu.device": str(ordinal),
        "gpu.computeCapability": str(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10
                                     + attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
        "gpu.multiprocessors": str(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)),
        "gpu.name": name.value.decode(),
        "gpu.visibleCount": str(count.value),
        "gpu.peers": ",".join(peers),
        "gpu.vmm": str(attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)),
        "cuda.driverVersion": str(version.value),
    }


def malloc(nbytes):
    p = _U64()
    check(lib().cuMemAlloc_v2(ctypes.byref(p), nbytes), "cuMemAlloc(%d bytes)" % nbytes)
    return p.value


def free(pointer):
    lib().cuMemFree_v2(pointer)


def host_mapped(nbytes):
    """Pinned host memory the device writes (the error record, the abort word): (host, device) pointers."""
    h = _P()
    check(lib().cuMemHostAlloc(ctypes.byref(h), nbytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
          "cuMemHostAlloc")
    ctypes.memset(h, 0, nbytes)
    d = _U64()
    check(lib().cuMemHostGetDevicePointer_v2(ctypes.byref(d), h, 0), "cuMemHostGetDevicePointer")
    return h.value, d.value


def free_host(pointer):
    lib().cuMemFreeHost(ctypes.c_void_p(pointer))


def memset8(dst, value, n):
    check(lib().cuMemsetD8_v2(dst, value, n), "cuMemsetD8")


def memset32(dst, value, words):
    check(lib().cuMemsetD32_v2(dst, value, words), "cuMemsetD32")


def to_device(dst, host_bytes):
    buf = ctypes.create_string_buffer(bytes(host_bytes), len(host_bytes))
    check(lib().cuMemcpyHtoD_v2(dst, buf, len(host_bytes)), "cuMemcpyHtoD")


def from_device(src, n):
    buf = ctypes.create_string_buffer(n)
    check(lib().cuMemcpyDtoH_v2(buf, src, n), "cuMemcpyDtoH")
    return buf.raw


def copy_to_host_async(host_pointer, src, n, stream):
    check(lib().cuMemcpyDtoHAsync_v2(host_pointer, src, n, stream), "cuMemcpyDtoHAsync")


def copy_to_device_async(dst, host_pointer, n, stream):
    check(lib().cuMemcpyHtoDAsync_v2(dst, host_pointer, n, stream), "cuMemcpyHtoDAsync")


def copy_async(dst, src, n, stream):
    check(lib().cuMemcpyDtoDAsync_v2(dst, src, n, stream), "cuMemcpyDtoDAsync")


def is_capturing(stream):
    status = _I()
    check(lib().cuStreamIsCapturing(stream, ctypes.byref(status)), "cuStreamIsCapturing")
    return status.value != 0


def stream_query(stream):
    """cuStreamQuery's code: 0 when the stream has drained, 600 (not ready) while it runs."""
    return lib().cuStreamQuery(stream)


def synchronize(stream):
    check(lib().cuStreamSynchronize(stream), "cuStreamSynchronize")


def ipc_handle(pointer):
    h = ctypes.create_string_buffer(64)
    check(lib().cuIpcGetMemHandle(h, pointer), "cuIpcGetMemHandle")
    return h.raw


def ipc_open(handle):
    h = _IpcHandle.from_buffer_copy(handle)
    p = _U64()
    check(lib().cuIpcOpenMemHandle_v2(ctypes.byref(p), h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
          "cuIpcOpenMemHandle")
    return p.value


def ipc_close(pointer):
    lib().cuIpcCloseMemHandle(pointer)


def load_module(image):
    m = _P()
    check(lib().cuModuleLoadData(ctypes.byref(m), image), "cuModuleLoadData")
    return m


def function(module, name):
    """A kernel of the image, loaded now: a kernel loaded lazily at its first launch waits for the
    context to go idle, which a spinning kernel of this rank may not allow in time."""
    f = _P()
    check(lib().cuModuleGetFunction(ctypes.byref(f), module, name.encode()), "cuModuleGetFunction(%s)" % name)
    fl = getattr(_lib, "cuFuncLoad", None)
    if fl is not None:
        check(fl(f), "cuFuncLoad(%s)" % name)
    return f


def launcher():
    """cuLaunchKernel with its argument types set: the per-call path calls it directly."""
    return lib().cuLaunchKernel
