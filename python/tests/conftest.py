"""PySpark jobs against the one jar: a local-cluster of 3 executor JVMs (separate processes), each
task's Python worker reaching its executor's plugin as a user's job does."""

import glob
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLUGIN = "dev.gpucoll.spark.GpuCollectivesPlugin"
RANKS = 3


def scala_binary():
    import pyspark
    return "2.12" if pyspark.__version__.startswith("3.") else "2.13"


def dist_jar():
    """$GPUCOLL_JAR, or the one jar the build made for this PySpark's Scala binary."""
    named = os.environ.get("GPUCOLL_JAR")
    if named:
        return named
    binary = scala_binary()
    where = "spark-plugin/scala-2.12/gpucoll-dist" if binary == "2.12" else "spark-plugin/gpucoll-dist"
    jars = [j for j in glob.glob(os.path.join(ROOT, where, "target", "gpucoll-dist_%s-*.jar" % binary))
            if not j.endswith(("-sources.jar", "-javadoc.jar"))]
    if not jars:
        pytest.exit("no gpucoll-dist_%s jar: build it first (mvn -B -ntp package -DskipTests%s)"
                    % (binary, " -Pspark-lines" if binary == "2.12" else ""), returncode=2)
    return jars[0]


def builder(master, app):
    from pyspark.sql import SparkSession
    return (SparkSession.builder.master(master).appName(app)
            .config("spark.jars", dist_jar())
            .config("spark.plugins", PLUGIN)
            .config("spark.executor.memory", "768m")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.pyspark.python", sys.executable)
            .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
            .config("spark.gpucoll.timeout", "30s"))


@pytest.fixture(scope="session")
def spark():
    session = builder("local-cluster[%d,1,1024]" % RANKS, "gpucoll-python-tests").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def barrier(spark):
    """barrier(f, n=RANKS): runs f(rank) in every task of a barrier stage of n tasks; the results by rank."""
    sc = spark.sparkContext

    def run(f, n=RANKS):
        def task(_):
            from pyspark import BarrierTaskContext
            yield BarrierTaskContext.get().partitionId(), f(BarrierTaskContext.get().partitionId())
        return [r for _, r in sorted(sc.parallelize(range(n), n).barrier().mapPartitions(task).collect())]
    return run
