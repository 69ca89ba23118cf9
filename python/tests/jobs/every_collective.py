"""A user's PySpark job: every collective from a barrier stage, checked on every rank; prints one
line the standalone test reads ("RESULT <json>")."""

import json
import sys

import numpy as np
from pyspark import BarrierTaskContext
from pyspark.sql import SparkSession


def task(_):
    import gpucoll
    comm = gpucoll.communicator()
    r, n = comm.rank, comm.size
    bad = []
    x = np.arange(6, dtype=np.float32) + r
    comm.all_reduce(x)
    if x.tolist() != [float(n * i + n * (n - 1) // 2) for i in range(6)]:
        bad.append("all_reduce")
    if comm.all_gather(np.array([r], np.int64)).reshape(-1).tolist() != list(range(n)):
        bad.append("all_gather")
    if comm.reduce_scatter(np.ones(2 * n, np.int32), op="sum").tolist() != [n, n]:
        bad.append("reduce_scatter")
    if comm.all_to_all(np.full(n, r, np.int64)).tolist() != list(range(n)):
        bad.append("all_to_all")
    got = comm.all_to_allv(np.full(n, r, np.int32), [1] * n, [1] * n)
    if got.tolist() != list(range(n)):
        bad.append("all_to_allv")
    b = np.full(3, r, np.float64)
    comm.broadcast(b, root=n - 1)
    if b.tolist() != [n - 1] * 3:
        bad.append("broadcast")
    comm.barrier()
    yield json.dumps({"rank": r, "size": n, "backend": comm.backend, "bad": bad,
                      "partition": BarrierTaskContext.get().partitionId()})


if __name__ == "__main__":
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    spark = SparkSession.builder.appName("gpucoll-python-every-collective").getOrCreate()
    rows = [json.loads(s) for s in spark.sparkContext.parallelize(range(ranks), ranks).barrier()
            .mapPartitions(task).collect()]
    print("RESULT " + json.dumps(sorted(rows, key=lambda d: d["rank"])), flush=True)
    spark.stop()
