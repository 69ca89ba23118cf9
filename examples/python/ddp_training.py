"""DistributedDataParallel in a PySpark barrier stage, on torch.distributed's backend "gpucoll": each
task trains the same small model on its own shard and DDP averages the gradients over the group the
plugin formed (CPU tensors). Rank 0's losses, the mean over ranks, are printed per step. Run from the
repository root, with torch installed where the executors' Python runs::

    (cd python && zip -qr /tmp/gpucoll.zip gpucoll)     # or: pip install ./python
    spark-submit --master local-cluster[2,1,1024] \\
      --jars spark-plugin/gpucoll-dist/target/gpucoll-dist_2.13-0.1.0.jar \\
      --conf spark.plugins=dev.gpucoll.spark.GpuCollectivesPlugin \\
      --py-files /tmp/gpucoll.zip examples/python/ddp_training.py [ranks] [steps]
"""

import sys

from pyspark.sql import SparkSession


def train(steps):
    def run(_):
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        import gpucoll.torch_backend as gtb

        comm = gtb.init_process_group()
        try:
            torch.manual_seed(0)  # DDP broadcasts rank 0's weights anyway; the seed makes runs repeatable
            model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
            opt = torch.optim.SGD(model.parameters(), lr=0.05)
            g = torch.Generator().manual_seed(comm.rank)  # this rank's shard of y = x . w + noise
            x = torch.randn(256, 8, generator=g)
            y = x @ torch.linspace(-1, 1, 8).view(8, 1) + 0.05 * torch.randn(256, 1, generator=g)
            losses = []
            for step in range(steps):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()  # DDP's all_reduce of the gradient buckets runs here
                opt.step()
                mean = loss.detach().clone()
                dist.all_reduce(mean, op=dist.ReduceOp.AVG)
                losses.append(float(mean))
            weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
            yield comm.rank, losses if comm.rank == 0 else None, weights.numpy()
        finally:
            dist.destroy_process_group()
    return run


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    spark = SparkSession.builder.appName("gpucoll-ddp-training").getOrCreate()
    rows = sorted(spark.sparkContext.parallelize(range(n), n).barrier().mapPartitions(train(steps)).collect(),
                  key=lambda r: r[0])
    losses = rows[0][1]
    for step, loss in enumerate(losses):
        print("step %2d  loss %.6f" % (step, loss))
    same = all((r[2] == rows[0][2]).all() for r in rows)
    print("final loss %.6f (from %.6f); weights equal on all %d ranks: %s" % (losses[-1], losses[0], n, same))
    spark.stop()
    sys.exit(0 if same and losses[-1] < losses[0] else 1)


if __name__ == "__main__":
    main()
