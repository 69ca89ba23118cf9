package org.apache.spark.gpucoll.shim.spark40

import scala.xml.Node

import jakarta.servlet.http.HttpServletRequest
import org.json4s.JValue
import org.json4s.jackson.JsonMethods

import org.apache.spark.gpucoll.GpuCollPage
import org.apache.spark.ui.{UIUtils, WebUIPage}

/**
 * The GPU Collectives page on Spark 4.0 and later (jakarta.servlet; compiled against the default Spark line): the servlet types of render and
 * renderJson, and json4s's parse, differ between Spark lines; everything the page shows is
 * GpuCollPage's. GpuCollUi.servletShim picks this class by WebUIPage.render's parameter type.
 */
private[spark] class GpuCollWebPage(page: GpuCollPage) extends WebUIPage("") {
  override def renderJson(request: HttpServletRequest): JValue = JsonMethods.parse(page.json)

  override def render(request: HttpServletRequest): Seq[Node] =
    UIUtils.headerSparkPage(request, page.title, page.content, page.tab)
}
