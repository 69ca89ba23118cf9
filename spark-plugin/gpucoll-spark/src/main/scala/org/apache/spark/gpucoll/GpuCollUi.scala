package org.apache.spark.gpucoll

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.xml.{Node, NodeSeq}

import com.fasterxml.jackson.annotation.JsonIgnore
import dev.gpucoll.spark.{BackendCheckEvent, FormingGroup, GpuCollectivesPlugin, GroupReport, GroupReportEvent}
import org.slf4j.LoggerFactory

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.status.{AppHistoryServerPlugin, AppStatusStore, ElementTrackingStore}
import org.apache.spark.ui.{SparkUI, SparkUITab, UIUtils, WebUIPage}
import org.apache.spark.util.kvstore.{KVIndex, KVStore}

// Spark's UI, status-store and history-server types are private[spark] in Scala: this small shim
// lives in an org.apache.spark package to reach them (public in bytecode, stable from 3.5 to 4.2).
// What differs between Spark lines (a page's request type, headerSparkPage's signature) lives in
// the per-line page classes of package shim, chosen by GpuCollUi.webPage: this file names neither.

/**
 * One group's report as the status store keeps it (live UI and History Server alike), with when
 * its stage's tasks had ended (epoch ms; 0 when the event log did not record it).
 */
private[spark] class GpuCollGroupData(val report: GroupReport, val sequence: Long, val endedAtMillis: Long) {
  def this(report: GroupReport, sequence: Long) = this(report, sequence, 0L)

  @JsonIgnore @KVIndex
  def key: String = report.groupId + "@" + report.stage

  @JsonIgnore @KVIndex("sequence")
  def order: Long = sequence
}

/** One executor's check of the backend the settings require, as the status store keeps it. */
private[spark] class GpuCollExecutorCheckData(val check: BackendCheckEvent) {
  @JsonIgnore @KVIndex
  def key: String = check.executorId
}

/**
 * Writes every GroupReportEvent (and every executor's BackendCheckEvent) into the status store: on the driver's status queue while the
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
      store.write(new GpuCollGroupData(e.report, sequence, e.endedAtMillis), checkTriggers = true)
    case e: BackendCheckEvent =>
      store.write(new GpuCollExecutorCheckData(e)) // one per executor: the latest check wins
    case _ =>
  }
}

/**
 * The "GPU Collectives" tab: one page listing the groups forming now and those whose stages run now
 * (live UI only, from {@code forming} and {@code running}), then every group whose stage ended, the
 * failed ones first, each newest first. {@code webPage} turns the page into the WebUIPage of the
 * running Spark line (GpuCollUi.webPage).
 */
private[spark] class GpuCollTab(ui: SparkUI, val store: KVStore, val running: () => Seq[GroupReport],
    val forming: () => Seq[FormingGroup], webPage: GpuCollPage => WebUIPage)
    extends SparkUITab(ui, "gpucoll") {
  override val name = "GPU Collectives"
  attachPage(webPage(new GpuCollPage(this)))
  ui.attachTab(this)
}

/**
 * Every group the page shows, read once per request: those forming, those running (a group whose
 * report came is no longer running), and those whose stage ended, failed ones first, each newest
 * first. The tab and its JSON both render this, so they never disagree.
 */
private[spark] case class GpuCollView(forming: Seq[FormingGroup], running: Seq[GroupReport], ended: Seq[GpuCollGroupData]) {
  def isEmpty: Boolean = forming.isEmpty && running.isEmpty && ended.isEmpty

  /** Every group as one JSON array in the page's order, each with its "status" (the page's /json). */
  def json: String =
    (forming.map(_.toJson) ++ running.map(_.toJson(GpuCollPage.Running, 0L)) ++
      ended.map(g => g.report.toJson(GpuCollPage.status(g.report), g.endedAtMillis))).mkString("[", ",", "]")
}

/**
 * What the tab's page shows, free of the servlet API: the per-line page class (package
 * org.apache.spark.gpucoll.shim) renders {@link #content} in Spark's page frame and serves
 * {@link #json}, both from one {@link GpuCollView}.
 */
private[spark] class GpuCollPage(val tab: GpuCollTab) {
  val title = "GPU Collectives"

  def view: GpuCollView = {
    val stored = GpuCollUi.groups(tab.store).reverse
    val done = stored.map(_.key).toSet
    val (failed, ok) = stored.partition(_.report.failed)
    GpuCollView(tab.forming(), tab.running().filterNot(r => done.contains(GpuCollPage.key(r))), failed ++ ok)
  }

  def json: String = view.json

  def content: Seq[Node] = render(view)

  private def render(v: GpuCollView): Seq[Node] = {
    val all = v.ended.map(_.report)
    val ended = v.ended.map(g => g.key -> g.endedAtMillis).toMap
    val running = v.running
    val forming = v.forming
    val failed = all.count(_.failed)
    val content =
      <div>
        {if (running.nonEmpty || forming.nonEmpty) <meta http-equiv="refresh" content={GpuCollPage.RefreshSeconds.toString}/> else NodeSeq.Empty}
        {GpuCollPage.formingTable(forming)}
        <p>{all.size} group report(s){if (failed > 0) s", $failed failed (listed first)" else ""}{if (running.nonEmpty) s", ${running.size} running" else ""}:
          the members of each barrier-stage group, the backend and rendezvous that served them, the latency of
          its calls per message size, and the path every collective took (calls summed over ranks). Paths
          NCCL's own log refuted are marked CONTRADICTION. A group whose stage runs is shown with its calls
          and latency so far (the ranks send them every few seconds; this page then reloads every
          {GpuCollPage.RefreshSeconds} s); its full report, with the predicted paths, comes when its tasks end.</p>
        {GpuCollPage.executorChecks(GpuCollUi.executorChecks(tab.store))}
        {if (v.isEmpty) <p>No barrier stage has used a communicator yet.</p>
         else UIUtils.listingTable(GpuCollPage.SummaryHeader, (r: GroupReport) => summaryRow(ended, running = true)(r),
           running, fixedWidth = false).filter(_ => running.nonEmpty) ++
           UIUtils.listingTable(GpuCollPage.SummaryHeader, (r: GroupReport) => summaryRow(ended, running = false)(r),
           all, fixedWidth = false).filter(_ => all.nonEmpty)}
        {running.map(r => details(r, running = true, 0L))}
        {all.map(r => details(r, running = false, ended.getOrElse(GpuCollPage.key(r), 0L)))}
      </div>
    content
  }

  private def summaryRow(ended: Map[String, Long], running: Boolean)(r: GroupReport): Seq[Node] =
    <tr class={if (running) "gpucoll-running" else if (r.failed) "gpucoll-failed" else ""}>
      <td>{GpuCollPage.stageLabel(r)}</td>
      <td><a href={"#" + GpuCollPage.anchor(r)}>{r.groupId}</a></td>
      <td>{if (running) <strong style="color: #06c">{GpuCollPage.Running}</strong>
        else if (r.failed) <strong style="color: #b00">{GpuCollPage.Failed}</strong> else "ok"}</td>
      <td>{if (running) "-" else GpuCollPage.endedLabel(ended.getOrElse(GpuCollPage.key(r), 0L))}</td>
      <td>{r.size}</td>
      <td>{r.hosts.asScala.mkString(", ")}</td>
      <td>{r.backend}</td>
      <td>{r.rendezvous}</td>
      <td>{GpuCollPage.maxWait(r)}</td>
      <td>{GpuCollPage.paths(r).map { case (c, alg, n) => s"$c: $alg x$n" }.mkString("; ")}</td>
      <td>{r.contradictions}</td>
    </tr>

  private def details(r: GroupReport, running: Boolean, endedAtMillis: Long): Seq[Node] = {
    val members = r.members.asScala.toSeq
    val latency = GpuCollCharts.latencyRows(r)
    val paths = GpuCollPage.paths(r)
    <div id={GpuCollPage.anchor(r)} class={if (running) "gpucoll-group gpucoll-running" else "gpucoll-group"}>
      <h4>Group {r.groupId} ({GpuCollPage.stageLabel(r)}){if (running) <strong style="color: #06c"> RUNNING: calls and latency so far</strong>
        else if (r.failed) <strong style="color: #b00"> FAILED</strong> else NodeSeq.Empty}{
        if (!running && endedAtMillis > 0) <span class="gpucoll-ended">, ended {GpuCollPage.endedLabel(endedAtMillis)}</span> else NodeSeq.Empty}</h4>
      {if (r.failed) {
        <h5>Failed ranks</h5> ++
        UIUtils.listingTable(Seq("Rank", "Host", "Executor", "Reason"),
          (m: GroupReport.Member) =>
            <tr class="gpucoll-failed-rank"><td>{m.rank}</td><td>{m.host}</td><td>{m.executorId}</td>
              <td>{m.failure}</td></tr>,
          members.filter(_.failed), fixedWidth = false)
      } else NodeSeq.Empty}
      {if (latency.isEmpty && r.failed) NodeSeq.Empty else <h5>Latency per message size</h5>}
      {if (latency.isEmpty) (if (r.failed) NodeSeq.Empty else <p>{if (running) "No call completed yet." else "No call completed."}</p>) else
        GpuCollCharts.latencyChart(latency) ++
        UIUtils.listingTable(Seq("Collective", "Message size", "Calls", "p50", "p99", "Max"),
          (l: GroupReport.Latency) =>
            <tr class="gpucoll-latency-row" data-collective={l.collective} data-max-bytes={l.maxBytes.toString}>
              <td>{l.collective}</td><td>{GpuCollCharts.sizeLabel(l.maxBytes)}</td><td>{l.calls}</td>
              <td>{GpuCollCharts.duration(l.p50Nanos)}</td><td>{GpuCollCharts.duration(l.p99Nanos)}</td>
              <td>{GpuCollCharts.duration(l.maxNanos)}</td></tr>,
          latency, fixedWidth = false)}
      {if (paths.isEmpty && r.failed) NodeSeq.Empty else <h5>Paths per collective</h5>}
      {if (paths.isEmpty) (if (r.failed) NodeSeq.Empty else <p>{if (running) "No call completed yet." else "No call completed."}</p>) else
        GpuCollCharts.pathMixChart(paths) ++
        UIUtils.listingTable(Seq("Collective", "Algorithm", "Calls"),
          (p: (String, String, Long)) => <tr><td>{p._1}</td><td>{p._2}</td><td>{p._3}</td></tr>,
          paths, fixedWidth = false)}
      <h5>Members: rendezvous and formation per rank</h5>
      {GpuCollCharts.rankTimesChart(members)}
      {UIUtils.listingTable(Seq("Rank", "Host", "Executor", "PID", "Rendezvous", "Formation", "Status"),
        (m: GroupReport.Member) =>
          <tr><td>{m.rank}</td><td>{m.host}</td><td>{m.executorId}</td>
            <td>{if (m.pid >= 0) m.pid.toString else "-"}</td>
            <td>{if (m.pid >= 0) GpuCollCharts.duration(m.rendezvousNanos) else "-"}</td>
            <td>{if (m.pid < 0 || m.failed && m.formationNanos == 0) "-" else if (m.reused) "reused"
              else GpuCollCharts.duration(m.formationNanos)}</td>
            <td>{if (running) (if (m.pid >= 0) "running" else "no progress yet") else if (m.failed) "failed" else "ok"}</td></tr>,
        members, fixedWidth = false)}
      {if (running) NodeSeq.Empty else groupFindings(r, paths.isEmpty)}
    </div>
  }

  /** Predictions and findings: in a group's full report, when its tasks have ended. */
  private def groupFindings(r: GroupReport, noPaths: Boolean): Seq[Node] = {
    <div>
      {if (r.failed && noPaths) NodeSeq.Empty else GpuCollPage.predictions(r)}
      {GpuCollPage.gpuLines(r, "Zero-CTA verdicts", r.zeroCtaVerdicts.asScala.toSeq)}
      {GpuCollPage.gpuLines(r, "NCCL path proof", r.ncclProof.asScala.toSeq)}
      {GpuCollPage.lines("Other findings", r.otherFindings.asScala.toSeq, r.failed)}
    </div>
  }
}

private[spark] object GpuCollPage {
  val SummaryHeader: Seq[String] = Seq("Stage", "Group", "Status", "Ended", "Ranks", "Hosts", "Backend", "Rendezvous",
    "Longest wait", "Paths (collective: algorithm x calls)", "Contradictions")

  /** How often the page reloads while a group forms or runs (the ranks send their progress every 2 s). */
  val RefreshSeconds = 3

  val Running = "RUNNING"
  val Failed = "FAILED"
  val Ok = "OK"

  /** An ended group's status in the page's JSON. */
  def status(r: GroupReport): String = if (r.failed) Failed else Ok

  /**
   * The groups forming now: which ranks reached the driver's rendezvous, which have not, and how
   * long the first has waited (a slow rank shows here long before its peers time out).
   */
  def formingTable(forming: Seq[FormingGroup]): Seq[Node] =
    if (forming.isEmpty) NodeSeq.Empty else
      <h4>Forming: ranks waiting at the rendezvous for the others</h4> ++
      UIUtils.listingTable(Seq("Stage", "Group", "Status", "Ranks", "Arrived", "Missing", "Waiting for"),
        (g: FormingGroup) =>
          <tr class="gpucoll-forming">
            <td>{g.stage}</td><td>{g.groupId}</td>
            <td><strong style="color: #c60">{FormingGroup.STATUS}</strong></td>
            <td>{g.size}</td>
            <td class="gpucoll-arrived">{GpuCollPage.rankList(g.arrivedRanks)}</td>
            <td class="gpucoll-missing">{GpuCollPage.rankList(g.missingRanks)}</td>
            <td>{GpuCollCharts.duration(g.waitingNanos)}</td>
          </tr>,
        forming, fixedWidth = false)

  /** Ranks as "0, 1, 2" ("none" for no rank). */
  def rankList(ranks: java.util.List[Integer]): String =
    if (ranks.isEmpty) "none" else ranks.asScala.mkString(", ")

  def key(r: GroupReport): String = r.groupId + "@" + r.stage

  /** "2026-12-02 05:01:02" in the UI's format, or "-" when not recorded. */
  def endedLabel(millis: Long): String = if (millis <= 0) "-" else UIUtils.formatDate(millis)

  def anchor(r: GroupReport): String = (r.groupId + "-" + r.stage).replaceAll("[^A-Za-z0-9_-]", "_")

  /** "stage 1.0 (reused from stage 0.0)" when the stage took its group from the executors' cache. */
  def stageLabel(r: GroupReport): String =
    if (r.formedIn.isEmpty) r.stage else s"${r.stage} (reused from ${r.formedIn})"

  /** The longest time a rank waited for its communicator (rendezvous and formation). */
  def maxWait(r: GroupReport): String = {
    val all = r.members.asScala.filter(_.pid >= 0).map(m => m.rendezvousNanos + m.formationNanos)
    if (all.isEmpty) "-" else GpuCollCharts.duration(all.max)
  }

  def paths(r: GroupReport): Seq[(String, String, Long)] =
    r.paths.asScala.toSeq.sortBy(_._1).flatMap { case (c, byAlg) =>
      byAlg.asScala.toSeq.sortBy(_._1).map { case (alg, n) => (c, alg, n.longValue) }
    }

  /**
   * Each executor's check, at plugin start, of the backend spark.gpucoll.backend requires: whether
   * it can run there and why not, the executor's GPUs and what the backend found.
   */
  def executorChecks(checks: Seq[BackendCheckEvent]): Seq[Node] =
    if (checks.isEmpty) NodeSeq.Empty else {
      val failed = checks.count(!_.usable)
      <h4>Executor checks of spark.gpucoll.backend{if (failed > 0) <strong style="color: #b00"> ({failed} cannot run it)</strong> else NodeSeq.Empty}</h4> ++
      UIUtils.listingTable(Seq("Executor", "Host", "Backend", "Result", "GPUs", "Reason", "Found"),
        (c: BackendCheckEvent) =>
          <tr class={if (c.usable) "gpucoll-check" else "gpucoll-check gpucoll-failed"}>
            <td>{c.executorId}</td><td>{c.host}</td><td>{c.backend}</td>
            <td>{if (c.usable) "usable" else <strong style="color: #b00">cannot run</strong>}</td>
            <td>{if (c.gpus.isEmpty) "none" else c.gpus.asScala.mkString(", ")}</td>
            <td>{c.unavailableReason}</td>
            <td>{c.environment.asScala.toSeq.sortBy(_._1).map { case (k, v) => s"$k=$v" }.mkString("; ")}</td>
          </tr>,
        checks, fixedWidth = false)
    }

  /** Predictions at the sizes the group used, the reference sizes one click away. */
  def predictions(r: GroupReport): Seq[Node] = {
    val used = r.predictedUsed.asScala.toSeq
    val reference = r.predicted.asScala.toSeq
    lines("Predicted paths at the sizes this group used", used) ++
      (if (reference.isEmpty) NodeSeq.Empty else
        <details class="gpucoll-predicted-all">
          <summary>Predicted paths at {reference.size} reference sizes</summary>
          <ul>{reference.map(l => <li>{l}</li>)}</ul>
        </details>)
  }

  /**
   * A section about NCCL and copy engines: "not applicable" (and why) for a group that no GPU
   * backend served, where "none" would suggest something was looked for and not found.
   */
  def gpuLines(r: GroupReport, title: String, items: Seq[String]): Seq[Node] =
    if (items.isEmpty && !r.usedGpuBackend) {
      if (r.failed && r.backend == "none") NodeSeq.Empty
      else <h5>{title}</h5> ++ <p class="gpucoll-not-applicable">not applicable: the {r.backend} backend uses neither NCCL nor copy engines</p>
    } else lines(title, items, r.failed)

  /** A titled list; "none" when empty, or nothing at all with {@code omitEmpty}. */
  def lines(title: String, items: Seq[String], omitEmpty: Boolean = false): Seq[Node] =
    if (items.isEmpty && omitEmpty) NodeSeq.Empty else
    <h5>{title}</h5> ++ (if (items.isEmpty) <p>none</p> else <ul>{items.map { l =>
      if (l.startsWith("CONTRADICTION")) <li><strong>{l}</strong></li> else <li>{l}</li>
    }}</ul>)
}

/** Replays GroupReportEvent into the History Server's store and shows the same tab there. */
class GpuCollHistoryServerPlugin extends AppHistoryServerPlugin {
  override def createListeners(conf: SparkConf, store: ElementTrackingStore): Seq[SparkListener] =
    Seq(new GpuCollStatusListener(store))

  override def setupUI(ui: SparkUI): Unit = {
    if (GpuCollUi.showTab(ui.store)) {
      GpuCollUi.attachTab(ui, ui.store.store, () => Seq.empty, () => Seq.empty) // a replayed application runs nothing
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
    sc.ui.foreach(ui => attachTab(ui, store, () => GpuCollectivesPlugin.driverRunningGroups().asScala.toSeq,
      () => GpuCollectivesPlugin.driverFormingGroups().asScala.toSeq))
  }

  private val log = LoggerFactory.getLogger(classOf[GpuCollectivesPlugin])

  /**
   * The page class for the running Spark, named by the signature of its
   * UIUtils.headerSparkPage (the request type and the parameter count are what differ between
   * lines, see the shim package): spark35 (gpucoll-spark35-shim), spark40 (gpucoll-spark40-shim,
   * Spark 4.0 and 4.1) or spark42 (this module). None for a signature no page class is built for.
   */
  private[spark] def webPageClass(requestType: String, parameters: Int): Option[String] =
    (requestType, parameters) match {
      case ("javax.servlet.http.HttpServletRequest", 7) => Some("org.apache.spark.gpucoll.shim.spark35.GpuCollWebPage")
      case ("jakarta.servlet.http.HttpServletRequest", 7) => Some("org.apache.spark.gpucoll.shim.spark40.GpuCollWebPage")
      case ("jakarta.servlet.http.HttpServletRequest", 8) => Some("org.apache.spark.gpucoll.shim.spark42.GpuCollWebPage")
      case _ => None
    }

  /**
   * How to make the tab's WebUIPage on a Spark whose headerSparkPage has {@code signature}
   * (request type, parameter count), with the page classes {@code loader} finds; Left says why
   * none serves it.
   */
  private[spark] def webPageFactory(signature: (String, Int), loader: ClassLoader): Either[String, GpuCollPage => WebUIPage] = {
    val (requestType, parameters) = signature
    val spark = s"Spark ${org.apache.spark.SPARK_VERSION} (UIUtils.headerSparkPage($requestType, ...) of $parameters parameters)"
    webPageClass(requestType, parameters) match {
      case None => Left(s"$spark is a Spark line this gpucoll build has no page class for")
      case Some(name) =>
        // LinkageError too (a page class whose Spark types are missing): Try would let it through.
        try {
          val ctor = Class.forName(name, true, loader).getConstructor(classOf[GpuCollPage])
          Right(page => ctor.newInstance(page).asInstanceOf[WebUIPage])
        } catch {
          case e @ (_: ReflectiveOperationException | _: LinkageError) =>
            Left(s"$spark needs $name, which cannot be loaded ($e): the one jar gpucoll-dist on --jars has it")
        }
    }
  }

  /** The running Spark's headerSparkPage signature: its request type and parameter count. */
  private def headerSparkPageSignature: (String, Int) =
    UIUtils.getClass.getMethods.find(_.getName == "headerSparkPage")
      .map(m => (m.getParameterTypes()(0).getName, m.getParameterCount)).getOrElse(("(none)", 0))

  /** Decided once per JVM: the live UI and every application a History Server replays share it. */
  private[spark] lazy val webPage: Either[String, GpuCollPage => WebUIPage] =
    webPageFactory(headerSparkPageSignature, getClass.getClassLoader)

  /**
   * Adds the tab to {@code ui}; on a Spark line no page class serves, logs why once and leaves
   * the UI without it (the collectives, reports and metrics work all the same).
   */
  private[spark] def attachTab(ui: SparkUI, store: KVStore, running: () => Seq[GroupReport],
      forming: () => Seq[FormingGroup]): Unit = webPage match {
    case Right(webPage) => new GpuCollTab(ui, store, running, forming, webPage)
    case Left(why) =>
      if (!tabMissingLogged.getAndSet(true)) {
        log.warn(s"gpucoll: the GPU Collectives UI tab is not shown: $why")
      }
  }

  private val tabMissingLogged = new java.util.concurrent.atomic.AtomicBoolean(false)

  /**
   * Whether a replayed application gets the tab: when it has group reports (failed groups
   * included) or executor checks, or ran with the plugin in spark.plugins (then the tab says no
   * group formed).
   */
  private[spark] def showTab(store: AppStatusStore): Boolean =
    store.store.count(classOf[GpuCollGroupData]) > 0 || store.store.count(classOf[GpuCollExecutorCheckData]) > 0 ||
      Try(store.environmentInfo()).toOption.exists { env =>
      env.sparkProperties.exists { case (k, v) =>
        k == "spark.plugins" && v.split(",").map(_.trim).contains(classOf[GpuCollectivesPlugin].getName)
      }
    }

  private[spark] def reports(store: KVStore): Seq[GroupReport] = groups(store).map(_.report)

  private[spark] def groups(store: KVStore): Seq[GpuCollGroupData] = {
    val it = store.view(classOf[GpuCollGroupData]).index("sequence").closeableIterator()
    try it.asScala.toList
    finally it.close()
  }

  private[spark] def executorChecks(store: KVStore): Seq[BackendCheckEvent] = {
    val it = store.view(classOf[GpuCollExecutorCheckData]).closeableIterator()
    try it.asScala.map(_.check).toList.sortBy(_.executorId)
    finally it.close()
  }

  private[spark] def dropOldest(store: KVStore, excess: Long): Unit = {
    val it = store.view(classOf[GpuCollGroupData]).index("sequence").closeableIterator()
    val oldest = try it.asScala.take(excess.toInt).map(_.key).toList finally it.close()
    oldest.foreach(k => store.delete(classOf[GpuCollGroupData], k))
  }
}
