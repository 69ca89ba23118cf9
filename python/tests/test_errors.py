"""Bad input, misuse and failures: a clear exception on every rank, never a hang or wrong data."""

import time

import numpy as np
import pytest


class FakeCudaArray:
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_bad_input_fails_on_every_rank_and_the_group_goes_on(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        seen = []

        def attempt(name, bad_rank, call_bad, call_good):
            try:
                (call_bad if rank == bad_rank else call_good)()
                seen.append((name, "no error"))
            except gpucoll.CollectiveError as e:
                seen.append((name, type(e).__name__, str(e)))
            y = np.full(3, rank, np.int32)  # the group still works after each refusal
            comm.all_reduce(y)
            if y.tolist() != [3, 3, 3]:
                seen.append((name, "wrong after", y.tolist()))

        x = np.ones(8, np.float32)
        ro = np.ones(8, np.float32)
        ro.setflags(write=False)
        attempt("non-contiguous", 1, lambda: comm.all_reduce(np.ones(16, np.float32)[::2]), lambda: comm.all_reduce(x))
        attempt("read-only", 0, lambda: comm.all_reduce(ro), lambda: comm.all_reduce(x))
        attempt("dtype", 2, lambda: comm.all_reduce(np.ones(8, np.complex64)), lambda: comm.all_reduce(x))
        attempt("device", 1, lambda: comm.all_reduce(FakeCudaArray()), lambda: comm.all_reduce(x))
        attempt("shapes", 0, lambda: comm.all_reduce(np.ones(4, np.float32)), lambda: comm.all_reduce(x))
        attempt("op", 2, lambda: comm.all_reduce(x, op="median"), lambda: comm.all_reduce(x))
        attempt("blocks", 1, lambda: comm.reduce_scatter(np.ones(7, np.float32)),
                lambda: comm.reduce_scatter(np.ones(6, np.float32)))

        def body_raises():
            with comm.group():
                comm.all_reduce(x)
                if rank == 0:
                    raise KeyError("user code")
        try:
            body_raises()
            seen.append(("group", "no error"))
        except KeyError:
            seen.append(("group", "KeyError"))
        except gpucoll.CollectiveError as e:
            seen.append(("group", type(e).__name__, str(e)))
        return seen

    t0 = time.monotonic()
    ranks = barrier(job)
    assert time.monotonic() - t0 < 25, "a refusal waited for a timeout (30 s)"
    by_name = {}
    for rank, seen in enumerate(ranks):
        for entry in seen:
            assert entry[1] != "no error" and entry[1] != "wrong after", (rank, entry)
            by_name.setdefault(entry[0], {})[rank] = entry
    assert "not contiguous" in by_name["non-contiguous"][1][2]
    assert "read-only" in by_name["read-only"][0][2]
    assert "complex64" in by_name["dtype"][2][2] and by_name["dtype"][2][1] == "UnsupportedArrayError"
    assert "GPU" in by_name["device"][1][2]
    assert all(by_name["shapes"][r][1] in ("CollectiveMismatchError", "CollectiveError", "InvalidArgumentError")
               for r in range(3))
    assert "median" in by_name["op"][2][2]
    assert "multiple of the group size" in by_name["blocks"][1][2]
    assert by_name["group"][0][1] == "KeyError"
    assert all(by_name["group"][r][1] != "KeyError" for r in (1, 2))
    for name in ("non-contiguous", "dtype", "device", "shapes"):  # the peers are told which rank refused
        peers = [by_name[name][r] for r in range(3) if r != {"non-contiguous": 1, "dtype": 2, "device": 1,
                                                               "shapes": 0}[name]]
        assert all("rank" in p[2] for p in peers), peers


def test_the_peers_of_a_rank_that_refuses_its_call_are_told_why(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        seen = {}

        def attempt(name, call):
            try:
                call()
                seen[name] = "no error"
            except gpucoll.CollectiveError as e:
                seen[name] = str(e)

        x = np.ones(8, np.float32)
        attempt("all_reduce", lambda: comm.all_reduce(np.ones(16, np.float32)[::2] if rank == 1 else x))
        attempt("all_to_allv", lambda: comm.all_to_allv(np.ones(6, np.float32), [2, 2] if rank == 1 else [2, 2, 2],
                                                        [2, 2, 2]))
        attempt("loc", lambda: comm.all_reduce_loc(np.ones(2, np.float32), np.zeros(3 if rank == 1 else 2, np.int32)))
        return seen

    got = barrier(job)
    assert "not contiguous" in got[1]["all_reduce"], got[1]
    for r in (0, 2):
        for name, reason in (("all_reduce", "not contiguous"), ("all_to_allv", "send_counts must have one entry per"
                                                                               " rank (3), got 2"),
                             ("loc", "values hold 2 elements, indices 3")):
            message = got[r][name]
            assert "rank 1" in message and reason in message, (r, name, message)
            assert "called" not in message and "null" not in message, (r, name, message)


def test_arguments_the_executor_refuses_raise_invalid_argument_error(barrier):
    def job(rank):
        import gpucoll
        comm = gpucoll.communicator()
        seen = {}

        def attempt(name, call):
            try:
                call()
                seen[name] = "no error"
            except gpucoll.CollectiveError as e:
                seen[name] = (type(e).__name__, isinstance(e, ValueError), str(e))

        attempt("root", lambda: comm.broadcast(np.ones(4, np.float32), root=comm.size))
        # rank 1's counts reach past its send buffer of 3 elements
        attempt("counts", lambda: comm.all_to_allv(np.ones(3, np.float32), [2] * 3 if rank == 1 else [1] * 3,
                                                   [1, 2, 1]))
        y = np.full(2, rank, np.int64)  # the group goes on
        comm.all_reduce(y)
        seen["after"] = y.tolist()
        return seen

    got = barrier(job)
    for r in range(3):
        assert got[r]["root"][:2] == ("InvalidArgumentError", True) and "root 3" in got[r]["root"][2], got[r]
        assert got[r]["after"] == [3, 3], got[r]
    assert got[1]["counts"][:2] == ("InvalidArgumentError", True) and "send buffer" in got[1]["counts"][2], got[1]
    for r in (0, 2):  # the peers' own arguments were fine: they are told which rank refused its call
        assert got[r]["counts"][:2] == ("CollectiveError", False) and "rank 1" in got[r]["counts"][2], got[r]


def test_a_job_submitted_from_a_plain_thread_is_told_to_use_inheritable_thread(spark):
    import threading
    from pyspark import InheritableThread
    sc = spark.sparkContext

    def task(_):
        import gpucoll
        try:
            x = np.ones(1)
            gpucoll.communicator().all_reduce(x)
            yield "ran: %s" % x[0]
        except gpucoll.CollectiveError as e:
            yield "%s: %s" % (type(e).__name__, e)

    got = {}

    def submit(name):
        got[name] = sc.parallelize(range(3), 3).barrier().mapPartitions(task).collect()

    for name, kind in (("plain", threading.Thread), ("inheritable", InheritableThread)):
        t = kind(target=submit, args=(name,))
        t.start()
        t.join()
    assert got["inheritable"] == ["ran: 3.0"] * 3, got
    assert len(got["plain"]) == 3 and all("pyspark.InheritableThread" in m for m in got["plain"]), got


def test_outside_a_task_and_outside_a_barrier_stage(spark):
    import gpucoll
    with pytest.raises(gpucoll.CommunicatorStateError, match="outside a Spark task"):
        gpucoll.communicator()

    def task(_):
        import gpucoll
        try:
            gpucoll.communicator()
            yield "formed"
        except gpucoll.CommunicatorStateError as e:
            yield str(e)

    msgs = spark.sparkContext.parallelize(range(2), 2).mapPartitions(task).collect()
    assert all("not a barrier stage" in m for m in msgs), msgs


def test_a_killed_rank_fails_the_others_within_the_bound(spark):
    sc = spark.sparkContext

    def task(_):
        import os
        from pyspark import BarrierTaskContext
        import gpucoll
        comm = gpucoll.communicator()
        x = np.ones(4, np.float32)
        comm.all_reduce(x)
        if BarrierTaskContext.get().partitionId() == 1:
            os._exit(3)  # the Python worker dies mid-job; the others are in their next call
        comm.all_reduce(x)
        yield float(x[0])

    from py4j.protocol import Py4JJavaError
    sc.setLocalProperty("spark.gpucoll.timeout", "60s")
    try:
        t0 = time.monotonic()
        with pytest.raises(Py4JJavaError) as failed:
            sc.parallelize(range(3), 3).barrier().mapPartitions(task).collect()
        took = time.monotonic() - t0
    finally:
        sc.setLocalProperty("spark.gpucoll.timeout", None)
    assert took < 45, "the surviving ranks waited %.0f s (the timeout is 60 s)" % took
    assert "barrier" in str(failed.value)

    def after(rank):  # the next stage forms a new group on the same executors
        import gpucoll
        y = np.full(2, rank, np.int64)
        gpucoll.communicator().all_reduce(y)
        return y.tolist()
    ranks = sc.parallelize(range(3), 3).barrier().mapPartitions(
        lambda it: [after(__import__("pyspark").BarrierTaskContext.get().partitionId())]).collect()
    assert ranks == [[3, 3]] * 3
