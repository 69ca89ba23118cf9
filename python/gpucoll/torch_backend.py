"""torch.distributed on gpucoll: a backend named "gpucoll" whose process group is the barrier task's
communicator, so that ``DistributedDataParallel`` and the ``torch.distributed`` collectives run on the
group the plugin formed. Inside ``rdd.barrier().mapPartitions(f)``::

    import gpucoll.torch_backend as gtb
    gtb.init_process_group()                 # dist.init_process_group("gpucoll", ...) for this task
    model = torch.nn.parallel.DistributedDataParallel(model)
    ...
    torch.distributed.destroy_process_group()

CPU tensors run on the host backend; CUDA tensors run our kernels in this process on the tensor's
current stream (the communicator's GPU path). Each call is complete when it returns for CPU
tensors, and enqueued on the current stream for CUDA tensors (what follows on that stream sees
the result, as with NCCL's stream semantics): the ``Work`` handed back is done.
``dist.new_group`` of all ranks shares the task's communicator; a subgroup is refused on its
members (use ``gpucoll.communicator().split()``). The store is local to each rank, so torch's
store barrier (``TORCH_DIST_INIT_BARRIER=1``) is not for this backend.

Where torch lets Python make a c10d ``Backend`` (2.15 on), the backend is one, registered for the
device types it serves (cpu and cuda), so torch's process group finds it for every collective, also
those torch routes by device type (``all_gather_into_tensor``, ``reduce_scatter_tensor``: FSDP's
and ZeRO's); on an older torch it is the process group itself, as torch's Python process groups
are. Supported: torch ``TORCH_VERSIONS`` (the oldest and newest tested); an older torch is refused
at import.
"""

import contextlib
import warnings

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend

from ._task import communicator

BACKEND = "gpucoll"
TORCH_VERSIONS = ("2.11", "2.15")


def _release(version):
    """(major, minor) of a torch version string ("2.15.0+cpu" -> (2, 15))."""
    parts = version.split("+")[0].split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def _check_torch(version):
    """Refuses a torch older than the oldest supported; warns for one newer than the newest tested."""
    oldest, newest = (_release(v) for v in TORCH_VERSIONS)
    got = _release(version)
    if got < oldest:
        raise ImportError("gpucoll.torch_backend supports torch %s to %s; this is torch %s: upgrade torch"
                          % (TORCH_VERSIONS[0], TORCH_VERSIONS[1], version))
    if got > newest:
        warnings.warn("gpucoll.torch_backend is tested with torch %s to %s; this is torch %s"
                      % (TORCH_VERSIONS[0], TORCH_VERSIONS[1], version), stacklevel=3)


_check_torch(torch.__version__)


def _base():
    """c10d's Backend where Python can make one (torch registers it per device type), else the
    ProcessGroup (torch 2.11: its Backend has no Python constructor)."""
    try:
        _C10dBackend(0, 1)
    except TypeError:
        return dist.ProcessGroup
    return _C10dBackend

_OPS = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.PRODUCT: "prod", dist.ReduceOp.MIN: "min",
        dist.ReduceOp.MAX: "max", dist.ReduceOp.AVG: "avg"}


def _op(opts):
    op = _OPS.get(opts.reduceOp.op)
    if op is None:
        raise ValueError("gpucoll: reduce op %s is not supported; SUM, PRODUCT, MIN, MAX and AVG are"
                         % opts.reduceOp.op)
    return op


class _Done(dist.Work):
    """A finished call: torch waits on it or chains on its future (DDP's reducer reads the result)."""

    def __init__(self, result):
        super().__init__()
        self._future = torch.futures.Future()
        self._future.set_result(result)

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def get_future(self):
        return self._future


class ProcessGroupGpucoll(_base()):
    """The torch.distributed face of a :class:`gpucoll.Communicator`: one small method per collective
    (torch's process group holds it as its backend for cpu and cuda tensors, or it is the group)."""

    def __init__(self, comm):
        super().__init__(comm.rank, comm.size)
        self.comm = comm

    def getBackendName(self):
        return BACKEND

    def _together(self, n):
        # several tensors go as one group: one round trip, results valid when the block ends
        return self.comm.group() if n > 1 else contextlib.nullcontext()

    def allreduce(self, tensors, opts=None):
        op = _op(opts or dist.AllreduceOptions())
        with self._together(len(tensors)):
            for t in tensors:
                self.comm.all_reduce(t, op=op)
        return _Done(tensors)

    allreduce_coalesced = allreduce

    def broadcast(self, tensors, opts=None):
        root = (opts or dist.BroadcastOptions()).rootRank
        with self._together(len(tensors)):
            for t in tensors:
                self.comm.broadcast(t, root=root)
        return _Done(tensors)

    def allgather(self, output_lists, inputs, opts=None):
        with self._together(len(inputs)):
            gathered = [self.comm.all_gather(t) for t in inputs]
        for outs, g in zip(output_lists, gathered):
            for out, part in zip(outs, g):
                out.copy_(part)
        return _Done(output_lists)

    def _allgather_base(self, output, input, opts=None):
        self.comm.all_gather(input, recv=output)
        return _Done([output])

    all_gather_single = _allgather_base  # its name from torch 2.15 on

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        with self._together(len(inputs)):
            for out, t in zip(outputs, inputs):
                self.comm.all_gather(t, recv=out)
        return _Done(outputs)

    all_gather_single_coalesced = allgather_into_tensor_coalesced  # its name from torch 2.15 on

    def reduce_scatter(self, outputs, input_lists, opts=None):
        op = _op(opts or dist.ReduceScatterOptions())
        with self._together(len(outputs)):
            for out, parts in zip(outputs, input_lists):
                self.comm.reduce_scatter(torch.cat([p.reshape(-1) for p in parts]), recv=out, op=op)
        return _Done(outputs)

    def _reduce_scatter_base(self, output, input, opts=None):
        self.comm.reduce_scatter(input, recv=output, op=_op(opts or dist.ReduceScatterOptions()))
        return _Done([output])

    reduce_scatter_single = _reduce_scatter_base  # its name from torch 2.15 on

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        op = _op(opts or dist.ReduceScatterOptions())
        with self._together(len(outputs)):
            for out, t in zip(outputs, inputs):
                self.comm.reduce_scatter(t, recv=out, op=op)
        return _Done(outputs)

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced  # its name from torch 2.15 on

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        if not output_split_sizes and not input_split_sizes:
            self.comm.all_to_all(input, recv=output)
        else:  # splits are rows of dim 0; the communicator counts elements
            self.comm.all_to_allv(input, self._counts(input, input_split_sizes),
                                  self._counts(output, output_split_sizes), recv=output)
        return _Done([output])

    all_to_all_single = alltoall_base  # its name from torch 2.15 on

    def alltoall(self, outputs, inputs, opts=None):
        recv_counts = [t.numel() for t in outputs]
        got = self.comm.all_to_allv(torch.cat([t.reshape(-1) for t in inputs]), [t.numel() for t in inputs],
                                    recv_counts)
        for out, part in zip(outputs, torch.split(got, recv_counts)):
            out.copy_(part.view(out.shape))
        return _Done(outputs)

    def barrier(self, opts=None):
        self.comm.barrier()
        return _Done([])

    def _counts(self, t, splits):
        rows = t.shape[0] if t.dim() else 1
        per_row = t.numel() // rows if rows else 0
        splits = splits or [rows // self.size()] * self.size()  # torch's default: dim 0 split evenly
        return [s * per_row for s in splits]

    def __repr__(self):
        return "ProcessGroupGpucoll(rank=%d, size=%d)" % (self.rank(), self.size())


def _create(store, rank, world_size, timeout):
    comm = communicator()
    if (rank, world_size) != (comm.rank, comm.size):
        raise ValueError("gpucoll: the process group is this barrier task's group (rank %d of %d), not rank %d"
                         " of %d; for a subgroup use gpucoll.communicator().split()"
                         % (comm.rank, comm.size, rank, world_size))
    return ProcessGroupGpucoll(comm)


def register():
    """Makes "gpucoll" a torch.distributed backend (CPU and CUDA tensors); calling it again does nothing."""
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])


def _backend_of(group):
    """The :class:`ProcessGroupGpucoll` that ``group`` runs CPU tensors on (or is), or None."""
    if isinstance(group, ProcessGroupGpucoll):
        return group
    try:
        backend = group._get_backend(torch.device("cpu"))
    except RuntimeError:  # no backend for cpu: another backend's group
        return None
    return backend if isinstance(backend, ProcessGroupGpucoll) else None


def init_process_group(**kwargs):
    """``dist.init_process_group("gpucoll")`` with this barrier task's rank and size; returns the
    task's communicator. The group is already formed by the plugin, so the store is a local
    HashStore that nothing reads. A default group left by an earlier task of this Python worker
    (workers are reused) is destroyed first; ``kwargs`` go to torch (``timeout``, ``group_name``)."""
    register()
    comm = communicator()
    if dist.is_initialized():
        ours = _backend_of(dist.group.WORLD)
        if ours is not None and ours.comm is comm:
            return comm
        if ours is not None and ours.comm.closed:
            dist.destroy_process_group()
    dist.init_process_group(BACKEND, rank=comm.rank, world_size=comm.size, store=dist.HashStore(), **kwargs)
    return comm


register()
