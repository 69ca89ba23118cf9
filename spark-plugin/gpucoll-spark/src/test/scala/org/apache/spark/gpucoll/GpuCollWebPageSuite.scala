package org.apache.spark.gpucoll

import org.scalatest.funsuite.AnyFunSuite

/** Which page class serves which Spark line, and what a line no page class serves is told. */
class GpuCollWebPageSuite extends AnyFunSuite {
  private val javax = "javax.servlet.http.HttpServletRequest"
  private val jakarta = "jakarta.servlet.http.HttpServletRequest"

  test("each headerSparkPage signature of the lines served names its own page class") {
    assert(GpuCollUi.webPageClass(javax, 7).contains("org.apache.spark.gpucoll.shim.spark35.GpuCollWebPage"))
    assert(GpuCollUi.webPageClass(jakarta, 7).contains("org.apache.spark.gpucoll.shim.spark40.GpuCollWebPage"))
    assert(GpuCollUi.webPageClass(jakarta, 8).contains("org.apache.spark.gpucoll.shim.spark42.GpuCollWebPage"))
  }

  test("the Spark this module is built against gets the page class this module holds") {
    assert(GpuCollUi.webPage.isRight, GpuCollUi.webPage)
  }

  test("a line without a page class, or whose class is missing, is named in the reason") {
    val unknown = GpuCollUi.webPageFactory((jakarta, 9), getClass.getClassLoader)
    assert(unknown.left.exists(_.contains("UIUtils.headerSparkPage(" + jakarta + ", ...) of 9 parameters")), unknown)
    assert(unknown.left.exists(_.contains("no page class")), unknown)
    // The Spark 3.5 page class lives in gpucoll-spark35-shim, not on this module's class path.
    val missing = GpuCollUi.webPageFactory((javax, 7), getClass.getClassLoader)
    assert(missing.left.exists(m => m.contains("shim.spark35.GpuCollWebPage") && m.contains("gpucoll-dist")), missing)
  }
}
