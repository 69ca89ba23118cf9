package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.gpucoll.GpuCollGroupData;
import org.apache.spark.gpucoll.GpuCollStatusListener;
import org.apache.spark.gpucoll.GpuCollUi$;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.status.KVUtils;
import org.apache.spark.util.kvstore.InMemoryStore;
import org.junit.jupiter.api.Test;

/** How the tab's data sits in Spark's status store, in memory and on disk (History Server). */
class GpuCollStatusStoreTest {

  private static GroupReport report(int stage) {
    return new GroupReport("app-stage" + stage + ".0", "stage " + stage + ".0", 1,
        List.of(new GroupReport.Member(0, "h", "1", 7)), "host-shm", "spark-plugin-rpc",
        Map.of("allReduce", Map.of("host-ll-oneshot", 1L)), List.of(), List.of());
  }

  @Test
  void theListenerKeepsReportsInOrderAndDropsTheOldestBeyondTheCap() {
    // Synchronous triggers, so the cap applies before write returns.
    ElementTrackingStore store = new ElementTrackingStore(new InMemoryStore(),
        new SparkConf(false).set("spark.appStateStore.asyncTracking.enable", "false"));
    GpuCollStatusListener listener = new GpuCollStatusListener(store);
    int cap = (int) GpuCollUi$.MODULE$.MaxGroups();
    for (int stage = 0; stage < cap + 3; stage++) {
      listener.onOtherEvent(new GroupReportEvent(report(stage)));
    }
    List<GroupReport> kept = scala.jdk.javaapi.CollectionConverters.asJava(GpuCollUi$.MODULE$.reports(store));
    assertEquals(cap, kept.size());
    assertEquals(report(3), kept.get(0));
    assertEquals(report(cap + 2), kept.get(cap - 1));
  }

  @Test
  void aStoredReportSurvivesTheDiskStoresSerializer() throws Exception {
    KVUtils.KVStoreScalaSerializer serializer = new KVUtils.KVStoreScalaSerializer();
    GpuCollGroupData data = new GpuCollGroupData(GroupReportEventJsonTest.sample(), 42, 1_764_000_000_123L);
    GpuCollGroupData back = serializer.deserialize(serializer.serialize(data), GpuCollGroupData.class);
    assertEquals(data.report(), back.report());
    assertEquals(42, back.sequence());
    assertEquals(1_764_000_000_123L, back.endedAtMillis());
    assertEquals(data.key(), back.key());
  }
}
