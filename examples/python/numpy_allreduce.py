"""The smallest PySpark job on gpucoll: every barrier task sums a NumPy array over the group and
gathers every rank's number. Run from the repository root::

    (cd python && zip -qr /tmp/gpucoll.zip gpucoll)     # or: pip install ./python
    spark-submit --master local-cluster[2,1,1024] \\
      --jars spark-plugin/gpucoll-dist/target/gpucoll-dist_2.13-0.1.0.jar \\
      --conf spark.plugins=dev.gpucoll.spark.GpuCollectivesPlugin \\
      --py-files /tmp/gpucoll.zip examples/python/numpy_allreduce.py [ranks]

``ranks`` (default 2) is the number of barrier tasks: at most the executors' cores, since a barrier
stage starts all of its tasks at once.
"""

import sys

import gpucoll  # on the driver too: it warns there when PySpark is of a line it does not support
import numpy as np
from pyspark.sql import SparkSession


def task(_):
    comm = gpucoll.communicator()
    x = np.arange(4, dtype=np.float64) * (comm.rank + 1)
    comm.all_reduce(x)  # in place: the sum over ranks
    ranks = comm.all_gather(np.array([comm.rank], np.int64))  # shape (size, 1), in rank order
    yield comm.rank, comm.backend, x.tolist(), ranks.reshape(-1).tolist()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    spark = SparkSession.builder.appName("gpucoll-numpy-allreduce").getOrCreate()
    rows = sorted(spark.sparkContext.parallelize(range(n), n).barrier().mapPartitions(task).collect())
    want = (np.arange(4) * (n * (n + 1) // 2)).tolist()
    for rank, backend, total, ranks in rows:
        print("rank %d (%s): all_reduce %s, all_gather %s" % (rank, backend, total, ranks))
    ok = all(total == want and ranks == list(range(n)) for _, _, total, ranks in rows)
    print("correct" if ok else "WRONG: expected all_reduce %s and all_gather %s" % (want, list(range(n))))
    spark.stop()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
