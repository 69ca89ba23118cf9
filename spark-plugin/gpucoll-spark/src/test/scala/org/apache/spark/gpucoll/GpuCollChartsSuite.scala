package org.apache.spark.gpucoll

import scala.xml.{Elem, Node, NodeSeq}

import dev.gpucoll.spark.GroupReport
import org.scalatest.funsuite.AnyFunSuite

/** The tab's SVG charts: what marks they draw, where, and the numbers they carry. */
class GpuCollChartsSuite extends AnyFunSuite {

  private val rows = Seq(
    new GroupReport.Latency("allReduce", 256, 100, 9000, 15000, 16000),
    new GroupReport.Latency("allReduce", 1L << 20, 10, 800000, 950000, 990000),
    new GroupReport.Latency("barrier", 1, 50, 3000, 4000, 4100))

  private def svgOf(n: NodeSeq): Elem = n.head.asInstanceOf[Elem]

  private def byClass(root: NodeSeq, cls: String): Seq[Node] =
    (root \\ "_").filter(_.attribute("class").exists(_.text.split(" ").contains(cls)))

  test("latency chart: one point per collective and size, p50 below p99, numbers in titles and data") {
    val svg = svgOf(GpuCollCharts.latencyChart(rows))
    assert(svg.label == "svg")
    assert(svg.attribute("role").get.text == "img")
    val points = byClass(svg, "point")
    assert(points.size == 3)
    val big = points.find(p => (p \ "@data-max-bytes").text == (1L << 20).toString).get
    assert((big \ "@data-p50-ns").text == "800000")
    val p50 = byClass(big, "p50").head
    val p99 = byClass(big, "p99").head
    assert((p50 \ "@cy").text.toDouble > (p99 \ "@cy").text.toDouble, "a longer latency is drawn higher")
    assert((p50 \ "title").text == "allReduce ≤ 1 MiB, 10 calls: p50 800 us")
    assert((p99 \ "title").text == "allReduce ≤ 1 MiB, 10 calls: p99 950 us")
    // Two sizes of allReduce are joined by lines; barrier's single point has none.
    assert((svg \\ "polyline").size == 2)
    val xLabels = byClass(svg, "x-tick").map(_.text)
    assert(xLabels == Seq("0-1 B", "≤ 256 B", "≤ 1 MiB"))
    val yLabels = (byClass(svg, "y-tick") \ "text").map(_.text)
    assert(yLabels == Seq("1.0 us", "10.0 us", "100 us", "1.0 ms"), yLabels)
    assert(GpuCollCharts.latencyChart(Seq.empty).isEmpty)
  }

  test("a collective has the same colour in every group's latency chart, whichever others it ran with") {
    def colourOf(chart: Elem, collective: String): String =
      (byClass(chart, "series").find(g => (g \ "@data-collective").text == collective).get \ "circle")
        .filter(c => (c \ "@class").text == "p50").map(c => (c \ "@fill").text).distinct.mkString
    val withBarrier = svgOf(GpuCollCharts.latencyChart(rows))
    val alone = svgOf(GpuCollCharts.latencyChart(Seq(new GroupReport.Latency("barrier", 1, 5, 3000, 4000, 4100))))
    val withGather = svgOf(GpuCollCharts.latencyChart(
      new GroupReport.Latency("allGather", 64, 5, 3000, 4000, 4100) +: rows))
    assert(colourOf(withBarrier, "barrier") == colourOf(alone, "barrier"))
    assert(colourOf(withBarrier, "allReduce") == colourOf(withGather, "allReduce"))
    val all = dev.gpucoll.api.Collective.values().map(c => GpuCollCharts.collectiveColour(c.apiName)).toSeq
    assert(all.distinct.size == all.size, s"every collective has its own colour: $all")
  }

  test("path mix: one bar per collective, segments proportional to calls") {
    val svg = svgOf(GpuCollCharts.pathMixChart(Seq(("allReduce", "host-ll-oneshot", 30L),
      ("allReduce", "host-twoshot", 10L), ("barrier", "host-flags", 5L))))
    val bars = byClass(svg, "bar")
    assert(bars.map(b => (b \ "@data-collective").text) == Seq("allReduce", "barrier"))
    val widths = (byClass(bars.head, "segment") \ "rect").map(r => (r \ "@width").text.toDouble)
    assert(Math.abs(widths(0) / widths(1) - 3.0) < 0.01, widths)
    assert((byClass(bars.head, "segment").head \ "rect" \ "title").text == "allReduce: host-ll-oneshot, 30 calls (75.0%)")
  }

  test("rank times: rendezvous then formation per rank; ranks without a report are left out") {
    val members = Seq(
      new GroupReport.Member(0, "h", "1", 10, 2000000, 8000000, false, ""),
      new GroupReport.Member(1, "h", "2", 11, 1000000, 0, true, ""),
      new GroupReport.Member(2, "", "", -1, 0, 0, false, "no report"))
    val svg = svgOf(GpuCollCharts.rankTimesChart(members))
    val ranks = byClass(svg, "rank")
    assert(ranks.map(r => (r \ "@data-rank").text) == Seq("0", "1"))
    assert((ranks.head \ "text").last.text == "rendezvous 2.0 ms, formation 8.0 ms")
    assert((ranks(1) \ "text").last.text == "rendezvous 1.0 ms, reused")
    val rects = (ranks.head \ "rect").map(r => (r \ "@width").text.toDouble)
    assert(Math.abs(rects(1) / rects(0) - 4.0) < 0.01, rects)
  }

  test("sizes and log ticks") {
    assert(GpuCollCharts.bytes(0) == "0 B")
    assert(GpuCollCharts.bytes(1536) == "1.5 KiB")
    assert(GpuCollCharts.bytes(64L << 20) == "64 MiB")
    assert(GpuCollCharts.logTicks(3000, 950000) == Seq(1000, 10000, 100000, 1000000))
    assert(GpuCollCharts.logTicks(3000, 40000) == Seq(2000, 5000, 10000, 20000, 50000))
    assert(GpuCollCharts.logTicks(12000, 15000) == Seq(10000, 20000))
  }
}

/** When the History Server shows the tab: also for an application whose every group failed or none formed. */
class GpuCollTabAttachSuite extends AnyFunSuite {
  import org.apache.spark.status.{AppStatusStore, ApplicationEnvironmentInfoWrapper}
  import org.apache.spark.status.api.v1.{ApplicationEnvironmentInfo, RuntimeInfo}
  import org.apache.spark.util.kvstore.InMemoryStore

  private def storeWith(plugins: Option[String], reports: Int): AppStatusStore = {
    val kv = new InMemoryStore()
    plugins.foreach { p =>
      kv.write(new ApplicationEnvironmentInfoWrapper(new ApplicationEnvironmentInfo(
        new RuntimeInfo("17", "/jvm", "2.13"), Seq("spark.plugins" -> p), Nil, Nil, Nil, Nil, Nil)))
    }
    (0 until reports).foreach { i =>
      kv.write(new GpuCollGroupData(new GroupReport(s"g$i", "stage 0.0", 1,
        java.util.List.of(), "host", "r", java.util.Map.of(), java.util.List.of(), java.util.List.of()), i))
    }
    new AppStatusStore(kv, None, None)
  }

  test("the tab attaches when reports exist or the application ran the plugin") {
    val plugin = classOf[dev.gpucoll.spark.GpuCollectivesPlugin].getName
    assert(GpuCollUi.showTab(storeWith(None, 1)))
    assert(GpuCollUi.showTab(storeWith(Some(s"com.example.Other, $plugin"), 0)))
    assert(!GpuCollUi.showTab(storeWith(Some("com.example.Other"), 0)))
    assert(!GpuCollUi.showTab(storeWith(None, 0)))
  }
}

/** Executors' backend checks reach the store and the tab (live and History Server alike). */
class GpuCollExecutorChecksSuite extends AnyFunSuite {
  import dev.gpucoll.spark.BackendCheckEvent
  import org.apache.spark.SparkConf
  import org.apache.spark.status.{AppStatusStore, ElementTrackingStore}
  import org.apache.spark.util.kvstore.InMemoryStore

  test("the listener keeps each executor's latest check and the page lists the ones that cannot run") {
    val store = new ElementTrackingStore(new InMemoryStore(), new SparkConf(false))
    val listener = new GpuCollStatusListener(store)
    listener.onOtherEvent(new BackendCheckEvent("1", "node-a", "gpu", "libcuda.so.1: cannot open shared object file",
      java.util.List.of(), java.util.Map.of("cuda.driver", "none")))
    listener.onOtherEvent(new BackendCheckEvent("2", "node-b", "gpu", "", java.util.List.of("0"),
      java.util.Map.of("cuda.driver", "13.0")))
    listener.onOtherEvent(new BackendCheckEvent("2", "node-b", "gpu", "", java.util.List.of("1"),
      java.util.Map.of("cuda.driver", "13.0")))
    val checks = GpuCollUi.executorChecks(store)
    assert(checks.map(_.executorId) == Seq("1", "2"))
    assert(checks(1).gpus == java.util.List.of("1"))
    val html = GpuCollPage.executorChecks(checks).mkString
    assert(html.contains("(1 cannot run it)"), html)
    assert(html.contains("libcuda.so.1: cannot open shared object file"), html)
    assert(html.contains("cuda.driver=13.0"), html)
    assert(GpuCollUi.showTab(new AppStatusStore(store, None, None)))
  }
}
