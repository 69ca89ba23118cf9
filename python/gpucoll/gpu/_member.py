"""This rank's member on its GPU: the workspace its peers map, the kernel image, the group's NCCL
communicator where the route forms one, and each call launched on the caller's stream as the
executor's route says. The executor decides (the group's route, the kernel, its grid, NCCL); this
process only executes, so the Python door has no chooser and no kernel table of its own."""

import ctypes
import os
import secrets
import struct

from .. import _wire as w
from ..errors import CollectiveError, CommunicatorStateError, UnsupportedArrayError
from . import _driver as cu
from . import _nccl

KERNEL, ONE_RANK, STAGED, NCCL = 0, 1, 2, 3  # DeviceRoutes.Kind's ordinals
_MAGIC = 0x67637773  # "gcws"


class Route:
    __slots__ = ("kind", "algorithm", "function", "grid", "block", "observed")

    def __init__(self, kind, algorithm, function, grid, block, observed):
        self.kind, self.algorithm, self.function, self.grid, self.block = kind, algorithm, function, grid, block
        self.observed = observed  # the path report's key, "allReduce/gpu-ll-oneshot"


def _lines(text):
    out, findings = {}, []
    for line in text.split("\n"):
        key, eq, value = line.partition("=")
        if not eq:
            continue
        if key == "finding":
            findings.append(value)
        else:
            out[key] = value
    return out, findings


class DeviceMember:
    """Formed collectively, at a communicator's first GPU call (every rank makes the same calls)."""

    def __init__(self, channel, comm_id, rank, size, device, share_from_rank0):
        """``share_from_rank0(data)``: rank 0's bytes on every rank (``data`` is None elsewhere), over
        the task's host communicator; it carries the NCCL unique id."""
        self._ch, self._id, self.rank, self.size, self.device = channel, comm_id, rank, size, device
        self.nccl = None
        self._nccl_stream = None
        self._routes = {}
        self._functions = {}
        self.observed = {}
        self.broken = None
        self._epoch = 0
        try:  # before any exchange: a rank that cannot use its GPU refuses the call on every rank
            cu.use_device(device)
            facts = cu.facts(device)
            facts.update(_nccl.facts(os.environ))
        except cu.CudaError as e:
            raise UnsupportedArrayError("gpucoll: this rank cannot run GPU arrays on GPU %d: %s" % (device, e))
        # The workspace: the kernels' region (4 KiB aligned, as the ABI wants), then a header that
        # each peer checks through its mapping, so a wrong mapping fails here, not as a hang.
        nonce = secrets.randbits(63)
        self._ws = None
        self._control = None
        self._peers_opened = []
        records = "".join("%s=%s\n" % kv for kv in facts.items())
        records += "pid=%d\nnonce=%d\n" % (os.getpid(), nonce)
        # The layout first (no exchange): the workspace's size and regions.
        abi_probe = self._ch.device_abi()
        ws_bytes = abi_probe["WORKSPACE_BYTES"] + abi_probe["WORKSPACE_HEADER_BYTES"]
        self._ws = cu.malloc(ws_bytes)
        try:
            if self._ws % abi_probe["WORKSPACE_ALIGN"]:
                raise CollectiveError("gpucoll: cuMemAlloc returned a workspace not aligned to %d bytes"
                                      % abi_probe["WORKSPACE_ALIGN"])
            cu.memset8(self._ws, 0, abi_probe["WORKSPACE_BYTES"])
            cu.memset32(self._ws + abi_probe["WS_SENT_OFFSET"], abi_probe["SENTINEL_WORD"] & 0xFFFFFFFF,
                        abi_probe["WS_SENT_BYTES"] // 4)
            cu.to_device(self._ws + abi_probe["WORKSPACE_BYTES"], struct.pack("<IIQ", _MAGIC, rank, nonce))
            records += "ipc=%s\n" % cu.ipc_handle(self._ws).hex()
            answer = self._ch.device_form(comm_id, records)
            kv, self.findings = _lines(answer)
            a = self._abi = abi_probe
            with open(kv["image"], "rb") as f:
                image = f.read()
            os.unlink(kv["image"])
            kernels = kv.get("kernels", "1") == "1"
            # Without our kernels (a group across hosts) no peer's workspace is mapped: a handle of
            # another host cannot open here.
            self._module = cu.load_module(image) if kernels else None
            peers = []
            for r in range(size):
                if r == rank or not kernels:
                    peers.append(self._ws)
                    continue
                p = cu.ipc_open(bytes.fromhex(kv["peer.%d.ipc" % r]))
                self._peers_opened.append(p)
                magic, prank, pnonce = struct.unpack("<IIQ", cu.from_device(p + a["WORKSPACE_BYTES"], 16))
                if (magic, prank, pnonce) != (_MAGIC, r, int(kv["peer.%d.nonce" % r])):
                    raise CollectiveError("gpucoll: rank %d's workspace, mapped here, does not say rank %d (magic %x,"
                                          " rank %d): the handles were mixed up" % (r, r, magic, prank))
                peers.append(p)
            self._control, control_dev = cu.host_mapped(a["CONTROL_BYTES"])
            self._code = ctypes.c_int32.from_address(self._control + a["ERR_OFFSET_CODE"])
            self._abort = ctypes.c_uint32.from_address(self._control + a["CONTROL_ABORT_OFFSET"])
            # GcArgs: the group's fields once, the call's fields per launch.
            self._args = ctypes.create_string_buffer(a["ARGS_SIZE"])
            self._params = (ctypes.c_void_p * 1)(ctypes.addressof(self._args))
            struct.pack_into("<ii", self._args, a["ARGS_OFFSET_RANK"], rank, size)
            struct.pack_into("<i", self._args, a["ARGS_OFFSET_RESERVED0"], 0)
            struct.pack_into("<QQQ", self._args, a["ARGS_OFFSET_TIMEOUT_NS"], int(kv["timeoutNs"]),
                             control_dev + a["CONTROL_ABORT_OFFSET"], control_dev)
            for r in range(size):
                struct.pack_into("<Q", self._args, a["ARGS_OFFSET_PEERS"] + 8 * r, peers[r])
            # The per-call fields in one store: epoch, send, recv, count, rank, nranks, dtype, op, root lie
            # back to back in GcArgs (checked here against the table, so a new layout fails at once).
            if [a["ARGS_OFFSET_" + f] for f in ("EPOCH", "SEND", "RECV", "COUNT", "RANK", "NRANKS", "DTYPE", "OP",
                                                "ROOT")] != [0, 8, 16, 24, 32, 36, 40, 44, 48]:
                raise CollectiveError("gpucoll: the kernels' argument block is not the layout this package writes;"
                                      " the package and the jar are of different versions")
            self._call_fields = struct.Struct("<QQQQiiiii").pack_into
            self._launch = cu.launcher()
            if kv.get("nccl") == "1":
                uid = share_from_rank0(_nccl.new_unique_id() if rank == 0 else None)
                self.nccl = _nccl.NcclMember(uid, rank, size, device, int(kv["timeoutNs"]) / 1e9)
                self.findings.append("NCCL communicator formed: " + self.nccl.describe())
        except BaseException:
            self.close()
            raise

    # ---- per call ----

    def route(self, coll, code, op, count):
        """The executor's answer for this call, asked once per (collective, type, op, count)."""
        key = (coll, code, op, count)
        r = self._routes.get(key)
        if r is None:
            kind, grid, block, text = self._ch.device_route(self._id, coll | code << 8 | op << 16, count)
            kernel, _, algorithm = text.partition("\n")
            fn = None
            if kind == KERNEL:
                fn = self._functions.get(kernel)
                if fn is None:
                    fn = self._functions[kernel] = cu.function(self._module, kernel)
            r = self._routes[key] = Route(kind, algorithm, fn, grid, block,
                                          "%s/%s" % (w.COLLECTIVE_API_NAMES[coll], algorithm))
        return r

    def launch(self, r, coll, send, recv, count, code, op, root, stream):
        """One kernel launch on ``stream``; an error an earlier launch recorded is raised first."""
        if self._code.value:
            self._raise(coll)
        if self.broken:
            raise CommunicatorStateError(self.broken)
        self._launch_kernel(r, send, recv, count, code, op, root, stream)
        observed = self.observed
        observed[r.observed] = observed.get(r.observed, 0) + 1

    def all_reduce_in_place(self, pointer, count, code, op, stream):
        """The training loop's call (a contiguous GPU tensor reduced in place) when its route is our
        kernel and already known; False sends it down the general path (first call, copy, staging)."""
        r = self._routes.get((0, code, op, count))
        if r is None or self.broken or self._code.value:
            return False
        if r.kind == NCCL:
            n = self.nccl
            if n.broken:
                return False
            n.all_reduce_in_place(pointer, count, code, op, stream)
            self._nccl_stream = stream
        elif r.kind != KERNEL:
            return False
        else:
            self._launch_kernel(r, pointer, pointer, count, code, op, 0, stream)
        observed = self.observed
        observed[r.observed] = observed.get(r.observed, 0) + 1
        return True

    def _launch_kernel(self, r, send, recv, count, code, op, root, stream):
        self._epoch += 1
        self._call_fields(self._args, 0, self._epoch, send, recv, count, self.rank, self.size, code, op, root)
        rc = self._launch(r.function, r.grid, 1, 1, r.block, 1, 1, 0, stream, self._params, None)
        if rc:
            self.broken = ("gpucoll: the launch of a kernel failed (CUDA error %d); the group's epochs now disagree:"
                           " close the communicator" % rc)
            cu.check(rc, "cuLaunchKernel")

    def call_nccl(self, r, coll, send, recv, count, code, op, root, stream):
        """One call on the group's NCCL communicator, enqueued on ``stream``."""
        if self.broken:
            raise CommunicatorStateError(self.broken)
        self.nccl.call(coll, send, recv, count, code, op, root, stream)
        self._nccl_stream = stream
        self.observed[r.observed] = self.observed.get(r.observed, 0) + 1

    def count(self, coll, algorithm):
        key = "%s/%s" % (w.COLLECTIVE_API_NAMES[coll], algorithm)
        self.observed[key] = self.observed.get(key, 0) + 1

    def check(self, coll=None):
        """Raises the error a finished kernel recorded (a timeout names the peer), in the Java API's
        words, or the error NCCL reported; the wait for NCCL's last stream is bounded by the timeout."""
        if self._code.value:
            self._raise(coll)
        if self.nccl is not None and self._nccl_stream is not None:
            self.nccl.wait(cu.stream_query, self._nccl_stream)

    def _raise(self, coll):
        record = ctypes.string_at(self._control, 64)
        self.broken = "gpucoll: a kernel of this communicator failed earlier; close it"
        self._ch.device_error(self._id, -1 if coll is None else coll, record)
        raise CollectiveError("gpucoll: a kernel recorded error %d" % self._code.value)  # device_error raised already

    def close(self):
        if self.nccl is not None:
            self.nccl.close()
            self.nccl = None
        if self._control is not None:
            self._abort.value = 1
        for p in self._peers_opened:
            cu.ipc_close(p)
        self._peers_opened = []
        if self._ws is not None:
            cu.free(self._ws)
            self._ws = None
        if self._control is not None:
            cu.free_host(self._control)
            self._control = None
