"""NCCL in the Python process, through CuPy's NCCL module (Cython over the libnccl that CuPy loads,
the one torch's wheel also depends on): this rank's facts for the group's route, and the group's
NCCL communicator, formed from rank 0's unique id and called with raw pointers and stream handles.
The executor decides which calls take NCCL; this module only executes them."""

import threading

from ..errors import CollectiveError, CollectiveTimeoutError, CommunicatorStateError

INSTALL = ("a GPU group across hosts (or of more ranks than our kernels serve) runs on NCCL, which this Python"
           " process reaches through CuPy: pip install cupy-cuda13x (CUDA 13) or cupy-cuda12x (CUDA 12)")

# DataType ordinals (the wire's DATA_TYPES) -> ncclDataType_t
_TYPES = (7, 8, 6, 9, 2, 4, 0, 1)  # FLOAT32 FLOAT64 FLOAT16 BFLOAT16 INT32 INT64 INT8 UINT8
# ReduceOp ordinals (SUM PROD MIN MAX AVG) -> ncclRedOp_t (sum 0, prod 1, max 2, min 3, avg 4)
_OPS = (0, 1, 3, 2, 4)
_SIZES = (4, 8, 2, 2, 4, 8, 1, 1)
NCCL_SUCCESS, NCCL_IN_PROGRESS = 0, 7

_binding = None
_problem = None
_lock = threading.Lock()


def binding():
    """CuPy's NCCL module, or None (``problem()`` says why)."""
    global _binding, _problem
    if _binding is None and _problem is None:
        with _lock:
            if _binding is None and _problem is None:
                try:
                    from cupy.cuda import nccl
                    if not getattr(nccl, "available", True):
                        raise ImportError("CuPy is installed but finds no libnccl")
                    nccl.get_version()
                    _binding = nccl
                except Exception as e:  # noqa: BLE001 - any failure means: no NCCL here, say why
                    _problem = "no NCCL in this Python (%s: %s); %s" % (type(e).__name__, e, INSTALL)
    return _binding


def problem():
    binding()
    return _problem


def library_path():
    """The libnccl this process mapped (read from /proc/self/maps), or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libnccl" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


def facts(environ):
    """The NCCL facts the group's route reads: the version (0 without NCCL, with the reason and what to
    install) and the NCCL variables this process runs with (the Zero-CTA prediction reads them)."""
    out = {}
    nccl = binding()
    if nccl is None:
        out["nccl.version"] = "0"
        out["nccl.problem"] = _problem
    else:
        out["nccl.version"] = str(nccl.get_version())
    for key, value in environ.items():
        if key.startswith("NCCL_") or key == "CUDA_VISIBLE_DEVICES":
            out["env." + key] = value.replace("\n", " ")
    return out


def new_unique_id():
    """Rank 0's unique id as 128 bytes (its bootstrap listens from now on)."""
    return bytes(b & 0xFF for b in binding().get_unique_id())


class NcclMember:
    """This rank's NCCL communicator of the group. Calls are enqueued on the caller's stream; an
    asynchronous NCCL error (a peer that died) is found by a watchdog thread, which aborts the
    communicator so that no kernel waits forever, and is raised at the next call."""

    def __init__(self, unique_id, rank, size, device, timeout_s):
        nccl = binding()
        if nccl is None:
            raise CollectiveError("gpucoll: " + _problem)
        import cupy
        cupy.cuda.runtime.setDevice(device)
        self._nccl = nccl
        self.rank, self.size, self.timeout_s = rank, size, timeout_s
        try:  # CuPy takes the id as the bytes its get_unique_id returns
            self.comm = nccl.NcclCommunicator(size, bytes(unique_id), rank)
        except TypeError:  # older CuPy releases: a tuple of signed chars (ncclUniqueId is char[128])
            self.comm = nccl.NcclCommunicator(size, tuple(b - 256 if b > 127 else b for b in unique_id), rank)
        self.version = nccl.get_version()
        self.library = library_path()
        self.broken = None
        self._done = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="gpucoll-nccl-watchdog", daemon=True)
        self._watchdog.start()
        c = self.comm
        self._all_reduce, self._all_gather, self._reduce_scatter = c.allReduce, c.allGather, c.reduceScatter
        self._broadcast, self._send, self._recv = c.broadcast, c.send, c.recv

    def describe(self):
        return "NCCL %d (%s), rank %d of %d, through CuPy's NCCL module" % (
            self.version, self.library or "libnccl path unknown", self.rank, self.size)

    def _watch(self):
        while not self._done.wait(0.1):
            try:
                self.comm.check_async_error()
            except Exception as e:  # noqa: BLE001 - NCCL's own words go into the error
                self._abort("NCCL asynchronous error: %s (a peer of this group died or cannot be reached)" % e)
                return

    def _abort(self, why):
        if self.broken is None:
            self.broken = "gpucoll: %s; communicator aborted" % why
            try:
                self.comm.abort()
            except Exception:  # noqa: BLE001 - already gone
                pass

    def call(self, coll, send, recv, count, code, op, root, stream):
        """One collective of ``count`` elements (per peer for data movement) on ``stream``."""
        if self.broken:
            raise CollectiveError(self.broken)
        t = _TYPES[code]
        try:
            if coll == 0:
                self._all_reduce(send, recv, count, t, _OPS[op], stream)
            elif coll == 1:
                self._all_gather(send, recv, count, t, stream)
            elif coll == 2:
                self._reduce_scatter(send, recv, count, t, _OPS[op], stream)
            elif coll == 5:
                self._broadcast(send, recv, count, t, root, stream)
            elif coll == 3:
                step = count * _SIZES[code]
                self._nccl.groupStart()
                try:
                    for p in range(self.size):
                        self._send(send + p * step, count, t, p, stream)
                        self._recv(recv + p * step, count, t, p, stream)
                finally:
                    self._nccl.groupEnd()
            else:
                raise CommunicatorStateError("gpucoll: collective %d has no NCCL call here" % coll)
        except self._nccl.NcclError as e:
            self._abort("NCCL failed: %s" % e)
            raise CollectiveError(self.broken)

    def all_reduce_in_place(self, pointer, count, code, op, stream):
        """The training loop's call with nothing to decide: straight to NCCL."""
        try:
            self._all_reduce(pointer, pointer, count, _TYPES[code], _OPS[op], stream)
        except self._nccl.NcclError as e:
            self._abort("NCCL failed: %s" % e)
            raise CollectiveError(self.broken)

    def wait(self, query, stream):
        """Waits for ``stream`` (``query(stream)`` is cuStreamQuery's code) up to the group's timeout:
        past it, or on an asynchronous error, the communicator is aborted and the wait raises."""
        import time
        deadline = time.monotonic() + self.timeout_s
        pause = 0.0
        while True:
            if self.broken:
                raise CollectiveError(self.broken)
            rc = query(stream)
            if rc == 0:
                return
            if rc != 600:  # CUDA_ERROR_NOT_READY
                self._abort("CUDA error %d while waiting for the stream" % rc)
                raise CollectiveError(self.broken)
            if time.monotonic() > deadline:
                self._abort("the stream was still busy after %g s: a peer did not join the collective" % self.timeout_s)
                raise CollectiveTimeoutError(self.broken)
            time.sleep(pause)
            pause = min(0.001, pause + 0.00005)

    def close(self):
        self._done.set()
        if self.comm is not None:
            try:
                if self.broken is None:
                    self.comm.destroy()
            finally:
                self.comm = None
