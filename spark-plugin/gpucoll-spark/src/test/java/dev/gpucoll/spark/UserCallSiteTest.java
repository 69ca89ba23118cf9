package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.barrier.UserCallSite;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.storage.RDDInfo;
import org.junit.jupiter.api.Test;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/** The stages our barrier API creates carry the caller's line, as Spark's own operations do. */
class UserCallSiteTest {

  @Test
  void theBarrierStageIsNamedAfterTheCallersLine() throws Exception {
    SparkConf conf = LocalSpark.withPlugin("gpucoll-call-site", "local[2]")
        .set("spark.gpucoll.timeout", "30s");
    List<StageInfo> stages = new CopyOnWriteArrayList<>();
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      sc.sc().addSparkListener(new SparkListener() {
        @Override
        public void onStageCompleted(SparkListenerStageCompleted done) {
          stages.add(done.stageInfo());
        }
      });
      int line = new Throwable().getStackTrace()[0].getLineNumber() + 1;
      JavaRDD<Tuple2<Integer, Double>> sums = GpuCollectives.barrierMapPartitions(
          sc.parallelize(List.of(1.0, 2.0, 3.0, 4.0), 2), (comm, rows) -> {
            double[] s = {0};
            rows.forEachRemaining(v -> s[0] += v);
            comm.allReduce(s, ReduceOp.SUM);
            return List.of(new Tuple2<>(comm.rank(), s[0])).iterator();
          });
      String site = "UserCallSiteTest.java:" + line;
      assertEquals("barrierMapPartitions at " + site, sums.rdd().creationSite().shortForm());
      assertTrue(sums.rdd().creationSite().longForm().startsWith(
          "dev.gpucoll.spark.UserCallSiteTest.theBarrierStageIsNamedAfterTheCallersLine(" + site + ")"),
          sums.rdd().creationSite().longForm());
      // A shuffle right after the barrier stage makes it a shuffle map stage, named after its RDD's call site.
      List<Tuple2<Integer, Double>> total = JavaPairRDD.fromJavaRDD(sums).reduceByKey(Double::sum).collect();
      assertEquals(List.of(10.0, 10.0), total.stream().map(Tuple2::_2).toList());
      sc.sc().listenerBus().waitUntilEmpty();
      StageInfo barrier = stages.stream().filter(st -> !st.name().startsWith("collect")).findFirst().orElseThrow();
      assertEquals("barrierMapPartitions at " + site, barrier.name(), stages.toString());
      for (StageInfo st : stages) {
        for (RDDInfo rdd : CollectionConverters.asJava(st.rddInfos())) {
          assertFalse(rdd.callSite().contains("GpuCollectives.java"), rdd.callSite());
        }
      }
      assertTrue(CollectionConverters.asJava(barrier.rddInfos()).stream()
          .anyMatch(r -> r.isBarrier() && r.callSite().equals("barrierMapPartitions at " + site)));
      // A call site the user set stays in force, and ours is not left behind.
      sc.setCallSite("my training step");
      JavaRDD<double[]> mine = GpuCollectives.barrierMapPartitions(sc.parallelize(List.of(1.0), 1),
          (comm, rows) -> List.of(new double[] {1}).iterator());
      assertEquals("my training step", mine.rdd().creationSite().shortForm());
      sc.clearCallSite();
      assertEquals(null, sc.getLocalProperty(UserCallSite.SHORT_FORM));
      assertEquals(null, sc.getLocalProperty(UserCallSite.LONG_FORM));
    }
  }
}
