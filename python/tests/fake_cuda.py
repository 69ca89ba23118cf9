"""A stand-in for the CUDA driver, so that the GPU path's plumbing runs on a machine without a GPU:
device memory is a shared-memory file (an IPC handle names it, so peers in other processes map it),
copies are memmove, and a launch is recorded (kernel, grid, block, the argument block) and, in a
group of one rank, does what the kernel would: copies send to recv. ``install_nccl`` stands in for
NCCL the same way (a communicator that records its calls). Nothing here ships."""

import ctypes
import mmap
import os
import struct

import numpy as np

_state = {"maps": {}, "n": 0, "keep": [], "launches": []}


def _map(path, size):
    fd = os.open(path, os.O_RDWR)
    try:
        mm = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    _state["keep"].append(mm)
    return base


def install(uuid, peers=""):
    """Replaces gpucoll.gpu._driver's calls; ``uuid`` names this rank's fake GPU. Returns the list
    the launches are recorded in."""
    from gpucoll import _channel
    from gpucoll.gpu import _driver as d
    abi = {}
    asked = _channel.Channel.device_abi

    def device_abi(self):  # the layout the executor sends, kept for reading the argument blocks
        abi.update(asked(self))
        return dict(abi)
    _channel.Channel.device_abi = device_abi

    class Lib:
        @staticmethod
        def cuCtxSynchronize():
            return 0

    def malloc(n):
        # An anonymous file, named for peers by this process's descriptor of it: nothing is left in
        # /dev/shm, and its memory goes with the last process that maps it.
        fd = os.memfd_create("gpucoll-fake-%d" % _state["n"])
        _state["n"] += 1
        os.ftruncate(fd, n + 4096)
        path = "/proc/%d/fd/%d" % (os.getpid(), fd)
        base = _map(path, n + 4096)
        aligned = (base + 4095) & ~4095
        _state["maps"][aligned] = (path, aligned - base, n + 4096, fd)
        return aligned

    def free(p):
        entry = _state["maps"].pop(p, None)
        if entry:
            os.close(entry[3])

    def ipc_handle(p):
        path, off, size, _ = _state["maps"][p]
        return ("%s|%d|%d" % (path, off, size)).encode().ljust(64, b"\0")

    def ipc_open(h):
        path, off, size = h.rstrip(b"\0").decode().split("|")
        return _map(path, int(size)) + int(off)

    def host_mapped(n):
        buf = ctypes.create_string_buffer(n)
        _state["keep"].append(buf)
        return ctypes.addressof(buf), ctypes.addressof(buf)

    def memset32(dst, value, words):
        np.ctypeslib.as_array((ctypes.c_uint32 * words).from_address(dst)).fill(value)

    def launch(fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        args = ctypes.string_at(params[0], abi["ARGS_SIZE"])
        epoch, send, recv, count = struct.unpack_from("<QQQQ", args, abi["ARGS_OFFSET_EPOCH"])
        rank, nranks = struct.unpack_from("<ii", args, abi["ARGS_OFFSET_RANK"])
        dtype, op, root = struct.unpack_from("<iii", args, abi["ARGS_OFFSET_DTYPE"])
        timeout, = struct.unpack_from("<Q", args, abi["ARGS_OFFSET_TIMEOUT_NS"])
        peers = struct.unpack_from("<%dQ" % nranks, args, abi["ARGS_OFFSET_PEERS"])
        _state["launches"].append(dict(kernel=fn, grid=gx, block=bx, epoch=epoch, count=count, rank=rank,
                                       nranks=nranks, dtype=dtype, op=op, root=root, timeout=timeout,
                                       peers=peers))
        if nranks == 1 and send != recv:
            size = (4, 8, 2, 2, 4, 8, 1, 1)[dtype]
            ctypes.memmove(recv, send, count * size)
        return 0

    fakes = {
        "lib": lambda: Lib,
        "use_device": lambda o: None,
        "device_of": lambda p: 0,
        "facts": lambda o: {"gpu.uuid": uuid, "gpu.pciBusId": "0000:%s:00.0" % uuid[-2:], "gpu.device": "0",
                            "gpu.computeCapability": "90", "gpu.multiprocessors": "132", "gpu.name": "fake",
                            "gpu.visibleCount": "1", "gpu.peers": peers, "cuda.driverVersion": "13000",
                            "nccl.version": "0", "nccl.problem": "a Python process launches our kernels only"},
        "malloc": malloc, "free": free, "host_mapped": host_mapped, "free_host": lambda p: None,
        "memset8": lambda dst, v, n: ctypes.memset(dst, v, n), "memset32": memset32,
        "to_device": lambda dst, b: ctypes.memmove(dst, bytes(b), len(b)),
        "from_device": lambda src, n: ctypes.string_at(src, n),
        "copy_to_host_async": lambda h, s, n, st: ctypes.memmove(h, s, n),
        "copy_to_device_async": lambda d, h, n, st: ctypes.memmove(d, h, n),
        "copy_async": lambda d, s, n, st: ctypes.memmove(d, s, n),
        "synchronize": lambda st: None,
        "is_capturing": lambda st: False,
        "ipc_handle": ipc_handle, "ipc_open": ipc_open, "ipc_close": lambda p: None,
        "load_module": lambda image: len(image),
        "function": lambda module, name: name,
        "launcher": lambda: launch,
    }
    for name, fn in fakes.items():
        setattr(d, name, fn)
    _state["launches"].clear()
    return _state["launches"]


class FakeCudaArray:
    """A GPU array by its __cuda_array_interface__ over host memory (``host``, a NumPy array)."""

    def __init__(self, host):
        self.host = np.ascontiguousarray(host)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.host.shape, "typestr": self.host.dtype.str, "strides": None,
                "data": (self.host.ctypes.data, False), "version": 3, "stream": 1}


def install_nccl(version=22809):
    """Replaces gpucoll.gpu._nccl's binding: this process reports NCCL ``version`` and its group's
    communicator records the unique id it was formed from and every call. Returns the list of
    communicators formed."""
    from gpucoll.gpu import _nccl

    formed = []

    class FakeNcclMember:
        def __init__(self, unique_id, rank, size, device, timeout_s):
            self.unique_id, self.rank, self.size, self.timeout_s = unique_id, rank, size, timeout_s
            self.calls = []
            self.broken = None
            formed.append(self)

        def describe(self):
            return "NCCL %d (fake), rank %d of %d" % (version, self.rank, self.size)

        def call(self, coll, send, recv, count, code, op, root, stream):
            self.calls.append(dict(coll=coll, count=count, code=code, op=op, root=root, stream=stream,
                                   in_place=send == recv))

        def wait(self, query, stream):
            pass

        def close(self):
            pass

    def facts(environ):
        out = {"nccl.version": str(version)}
        out.update({"env." + k: v for k, v in environ.items() if k.startswith("NCCL_")})
        return out

    _nccl.facts = facts
    _nccl.new_unique_id = lambda: os.urandom(128)
    _nccl.NcclMember = FakeNcclMember
    return formed
