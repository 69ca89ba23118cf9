"""The communicator of a Python barrier task: the Java API's collectives in Python's terms, each
call one request to the task's member on its executor (``_channel``)."""

import contextlib
import functools
import json
import struct

import numpy as np

from . import _arrays as host_arrays
from . import _wire as w
from ._arrays import _CODES, DTYPES, adapt
from .gpu import _arrays as gpu_arrays
from .errors import CollectiveError, CommunicatorStateError, InvalidArgumentError

_ALIGN = w.BUFFER_ALIGN
_OPS = {name.lower(): i for i, name in enumerate(w.REDUCE_OPS)}
# MAXLOC / MINLOC's value and index dtypes: those of the pair types (PairType's "VALUE_INDEX" names).
_PAIR_VALUES = {np.dtype(n): t for n, t in DTYPES.items() if any(p.startswith(t + "_") for p in w.PAIR_TYPES)}
_PAIR_INDICES = {np.dtype(n): t for n, t in DTYPES.items() if any(p.endswith("_" + t) for p in w.PAIR_TYPES)}


def _align(n):
    return (n + _ALIGN - 1) & ~(_ALIGN - 1)


def _kit(x):
    """The adapters for ``x``: the GPU's for arrays on a GPU (our kernels in this process), else the host's."""
    return gpu_arrays if gpu_arrays.is_device(x) else host_arrays


def _code(table, name, value):
    if isinstance(value, str):
        key = value.upper()
    else:
        key = getattr(value, "name", str(value)).upper()
    try:
        return table.index(key)
    except ValueError:
        raise InvalidArgumentError("gpucoll: %s %r is not one of %s" % (name, value, ", ".join(t.lower() for t in table)))


class _Call:
    """One call record and the copies around it: ``send`` bytes go in, ``out`` bytes come back
    (only its ``blocks``, (offset, bytes) pairs, where the call writes part of its receive region)."""

    __slots__ = ("coll", "code", "op", "flags", "count", "root", "send", "in_place", "recv_bytes", "out",
                 "counts", "soff", "roff", "voff", "problem", "after", "blocks")

    def __init__(self, coll, code, op=0, count=0, root=0, send=None, recv_bytes=0, out=None, in_place=False,
                 counts=None, problem=None, after=None, blocks=None):
        self.coll, self.code, self.op, self.count, self.root = coll, code, op, count, root
        self.after = after  # run once ``out`` holds the result (a staged GPU result's copy back)
        self.send, self.recv_bytes, self.out, self.in_place, self.counts = send, recv_bytes, out, in_place, counts
        self.blocks = blocks
        self.problem = problem
        self.flags = w.FLAG_REFUSED if problem else 0
        if problem:  # every rank fails alike: the call goes out refused, its reason in place of its data
            self.send = np.frombuffer(problem.encode(), np.uint8)
            self.out = self.counts = self.blocks = None
            self.recv_bytes = 0
            self.in_place = False


def _refusing(code):
    """A collective whose own checks refused its arguments here still goes out, refused, so that
    every rank fails at once instead of waiting for this one (as the Java API's checks do)."""
    def wrap(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except InvalidArgumentError as e:
                if not getattr(e, "sent", False) and self._batch is None and not self.closed:
                    try:
                        self._run([_Call(code, 0, problem=str(e))], group=False)
                    except CollectiveError:
                        pass  # the peers' errors say that this rank refused; this rank raises its reason
                raise
        return call
    return wrap


class Communicator:
    """This task's member of its group. Arrays are NumPy arrays, torch CPU tensors or anything with
    DLPack on the CPU; results are bit-identical on every rank. One thread drives it at a time."""

    def __init__(self, channel, comm_id, rank, size, backend):
        self._ch = channel
        self._id = comm_id
        self.rank = rank
        self.size = size
        self.backend = backend
        self._batch = None
        self._closed = False
        self._device = None  # the member on this rank's GPU, formed at the first call of GPU arrays

    def __repr__(self):
        return "gpucoll.Communicator(rank=%d, size=%d, backend=%r)" % (self.rank, self.size, self.backend)

    # ---- the collectives ----

    def all_reduce(self, send, recv=None, op="sum"):
        """recv[i] = op over ranks of send[i]; in place (into ``send``) without ``recv``. Returns the result."""
        # The training loop's call, a contiguous writable NumPy array reduced in place, skips the
        # general path's adapters: the same record, a third of the Python time.
        if (recv is None and type(send) is np.ndarray and self._batch is None and not self._closed
                and send.flags.c_contiguous and send.flags.writeable):
            code = _CODES.get(send.dtype)
            opc = _OPS.get(op)
            if code is not None and opc is not None:
                self._ch.in_place(w.ALL_REDUCE, code, opc, send.size, send.reshape(-1).view(np.uint8), self._id)
                return send
        # The same for a GPU tensor whose route is our kernel: launched here, no executor round trip.
        fast = gpu_arrays.FAST.get(type(send))
        if fast is not None and recv is None and self._device is not None and self._batch is None:
            a = fast(send)
            opc = _OPS.get(op)
            if (a is not None and opc is not None and a[3] == self._device.device and not self._closed
                    and self._device.all_reduce_in_place(a[0], a[1], a[2], opc, a[4])):
                return send
        return self._all_reduce(send, recv, op)

    @_refusing(w.ALL_REDUCE)
    def _all_reduce(self, send, recv, op):
        opc = _code(w.REDUCE_OPS, "op", op)
        kit = _kit(send)
        s = kit.adapt(send, "send", writable=recv is None)
        r = s if recv is None else kit.adapt(recv, "recv", writable=True)
        self._same_type(s, r)
        self._fits(r, s.count)
        if kit is gpu_arrays:
            self._on_device(0, s, r, s.count, opc)
        else:
            self._submit(_Call(w.ALL_REDUCE, s.code, opc, s.count, send=s.bytes(), recv_bytes=s.bytes().nbytes,
                               out=r.bytes(), in_place=r is s))
        return send if recv is None else recv

    @_refusing(w.ALL_GATHER)
    def all_gather(self, send, recv=None):
        """Every rank's send in rank order: shape (size, *send.shape) when ``recv`` is not given."""
        kit = _kit(send)
        s = kit.adapt(send, "send")
        out, result = self._result(s, recv, (self.size,) + s.shape, kit)
        self._same_type(s, out)
        self._fits(out, s.count * self.size)
        if kit is gpu_arrays:
            self._on_device(1, s, out, s.count)
        else:
            self._submit(_Call(w.ALL_GATHER, s.code, 0, s.count, send=s.bytes(),
                               recv_bytes=s.bytes().nbytes * self.size, out=out.bytes()))
        return result

    @_refusing(w.REDUCE_SCATTER)
    def reduce_scatter(self, send, recv=None, op="sum"):
        """Block ``rank`` of the reduction over ranks of send (send.size a multiple of size)."""
        opc = _code(w.REDUCE_OPS, "op", op)
        kit = _kit(send)
        s = kit.adapt(send, "send")
        count = self._blocks(s)
        out, result = self._result(s, recv, self._block_shape(s, count), kit)
        self._same_type(s, out)
        self._fits(out, count)
        if kit is gpu_arrays:
            self._on_device(2, s, out, count, opc)
        else:
            self._submit(_Call(w.REDUCE_SCATTER, s.code, opc, count, send=s.bytes(),
                               recv_bytes=count * s.array.itemsize, out=out.bytes()))
        return result

    @_refusing(w.ALL_TO_ALL)
    def all_to_all(self, send, recv=None):
        """Block r of the result = block ``rank`` of rank r's send (send.size a multiple of size)."""
        kit = _kit(send)
        s = kit.adapt(send, "send")
        count = self._blocks(s)
        out, result = self._result(s, recv, s.shape, kit)
        self._same_type(s, out)
        self._fits(out, s.count)
        if kit is gpu_arrays:
            self._on_device(3, s, out, count)
        else:
            self._submit(_Call(w.ALL_TO_ALL, s.code, 0, count, send=s.bytes(), recv_bytes=s.bytes().nbytes,
                               out=out.bytes()))
        return result

    @_refusing(w.ALL_TO_ALLV)
    def all_to_allv(self, send, send_counts, recv_counts, recv=None, send_displs=None, recv_displs=None):
        """send_counts[r] elements to rank r (at send_displs[r], packed in rank order by default); the
        result holds recv_counts[r] elements from each rank r (at recv_displs[r]), as MPI_Alltoallv."""
        if gpu_arrays.is_device(send):  # through the host: per-rank counts make no route of their own here
            return self._via_host(lambda hs, hr: self.all_to_allv(hs, send_counts, recv_counts, hr, send_displs,
                                                                  recv_displs), send, recv)
        s = adapt(send, "send")
        v = []
        for name, values in (("send_counts", send_counts), ("send_displs", send_displs),
                             ("recv_counts", recv_counts), ("recv_displs", recv_displs)):
            if values is None:
                counts = v[-1]
                values = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else counts
            arr = np.asarray(values, dtype=np.int64).reshape(-1)
            if arr.size != self.size:
                raise InvalidArgumentError("gpucoll: %s must have one entry per rank (%d), got %d"
                                           % (name, self.size, arr.size))
            v.append(arr)
        extent = int(max((v[3] + v[2]).max(), 0)) if self.size else 0
        out, result = self._result(s, recv, (extent,))
        self._same_type(s, out)
        # Only the received blocks are written (MPI leaves the rest of recv as it was); a new
        # result's elements between blocks are zeros.
        es = out.array.itemsize
        blocks = [(int(d) * es, int(n) * es) for d, n in zip(v[3], v[2]) if n > 0]
        if recv is None and sum(n for _, n in blocks) < out.bytes().nbytes:
            out.bytes().fill(0)
        self._submit(_Call(w.ALL_TO_ALLV, s.code, 0, 0, send=s.bytes(), recv_bytes=out.bytes().nbytes, out=out.bytes(),
                           counts=np.concatenate(v), blocks=blocks))
        return result

    @_refusing(w.BROADCAST)
    def broadcast(self, buf, root=0, recv=None):
        """recv = root's buf on every rank; in place (into ``buf``) without ``recv``. Returns the result."""
        kit = _kit(buf)
        b = kit.adapt(buf, "buf", writable=recv is None and self.rank != root)
        r = b if recv is None else kit.adapt(recv, "recv", writable=True)
        self._same_type(b, r)
        self._fits(r, b.count)
        if kit is gpu_arrays:
            # the route is asked before any call record carries the root to the executor's check
            if not 0 <= int(root) < self.size:
                raise InvalidArgumentError("gpucoll: root %r is not a rank of this group of %d" % (root, self.size))
            self._on_device(5, b, r, b.count, root=int(root))
        else:
            self._submit(_Call(w.BROADCAST, b.code, 0, b.count, root=int(root),
                               send=b.bytes() if self.rank == root else None, recv_bytes=b.bytes().nbytes,
                               out=r.bytes(), in_place=r is b))
        return buf if recv is None else recv

    def barrier(self):
        """Returns once every rank has entered the barrier."""
        self._submit(_Call(w.BARRIER, 0))

    @_refusing(w.LOC_ALL_REDUCE)
    def all_reduce_loc(self, values, indices, op="maxloc"):
        """MAXLOC / MINLOC over (value, index) pairs, as MPI: pair i of the result is the largest
        (smallest) value among every rank's pair i, the lowest index among equal values; NaN is
        refused on every rank. Returns (values, indices), new arrays of the inputs' dtypes."""
        if gpu_arrays.is_device(values) or gpu_arrays.is_device(indices):
            v = gpu_arrays.adapt(values, "values")
            i = gpu_arrays.adapt(indices, "indices")
            hv, hi = self.all_reduce_loc(self._to_host(v).view(v.host_dtype()), self._to_host(i).view(i.host_dtype()), op)
            (ov, rv), (oi, ri) = gpu_arrays.new_result(v, v.shape, "values"), gpu_arrays.new_result(i, i.shape, "indices")
            self._to_device(hv, ov)
            self._to_device(hi, oi)
            return rv, ri
        opc = _code(w.LOC_OPS, "op", op)
        val = adapt(values, "values")
        idx = adapt(indices, "indices")
        vname = _PAIR_VALUES.get(val.array.dtype)
        iname = _PAIR_INDICES.get(idx.array.dtype)
        if vname is None or iname is None:
            raise InvalidArgumentError("gpucoll: all_reduce_loc takes float32, float64, int32 or int64 values and"
                                       " int32 or int64 indices, not %s and %s" % (val.array.dtype, idx.array.dtype))
        if val.count != idx.count:
            raise InvalidArgumentError("gpucoll: values hold %d elements, indices %d" % (val.count, idx.count))
        slot = max(val.array.itemsize, idx.array.itemsize)
        n = val.count
        pairs = np.zeros((n, 2 * slot), np.uint8)
        pairs[:, :val.array.itemsize] = val.array.reshape(-1, 1).view(np.uint8).reshape(n, val.array.itemsize)
        pairs[:, slot:slot + idx.array.itemsize] = idx.array.reshape(-1, 1).view(np.uint8).reshape(
            n, idx.array.itemsize)
        got = np.empty_like(pairs)
        self._submit(_Call(w.LOC_ALL_REDUCE, w.PAIR_TYPES.index(vname + "_" + iname), opc, n,
                           send=pairs.reshape(-1), recv_bytes=pairs.nbytes, out=got.reshape(-1)))
        v_out, v_res = host_arrays.new_result(val, val.array.shape)
        i_out, i_res = host_arrays.new_result(idx, idx.array.shape)
        v_out.bytes()[:] = got[:, :val.array.itemsize].reshape(-1)
        i_out.bytes()[:] = got[:, slot:slot + idx.array.itemsize].reshape(-1)
        return v_res, i_res

    @contextlib.contextmanager
    def group(self):
        """Calls inside ``with comm.group():`` run as one group when the block ends (NCCL's
        ncclGroupStart/End): results are valid after it; every rank must record the same calls. If
        the block raises, the group fails on every rank at once and nothing runs."""
        self._check_open()
        if self._batch is not None:
            raise CommunicatorStateError("gpucoll: groups do not nest")
        self._batch = []
        try:
            yield self
        except BaseException as e:
            self._batch = None
            try:
                self._run([_Call(w.ALL_REDUCE, 0, problem="rank %d's group body raised %r" % (self.rank, e))],
                          group=True)
            except CollectiveError:
                pass  # the peers fail with it; this rank raises the body's own error
            raise
        batch, self._batch = self._batch, None
        if batch:
            self._run(batch, group=True)

    def split(self, color, key=None):
        """A new communicator of the ranks with the same color, ordered by key then rank (MPI_Comm_split);
        None for a negative color. Close it when done."""
        self._check_open()
        self._ch.request(w.OP_SPLIT, self._id, a=(int(color), int(self.rank if key is None else key)))
        cid = self._ch.result(0)
        if cid < 0:
            return None
        return Communicator(self._ch, cid, self._ch.result(1), self._ch.result(2), self._ch.message())

    def explain(self, collective, nbytes):
        """The algorithm a collective of ``nbytes`` would take here, and why:
        {"collective", "bytes", "algorithm", "reasons"}."""
        self._check_open()
        c = collective if isinstance(collective, int) else _code(
            w.COLLECTIVES, "collective", _snake_to_enum(collective))
        self._ch.request(w.OP_EXPLAIN, self._id, a=(c, int(nbytes)))
        algorithm, *reasons = self._ch.message().split("\n")
        return {"collective": w.COLLECTIVE_API_NAMES[c], "bytes": self._ch.result(0), "algorithm": algorithm,
                "reasons": [r for r in reasons if r]}

    def path_report(self):
        """This rank's report as the Java API makes it: backend, predicted algorithm per collective and
        size, what ran (``observed``: "allReduce/host-oneshot" -> calls) and findings."""
        self._check_open()
        self._ch.request(w.OP_REPORT, self._id)
        n = self._ch.result(0)
        if n < 0:
            self._ch.ensure(self._ch.result(1))
            self._ch.request(w.OP_REPORT, self._id)
            n = self._ch.result(0)
        report = json.loads(bytes(self._ch.data[:n]).decode())
        if self._device is not None:  # what this process's GPU ran, beside what the executor ran
            observed = report.setdefault("observed", {})
            for key, calls in self._device.observed.items():
                observed[key] = observed.get(key, 0) + calls
            report.setdefault("findings", []).extend("python gpu: " + f for f in self._device.findings)
        return report

    def close(self):
        """Releases a communicator from split(); on the task's own communicator it only ends this
        object's use (the plugin keeps the group for later stages, as for a Java task)."""
        if not self._closed:
            self._closed = True
            if self._device is not None:
                self._device.close()
                self._device = None
            if not self._ch.closed:
                self._ch.request(w.OP_CLOSE, self._id)

    @property
    def closed(self):
        return self._closed or self._ch.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- GPU arrays ----

    def synchronize(self):
        """Waits for this communicator's GPU work on the device's streams and raises an error a kernel
        recorded (a peer that never came names itself here) or NCCL reported: the kernels' waits and
        the wait for NCCL are bounded by spark.gpucoll.timeout."""
        if self._device is not None:
            from .gpu import _driver
            _driver.use_device(self._device.device)
            self._device.check()  # first NCCL's bounded wait: a device-wide wait would hang on a dead peer
            _driver.check(_driver.lib().cuCtxSynchronize(), "cuCtxSynchronize")
            self._device.check()

    def _member(self, a):
        m = self._device
        if m is None:
            from .gpu._member import DeviceMember
            m = self._device = DeviceMember(self._ch, self._id, self.rank, self.size, a.device, self._share_from_rank0)
        elif a.device != m.device:
            raise InvalidArgumentError("gpucoll: the array is on GPU %d; this communicator runs on GPU %d"
                                       % (a.device, m.device))
        return m

    def _share_from_rank0(self, data):
        """Rank 0's bytes (``data`` there, None elsewhere; at most 1 KiB) on every rank: a broadcast
        over the host, outside any group being recorded."""
        buf = np.zeros(1024, np.uint8)
        if data is not None:
            buf[:len(data)] = np.frombuffer(data, np.uint8)
            buf[-2:] = np.frombuffer(struct.pack("<H", len(data)), np.uint8)
        out = np.empty_like(buf)
        self._run([_Call(w.BROADCAST, w.DATA_TYPES.index("UINT8"), 0, buf.size, root=0, send=buf if self.rank == 0 else None,
                         recv_bytes=buf.nbytes, out=out)], group=False)
        n, = struct.unpack("<H", out[-2:].tobytes())
        return out[:n].tobytes()

    def _on_device(self, coll, s, r, count, op=0, root=0):
        """One call of GPU arrays on the route the executor gives: our kernel launched here on the
        caller's stream, NCCL on the same stream, the one-rank copy, or (ranks of other processes
        sharing a GPU, and grouped calls) through the host backend, as the Java GPU communicator
        stages such groups."""
        self._check_open()
        if r.device != s.device:
            raise InvalidArgumentError("gpucoll: recv is on GPU %d, send on GPU %d" % (r.device, s.device))
        m = self._member(s)
        route = m.route(coll, s.code, op, count) if count else None
        if route is None:
            return  # every rank passes the same count: every rank skips
        if self._batch is None:
            if route.kind == 0:
                m.launch(route, coll, s.pointer, r.pointer, count, s.code, op, root, s.stream)
                return
            if route.kind == 3:
                m.call_nccl(route, coll, s.pointer, r.pointer, count, s.code, op, root, s.stream)
                return
            if route.kind == 1:
                if r.pointer != s.pointer:
                    from .gpu import _driver
                    _driver.copy_async(r.pointer, s.pointer, r.nbytes, s.stream)
                m.count(coll, route.algorithm)
                return
        from .gpu import _driver
        if _driver.is_capturing(s.stream):
            raise InvalidArgumentError("gpucoll: %s of GPU arrays takes %s here (%s), which a CUDA graph cannot"
                                       " capture: run it outside the capture" % (
                                           w.COLLECTIVE_API_NAMES[coll], "gpu-staged-host",
                                           "a grouped call" if self._batch is not None else route.algorithm))
        m.count(coll, "gpu-staged-host")
        hs = None if coll == 5 and self.rank != root else self._to_host(s)
        out = np.empty(r.nbytes, np.uint8)
        self._submit(_Call(coll, s.code, op, count, root=root, send=hs, recv_bytes=r.nbytes, out=out,
                           after=lambda: self._to_device(out, r)))

    def _via_host(self, call, send, recv):
        """A call of GPU arrays that runs on host copies (allToAllv, MAXLOC/MINLOC): copies in,
        the CPU call, the result copied back into ``recv`` or a new GPU array."""
        s = gpu_arrays.adapt(send, "send")
        dtype = np.float16 if s.host_dtype() is np.int16 else s.host_dtype()  # bfloat16 moves as 2-byte words
        hs = self._to_host(s).view(dtype)
        if recv is not None:
            r = gpu_arrays.adapt(recv, "recv", writable=True)
            hr = np.empty(r.count, dtype)
            call(hs, hr)
            self._to_device(hr, r)
            return recv
        hr = call(hs, None)
        out, result = gpu_arrays.new_result(s, hr.shape)
        self._to_device(hr, out)
        return result

    @staticmethod
    def _to_host(a):
        from .gpu import _driver
        h = np.empty(a.nbytes, np.uint8)
        _driver.use_device(a.device)
        if _driver.is_capturing(a.stream):
            raise InvalidArgumentError("gpucoll: this call of GPU arrays runs through host copies, which a CUDA graph"
                                       " cannot capture: run it outside the capture")
        _driver.copy_to_host_async(h.ctypes.data, a.pointer, a.nbytes, a.stream)
        _driver.synchronize(a.stream)
        return h

    @staticmethod
    def _to_device(h, a):
        from .gpu import _driver
        h = np.ascontiguousarray(h)
        _driver.use_device(a.device)
        _driver.copy_to_device_async(a.pointer, h.ctypes.data, a.nbytes, a.stream)
        _driver.synchronize(a.stream)

    # ---- how a call travels ----

    def _check_open(self):
        if self.closed:
            raise CommunicatorStateError("gpucoll: the communicator (rank %d of %d) is closed" % (self.rank, self.size))

    def _submit(self, call):
        self._check_open()
        if self._batch is not None:
            if call.coll not in (w.ALL_REDUCE, w.ALL_GATHER, w.REDUCE_SCATTER, w.ALL_TO_ALL, w.BROADCAST):
                raise CommunicatorStateError("gpucoll: %s cannot be part of a group (allReduce, allGather,"
                                             " reduceScatter, allToAll and broadcast can)" % _name(call.coll))
            self._batch.append(call)
            return
        self._run([call], group=False)

    def _run(self, calls, group):
        ch = self._ch
        off = _align(len(calls) * w.RECORD_BYTES)
        for c in calls:
            c.voff = -1
            if c.counts is not None:
                c.voff = off
                off = _align(off + c.counts.nbytes)
            c.roff = off
            off = _align(off + c.recv_bytes)
            if c.send is None:
                c.soff = -1
            elif c.in_place:
                c.soff = c.roff
            else:
                c.soff = off
                off = _align(off + c.send.nbytes)
        ch.ensure(off)
        data = ch.data
        mm = ch.mm
        for i, c in enumerate(calls):
            sbytes = 0 if c.send is None else c.send.nbytes
            struct.pack_into("@12q", mm, w.HEADER_BYTES + i * w.RECORD_BYTES, c.coll, c.code, c.op, c.flags, c.count,
                             c.root, c.soff, sbytes, c.roff, c.recv_bytes, c.voff, 0)
            if c.counts is not None:
                data[c.voff:c.voff + c.counts.nbytes] = c.counts.view(np.uint8)
            if sbytes:
                data[c.soff:c.soff + sbytes] = c.send
        try:
            ch.request(w.OP_CALLS, self._id, len(calls), w.FLAG_GROUP if group else 0)
        except CollectiveError as e:
            e.sent = True
            raise
        for c in calls:
            if c.out is None or not c.recv_bytes:
                pass
            elif c.blocks is None:
                c.out[:] = data[c.roff:c.roff + c.recv_bytes]
            else:
                for at, n in c.blocks:
                    c.out[at:at + n] = data[c.roff + at:c.roff + at + n]
            if c.after is not None:
                c.after()

    def _result(self, template, recv, shape, kit=host_arrays):
        """(what the call writes, what it returns): ``recv`` checked, or a new array of ``shape``
        (by ``kit``: the host's adapters, or the GPU's for GPU arrays)."""
        if recv is None:
            return kit.new_result(template, shape)
        return kit.adapt(recv, "recv", writable=True), recv

    def _blocks(self, s):
        if s.count % self.size:
            raise InvalidArgumentError("gpucoll: send holds %d elements, not a multiple of the group size %d"
                                       % (s.count, self.size))
        return s.count // self.size

    def _block_shape(self, s, count):
        shape = s.shape
        if len(shape) >= 1 and shape[0] % self.size == 0:
            return (shape[0] // self.size,) + tuple(shape[1:])
        return (count,)

    @staticmethod
    def _same_type(a, b):
        if a.code != b.code:
            raise InvalidArgumentError("gpucoll: recv is %s, send is %s: they must be of one type" % (
                w.DATA_TYPES[b.code].lower(), w.DATA_TYPES[a.code].lower()))

    @staticmethod
    def _fits(r, elements):
        if r.count != elements:
            raise InvalidArgumentError("gpucoll: recv holds %d elements, the call needs %d" % (r.count, elements))


def _snake_to_enum(name):
    """"all_reduce" or "allReduce" -> "ALL_REDUCE"."""
    out = []
    for ch in str(name):
        if ch.isupper():
            out.append("_")
        out.append(ch.upper())
    return "".join(out).replace("__", "_").lstrip("_")


def _name(code):
    return w.COLLECTIVE_API_NAMES[code] if code < len(w.COLLECTIVE_API_NAMES) else "allReduce (MAXLOC/MINLOC)"
