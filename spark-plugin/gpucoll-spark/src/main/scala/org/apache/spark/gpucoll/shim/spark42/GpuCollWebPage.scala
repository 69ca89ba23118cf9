package org.apache.spark.gpucoll.shim.spark42

import scala.xml.Node

import jakarta.servlet.http.HttpServletRequest
import org.json4s.JValue
import org.json4s.jackson.JsonMethods

import org.apache.spark.gpucoll.GpuCollPage
import org.apache.spark.ui.{UIUtils, WebUIPage}

/**
 * The GPU Collectives page on Spark 4.2 (jakarta.servlet requests; UIUtils.headerSparkPage of 8 parameters). Compiled
 * with the Spark layer against the default Spark line. Only what differs between
 * Spark lines is here: the request type of render and renderJson, headerSparkPage's signature
 * (its default arguments are compiled into the call) and json4s's parse; everything the page
 * shows is GpuCollPage's. GpuCollUi.webPageClass picks this class for the running Spark.
 */
private[spark] class GpuCollWebPage(page: GpuCollPage) extends WebUIPage("") {
  override def renderJson(request: HttpServletRequest): JValue = JsonMethods.parse(page.json)

  override def render(request: HttpServletRequest): Seq[Node] =
    UIUtils.headerSparkPage(request, page.title, page.content, page.tab)
}
