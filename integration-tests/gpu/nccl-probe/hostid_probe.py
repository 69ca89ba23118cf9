"""Several NCCL ranks on one GPU, each process claiming its own host through NCCL_HOSTID, through
CuPy's NCCL module: whether NCCL accepts them, which transport it picks, and whether every collective
is right. Then the same ranks without NCCL_HOSTID (NCCL must refuse a duplicate GPU).
Usage (the GPU machine): python3 integration-tests/gpu/nccl-probe/hostid_probe.py [--ranks 2,3] [--out DIR]"""

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import traceback


def loaded_nccl():
    with open("/proc/self/maps") as f:
        for line in f:
            if "libnccl" in line:
                return line.split()[-1]
    return None


def rank_main(rank, size, hostid, q_uid, q_out, log_dir):
    if hostid is not None:
        os.environ["NCCL_HOSTID"] = hostid
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ["NCCL_DEBUG_SUBSYS"] = "INIT,NET"
    os.environ["NCCL_DEBUG_FILE"] = os.path.join(log_dir, "nccl.%s.r%d.log" % (hostid or "same", rank))
    out = {"rank": rank, "hostid": hostid}
    try:
        import cupy as cp
        from cupy.cuda import nccl
        cp.cuda.Device(0).use()
        if rank == 0:
            uid = nccl.get_unique_id()
            for _ in range(size - 1):
                q_uid.put(uid)
        else:
            uid = q_uid.get(timeout=60)
        t0 = time.perf_counter()
        comm = nccl.NcclCommunicator(size, uid, rank)
        out["init_ms"] = (time.perf_counter() - t0) * 1e3
        out["nccl_version"] = nccl.get_version()
        out["libnccl"] = loaded_nccl()
        s = cp.cuda.Stream(non_blocking=True)
        checks = {}
        for n in (1024, 64 << 10, 1 << 20, 4 << 20):
            x = cp.arange(n, dtype=cp.float32) + rank
            y = cp.empty_like(x)
            comm.allReduce(x.data.ptr, y.data.ptr, n, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s.ptr)
            s.synchronize()
            want = cp.arange(n, dtype=cp.float32) * size + sum(range(size))
            checks["allReduce/%d" % n] = bool(cp.array_equal(y, want))
            g = cp.empty(n * size, dtype=cp.float32)
            comm.allGather(x.data.ptr, g.data.ptr, n, nccl.NCCL_FLOAT32, s.ptr)
            s.synchronize()
            checks["allGather/%d" % n] = all(bool(cp.array_equal(g[r * n:(r + 1) * n], cp.arange(n, dtype=cp.float32) + r))
                                             for r in range(size))
            b = x.copy() if rank == 0 else cp.zeros_like(x)
            comm.broadcast(b.data.ptr, b.data.ptr, n, nccl.NCCL_FLOAT32, 0, s.ptr)
            s.synchronize()
            checks["broadcast/%d" % n] = bool(cp.array_equal(b, cp.arange(n, dtype=cp.float32)))
            # allToAll as grouped send/recv, as NCCL's own ncclAlltoAll does it
            blk = n // size
            src = cp.arange(n, dtype=cp.float32) + 1000 * rank
            dst = cp.empty_like(src)
            nccl.groupStart()
            for p in range(size):
                comm.send(src.data.ptr + 4 * blk * p, blk, nccl.NCCL_FLOAT32, p, s.ptr)
                comm.recv(dst.data.ptr + 4 * blk * p, blk, nccl.NCCL_FLOAT32, p, s.ptr)
            nccl.groupEnd()
            s.synchronize()
            wrong = []
            for p in range(size):
                want = cp.arange(rank * blk, (rank + 1) * blk, dtype=cp.float32) + 1000 * p
                bad = cp.nonzero(dst[p * blk:(p + 1) * blk] != want)[0]
                if bad.size:
                    i = int(bad[0])
                    wrong.append("from rank %d: %d of %d elements wrong, first at %d (%r, want %r)" % (
                        p, int(bad.size), blk, i, float(dst[p * blk + i]), float(want[i])))
            checks["allToAll/%d" % n] = not wrong
            if wrong:
                out.setdefault("wrong", {})["allToAll/%d" % n] = wrong
        # time: small allReduce, eager, host + completion per call
        x = cp.ones(2, dtype=cp.float32)
        y = cp.empty_like(x)
        for _ in range(20):
            comm.allReduce(x.data.ptr, y.data.ptr, 2, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s.ptr)
        s.synchronize()
        t0 = time.perf_counter()
        iters = 200
        for _ in range(iters):
            comm.allReduce(x.data.ptr, y.data.ptr, 2, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s.ptr)
        s.synchronize()
        out["allreduce_8B_us"] = (time.perf_counter() - t0) / iters * 1e6
        out["checks"] = checks
        out["ok"] = all(checks.values())
        comm.destroy()
    except Exception as e:  # noqa: BLE001 - the probe records what failed
        out["error"] = "%s: %s" % (type(e).__name__, e)
        out["trace"] = traceback.format_exc()[-2000:]
        out["ok"] = False
    q_out.put(out)


def run(size, distinct, log_dir):
    ctx = mp.get_context("spawn")
    q_uid, q_out = ctx.Queue(), ctx.Queue()
    procs = []
    for r in range(size):
        hostid = ("simhost-%d" % r) if distinct else None
        p = ctx.Process(target=rank_main, args=(r, size, hostid, q_uid, q_out, log_dir))
        p.start()
        procs.append(p)
    results = []
    deadline = time.time() + 120
    while len(results) < size and time.time() < deadline:
        try:
            results.append(q_out.get(timeout=max(1, deadline - time.time())))
        except Exception:  # noqa: BLE001
            break
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
    return sorted(results, key=lambda o: o["rank"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2,3")
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log_dir = os.path.join(a.out, "nccl-logs")
    os.makedirs(log_dir, exist_ok=True)
    record = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases": []}
    try:
        import cupy
        from cupy.cuda import nccl
        record["cupy"] = cupy.__version__
        record["cupy_nccl_available"] = bool(nccl.available) if hasattr(nccl, "available") else True
    except Exception as e:  # noqa: BLE001
        record["cupy_error"] = str(e)
    try:
        import torch
        record["torch"] = torch.__version__
        record["torch_nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception as e:  # noqa: BLE001
        record["torch_error"] = str(e)
    for size in [int(s) for s in a.ranks.split(",")]:
        for distinct in (True, False):
            t0 = time.time()
            res = run(size, distinct, log_dir)
            case = {"ranks": size, "distinct_hostids": distinct, "seconds": round(time.time() - t0, 1), "results": res}
            record["cases"].append(case)
            ok = len(res) == size and all(r.get("ok") for r in res)
            print("ranks=%d distinct_hostids=%s: %s in %.1f s" % (size, distinct, "OK" if ok else "FAILED", case["seconds"]))
            for r in res:
                print("  rank %d: ok=%s init=%.0f ms 8B=%s us nccl=%s lib=%s %s" % (
                    r["rank"], r.get("ok"), r.get("init_ms", -1), "%.1f" % r["allreduce_8B_us"] if "allreduce_8B_us" in r else "-",
                    r.get("nccl_version"), r.get("libnccl"), r.get("error", "")))
    with open(os.path.join(a.out, "hostid-probe.json"), "w") as f:
        json.dump(record, f, indent=1)
    # the transport each case used, from NCCL's own log
    os.system("grep -h -E 'via NET|Using network|via P2P|via SHM|Duplicate GPU|hostHash|NCCL_HOSTID' %s/*.log | sort | uniq -c | head -40"
              % log_dir)


if __name__ == "__main__":
    sys.exit(main())
