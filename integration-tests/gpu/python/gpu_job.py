"""The Python door on the GPU machine: a PySpark barrier job with torch CUDA tensors (and CuPy
arrays), submitted through spark-submit with the one jar and the package (integration-tests/gpu/python/gpu-check.sh).

  gpu_job.py --ranks N --out DIR [--commit C] [--calls K] [--hosts]

Every rank: every collective, type and op against torch on the same inputs, CuPy arrays, bad input,
CUDA-graph capture; at one rank also our kernel forced (spark.gpucoll.internal.kernelVariant=ll: a
one-rank group otherwise only copies), the per-call time of an eager all_reduce beside
torch.distributed on NCCL in the same task, and DDP on backend "gpucoll" beside DDP on NCCL.
With --hosts (every rank on a host of its own, integration-tests/gpu/python/gpu-check.sh --hosts): the same checks
on the group's NCCL communicator in the Python processes, DDP on "gpucoll" beside DDP on NCCL across
the ranks, then a rank killed mid-call (the others must fail within the timeout) and a next stage
that must form and run.
Prints a table, writes DIR/python-gpu-<N>r.json, exits 1 on any wrong result."""

import argparse
import json
import os
import sys
import time


def task_body(args, phase):
    """What every barrier task runs; returns (rank, result dict)."""
    import numpy as np
    import torch
    from pyspark import BarrierTaskContext

    import gpucoll

    ctx = BarrierTaskContext.get()
    gpu = int(ctx.resources()["gpu"].addresses[0]) if "gpu" in ctx.resources() else 0
    torch.cuda.set_device(gpu)
    dev = torch.device("cuda", gpu)
    comm = gpucoll.communicator()
    rank, size = comm.rank, comm.size
    out = {"rank": rank, "size": size, "failures": [], "checks": 0}

    def fail(what):
        out["failures"].append(what)

    def value(r, n, dtype):
        return (((torch.arange(n) * 7 + r * 3) % 5) + 1).to(dtype)

    def reference(op, n, dtype):
        xs = torch.stack([value(r, n, torch.float64) for r in range(size)])
        ref = {"sum": xs.sum(0), "prod": xs.prod(0), "min": xs.min(0).values, "max": xs.max(0).values}.get(op)
        if ref is None:
            s = xs.sum(0)
            ref = torch.trunc(s / size) if not dtype.is_floating_point else s / size
        return ref.to(dtype)

    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int8,
              torch.uint8]
    ops = ["sum", "prod", "min", "max", "avg"]
    counts = [1, 7, 1000, 8000] if phase == "forced" else [1, 7, 1000, 300_000]

    # every type, op and count of allReduce, in place and out of place
    for dtype in dtypes:
        for op in ops:
            for n in counts:
                x = value(rank, n, dtype).to(dev)
                want = reference(op, n, dtype)
                comm.all_reduce(x, op=op)
                y = torch.empty_like(x)
                comm.all_reduce(value(rank, n, dtype).to(dev), y, op=op)
                torch.cuda.synchronize()
                for got, how in ((x, "in place"), (y, "out of place")):
                    out["checks"] += 1
                    tol = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6
                    if dtype.is_floating_point:
                        ok = torch.allclose(got.cpu().double(), want.double(), rtol=tol, atol=tol)
                    else:
                        ok = torch.equal(got.cpu(), want)
                    if not ok:
                        fail("all_reduce %s %s n=%d %s" % (dtype, op, n, how))
    # the data-movement collectives
    for dtype in (torch.float32, torch.bfloat16, torch.int8):
        for n in (3, 5000):
            s = value(rank, n, dtype).to(dev)
            g = comm.all_gather(s)
            want = torch.stack([value(r, n, dtype) for r in range(size)])
            out["checks"] += 1
            if not torch.equal(g.cpu(), want):
                fail("all_gather %s n=%d" % (dtype, n))
            s = value(rank, n * size, dtype).to(dev)
            rs = comm.reduce_scatter(s, op="max")
            full = torch.stack([value(r, n * size, dtype) for r in range(size)]).max(0).values
            out["checks"] += 1
            if not torch.equal(rs.cpu().reshape(-1), full[rank * n:(rank + 1) * n]):
                fail("reduce_scatter %s n=%d" % (dtype, n))
            s = (torch.arange(n * size) % 100 + rank).to(dtype).to(dev)
            a = comm.all_to_all(s)
            want = torch.cat([(torch.arange(n * size) % 100 + r).to(dtype)[rank * n:(rank + 1) * n]
                              for r in range(size)])
            out["checks"] += 1
            if not torch.equal(a.cpu(), want):
                fail("all_to_all %s n=%d" % (dtype, n))
            b = value(rank, n, dtype).to(dev)
            comm.broadcast(b, root=size - 1)
            out["checks"] += 1
            if not torch.equal(b.cpu(), value(size - 1, n, dtype)):
                fail("broadcast %s n=%d" % (dtype, n))
    counts_v = [r + 1 for r in range(size)]
    s = torch.full((sum(counts_v),), float(rank), device=dev)
    recv_counts = [rank + 1] * size
    av = comm.all_to_allv(s, counts_v, recv_counts)
    out["checks"] += 1
    if av.cpu().tolist() != [float(r) for r in range(size) for _ in range(rank + 1)]:
        fail("all_to_allv")
    vals = torch.tensor([float(rank), float(-rank)], device=dev)
    idx = torch.tensor([rank, rank], dtype=torch.int32, device=dev)
    mv, mi = comm.all_reduce_loc(vals, idx, "maxloc")
    out["checks"] += 1
    if mv.cpu().tolist() != [float(size - 1), 0.0] or mi.cpu().tolist() != [size - 1, 0]:
        fail("all_reduce_loc")
    try:
        import cupy
        with cupy.cuda.Device(gpu):
            c = cupy.arange(10, dtype=cupy.float32) + rank
            comm.all_reduce(c)
            cupy.cuda.get_current_stream().synchronize()
            out["checks"] += 1
            if c.get().tolist() != [float(size * i + sum(range(size))) for i in range(10)]:
                fail("cupy all_reduce")
    except ImportError:
        out["cupy"] = "not installed"
    # bad input: a clear error on every rank, and the group goes on
    try:
        comm.all_reduce(torch.ones(16, device=dev)[::2])
        fail("a non-contiguous tensor was taken")
    except gpucoll.InvalidArgumentError as e:
        out["checks"] += 1
        out["bad_input"] = str(e)
    # capture in a CUDA graph: replays read the send buffer's current values
    s = torch.zeros(256, device=dev)
    r = torch.zeros(256, device=dev)
    comm.all_reduce(s, r)  # the route asked and the kernel loaded before the capture
    torch.cuda.synchronize()
    try:
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            with torch.cuda.graph(graph, stream=stream):
                comm.all_reduce(s, r)
        good = True
        for k in range(3):
            s.fill_(k + 1 + rank)
            graph.replay()
            torch.cuda.synchronize()
            good &= r.cpu().tolist() == [float(sum(k + 1 + q for q in range(size)))] * 256
        out["checks"] += 1
        out["graph"] = "captured, 3 replays " + ("right" if good else "WRONG")
        if not good:
            fail("graph replay")
    except gpucoll.CollectiveError as e:
        out["graph"] = "refused: %s" % e
    comm.synchronize()
    if phase == "forced" and rank == 0:
        out["latency"] = latency(comm, dev, args.calls)
        out["ddp"] = ddp(comm, dev)
    report = comm.path_report()
    if phase == "hosts":
        if not any(k.endswith("/nccl") for k in report.get("observed", {})):
            fail("no call ran on NCCL across hosts: %s" % report.get("observed"))
        out["nccl"] = [f for f in report.get("findings", []) if "NCCL communicator formed" in f]
        if not out["nccl"]:
            fail("no NCCL communicator formed in the Python process: %s" % report.get("findings"))
        if not out["failures"]:  # DDP and the timings compare against the group's NCCL communicator
            out["ddp"] = ddp(comm, dev, ctx)
            out["host_us"] = out["ddp"].pop("host_us")
    out["observed"] = report.get("observed", {})
    return rank, out


def kill_body(args):
    """The last rank kills its own process after a few calls; the others call on until they fail,
    and record the error and how long it took (a file per rank in --out)."""
    import signal
    import torch
    from pyspark import BarrierTaskContext
    import gpucoll
    ctx = BarrierTaskContext.get()
    gpu = int(ctx.resources()["gpu"].addresses[0]) if "gpu" in ctx.resources() else 0
    torch.cuda.set_device(gpu)
    comm = gpucoll.communicator()
    x = torch.ones(1 << 16, device=torch.device("cuda", gpu))
    for _ in range(3):
        comm.all_reduce(x)
    comm.synchronize()
    if comm.rank == comm.size - 1:
        with open(os.path.join(args.out, "killed-at"), "w") as f:
            f.write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.time()
    seen = {"rank": comm.rank}
    try:
        while time.time() - t0 < 120:
            comm.all_reduce(x)
            comm.synchronize()
        seen["error"] = None
    except gpucoll.CollectiveError as e:
        seen["error"] = "%s: %s" % (type(e).__name__, e)
    seen["at"] = time.time()
    with open(os.path.join(args.out, "kill-seen-rank%d.json" % comm.rank), "w") as f:
        json.dump(seen, f)
    raise RuntimeError("rank %d after the kill: %s" % (comm.rank, seen["error"]))


def after_kill_body():
    """The stage after the kill: the group forms again and is right."""
    import torch
    from pyspark import BarrierTaskContext
    import gpucoll
    ctx = BarrierTaskContext.get()
    gpu = int(ctx.resources()["gpu"].addresses[0]) if "gpu" in ctx.resources() else 0
    torch.cuda.set_device(gpu)
    comm = gpucoll.communicator()
    x = torch.full((1000,), float(comm.rank + 1), device=torch.device("cuda", gpu))
    comm.all_reduce(x)
    comm.synchronize()
    want = float(sum(range(1, comm.size + 1)))
    return comm.rank, {"rank": comm.rank, "checks": 1, "failures": [] if x.cpu().eq(want).all().item()
                       else ["all_reduce after the kill"], "observed": comm.path_report().get("observed", {})}


def ddp(comm, dev, ctx=None):
    """A few steps of DDP on backend gpucoll, then on NCCL, from the same seed and each rank's own data:
    the losses of each. Alone (one rank, no ``ctx``) NCCL's process group is on a HashStore; across the
    group's ranks (``ctx``: the barrier context) on a TCPStore on rank 0's host, and with it up the host
    time per call (``host_cost``) comes back as "host_us"."""
    import numpy as np
    import torch
    import torch.distributed as dist
    import gpucoll.torch_backend as gtb
    if ctx is not None:
        port = np.zeros(1, np.int64)
        if comm.rank == 0:
            import socket
            with socket.socket() as sock:
                sock.bind(("", 0))
                port[0] = sock.getsockname()[1]
        comm.broadcast(port, root=0)
        host0 = ctx.getTaskInfos()[0].address.rsplit(":", 1)[0]
    losses = {}
    for backend in ("gpucoll", "nccl"):
        if backend == "gpucoll":
            gtb.init_process_group()
        else:
            if ctx is None:
                store = dist.HashStore()
            else:
                store = dist.TCPStore(host0, int(port[0]), comm.size, comm.rank == 0,
                                      timeout=__import__("datetime").timedelta(seconds=60))
            dist.init_process_group("nccl", store=store, rank=comm.rank, world_size=comm.size, device_id=dev)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).to(dev)
        ddp_model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index], bucket_cap_mb=0.05)
        opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
        g = torch.Generator(device="cpu").manual_seed(1 + comm.rank)
        data = torch.randn(16, 32, generator=g).to(dev)
        target = torch.randn(16, 8, generator=g).to(dev)
        seen = []
        for _ in range(8):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp_model(data), target)
            loss.backward()
            opt.step()
            seen.append(loss.item())
        losses[backend] = seen
        if backend == "nccl" and ctx is not None:
            losses["host_us"] = host_cost(comm, dev, 100)
        dist.destroy_process_group()
    return losses


def best_us(call, calls, sync, host_only=False):
    """Per-call time of ``calls`` back-to-back calls, ``sync`` after them, or (``host_only``) before
    it: the host's time to issue them (best of 5, after a warm-up)."""
    best = None
    for _ in range(5):
        for _ in range(min(calls, 200)):
            call()
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        if not host_only:
            sync()
        us = (time.perf_counter() - t0) / calls * 1e6
        sync()
        best = us if best is None else min(best, us)
    return round(best, 3)


def latency(comm, dev, calls):
    """Per-call time of an eager allReduce (one rank): ours in place, torch.distributed on NCCL, CuPy's
    NCCL call (Cython, raw pointers, out of place) and the bare ctypes launch of our kernel."""
    import torch
    import torch.distributed as dist
    from cupy.cuda import nccl
    rows = []
    if not dist.is_initialized():
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1,
                                device_id=dev)
    one = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
    sync = torch.cuda.synchronize
    for nbytes in (8, 1024, 16384, 65536):
        t = torch.ones(nbytes // 4, device=dev)
        u = torch.empty_like(t)
        stream = torch.cuda.current_stream(dev).cuda_stream
        row = {"bytes": nbytes}
        row["ours_us"] = best_us(lambda: comm.all_reduce(t), calls, sync)
        row["nccl_us"] = best_us(lambda: dist.all_reduce(t), calls, sync)
        row["cupy_nccl_us"] = best_us(lambda: one.allReduce(t.data_ptr(), u.data_ptr(), t.numel(), nccl.NCCL_FLOAT32,
                                                            nccl.NCCL_SUM, stream), calls, sync)
        row["ours_over_nccl"] = round(row["ours_us"] / row["nccl_us"], 3)
        row["ours_over_cupy"] = round(row["ours_us"] / row["cupy_nccl_us"], 3)
        # The floor of a launch from Python: the same kernel and arguments through the same ctypes
        # cuLaunchKernel, nothing else (a one-rank kernel takes a fresh epoch on the device anyway).
        m = comm._device
        r = m._routes[(0, 0, 0, nbytes // 4)]
        row["ctypes_launch_us"] = best_us(lambda: m._launch(r.function, r.grid, 1, 1, r.block, 1, 1, 0, stream,
                                                            m._params, None), calls, sync)
        row["ours_over_launch"] = round(row["ours_us"] / row["ctypes_launch_us"], 3)
        rows.append(row)
    one.destroy()
    dist.destroy_process_group()
    return rows


def host_cost(comm, dev, calls):
    """Host time per eager allReduce call on NCCL across hosts (enqueue only: no wait inside a batch):
    ours, CuPy's call on the group's own NCCL communicator (raw pointers, the current stream) and
    torch.distributed on NCCL (the caller has its process group up)."""
    import torch
    import torch.distributed as dist
    from cupy.cuda import nccl
    m = comm._device
    rows = []
    for nbytes in (8, 1024, 65536):
        t = torch.ones(nbytes // 4, device=dev)
        stream = torch.cuda.current_stream(dev).cuda_stream
        sync = comm.synchronize
        row = {"bytes": nbytes}
        row["ours_us"] = best_us(lambda: comm.all_reduce(t), calls, sync, True)
        row["cupy_us"] = best_us(lambda: m.nccl.comm.allReduce(t.data_ptr(), t.data_ptr(), t.numel(),
                                                               nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream), calls, sync,
                                 True)
        row["torch_us"] = best_us(lambda: dist.all_reduce(t), calls, torch.cuda.synchronize, True)
        row["ours_over_cupy"] = round(row["ours_us"] / row["cupy_us"], 3)
        rows.append(row)
    return rows


def kill_report(rdd, args, t0):
    """Runs the kill stage, which must fail; its result: whether every survivor failed within the
    timeout (60 s here) with a gpucoll error."""
    import glob
    failures = []
    try:
        rdd.mapPartitions(lambda it: [kill_body(args)]).collect()
        failures.append("the stage with a killed rank succeeded")
    except Exception as e:  # noqa: BLE001 - the stage must fail; what each survivor saw is in its file
        first = str(e).splitlines()[0][:200]
    with open(os.path.join(args.out, "killed-at")) as f:
        killed = float(f.read())
    seen = []
    for path in sorted(glob.glob(os.path.join(args.out, "kill-seen-rank*.json"))):
        with open(path) as f:
            seen.append(json.load(f))
    if len(seen) != args.ranks - 1:
        failures.append("%d of %d survivors recorded their error" % (len(seen), args.ranks - 1))
    for s in seen:
        after = s["at"] - killed
        s["seconds_after_kill"] = round(after, 2)
        if not s["error"] or after > 60:
            failures.append("rank %d: %s after %.1f s" % (s["rank"], s["error"], after))
    return {"seconds": round(time.time() - t0, 1), "ranks": [{"rank": 0, "checks": len(seen), "failures": failures,
            "kill": {"survivors": seen, "stage_error": locals().get("first")}}]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--out", default=".")
    p.add_argument("--commit", default="")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--hosts", action="store_true")
    args = p.parse_args()
    from pyspark import SparkConf, SparkContext
    # SparkContext, not a SparkSession: the GPU machine's slim Spark set has no spark-sql.
    sc = SparkContext.getOrCreate(SparkConf().setAppName("gpucoll-python-gpu-%dr" % args.ranks))
    sc.setLogLevel("WARN")
    phases = ["hosts", "kill", "after-kill"] if args.hosts else ["route"] + (["forced"] if args.ranks == 1 else [])
    results = {}
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    for phase in phases:
        if phase == "forced":
            sc.setLocalProperty("spark.gpucoll.internal.kernelVariant", "ll")
        t0 = time.time()
        rdd = sc.parallelize(range(args.ranks), args.ranks).barrier()
        if phase == "kill":
            results[phase] = kill_report(rdd, args, t0)
            continue
        body = after_kill_body if phase == "after-kill" else (lambda phase=phase: task_body(args, phase))
        got = rdd.mapPartitions(lambda it, body=body: [body()]).collect()
        sc.setLocalProperty("spark.gpucoll.internal.kernelVariant", None)
        results[phase] = {"seconds": round(time.time() - t0, 1), "ranks": [r for _, r in sorted(got)]}
    failures = [(phase, r["rank"], f) for phase, res in results.items() for r in res["ranks"] for f in r["failures"]]
    import torch
    record = {"kind": "python-gpu", "date": time.strftime("%Y-%m-%d"), "commit": args.commit, "ranks": args.ranks,
              "machine": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "nccl": ".".join(map(str, torch.cuda.nccl.version())), "seconds": round(time.time() - t_start, 1),
              "results": results, "failures": failures}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "python-gpu-%dr.json" % args.ranks), "w") as f:
        json.dump(record, f, indent=1)
    print("== Python door on the GPU, %d rank(s), %s" % (args.ranks, record["machine"]))
    for phase, res in results.items():
        r0 = res["ranks"][0]
        print("%-7s %5.1f s  checks per rank %s  graph: %s  observed: %s" % (
            phase, res["seconds"], [r["checks"] for r in res["ranks"]], r0.get("graph"), r0.get("observed")))
        for row in r0.get("latency", []):
            print("  eager all_reduce %6d B: ours %7.3f us, torch.distributed NCCL %7.3f us (ours/NCCL %.3f),"
                  " CuPy's NCCL call %7.3f us, the bare ctypes launch %6.3f us (ours/launch %.2f)" % (
                      row["bytes"], row["ours_us"], row["nccl_us"], row["ours_over_nccl"], row["cupy_nccl_us"],
                      row["ctypes_launch_us"], row["ours_over_launch"]))
        for row in r0.get("host_us", []):
            print("  host time per call, %6d B on NCCL across hosts: ours %7.3f us, CuPy's NCCL call on the same"
                  " communicator %7.3f us (ours/CuPy %.3f), torch.distributed NCCL %7.3f us" % (
                      row["bytes"], row["ours_us"], row["cupy_us"], row["ours_over_cupy"], row["torch_us"]))
        for r in res["ranks"]:
            if "ddp" not in r:
                continue
            d = r["ddp"]
            diff = max(abs(a - b) for a, b in zip(d["gpucoll"], d["nccl"]))
            print("  DDP 8 steps, rank %d: loss gpucoll %.6f -> %.6f, NCCL %.6f -> %.6f, largest difference %.2e" % (
                r["rank"], d["gpucoll"][0], d["gpucoll"][-1], d["nccl"][0], d["nccl"][-1], diff))
            if diff > 1e-5:
                failures.append(("ddp", r["rank"], "losses differ by %g" % diff))
        if "kill" in r0:
            print("  kill: %s" % r0["kill"])
    print("failures: %s" % (failures or "none"))
    print("gpucoll python gpu check: %s" % ("FAIL" if failures else "PASS"))
    sc.stop()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
