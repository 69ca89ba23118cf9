"""Every collective, type and op of the correctness matrix from Python barrier tasks, against NumPy.

Inputs are small integers, exact in every type (fp16 and bf16 included) and in every rank order, so
the reference is NumPy's own arithmetic on the same values."""

import numpy as np
import pytest

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bf16 then runs through torch only (test_torch_tensors)
    BF16 = None

FLOATS = [np.float32, np.float64, np.float16]
INTS = [np.int32, np.int64, np.int8, np.uint8]
OPS = ["sum", "prod", "min", "max", "avg"]
COUNTS = [1, 7, 1000]


def dtypes():
    return [np.dtype(t) for t in FLOATS + INTS] + ([BF16] if BF16 is not None else [])


def value(rank, n, dtype):
    """1..5, a function of rank and position: products over 3 ranks stay <= 125 (int8 holds them)."""
    return (((np.arange(n) * 7 + rank * 3) % 5) + 1).astype(dtype)


def reference(op, inputs, dtype):
    wide = np.stack([x.astype(np.float64) for x in inputs])
    size = len(inputs)
    out = {"sum": wide.sum(0), "prod": wide.prod(0), "min": wide.min(0), "max": wide.max(0)}.get(op)
    if out is None:  # avg: the sum divided once; integers truncate toward zero
        s = wide.sum(0)
        out = np.trunc(s / size) if np.dtype(dtype).kind in "iu" else s / size
    return out.astype(dtype)


def close(got, want, dtype, op):
    if op == "avg" and np.dtype(dtype) in (np.dtype(np.float16), BF16):  # one rounding of the quotient
        return np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-2)
    return np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_matrix(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        size = comm.size
        bad = []
        for dt in dtypes():
            for n in COUNTS:
                inputs = [value(r, n, dt) for r in range(size)]
                for op in OPS:
                    want = reference(op, inputs, dt)
                    x = value(rank, n, dt)
                    comm.all_reduce(x, op=op)  # in place
                    if not close(x, want, dt, op):
                        bad.append(("all_reduce in place", dt.name, n, op))
                    y = np.empty_like(x)
                    comm.all_reduce(value(rank, n, dt), y, op=op)
                    if not close(y, want, dt, op):
                        bad.append(("all_reduce", dt.name, n, op))
                    blocks = [value(r, n * size, dt) for r in range(size)]
                    rs = comm.reduce_scatter(value(rank, n * size, dt), op=op)
                    if not close(rs, reference(op, blocks, dt)[rank * n:(rank + 1) * n], dt, op):
                        bad.append(("reduce_scatter", dt.name, n, op))
                g = comm.all_gather(value(rank, n, dt))
                if g.shape != (size, n) or not np.array_equal(g.view(np.uint8), np.stack(inputs).view(np.uint8)):
                    bad.append(("all_gather", dt.name, n))
                sends = [value(r, n * size, dt) for r in range(size)]
                a2a = comm.all_to_all(sends[rank])
                want = np.concatenate([sends[r][rank * n:(rank + 1) * n] for r in range(size)])
                if not np.array_equal(a2a.view(np.uint8), want.view(np.uint8)):
                    bad.append(("all_to_all", dt.name, n))
                for root in range(size):
                    b = value(rank, n, dt)
                    comm.broadcast(b, root=root)
                    if not np.array_equal(b.view(np.uint8), inputs[root].view(np.uint8)):
                        bad.append(("broadcast", dt.name, n, root))
            # allToAllv: rank r sends (r + k + 1) elements to rank k
            counts = lambda r: [r + k + 1 for k in range(size)]  # noqa: E731
            sends = [value(r, sum(counts(r)), dt) for r in range(size)]
            recv_counts = [counts(r)[rank] for r in range(size)]
            got = comm.all_to_allv(sends[rank], counts(rank), recv_counts)
            want = np.concatenate([sends[r][sum(counts(r)[:rank]):sum(counts(r)[:rank + 1])] for r in range(size)])
            if not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
                bad.append(("all_to_allv", dt.name))
        comm.barrier()
        return bad

    assert barrier(job) == [[], [], []]


def test_large_calls_grow_the_mailbox(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        x = np.full(3_000_000, rank + 1, np.float32)  # 12 MB: past the first mailbox
        comm.all_reduce(x)
        g = comm.all_gather(np.full(500_000, rank, np.int64))
        return bool((x == 6).all()), bool((g == np.arange(3)[:, None]).all())

    assert barrier(job) == [(True, True)] * 3


def test_loc_pairs(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        bad = []
        for vt in (np.float32, np.float64, np.int32, np.int64):
            for it in (np.int32, np.int64):
                # rank 1 holds the largest value at 0; ranks 0 and 2 tie at 1 (the lower index wins)
                values = np.array([rank == 1, 5, -rank], vt) if vt in (np.int32, np.int64) else \
                    np.array([float(rank == 1), 5.0, -float(rank)], vt)
                index = np.array([10 + rank, 20 + rank, 30 + rank], it)
                v, i = comm.all_reduce_loc(values, index, op="maxloc")
                if v.tolist() != [1, 5, 0] or i.tolist() != [11, 20, 30] or v.dtype != vt or i.dtype != it:
                    bad.append(("maxloc", vt.__name__, it.__name__, v.tolist(), i.tolist()))
                v, i = comm.all_reduce_loc(values, index, op="minloc")
                if v.tolist() != [0, 5, -2] or i.tolist() != [10, 20, 32]:
                    bad.append(("minloc", vt.__name__, it.__name__, v.tolist(), i.tolist()))
        try:
            comm.all_reduce_loc(np.array([np.nan if rank == 2 else 1.0]), np.array([rank], np.int32))
            bad.append("NaN accepted")
        except gpucoll.CollectiveError as e:
            if "NaN" not in str(e) and "nan" not in str(e):
                bad.append(str(e))
        return bad

    assert barrier(job) == [[], [], []]


def test_all_to_allv_leaves_the_gaps_of_recv_as_they_were(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        size = comm.size
        # a first call fills the mailbox's receive region with 7s
        comm.all_to_allv(np.full(2 * size, 7, np.int32), [2] * size, [2] * size, recv=np.zeros(2 * size, np.int32))
        # then one element from each rank, at every other slot of a region of 2 * size: MPI
        # leaves the slots between the blocks untouched
        recv = np.full(2 * size, -1, np.int32)
        comm.all_to_allv(np.full(size, 10 + rank, np.int32), [1] * size, [1] * size, recv=recv,
                         recv_displs=[2 * r for r in range(size)])
        fresh = comm.all_to_allv(np.full(size, 10 + rank, np.int32), [1] * size, [1] * size,
                                 recv_displs=[2 * r for r in range(size)])
        return recv.tolist(), fresh.tolist()

    for recv, fresh in barrier(job):
        assert recv == [10, -1, 11, -1, 12, -1], recv
        assert fresh == [10, 0, 11, 0, 12], fresh  # a new result ends at its last block; its gaps are zeros


def test_loc_pairs_of_no_elements(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        v, i = comm.all_reduce_loc(np.zeros(0, np.float64), np.zeros(0, np.int64), op="maxloc")
        return v.shape, v.dtype.name, i.shape, i.dtype.name

    assert barrier(job) == [((0,), "float64", (0,), "int64")] * 3


def test_group_split_explain_report(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        a = np.full(16, rank, np.float32)
        b = np.full(4, rank, np.int64)
        with comm.group():
            comm.all_reduce(a, op="max")
            g = comm.all_gather(b)
            c = comm.broadcast(np.full(3, rank, np.int32), root=2)
        ok = bool((a == 2).all()) and g.tolist() == [[0] * 4, [1] * 4, [2] * 4] and c.tolist() == [2, 2, 2]
        sub = comm.split(rank % 2, key=-rank)  # ranks 0 and 2, ordered by key: 2 first
        s = np.array([rank], np.int64)
        sub.all_reduce(s)
        member = (sub.rank, sub.size, int(s[0]))
        gathered = sub.all_gather(np.array([rank], np.int32)).reshape(-1).tolist()
        sub.close()
        none = comm.split(-1 if rank == 1 else 0)
        if none is not None:
            none.close()
        how = comm.explain("all_reduce", 1024)
        report = comm.path_report()
        return (ok, member, gathered, none is None, how["collective"], bool(how["algorithm"]), report["rank"],
                report["size"], report["backend"] == comm.backend,
                any(k.startswith("allReduce/") for k in report["observed"]))

    got = barrier(job)
    assert [g[0] for g in got] == [True] * 3
    assert got[0][1] == (1, 2, 2) and got[2][1] == (0, 2, 2) and got[1][1] == (0, 1, 1)
    assert got[0][2] == [2, 0] and got[1][2] == [1]
    assert [g[3] for g in got] == [False, True, False]
    for rank, g in enumerate(got):
        assert g[4:] == ("allReduce", True, rank, 3, True, True)


def test_map_in_pandas_barrier(spark):
    import pandas as pd

    def f(batches):
        import gpucoll
        comm = gpucoll.communicator()
        for pdf in batches:
            x = pdf["x"].to_numpy(dtype=np.float64).copy()
            total = np.array([x.sum()])
            comm.all_reduce(total)
            yield pd.DataFrame({"rank": [comm.rank], "total": [float(total[0])]})

    df = spark.createDataFrame(pd.DataFrame({"x": np.arange(30, dtype=np.float64)})).repartition(3)
    rows = df.mapInPandas(f, "rank long, total double", barrier=True).collect()
    assert sorted(r["rank"] for r in rows) == [0, 1, 2]
    assert {r["total"] for r in rows} == {float(sum(range(30)))}


def test_torch_tensors(barrier):
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch CPU tensor cases skip")

    def job(rank):
        import torch
        import gpucoll
        comm = gpucoll.communicator()
        out = []
        for dt in (torch.float32, torch.bfloat16, torch.float16, torch.int64):
            t = torch.full((5,), rank + 1, dtype=dt)
            comm.all_reduce(t)
            g = comm.all_gather(torch.full((2,), rank, dtype=dt))
            out.append((t.tolist() == [6] * 5, isinstance(g, torch.Tensor), g.dtype == dt, g.shape == (3, 2)))
        return out

    assert all(all(c) for rank in barrier(job) for c in rank)
    del torch
