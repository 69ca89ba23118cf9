package dev.gpucoll.spark

import dev.gpucoll.api.{CommBuffer, DataType, ReduceOp}
import dev.gpucoll.core.report.ReportingCommunicator
import dev.gpucoll.spark.barrier.ExecutorState
import dev.gpucoll.spark.metrics.ExecutorMetrics
import dev.gpucoll.spark.plugin.GpuCollDriverPlugin
import dev.gpucoll.spark.syntax._
import org.apache.spark.{SparkConf, SparkContext}
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/** The barrier API driven from Scala, in local mode (tasks are threads of this JVM). */
class GpuCollectivesSuite extends AnyFunSuite {

  private def conf(plugin: Boolean): SparkConf = {
    val c = new SparkConf()
      .setMaster("local[3]")
      .setAppName("gpucoll-scala")
      .set("spark.ui.enabled", "false")
      .set("spark.driver.host", "127.0.0.1")
      .set("spark.driver.bindAddress", "127.0.0.1")
      .set("spark.gpucoll.timeout", "30s")
    if (plugin) c.set("spark.plugins", classOf[GpuCollectivesPlugin].getName) else c
  }

  private def withContext[T](c: SparkConf)(body: SparkContext => T): T = {
    val sc = new SparkContext(c)
    try body(sc)
    finally sc.stop()
  }

  test("mapPartitionsWithCommunicator: allReduce and allGather through the plugin rendezvous") {
    withContext(conf(plugin = true)) { sc =>
      val results = sc.parallelize(1 to 9, 3).mapPartitionsWithCommunicator { (comm, rows) =>
        val local = rows.map(_.toDouble).sum
        val sum = Array(local)
        comm.allReduce(sum, ReduceOp.SUM)
        val gathered = new Array[Int](comm.size)
        comm.allGather(CommBuffer.of(Array(comm.rank * 10)), CommBuffer.of(gathered), 1, DataType.INT32)
        val kind = comm match {
          case r: ReportingCommunicator => r.report().rendezvous()
          case _ => "?"
        }
        Iterator((comm.rank, sum(0), gathered.toSeq, kind))
      }.collect().sortBy(_._1)
      assert(results.map(_._1).toSeq == Seq(0, 1, 2))
      results.foreach { case (rank, sum, gathered, kind) =>
        assert(sum == 45.0, s"rank $rank")
        assert(gathered == Seq(0, 10, 20), s"rank $rank")
        assert(kind == "spark-plugin-rpc", s"rank $rank")
      }
      val deadline = System.nanoTime() + 10000000000L
      while (GpuCollectivesPlugin.driverReports().isEmpty && System.nanoTime() < deadline) {
        Thread.sleep(20)
      }
      val report = GpuCollectivesPlugin.driverReports().get(0)
      assert(report.size == 3)
      assert(report.paths("allReduce").values().stream().mapToLong(_.longValue).sum == 3L,
        report.summaryLine)
      // The executor's Dropwizard registry counted the calls per collective and per path.
      val registry = ExecutorState.active().context().metricRegistry()
      // ... and sends its counts to the driver, whose gauges (Spark's /metrics/json) sum them.
      val sums = GpuCollDriverPlugin.active().executorSums()
      // Sent by each executor's progress thread: on a loaded 2-core machine it can take longer than 10 s.
      val until = System.nanoTime() + 45000000000L
      while ((sums.sum("collective.allReduce.calls") < 3 || sums.sum("collective.allGather.calls") < 3)
          && System.nanoTime() < until) Thread.sleep(50)
      assert(sums.sum("collective.allReduce.calls") == 3L)
      assert(sums.sum("collective.allGather.calls") == 3L)
      assert(sums.sum("collective.allReduce.latencyNanos") > 0L)
      val counters = registry.getCounters.asScala
      assert(counters("collective.allReduce.calls").getCount == 3L, counters.keySet)
      assert(counters("collective.allGather.calls").getCount == 3L, counters.keySet)
      val pathCalls = counters.collect {
        case (name, c) if name.startsWith("path.") && name.endsWith(".calls") => c.getCount
      }.sum
      assert(pathCalls == 6L, counters.keySet)
      assert(counters("path.other.calls").getCount == 0L, "a path outside the vocabulary ran")
      assert(counters("cache.misses").getCount == 3L)
      assert(registry.getTimers.get("rendezvous.time").getCount == 3L)
      assert(registry.getTimers.get("collective.allGather.latency").getCount == 3L)
    }
  }

  test("every executor metric exists when the plugin's init returns (Spark registers only those)") {
    withContext(conf(plugin = true)) { _ =>
      val names = ExecutorState.active().context().metricRegistry().getMetrics.keySet().asScala
      for (c <- dev.gpucoll.api.Collective.values(); m <- Seq("calls", "bytes", "latency",
          "messageBytes", "errors", "timeouts")) {
        assert(names.contains(s"collective.${c.apiName}.$m"), names)
      }
      // Path metrics only for what this executor can run: no GPU or NCCL path without a usable GPU.
      val gpu = dev.gpucoll.cuda.CudaEnvironment.probe().available()
      val usable = ExecutorMetrics.usablePaths(gpu).asScala
      assert(usable.contains("host-oneshot") && usable.contains("one-rank-copy"), usable)
      for (p <- usable :+ "other"; m <- Seq("calls", "bytes", "latency")) {
        assert(names.contains(s"path.$p.$m"), names)
      }
      if (!gpu) {
        assert(!names.exists(n => n.startsWith("path.gpu-") || n.startsWith("path.nccl")), names)
      }
      for (m <- Seq("rendezvous.time", "cache.hits", "cache.misses", "errors", "timeouts")) {
        assert(names.contains(m), names)
      }
    }
  }

  test("backend=gpu on a machine without a usable GPU fails the job at its submission, or its ranks, with each reason") {
    assume(dev.gpucoll.cuda.CudaEnvironment.probe().unavailableReason().isPresent,
      "this machine has a usable GPU")
    val reason = new dev.gpucoll.cuda.GpuBackend().unavailableReason().get
    withContext(conf(plugin = true).set("spark.gpucoll.backend", "gpu")
        .set("spark.task.maxFailures", "1")) { sc =>
      // Through our API: refused before any stage, naming the executor's reason.
      val refused = intercept[IllegalStateException] {
        sc.parallelize(1 to 2, 2).mapPartitionsWithCommunicator((comm, rows) => rows).collect()
      }
      assert(refused.getMessage.contains("so the barrier job was not started"), refused.getMessage)
      assert(refused.getMessage.contains(reason), refused.getMessage)
      // rdd.barrier() used directly: the ranks fail at group formation, naming each rank's reason.
      val e = intercept[org.apache.spark.SparkException] {
        sc.parallelize(1 to 2, 2).barrier().mapPartitions { rows => GpuCollectives.communicator(); rows }.collect()
      }
      assert(e.getMessage.contains("backend 'gpu' is not usable on ranks [0, 1]"), e.getMessage)
      assert(e.getMessage.contains(reason), e.getMessage)
      val errors = ExecutorState.active().context().metricRegistry().getCounters.get("errors")
      assert(errors.getCount >= 1L, "the failed setup counts as an error")
    }
  }

  test("the barrier stage's RDD carries the caller's line, not ours") {
    withContext(conf(plugin = true)) { sc =>
      val line = new Throwable().getStackTrace()(0).getLineNumber + 1
      val rdd = sc.parallelize(1 to 2, 2).mapPartitionsWithCommunicator((comm, rows) => rows)
      assert(rdd.toString.endsWith(s" at mapPartitionsWithCommunicator at GpuCollectivesSuite.scala:$line"),
        rdd.toString)
    }
  }

  test("a bad spark.gpucoll value fails SparkContext start and names the key; an unknown key does not") {
    val e = intercept[IllegalArgumentException] {
      withContext(conf(plugin = true).set("spark.gpucoll.backend", "tpu"))(_ => ())
    }
    assert(e.getMessage.contains("spark.gpucoll.backend"), e.getMessage)
    assert(e.getMessage.contains("tpu"), e.getMessage)
    // An unknown key (a typo, or a newer version's setting) is a WARN, as in Spark, not a failure.
    withContext(conf(plugin = true).set("spark.gpucoll.timeuot", "5s")) { sc =>
      assert(sc.parallelize(1 to 3, 3).count() == 3L)
    }
  }

  test("without the plugin a barrier job is refused on the driver at once, naming spark.plugins") {
    withContext(conf(plugin = false)) { sc =>
      val rows = sc.parallelize(0 until 3, 3)
      val e = intercept[IllegalStateException] {
        rows.mapPartitionsWithCommunicator((comm, it) => it).collect()
      }
      assert(e.getMessage.contains("spark.plugins=dev.gpucoll.spark.GpuCollectivesPlugin"), e.getMessage)
      assert(e.getMessage.contains("spark.gpucoll.rendezvous=allgather"), e.getMessage)
      assert(sc.statusTracker.getJobIdsForGroup(null).isEmpty, "no job may have started")
      // A stage built on rdd.barrier() directly is refused by its tasks, with the same words.
      val inTask = intercept[org.apache.spark.SparkException] {
        rows.barrier().mapPartitions { it => GpuCollectives.communicator(); it }.collect()
      }
      assert(inTask.getMessage.contains("spark.plugins=dev.gpucoll.spark.GpuCollectivesPlugin"), inTask.getMessage)
    }
  }

  test("without the plugin, spark.gpucoll.rendezvous=allgather meets in one BarrierTaskContext.allGather round") {
    withContext(conf(plugin = false).set("spark.gpucoll.rendezvous", "allgather")) { sc =>
      val out = sc.parallelize(0 until 3, 3).mapPartitionsWithCommunicator { (comm, _) =>
        val v = Array(comm.rank.toLong + 1)
        comm.allReduce(v, ReduceOp.PROD)
        val kind = comm match {
          case r: ReportingCommunicator => r.report().rendezvous()
          case _ => "?"
        }
        Iterator((v(0), kind))
      }.collect()
      assert(out.toSeq == Seq.fill(3)((6L, "barrier-allgather")))
    }
  }

  test("without the plugin a task that never meets fails the others within spark.gpucoll.timeout") {
    withContext(conf(plugin = false).set("spark.gpucoll.rendezvous", "allgather")
        .set("spark.gpucoll.timeout", "3s").set("spark.task.maxFailures", "1")) { sc =>
      val start = System.nanoTime()
      val e = intercept[org.apache.spark.SparkException] {
        sc.parallelize(0 until 3, 3).barrier().mapPartitions { it =>
          if (org.apache.spark.TaskContext.getPartitionId() == 2) Thread.sleep(60000) // never meets in time
          else GpuCollectives.communicator()
          it
        }.collect()
      }
      val seconds = (System.nanoTime() - start) / 1e9
      assert(e.getMessage.contains("did not complete within 3 s"), e.getMessage)
      assert(seconds < 30, s"took $seconds s")
    }
  }

  test("plain-array forms of every collective from Scala arrays of every primitive type") {
    withContext(conf(plugin = true)) { sc =>
      val out = sc.parallelize(0 until 3, 3).mapPartitionsWithCommunicator { (comm, _) =>
        val r = comm.rank
        val f = Array(r + 0.5f, r + 1.5f, r + 2.5f)
        comm.allReduce(f, ReduceOp.SUM)
        val d = comm.allGather(Array(r.toDouble))
        val i = comm.reduceScatter(Array(r, r, r), ReduceOp.MAX)
        val l = comm.allToAll(Array(10L * r, 10L * r + 1, 10L * r + 2))
        val h = Array.fill[Short](2)(if (r == 2) 0x3c00.toShort else 0) // fp16 1.0 on rank 2
        comm.broadcast(h, DataType.FLOAT16, 2)
        val b = comm.allToAllv(Array.fill[Byte](3)(r.toByte), Array(1L, 1L, 1L), Array(1L, 1L, 1L), DataType.UINT8)
        Iterator((r, f.toSeq, d.toSeq, i.toSeq, l.toSeq, h.toSeq, b.toSeq))
      }.collect().sortBy(_._1)
      out.foreach { case (r, f, d, i, l, h, b) =>
        assert(f == Seq(4.5f, 7.5f, 10.5f), s"rank $r")
        assert(d == Seq(0.0, 1.0, 2.0), s"rank $r")
        assert(i == Seq(2), s"rank $r")
        assert(l == Seq(r.toLong, 10L + r, 20L + r), s"rank $r")
        assert(h == Seq(0x3c00.toShort, 0x3c00.toShort), s"rank $r")
        assert(b == Seq[Byte](0, 1, 2), s"rank $r")
      }
    }
  }

  test("outside a barrier stage the error says how to use it") {
    val e = intercept[IllegalStateException](GpuCollectives.communicator())
    assert(e.getMessage.contains("rdd.barrier().mapPartitions"), e.getMessage)
  }
}
