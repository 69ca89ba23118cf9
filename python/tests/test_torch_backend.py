"""torch.distributed on backend "gpucoll" in PySpark barrier tasks: each collective against the
values it must give, the refusals, and DDP training that ends with the weights of the same run on
torch's own gloo backend."""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the torch.distributed backend tests skip")


def ranks_values(rank, n, dtype=torch.float32):
    """1..5, a function of rank and position: exact in every op over 3 ranks."""
    return ((torch.arange(n) * 7 + rank * 3) % 5 + 1).to(dtype)


class OneRank:
    """A stand-in communicator of one rank (a result is its input) that records the calls it gets."""

    rank, size, closed = 0, 1, False

    def __init__(self):
        self.calls = []

    def group(self):
        import contextlib
        return contextlib.nullcontext()

    def all_reduce(self, send, recv=None, op="sum"):
        self.calls.append("all_reduce")
        return send

    def all_gather(self, send, recv=None):
        self.calls.append("all_gather")
        if recv is None:
            return send.reshape((1,) + tuple(send.shape)).clone()
        recv.copy_(send.reshape(recv.shape))
        return recv

    def reduce_scatter(self, send, recv=None, op="sum"):
        self.calls.append("reduce_scatter " + op)
        recv.copy_(send.reshape(recv.shape))
        return recv

    def broadcast(self, buf, root=0, recv=None):
        self.calls.append("broadcast")
        return buf

    def all_to_all(self, send, recv=None):
        self.calls.append("all_to_all")
        recv.copy_(send)
        return recv

    def barrier(self):
        self.calls.append("barrier")


def test_torch_finds_the_backend_for_every_collective_by_device_type(monkeypatch):
    """torch routes all_gather_into_tensor and reduce_scatter_tensor (FSDP's, ZeRO's) by the tensor's
    device type: the backend is registered for cpu, and each call reaches the communicator."""
    import torch.distributed as dist
    import gpucoll.torch_backend as gtb

    comm = OneRank()
    monkeypatch.setattr(gtb, "communicator", lambda: comm)
    assert gtb.init_process_group() is comm
    try:
        out = torch.empty(2, 3)
        dist.all_gather_into_tensor(out, torch.arange(6.0).view(2, 3))
        assert torch.equal(out, torch.arange(6.0).view(2, 3))
        out = torch.empty(4)
        dist.reduce_scatter_tensor(out, torch.arange(4.0), op=dist.ReduceOp.MAX)
        assert torch.equal(out, torch.arange(4.0))
        out = torch.empty(4)
        dist.all_to_all_single(out, torch.arange(4.0))
        assert torch.equal(out, torch.arange(4.0))
        outs = [torch.empty(2), torch.empty(3)]
        with dist._coalescing_manager(async_ops=False):
            for o in outs:
                dist.all_gather_into_tensor(o, torch.ones(o.numel()))
        assert all(torch.equal(o, torch.ones(o.numel())) for o in outs)
        t = torch.ones(3)
        dist.all_reduce(t)
        dist.broadcast(t, src=0)
        dist.barrier()
        assert gtb.init_process_group() is comm  # the group of this communicator is kept
        if not isinstance(dist.group.WORLD, gtb.ProcessGroupGpucoll):  # torch made it the group's backend
            assert torch.device("cpu") in dist.group.WORLD._device_types
        assert comm.calls == ["all_gather", "reduce_scatter max", "all_to_all", "all_gather", "all_gather",
                              "all_reduce", "broadcast", "barrier"], comm.calls
    finally:
        dist.destroy_process_group()


def test_torch_versions_are_checked():
    import gpucoll.torch_backend as gtb

    oldest, newest = gtb.TORCH_VERSIONS
    gtb._check_torch(oldest + ".0+cpu")
    gtb._check_torch(newest + ".1")
    gtb._check_torch(torch.__version__)  # the torch these tests run on
    with pytest.raises(ImportError, match="supports torch %s to %s" % (oldest, newest)):
        gtb._check_torch("2.10.0")
    with pytest.warns(UserWarning, match="tested with torch"):
        gtb._check_torch("2.%d.0" % (int(newest.split(".")[1]) + 1))


def test_collectives(barrier):
    def job(rank):
        import torch
        import torch.distributed as dist
        import gpucoll.torch_backend as gtb

        comm = gtb.init_process_group()
        assert gtb.init_process_group() is comm  # a second call in the task keeps the group
        size = comm.size
        bad = []

        def check(name, got, want):
            if not torch.equal(got, want):
                bad.append((name, got.tolist(), want.tolist()))

        try:
            check("backend", torch.tensor([dist.get_rank(), dist.get_world_size()]), torch.tensor([rank, size]))
            if dist.get_backend() != "gpucoll":
                bad.append(("backend name", dist.get_backend()))
            every = [ranks_values(r, 7, torch.float64) for r in range(size)]
            stacked = torch.stack(every)
            for op, want in ((dist.ReduceOp.SUM, stacked.sum(0)), (dist.ReduceOp.PRODUCT, stacked.prod(0)),
                             (dist.ReduceOp.MIN, stacked.min(0).values), (dist.ReduceOp.MAX, stacked.max(0).values),
                             (dist.ReduceOp.AVG, stacked.sum(0) / size)):
                for dt in (torch.float32, torch.float64, torch.int64):
                    if dt == torch.int64 and op == dist.ReduceOp.AVG:
                        continue
                    t = ranks_values(rank, 7, dt)
                    dist.all_reduce(t, op=op)
                    check("all_reduce %s %s" % (op, dt), t, want.to(dt))

            # several tensors in one call run as one group
            a, b = ranks_values(rank, 5), torch.full((3,), rank, dtype=torch.int64)
            dist.group.WORLD.allreduce([a, b]).wait()
            check("allreduce list", a, torch.stack([ranks_values(r, 5) for r in range(size)]).sum(0))
            check("allreduce list 2", b, torch.full((3,), sum(range(size)), dtype=torch.int64))

            outs = [torch.empty(4, dtype=torch.int32) for _ in range(size)]
            dist.all_gather(outs, torch.full((4,), rank * 10, dtype=torch.int32))
            check("all_gather", torch.stack(outs), torch.arange(size, dtype=torch.int32)[:, None].expand(size, 4) * 10)
            flat = torch.empty(size * 2, 3)
            dist.all_gather_into_tensor(flat, torch.full((2, 3), float(rank)))
            check("all_gather_into_tensor", flat, torch.arange(size).repeat_interleave(6).float().view(size * 2, 3))
            objects = [None] * size
            dist.all_gather_object(objects, {"rank": rank, "pad": "x" * rank})  # uneven byte tensors
            if objects != [{"rank": r, "pad": "x" * r} for r in range(size)]:
                bad.append(("all_gather_object", objects))

            sends = [ranks_values(r, 4 * size) for r in range(size)]
            total = torch.stack(sends).sum(0)
            out = torch.empty(4)
            dist.reduce_scatter(out, list(sends[rank].chunk(size)))
            check("reduce_scatter", out, total[rank * 4:(rank + 1) * 4])
            out = torch.empty(4)
            dist.reduce_scatter_tensor(out, sends[rank], op=dist.ReduceOp.MAX)
            check("reduce_scatter_tensor", out, torch.stack(sends).max(0).values[rank * 4:(rank + 1) * 4])

            for root in range(size):
                t = torch.full((6,), float(rank))
                dist.broadcast(t, src=root)
                check("broadcast %d" % root, t, torch.full((6,), float(root)))
            objs = [rank, "from %d" % rank]
            dist.broadcast_object_list(objs, src=2)
            if objs != [2, "from 2"]:
                bad.append(("broadcast_object_list", objs))

            # all_to_all_single: equal blocks, then rank r sending (r + k + 1) rows of 2 to rank k
            out = torch.empty(size * 2, dtype=torch.int64)
            dist.all_to_all_single(out, torch.arange(size * 2) + 100 * rank)
            check("all_to_all_single", out,
                  torch.tensor([100 * r + 2 * rank + i for r in range(size) for i in range(2)]))
            rows = lambda r: [r + k + 1 for k in range(size)]  # noqa: E731
            inputs = [torch.arange(sum(rows(r)) * 2).view(-1, 2).float() + 1000 * r for r in range(size)]
            out = torch.empty(sum(rows(r)[rank] for r in range(size)), 2)
            dist.all_to_all_single(out, inputs[rank], [rows(r)[rank] for r in range(size)], rows(rank))
            want = torch.cat([inputs[r][sum(rows(r)[:rank]):sum(rows(r)[:rank + 1])] for r in range(size)])
            check("all_to_all_single splits", out, want)
            # all_to_all of lists: rank r sends rank k a tensor of (r + k + 1) elements
            outs = [torch.empty(r + rank + 1) for r in range(size)]
            dist.all_to_all(outs, [torch.full((rank + k + 1,), float(10 * rank + k)) for k in range(size)])
            check("all_to_all", torch.cat(outs), torch.cat([torch.full((r + rank + 1,), float(10 * r + rank))
                                                           for r in range(size)]))

            dist.barrier()
            t = torch.ones(3)
            work = dist.all_reduce(t, async_op=True)
            work.wait()
            check("async", work.get_future().wait()[0], torch.full((3,), float(size)))
        finally:
            dist.destroy_process_group()
        return bad

    assert barrier(job) == [[], [], []]


def test_refusals_reach_every_rank_and_the_group_goes_on(barrier):
    def job(rank):
        import torch
        import torch.distributed as dist
        import gpucoll
        import gpucoll.torch_backend as gtb

        gtb.init_process_group()
        seen = {}
        try:
            # a tensor of a dtype the backend cannot pass on one rank
            t = torch.ones(4, dtype=torch.bool) if rank == 1 else torch.ones(4)
            try:
                dist.all_reduce(t)
                seen["dtype"] = "no error"
            except gpucoll.CollectiveError as e:
                seen["dtype"] = (type(e).__name__, isinstance(e, TypeError), str(e))
            try:
                dist.all_reduce(torch.ones(2, dtype=torch.int64), op=dist.ReduceOp.BAND)
                seen["op"] = "no error"
            except ValueError as e:
                seen["op"] = str(e)
            try:
                sub = dist.new_group([0, 1])  # rank 2 is no member: torch gives it no group
                seen["subgroup"] = "no error" if sub is not dist.GroupMember.NON_GROUP_MEMBER else "not a member"
            except ValueError as e:
                seen["subgroup"] = str(e)
            t = torch.ones(2)
            dist.all_reduce(t)
            seen["after"] = t.tolist()
        finally:
            dist.destroy_process_group()
        return seen

    got = barrier(job)
    kind, is_type_error, message = got[1]["dtype"]
    assert kind == "UnsupportedArrayError" and is_type_error and "bool" in message, got[1]
    assert all(got[r]["dtype"] != "no error" and "rank 1" in got[r]["dtype"][2] for r in (0, 2)), got
    assert all("BAND" in g["op"] and "not supported" in g["op"] for g in got), got
    assert all("split()" in got[r]["subgroup"] for r in (0, 1)) and got[2]["subgroup"] == "not a member", got
    assert [g["after"] for g in got] == [[3.0, 3.0]] * 3


def test_a_later_stage_replaces_the_group_an_earlier_task_left(barrier):
    def leave(rank):
        import gpucoll.torch_backend as gtb
        gtb.init_process_group()  # no destroy: the reused Python worker keeps it
        return True

    def again(rank):
        import torch
        import torch.distributed as dist
        import gpucoll.torch_backend as gtb
        gtb.init_process_group()
        try:
            t = torch.full((2,), float(rank))
            dist.all_reduce(t)
            return t.tolist()
        finally:
            dist.destroy_process_group()

    assert barrier(leave) == [True] * 3
    assert barrier(again) == [[3.0, 3.0]] * 3


STEPS = 8


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(16, 6, generator=g)
    return x, x @ torch.linspace(-1, 1, 12).view(6, 2) + 0.1 * torch.randn(16, 2, generator=g)


def model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)).double()


def train(net, rank):
    """SGD on this rank's batches; under DDP the gradient is the mean over ranks."""
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    for step in range(STEPS):
        x, y = batch(rank, step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x.double()), y.double()).backward()
        opt.step()
    return [p.detach().clone() for p in net.parameters()]


def test_ddp_on_gpucoll_matches_ddp_on_gloo(barrier):
    def job(rank):
        import os
        import torch.distributed as dist
        from pyspark import BarrierTaskContext
        import gpucoll.torch_backend as gtb
        from torch.nn.parallel import DistributedDataParallel as DDP

        comm = gtb.init_process_group()
        try:
            on_gpucoll = train(DDP(model()), rank)
        finally:
            dist.destroy_process_group()

        # gloo needs a rendezvous: rank 0's TCPStore on a free port, shared as TorchDistributor does
        ctx = BarrierTaskContext.get()
        host = ctx.getTaskInfos()[0].address.split(":")[0]
        store = dist.TCPStore(host, 0, comm.size, is_master=True, wait_for_workers=False) if rank == 0 else None
        port = int(ctx.allGather(str(store.port if store else -1))[0])
        if store is None:
            store = dist.TCPStore(host, port, comm.size, is_master=False)
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # local-cluster: every rank on this host
        dist.init_process_group("gloo", store=store, rank=rank, world_size=comm.size)
        try:
            on_gloo = train(DDP(model()), rank)
        finally:
            dist.destroy_process_group()
        return [p.numpy() for p in on_gpucoll], [p.numpy() for p in on_gloo]

    got = barrier(job)
    import numpy as np

    # one step on the mean loss over ranks' batches is DDP's step: the single-process reference
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    for step in range(STEPS):
        opt.zero_grad()
        sum(torch.nn.functional.mse_loss(net(x.double()), y.double())
            for x, y in (batch(r, step) for r in range(len(got)))).div(len(got)).backward()
        opt.step()
    alone = [p.detach().numpy() for p in net.parameters()]

    first = got[0][0]
    for rank, (on_gpucoll, on_gloo) in enumerate(got):
        assert all(np.array_equal(a, b) for a, b in zip(on_gpucoll, first)), "rank %d's weights differ" % rank
        assert all(np.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(on_gpucoll, on_gloo)), rank
    assert all(np.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(first, alone))
    assert not all(np.allclose(a, b) for a, b in zip(first, [p.detach().numpy() for p in model().parameters()]))
