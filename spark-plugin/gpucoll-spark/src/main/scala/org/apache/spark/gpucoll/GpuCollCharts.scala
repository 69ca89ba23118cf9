package org.apache.spark.gpucoll

import java.util.Locale

import scala.jdk.CollectionConverters._
import scala.xml.{Elem, Node, NodeSeq}

import dev.gpucoll.core.config.Durations
import dev.gpucoll.spark.GroupReport

/**
 * The tab's charts as inline SVG drawn on the server: no script, no CDN, the same picture in the
 * live UI and the History Server. Every mark carries a {@code <title>} with its numbers (shown on
 * hover, read by screen readers), and the page prints the same numbers in tables beside them.
 */
private[spark] object GpuCollCharts {
  /** Distinct colours that stay apart for the colour-blind (Okabe-Ito order). */
  val Palette: IndexedSeq[String] =
    IndexedSeq("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

  def colour(i: Int): String = Palette(Math.floorMod(i, Palette.size))

  /**
   * A collective's colour, the same in every group's chart: from its place in
   * {@link dev.gpucoll.api.Collective} (7 collectives, 8 colours), never from which ones a group used.
   */
  def collectiveColour(collective: String): String = {
    val i = dev.gpucoll.api.Collective.values().indexWhere(_.apiName == collective)
    colour(if (i >= 0) i else Palette.size - 1)
  }

  /** 1536 -> "1.5 KiB"; powers of 1024 with at most one decimal. */
  def bytes(n: Long): String = {
    val units = Seq("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    var v = n.toDouble
    var u = 0
    while (v >= 1024 && u < units.size - 1) { v /= 1024; u += 1 }
    if (u == 0) s"$n B"
    else if (v == Math.rint(v)) f"${v.toLong}%d ${units(u)}"
    else String.format(Locale.ROOT, "%.1f %s", Double.box(v), units(u))
  }

  def duration(nanos: Long): String = Durations.format(nanos)

  /** A message-size class by its largest size: "≤ 256 B"; the smallest class holds 0 and 1 byte. */
  def sizeLabel(maxBytes: Long): String = if (maxBytes <= 1) "0-1 B" else "≤ " + bytes(maxBytes)

  /**
   * Tick values for a log axis over [lo, hi] (nanoseconds): 1, 2 and 5 times powers of ten, at
   * least the two ends' decades.
   */
  def logTicks(lo: Long, hi: Long): Seq[Long] = {
    val low = Math.max(1L, lo)
    val high = Math.max(low, hi)
    val all = Iterator.iterate(1L)(_ * 10).takeWhile(_ <= Long.MaxValue / 10).flatMap(d => Seq(d, 2 * d, 5 * d)).toSeq
    val first = all.filter(_ <= low).lastOption.getOrElse(1L)
    val last = all.find(_ >= high).getOrElse(all.last)
    val inRange = all.filter(t => t >= first && t <= last)
    if (inRange.size <= 7) inRange
    else {
      // Too many for the axis: powers of ten only, still enclosing both ends.
      val decades = all.filter(t => java.lang.Long.toString(t).head == '1')
      val from = decades.filter(_ <= low).lastOption.getOrElse(1L)
      val to = decades.find(_ >= high).getOrElse(decades.last)
      decades.filter(t => t >= from && t <= to)
    }
  }

  private def fmt(d: Double): String = String.format(Locale.ROOT, "%.1f", Double.box(d))

  private def svg(cls: String, width: Int, height: Int, label: String)(body: NodeSeq): Elem =
    <svg xmlns="http://www.w3.org/2000/svg" class={cls} role="img" aria-label={label}
         width={width.toString} height={height.toString} viewBox={s"0 0 $width $height"}
         style="font-family: sans-serif; font-size: 11px; max-width: 100%;">
      <title>{label}</title>
      {body}
    </svg>

  /**
   * Latency per message size and collective: p50 as filled dots on solid lines, p99 as hollow
   * dots on dashed lines, log time axis. Empty when no call ran.
   */
  def latencyChart(rows: Seq[GroupReport.Latency]): NodeSeq = {
    if (rows.isEmpty) return NodeSeq.Empty
    val sizes = rows.map(_.maxBytes).distinct.sorted
    val collectives = rows.map(_.collective).distinct.sorted
    val (left, right, top, bottom) = (72, 150, 16, 44)
    val plotW = Math.max(420, 120 * sizes.size)
    val plotH = 240
    val width = left + plotW + right
    val height = top + plotH + bottom
    val ticks = logTicks(rows.map(r => Math.min(r.p50Nanos, r.p99Nanos)).min, rows.map(_.p99Nanos).max)
    val (lo, hi) = (Math.log10(ticks.head.toDouble), Math.log10(ticks.last.toDouble))
    def y(nanos: Long): Double = {
      val v = Math.log10(Math.max(1L, nanos).toDouble)
      top + plotH - (if (hi == lo) plotH / 2.0 else (v - lo) / (hi - lo) * plotH)
    }
    def x(maxBytes: Long): Double = left + (sizes.indexOf(maxBytes) + 0.5) * plotW / sizes.size
    val axes =
      <g class="axes" stroke="#888">
        <line x1={left.toString} y1={top.toString} x2={left.toString} y2={(top + plotH).toString}/>
        <line x1={left.toString} y1={(top + plotH).toString} x2={(left + plotW).toString} y2={(top + plotH).toString}/>
      </g>
    val yTicks = ticks.map { t =>
      <g class="y-tick">
        <line x1={left.toString} x2={(left + plotW).toString} y1={fmt(y(t))} y2={fmt(y(t))} stroke="#eee"/>
        <text x={(left - 6).toString} y={fmt(y(t) + 4)} text-anchor="end">{duration(t)}</text>
      </g>
    }
    val xTicks = sizes.map { s =>
      <text class="x-tick" x={fmt(x(s))} y={(top + plotH + 16).toString} text-anchor="middle">{sizeLabel(s)}</text>
    }
    val axisTitles =
      <text x={(left + plotW / 2).toString} y={(height - 6).toString} text-anchor="middle">message size (bytes per rank)</text>
      <text x="12" y={(top + plotH / 2).toString} text-anchor="middle" transform={s"rotate(-90 12 ${top + plotH / 2})"}>latency</text>
    val series = collectives.map { c =>
      val pts = rows.filter(_.collective == c).sortBy(_.maxBytes)
      val col = collectiveColour(c)
      def path(v: GroupReport.Latency => Long) = pts.map(p => fmt(x(p.maxBytes)) + "," + fmt(y(v(p)))).mkString(" ")
      <g class="series" data-collective={c}>
        {if (pts.size > 1) <polyline points={path(_.p50Nanos)} fill="none" stroke={col} stroke-width="2"/> else NodeSeq.Empty}
        {if (pts.size > 1) <polyline points={path(_.p99Nanos)} fill="none" stroke={col} stroke-width="1.5" stroke-dasharray="4 3"/> else NodeSeq.Empty}
        {pts.map { p =>
          val what = s"$c ${sizeLabel(p.maxBytes)}, ${p.calls} calls"
          <g class="point" data-collective={c} data-max-bytes={p.maxBytes.toString}
             data-p50-ns={p.p50Nanos.toString} data-p99-ns={p.p99Nanos.toString}>
            <circle class="p99" cx={fmt(x(p.maxBytes))} cy={fmt(y(p.p99Nanos))} r="4" fill="white" stroke={col} stroke-width="2">
              <title>{s"$what: p99 ${duration(p.p99Nanos)}"}</title>
            </circle>
            <circle class="p50" cx={fmt(x(p.maxBytes))} cy={fmt(y(p.p50Nanos))} r="4" fill={col}>
              <title>{s"$what: p50 ${duration(p.p50Nanos)}"}</title>
            </circle>
          </g>
        }}
      </g>
    }
    val legendX = left + plotW + 16
    val legend =
      <g class="legend">
        {collectives.zipWithIndex.map { case (c, i) =>
          <g><rect x={legendX.toString} y={(top + i * 18).toString} width="12" height="12" fill={collectiveColour(c)}/>
            <text x={(legendX + 18).toString} y={(top + i * 18 + 10).toString}>{c}</text></g>
        }}
        <g transform={s"translate($legendX ${top + collectives.size * 18 + 10})"}>
          <circle cx="6" cy="6" r="4" fill="#555"/><text x="18" y="10">p50</text>
          <circle cx="6" cy="24" r="4" fill="white" stroke="#555" stroke-width="2"/><text x="18" y="28">p99</text>
        </g>
      </g>
    svg("gpucoll-chart gpucoll-latency-chart", width, height,
      s"Latency per message size: p50 and p99 of ${collectives.mkString(", ")}") {
      axes ++ yTicks ++ xTicks ++ axisTitles ++ series ++ legend
    }
  }

  /** Per collective one bar, split by the share of calls each algorithm served. */
  def pathMixChart(paths: Seq[(String, String, Long)]): NodeSeq = {
    if (paths.isEmpty) return NodeSeq.Empty
    val algorithms = paths.map(_._2).distinct.sorted
    val collectives = paths.map(_._1).distinct.sorted
    val (left, barW, rowH) = (110, 420, 24)
    val legendRows = (algorithms.size + 2) / 3
    val width = left + barW + 20
    val height = collectives.size * rowH + 8 + legendRows * 18
    val bars = collectives.zipWithIndex.map { case (c, row) =>
      val mine = paths.filter(_._1 == c)
      val total = mine.map(_._3).sum.toDouble
      var at = left.toDouble
      val y = 4 + row * rowH
      <g class="bar" data-collective={c}>
        <text x={(left - 6).toString} y={(y + 14).toString} text-anchor="end">{c}</text>
        {mine.map { case (_, alg, n) =>
          val w = if (total == 0) 0 else n / total * barW
          val share = if (total == 0) 0 else 100.0 * n / total
          val seg =
            <g class="segment" data-algorithm={alg} data-calls={n.toString}>
              <rect x={fmt(at)} y={y.toString} width={fmt(w)} height={(rowH - 6).toString}
                    fill={colour(algorithms.indexOf(alg))}>
                <title>{s"$c: $alg, $n calls (${fmt(share)}%)"}</title>
              </rect>
              {if (w > 60) <text x={fmt(at + 4)} y={(y + 13).toString} fill="white">{alg}</text> else NodeSeq.Empty}
            </g>
          at += w
          seg
        }}
      </g>
    }
    val legend = algorithms.zipWithIndex.map { case (a, i) =>
      val lx = left + (i % 3) * 150
      val ly = collectives.size * rowH + 8 + (i / 3) * 18
      <g><rect x={lx.toString} y={ly.toString} width="12" height="12" fill={colour(i)}/>
        <text x={(lx + 16).toString} y={(ly + 10).toString}>{a}</text></g>
    }
    svg("gpucoll-chart gpucoll-path-chart", width, height,
      s"Path mix: share of calls per algorithm for ${collectives.mkString(", ")}")(bars ++ legend)
  }

  /** Per rank one bar: the wait for every rank (rendezvous), then building the communicator (formation). */
  def rankTimesChart(members: Seq[GroupReport.Member]): NodeSeq = {
    val shown = members.filter(_.pid >= 0)
    if (shown.isEmpty) return NodeSeq.Empty
    val (left, barW, rowH) = (110, 360, 22)
    val width = left + barW + 190
    val height = shown.size * rowH + 30
    val longest = Math.max(1L, shown.map(m => m.rendezvousNanos + m.formationNanos).max).toDouble
    val bars = shown.zipWithIndex.map { case (m, row) =>
      val y = 4 + row * rowH
      val rw = m.rendezvousNanos / longest * barW
      val fw = m.formationNanos / longest * barW
      val label = s"rendezvous ${duration(m.rendezvousNanos)}" +
        (if (m.reused) ", reused" else if (m.failed && m.formationNanos == 0) ", failed"
         else s", formation ${duration(m.formationNanos)}")
      <g class="rank" data-rank={m.rank.toString} data-rendezvous-ns={m.rendezvousNanos.toString}
         data-formation-ns={m.formationNanos.toString}>
        <text x={(left - 6).toString} y={(y + 13).toString} text-anchor="end">{s"rank ${m.rank} (exec ${m.executorId})"}</text>
        <rect x={left.toString} y={y.toString} width={fmt(rw)} height={(rowH - 6).toString} fill={colour(0)}>
          <title>{s"rank ${m.rank}: rendezvous ${duration(m.rendezvousNanos)}"}</title>
        </rect>
        <rect x={fmt(left + rw)} y={y.toString} width={fmt(fw)} height={(rowH - 6).toString} fill={colour(1)}>
          <title>{s"rank ${m.rank}: formation ${duration(m.formationNanos)}" + (if (m.reused) " (reused)" else "")}</title>
        </rect>
        <text x={fmt(left + rw + fw + 6)} y={(y + 13).toString}>{label}</text>
      </g>
    }
    val ly = shown.size * rowH + 10
    val legend =
      <g class="legend">
        <rect x={left.toString} y={ly.toString} width="12" height="12" fill={colour(0)}/>
        <text x={(left + 16).toString} y={(ly + 10).toString}>rendezvous (until every rank arrived)</text>
        <rect x={(left + 230).toString} y={ly.toString} width="12" height="12" fill={colour(1)}/>
        <text x={(left + 246).toString} y={(ly + 10).toString}>formation (backend setup)</text>
      </g>
    svg("gpucoll-chart gpucoll-rank-chart", width, height, "Rendezvous and formation time per rank")(bars ++ legend)
  }

  /** The Java report's latency rows as a Scala sequence. */
  def latencyRows(r: GroupReport): Seq[GroupReport.Latency] = r.latency.asScala.toSeq
}
