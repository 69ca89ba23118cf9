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
"""

import contextlib

import torch
import torch.distributed as dist

from ._task import communicator

BACKEND = "gpucoll"

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


class ProcessGroupGpucoll(dist.ProcessGroup):
    """The torch.distributed face of a :class:`gpucoll.Communicator`: one small method per collective."""

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

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        with self._together(len(inputs)):
            for out, t in zip(outputs, inputs):
                self.comm.all_gather(t, recv=out)
        return _Done(outputs)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        op = _op(opts or dist.ReduceScatterOptions())
        with self._together(len(outputs)):
            for out, parts in zip(outputs, input_lists):
                self.comm.reduce_scatter(torch.cat([p.reshape(-1) for p in parts]), recv=out, op=op)
        return _Done(outputs)

    def _reduce_scatter_base(self, output, input, opts=None):
        self.comm.reduce_scatter(input, recv=output, op=_op(opts or dist.ReduceScatterOptions()))
        return _Done([output])

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        op = _op(opts or dist.ReduceScatterOptions())
        with self._together(len(outputs)):
            for out, t in zip(outputs, inputs):
                self.comm.reduce_scatter(t, recv=out, op=op)
        return _Done(outputs)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        if not output_split_sizes and not input_split_sizes:
            self.comm.all_to_all(input, recv=output)
        else:  # splits are rows of dim 0; the communicator counts elements
            self.comm.all_to_allv(input, self._counts(input, input_split_sizes),
                                  self._counts(output, output_split_sizes), recv=output)
        return _Done([output])

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


def init_process_group(**kwargs):
    """``dist.init_process_group("gpucoll")`` with this barrier task's rank and size; returns the
    task's communicator. The group is already formed by the plugin, so the store is a local
    HashStore that nothing reads. A default group left by an earlier task of this Python worker
    (workers are reused) is destroyed first; ``kwargs`` go to torch (``timeout``, ``group_name``)."""
    register()
    comm = communicator()
    if dist.is_initialized():
        world = dist.group.WORLD
        if isinstance(world, ProcessGroupGpucoll) and world.comm is comm:
            return comm
        if isinstance(world, ProcessGroupGpucoll) and world.comm.closed:
            dist.destroy_process_group()
    dist.init_process_group(BACKEND, rank=comm.rank, world_size=comm.size, store=dist.HashStore(), **kwargs)
    return comm


register()
