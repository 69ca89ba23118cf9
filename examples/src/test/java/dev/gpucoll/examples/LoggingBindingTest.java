package dev.gpucoll.examples;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;

import org.junit.jupiter.api.Test;

/**
 * The examples' class path logs through Spark's slf4j 2 and log4j 2: a dependency that brings
 * slf4j-api 1.7 (cuDF does) must not win, or the demo prints "SLF4J: Failed to load class
 * org.slf4j.impl.StaticLoggerBinder ... NOP logger" and loses its own report lines.
 */
class LoggingBindingTest {

  @Test
  void slf4jIsVersionTwoAndBoundToLog4j() {
    assertDoesNotThrow(() -> Class.forName("org.slf4j.spi.SLF4JServiceProvider"),
        "slf4j-api 1.x is on the class path: " + org.slf4j.LoggerFactory.class.getProtectionDomain().getCodeSource());
    String factory = org.slf4j.LoggerFactory.getILoggerFactory().getClass().getName();
    assertFalse(factory.contains("NOP") || factory.contains("Substitute"), "slf4j logs nowhere: " + factory);
  }
}
