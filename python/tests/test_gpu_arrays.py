"""GPU arrays through the executor's routes, on a stand-in driver (tests/fake_cuda.py): the device
group forms through the plugin, the executor plans, this process launches or stages. The kernels
themselves run on the GPU machine (integration-tests/gpu/python)."""

import numpy as np


def _value(rank, n, dtype):
    return (((np.arange(n) * 7 + rank * 3) % 5) + 1).astype(dtype)


def test_ranks_sharing_a_gpu_stage_through_the_host_and_match_numpy(barrier):
    """Ranks of different processes on one GPU must not spin: the route stages every call."""
    def job(rank):
        import fake_cuda
        import gpucoll
        launches = fake_cuda.install("GPU-00000000-0000-0000-0000-000000000001")
        comm = gpucoll.communicator()
        n = comm.size
        got = {}
        for dtype in (np.float32, np.int64, np.float16):
            x = fake_cuda.FakeCudaArray(_value(rank, 12, dtype))
            comm.all_reduce(x, op="max")
            got["all_reduce", np.dtype(dtype).name] = x.host.tolist()
        s = fake_cuda.FakeCudaArray(_value(rank, 4, np.int32))
        out = fake_cuda.FakeCudaArray(np.zeros(4 * n, np.int32))
        comm.all_gather(s, out)
        got["all_gather"] = out.host.tolist()
        s = fake_cuda.FakeCudaArray(_value(rank, 2 * n, np.float32))
        out = fake_cuda.FakeCudaArray(np.zeros(2, np.float32))
        comm.reduce_scatter(s, out)
        got["reduce_scatter"] = out.host.tolist()
        s = fake_cuda.FakeCudaArray(np.arange(n, dtype=np.int32) + 10 * rank)
        out = fake_cuda.FakeCudaArray(np.zeros(n, np.int32))
        comm.all_to_all(s, out)
        got["all_to_all"] = out.host.tolist()
        b = fake_cuda.FakeCudaArray(np.full(5, rank + 1, np.float64))
        comm.broadcast(b, root=2)
        got["broadcast"] = b.host.tolist()
        report = comm.path_report()
        return got, report["observed"], report["findings"], len(launches)

    ranks = barrier(job)
    n = len(ranks)
    for rank, (got, observed, findings, launches) in enumerate(ranks):
        for dtype in (np.float32, np.int64, np.float16):
            want = np.max([_value(r, 12, dtype) for r in range(n)], axis=0).tolist()
            assert got["all_reduce", np.dtype(dtype).name] == want
        assert got["all_gather"] == np.concatenate([_value(r, 4, np.int32) for r in range(n)]).tolist()
        full = np.sum([_value(r, 2 * n, np.float32) for r in range(n)], axis=0)
        assert got["reduce_scatter"] == full[2 * rank:2 * rank + 2].tolist()
        assert got["all_to_all"] == [rank + 10 * r for r in range(n)]
        assert got["broadcast"] == [3.0] * 5
        assert observed.get("allReduce/gpu-staged-host") == 3, observed
        assert any("time-slice" in f for f in findings), findings
        assert launches == 0


def test_ranks_with_their_own_gpus_launch_the_kernel_the_executor_plans(barrier):
    """Distinct GPUs with P2P: our kernels, launched here with the executor's kernel, grid and block,
    the group's fields (rank, size, timeout, every peer's mapped workspace) and a fresh epoch each."""
    def job(rank):
        import fake_cuda
        import gpucoll
        uuids = ["GPU-00000000-0000-0000-0000-0000000000%02d" % (10 + r) for r in range(3)]
        peers = ",".join("0000:%s:00.0|1|1" % u[-2:] for u in uuids if u != uuids[rank])
        launches = fake_cuda.install(uuids[rank], peers)
        comm = gpucoll.communicator()
        x = fake_cuda.FakeCudaArray(np.ones(2, np.float32))
        comm.all_reduce(x)
        comm.all_reduce(fake_cuda.FakeCudaArray(np.ones(100_000, np.float32)))
        out = fake_cuda.FakeCudaArray(np.zeros(2 * comm.size, np.float32))
        comm.all_gather(x, out)
        return [dict(l, peers=len(set(l["peers"]))) for l in launches], comm.path_report()["observed"]

    ranks = barrier(job)
    for rank, (launches, observed) in enumerate(ranks):
        assert [l["epoch"] for l in launches] == [1, 2, 3]
        assert launches[0]["kernel"].startswith("gc_allreduce_") and launches[0]["kernel"].endswith("_f32")
        assert launches[2]["kernel"].startswith("gc_allgather_")
        assert launches[0]["kernel"] != launches[1]["kernel"], "8 B and 400 KB took one kernel"
        for l in launches:
            assert (l["rank"], l["nranks"], l["block"], l["timeout"]) == (rank, 3, 512, 30 * 10**9), l
            assert l["peers"] == 3 and l["grid"] >= 1
        assert launches[0]["count"] == 2 and launches[1]["count"] == 100_000
        assert sum(v for k, v in observed.items() if k.startswith("allReduce/gpu-")) == 2, observed


def test_one_rank_copies_and_a_forced_kernel_runs_here(spark, barrier):
    """One rank: the copy (nothing in place), as the Java GPU communicator; with a kernel variant
    forced, our kernel is launched on this process (the stand-in does its one-rank work)."""
    def job(rank):
        import fake_cuda
        import gpucoll
        launches = fake_cuda.install("GPU-00000000-0000-0000-0000-000000000021")
        comm = gpucoll.communicator()
        s = fake_cuda.FakeCudaArray(np.arange(6, dtype=np.float64))
        r = fake_cuda.FakeCudaArray(np.zeros(6, np.float64))
        comm.all_reduce(s, r)
        return r.host.tolist(), [l["kernel"] for l in launches], comm.path_report()["observed"]

    sc = spark.sparkContext
    values, kernels, observed = barrier(job, 1)[0]
    assert values == list(range(6)) and kernels == [] and observed.get("allReduce/one-rank-copy") == 1, observed
    sc.setLocalProperty("spark.gpucoll.internal.kernelVariant", "ll")
    try:
        values, kernels, observed = barrier(job, 1)[0]
    finally:
        sc.setLocalProperty("spark.gpucoll.internal.kernelVariant", None)
    assert values == list(range(6)) and kernels == ["gc_allreduce_ll_f64"], (kernels, observed)


def test_a_group_on_nccl_forms_from_rank_0s_unique_id_and_calls_it_on_the_callers_stream(spark, barrier):
    """Where the executor's route takes NCCL (here above gpu.twoShotMaxBytes; across hosts or beyond
    our kernels' ranks, every call), every rank forms the group's communicator from the one unique id
    rank 0 made, and each such call goes to NCCL with the executor's count, type, op and root, on the
    array's stream; smaller calls still launch our kernel."""
    def job(rank):
        import fake_cuda
        import gpucoll
        uuids = ["GPU-00000000-0000-0000-0000-0000000000%02d" % (30 + r) for r in range(3)]
        peers = ",".join("0000:%s:00.0|1|1" % u[-2:] for u in uuids if u != uuids[rank])
        launches = fake_cuda.install(uuids[rank], peers)
        formed = fake_cuda.install_nccl()
        comm = gpucoll.communicator()
        comm.all_reduce(fake_cuda.FakeCudaArray(np.ones(2, np.float32)))
        x = fake_cuda.FakeCudaArray(np.ones(1024, np.float32))
        comm.all_reduce(x, op="max")
        out = fake_cuda.FakeCudaArray(np.zeros(1024 * comm.size, np.float32))
        comm.all_gather(x, out)
        comm.all_to_all(fake_cuda.FakeCudaArray(np.ones(512 * comm.size, np.int64)),
                        fake_cuda.FakeCudaArray(np.zeros(512 * comm.size, np.int64)))
        comm.broadcast(fake_cuda.FakeCudaArray(np.ones(1024, np.float64)), root=2)
        comm.synchronize()
        report = comm.path_report()
        n = formed[0]
        return n.unique_id.hex(), n.rank, n.size, n.calls, len(launches), report["observed"], report["findings"]

    sc = spark.sparkContext
    sc.setLocalProperty("spark.gpucoll.gpu.oneShotMaxBytes", "1k")
    sc.setLocalProperty("spark.gpucoll.gpu.twoShotMaxBytes", "1k")
    try:
        ranks = barrier(job, 3)
    finally:
        sc.setLocalProperty("spark.gpucoll.gpu.oneShotMaxBytes", None)
        sc.setLocalProperty("spark.gpucoll.gpu.twoShotMaxBytes", None)
    assert len({r[0] for r in ranks}) == 1 and len(ranks[0][0]) == 256, "every rank forms from rank 0's id"
    for rank, (_, nrank, nsize, calls, launches, observed, findings) in enumerate(ranks):
        assert (nrank, nsize, launches) == (rank, 3, 1)
        assert [(c["coll"], c["count"], c["code"], c["op"], c["root"]) for c in calls] == [
            (0, 1024, 0, 3, 0), (1, 1024, 0, 0, 0), (3, 512, 5, 0, 0), (5, 1024, 1, 0, 2)], calls
        assert all(c["stream"] == 1 for c in calls) and calls[0]["in_place"]
        assert observed.get("allReduce/nccl") == 1 and observed.get("allGather/nccl") == 1, observed
        assert any(f.startswith("python gpu: NCCL communicator formed") for f in findings), findings


def test_without_nccl_a_python_process_reports_why_and_what_to_install():
    """The facts a process without CuPy's NCCL sends: version 0 and a reason that says what to install
    (the route puts it into its refusal of a group that needs NCCL)."""
    import importlib
    import sys
    from gpucoll.gpu import _nccl
    saved = sys.modules.get("cupy")
    sys.modules["cupy"] = None  # import cupy fails, as where it is not installed
    try:
        importlib.reload(_nccl)
        facts = _nccl.facts({"NCCL_DEBUG": "INFO", "PATH": "/bin"})
    finally:
        if saved is None:
            del sys.modules["cupy"]
        else:
            sys.modules["cupy"] = saved
        importlib.reload(_nccl)
    assert facts["nccl.version"] == "0"
    assert "pip install cupy-cuda13x" in facts["nccl.problem"], facts
    assert facts["env.NCCL_DEBUG"] == "INFO" and "env.PATH" not in facts
