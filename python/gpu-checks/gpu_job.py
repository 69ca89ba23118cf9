"""The Python door on the GPU machine: a PySpark barrier job with torch CUDA tensors (and CuPy
arrays), submitted through spark-submit with the one jar and the package (scripts/python/gpu-check.sh).

  gpu_job.py --ranks N --out DIR [--commit C] [--calls K]

Every rank: every collective, type and op against torch on the same inputs, CuPy arrays, bad input,
CUDA-graph capture; at one rank also our kernel forced (spark.gpucoll.internal.kernelVariant=ll: a
one-rank group otherwise only copies), the per-call time of an eager all_reduce beside
torch.distributed on NCCL in the same task, and DDP on backend "gpucoll" beside DDP on NCCL.
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
        out["ddp"] = ddp(dev)
    out["observed"] = comm.path_report().get("observed", {})
    return rank, out


def latency(comm, dev, calls):
    """Per-call time of an eager in-place allReduce, ours and torch.distributed on NCCL (one rank)."""
    import torch
    import torch.distributed as dist
    rows = []
    if not dist.is_initialized():
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1,
                                device_id=dev)
    for nbytes in (8, 1024, 16384, 65536):
        t = torch.ones(nbytes // 4, device=dev)
        row = {"bytes": nbytes}
        for name, call in (("ours_us", lambda: comm.all_reduce(t)), ("nccl_us", lambda: dist.all_reduce(t))):
            best = None
            for _ in range(5):
                for _ in range(200):
                    call()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(calls):
                    call()
                torch.cuda.synchronize()
                us = (time.perf_counter() - t0) / calls * 1e6
                best = us if best is None else min(best, us)
            row[name] = round(best, 3)
        row["ours_over_nccl"] = round(row["ours_us"] / row["nccl_us"], 3)
        rows.append(row)
    dist.destroy_process_group()
    return rows


def ddp(dev):
    """A few steps of DDP on backend gpucoll and on NCCL from the same seed: the losses."""
    import torch
    import torch.distributed as dist
    import gpucoll.torch_backend as gtb
    losses = {}
    for backend in ("gpucoll", "nccl"):
        if backend == "gpucoll":
            gtb.init_process_group()
        else:
            dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, device_id=dev)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).to(dev)
        ddp_model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index], bucket_cap_mb=0.05)
        opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
        g = torch.Generator(device="cpu").manual_seed(1)
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
        dist.destroy_process_group()
    return losses


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--out", default=".")
    p.add_argument("--commit", default="")
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args()
    from pyspark import SparkConf, SparkContext
    # SparkContext, not a SparkSession: the GPU machine's slim Spark set has no spark-sql.
    sc = SparkContext.getOrCreate(SparkConf().setAppName("gpucoll-python-gpu-%dr" % args.ranks))
    sc.setLogLevel("WARN")
    phases = ["route"] + (["forced"] if args.ranks == 1 else [])
    results = {}
    t_start = time.time()
    for phase in phases:
        if phase == "forced":
            sc.setLocalProperty("spark.gpucoll.internal.kernelVariant", "ll")
        t0 = time.time()
        got = sc.parallelize(range(args.ranks), args.ranks).barrier().mapPartitions(
            lambda it, phase=phase: [task_body(args, phase)]).collect()
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
            print("  eager all_reduce %6d B: ours %7.3f us, torch.distributed NCCL %7.3f us, ours/NCCL %.3f" % (
                row["bytes"], row["ours_us"], row["nccl_us"], row["ours_over_nccl"]))
        if "ddp" in r0:
            d = r0["ddp"]
            diff = max(abs(a - b) for a, b in zip(d["gpucoll"], d["nccl"]))
            print("  DDP 8 steps: loss gpucoll %.6f -> %.6f, NCCL %.6f -> %.6f, largest difference %.2e" % (
                d["gpucoll"][0], d["gpucoll"][-1], d["nccl"][0], d["nccl"][-1], diff))
            if diff > 1e-5:
                failures.append(("ddp", 0, "losses differ by %g" % diff))
    print("failures: %s" % (failures or "none"))
    print("gpucoll python gpu check: %s" % ("FAIL" if failures else "PASS"))
    sc.stop()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
