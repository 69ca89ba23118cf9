package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.ReduceOp;
import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;

/** JUCX is optional: without its jar, groups inside a host form, and across hosts the relay names the jar. */
class WithoutJucxTest {
  @Test
  void anAbsentJucxClassIsNamedWithTheJarToAdd() {
    String why = UcxProbe.unavailableReason("org.openucx.jucx.NoSuchClass").orElseThrow();
    assertTrue(why.contains("org.openucx:jucx") && why.contains("not on the class path"), why);
  }

  @Test
  void withoutTheJarAGroupFormsInsideAHostAndRelaysAcrossHosts() throws Exception {
    List<URL> urls = new ArrayList<>();
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    for (String e : cp.split(File.pathSeparator)) {
      if (!e.isEmpty() && !e.contains("jucx")) {
        urls.add(new File(e).toURI().toURL());
      }
    }
    ClassLoader previous = Thread.currentThread().getContextClassLoader();
    try (URLClassLoader noJucx = new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
      assertThrows(ClassNotFoundException.class, () -> noJucx.loadClass(UcxProbe.JUCX_CLASS));
      Thread.currentThread().setContextClassLoader(noJucx);
      @SuppressWarnings("unchecked")
      Callable<List<String>> job = (Callable<List<String>>) noJucx.loadClass(Job.class.getName())
          .getDeclaredConstructor().newInstance();
      List<String> seen = job.call();
      assertEquals("host-shm 3", seen.get(0));
      assertEquals("host-relay 3", seen.get(1));
      assertTrue(seen.get(2).contains("org.openucx:jucx"), seen.get(2));
    } finally {
      Thread.currentThread().setContextClassLoader(previous);
    }
  }

  /** Runs in a class loader without JUCX: a one-host group, a group across hosts, one that asks for UCX. */
  public static final class Job implements Callable<List<String>> {
    @Override
    public List<String> call() {
      List<String> out = new ArrayList<>();
      for (boolean acrossHosts : new boolean[] {false, true}) {
        out.add(Ranks.values(Ranks.run(2, Ranks.conf(), r -> acrossHosts ? "node-" + r : "localhost", comm -> {
          int[] v = {comm.rank() + 1};
          comm.allReduce(v, ReduceOp.SUM);
          return comm.backend() + " " + v[0];
        })).get(0));
      }
      Throwable e = Ranks.run(2, Ranks.conf("host.crossHost", "ucx"), r -> "node-" + r, comm -> null).get(0).error();
      out.add(e instanceof CollectiveException ? e.getMessage() : String.valueOf(e));
      return out;
    }
  }
}
