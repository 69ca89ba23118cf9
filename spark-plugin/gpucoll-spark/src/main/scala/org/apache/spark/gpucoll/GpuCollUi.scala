package org.apache.spark.gpucoll

import scala.jdk.CollectionConverters._
import scala.xml.Node

import com.fasterxml.jackson.annotation.JsonIgnore
import dev.gpucoll.spark.{GroupReport, GroupReportEvent}
import jakarta.servlet.http.HttpServletRequest
import org.json4s.JValue
import org.json4s.jackson.JsonMethods

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.status.{AppHistoryServerPlugin, ElementTrackingStore}
import org.apache.spark.ui.{SparkUI, SparkUITab, UIUtils, WebUIPage}
import org.apache.spark.util.kvstore.{KVIndex, KVStore}

// Spark's UI, status-store and history-server types are private[spark] in Scala: this small shim
// lives in an org.apache.spark package to reach them (public in bytecode, stable across 4.x).

/** One group's report as the status store keeps it (live UI and History Server alike). */
private[spark] class GpuCollGroupData(val report: GroupReport, val sequence: Long) {
  @JsonIgnore @KVIndex
  def key: String = report.groupId + "@" + report.stage

  @JsonIgnore @KVIndex("sequence")
  def order: Long = sequence
}

/**
 * Writes every GroupReportEvent into the status store: on the driver's status queue while the
 * application runs, and in the History Server while it replays the event log.
 */
private[spark] class GpuCollStatusListener(store: ElementTrackingStore) extends SparkListener {
  private var sequence = store.count(classOf[GpuCollGroupData])

  store.addTrigger(classOf[GpuCollGroupData], GpuCollUi.MaxGroups) { count =>
    GpuCollUi.dropOldest(store, count - GpuCollUi.MaxGroups)
  }

  override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
    case e: GroupReportEvent =>
      sequence += 1
      store.write(new GpuCollGroupData(e.report, sequence), checkTriggers = true)
    case _ =>
  }
}

/** The "GPU Collectives" tab: one page listing every group, newest first. */
private[spark] class GpuCollTab(ui: SparkUI, val store: KVStore) extends SparkUITab(ui, "gpucoll") {
  override val name = "GPU Collectives"
  attachPage(new GpuCollPage(this))
  ui.attachTab(this)
}

private[spark] class GpuCollPage(tab: GpuCollTab) extends WebUIPage("") {

  private def reports: Seq[GroupReport] =
    GpuCollUi.reports(tab.store).reverse

  override def renderJson(request: HttpServletRequest): JValue =
    JsonMethods.parse(reports.map(_.toJson).mkString("[", ",", "]"))

  override def render(request: HttpServletRequest): Seq[Node] = {
    val all = reports
    val content =
      <div>
        <p>{all.size} group report(s): the members of each barrier-stage group, the backend and
          rendezvous that served them, and the path every collective took (calls summed over ranks).
          Paths NCCL's own log refuted are marked CONTRADICTION.</p>
        {UIUtils.listingTable(GpuCollPage.SummaryHeader, summaryRow, all, fixedWidth = false)}
        {all.map(details)}
      </div>
    UIUtils.headerSparkPage(request, "GPU Collectives", content, tab)
  }

  private def summaryRow(r: GroupReport): Seq[Node] =
    <tr>
      <td>{r.stage}</td>
      <td><a href={"#" + GpuCollPage.anchor(r)}>{r.groupId}</a></td>
      <td>{r.size}</td>
      <td>{r.hosts.asScala.mkString(", ")}</td>
      <td>{r.backend}</td>
      <td>{r.rendezvous}</td>
      <td>{GpuCollPage.maxMillis(r)}</td>
      <td>{GpuCollPage.paths(r).map { case (c, alg, n) => s"$c: $alg x$n" }.mkString("; ")}</td>
      <td>{r.contradictions}</td>
    </tr>

  private def details(r: GroupReport): Seq[Node] = {
    val millis = r.rendezvousMillis.asScala.map { case (rank, ms) => (rank.intValue, ms.doubleValue) }
    <div id={GpuCollPage.anchor(r)}>
      <h4>Group {r.groupId} ({r.stage})</h4>
      <h5>Members</h5>
      {UIUtils.listingTable(Seq("Rank", "Host", "Executor", "PID", "Rendezvous (ms)"),
        (m: GroupReport.Member) =>
          <tr><td>{m.rank}</td><td>{m.host}</td><td>{m.executorId}</td><td>{m.pid}</td>
            <td>{millis.get(m.rank).map(GpuCollPage.ms).getOrElse("-")}</td></tr>,
        r.members.asScala, fixedWidth = false)}
      <h5>Paths per collective</h5>
      {UIUtils.listingTable(Seq("Collective", "Algorithm", "Calls"),
        (p: (String, String, Long)) => <tr><td>{p._1}</td><td>{p._2}</td><td>{p._3}</td></tr>,
        GpuCollPage.paths(r), fixedWidth = false)}
      {GpuCollPage.lines("Predicted paths", r.predicted.asScala.toSeq)}
      {GpuCollPage.lines("Zero-CTA verdicts", r.zeroCtaVerdicts.asScala.toSeq)}
      {GpuCollPage.lines("NCCL path proof", r.ncclProof.asScala.toSeq)}
      {GpuCollPage.lines("Other findings", r.otherFindings.asScala.toSeq)}
    </div>
  }
}

private[spark] object GpuCollPage {
  val SummaryHeader: Seq[String] = Seq("Stage", "Group", "Ranks", "Hosts", "Backend", "Rendezvous",
    "Rendezvous max (ms)", "Paths (collective: algorithm x calls)", "Contradictions")

  def anchor(r: GroupReport): String = (r.groupId + "-" + r.stage).replaceAll("[^A-Za-z0-9_-]", "_")

  def ms(v: Double): String = f"$v%.3f"

  def maxMillis(r: GroupReport): String = {
    val all = r.rendezvousMillis.values.asScala.map(_.doubleValue)
    if (all.isEmpty) "-" else ms(all.max)
  }

  def paths(r: GroupReport): Seq[(String, String, Long)] =
    r.paths.asScala.toSeq.sortBy(_._1).flatMap { case (c, byAlg) =>
      byAlg.asScala.toSeq.sortBy(_._1).map { case (alg, n) => (c, alg, n.longValue) }
    }

  def lines(title: String, items: Seq[String]): Seq[Node] =
    <h5>{title}</h5> ++ (if (items.isEmpty) <p>none</p> else <ul>{items.map { l =>
      if (l.startsWith("CONTRADICTION")) <li><strong>{l}</strong></li> else <li>{l}</li>
    }}</ul>)
}

/** Replays GroupReportEvent into the History Server's store and shows the same tab there. */
class GpuCollHistoryServerPlugin extends AppHistoryServerPlugin {
  override def createListeners(conf: SparkConf, store: ElementTrackingStore): Seq[SparkListener] =
    Seq(new GpuCollStatusListener(store))

  override def setupUI(ui: SparkUI): Unit = {
    // Only applications that formed groups get the tab.
    if (ui.store.store.count(classOf[GpuCollGroupData]) > 0) {
      new GpuCollTab(ui, ui.store.store)
    }
  }
}

/** Entry points for the Java driver plugin. */
object GpuCollUi {
  /** Group reports kept per application; the oldest are dropped beyond this. */
  val MaxGroups = 1000L

  /**
   * Live application: keeps GroupReportEvents in the driver's status store and adds the tab to the
   * Spark UI (when spark.ui.enabled).
   */
  def attachLive(sc: SparkContext): Unit = {
    val store = sc.statusStore.store.asInstanceOf[ElementTrackingStore]
    sc.listenerBus.addToStatusQueue(new GpuCollStatusListener(store))
    sc.ui.foreach(ui => new GpuCollTab(ui, store))
  }

  private[spark] def reports(store: KVStore): Seq[GroupReport] = {
    val it = store.view(classOf[GpuCollGroupData]).index("sequence").closeableIterator()
    try it.asScala.map(_.report).toList
    finally it.close()
  }

  private[spark] def dropOldest(store: KVStore, excess: Long): Unit = {
    val it = store.view(classOf[GpuCollGroupData]).index("sequence").closeableIterator()
    val oldest = try it.asScala.take(excess.toInt).map(_.key).toList finally it.close()
    oldest.foreach(k => store.delete(classOf[GpuCollGroupData], k))
  }
}
