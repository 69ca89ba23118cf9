package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ReduceOp;
import java.io.File;
import java.lang.reflect.Field;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;

/**
 * JUCX is optional: without its jar, groups inside a host form, and across hosts the relay names the
 * jar. UCX is asked for only by a group that spans hosts.
 */
class WithoutJucxTest {
  @Test
  void anAbsentJucxClassIsNamedWithTheJarToAdd() {
    String why = UcxProbe.unavailableReason("org.openucx.jucx.NoSuchClass").orElseThrow();
    assertTrue(why.contains("org.openucx:jucx") && why.contains("not on the class path"), why);
  }

  @Test
  void withoutTheJarAGroupFormsInsideAHostAndRelaysAcrossHosts() throws Exception {
    try (URLClassLoader noJucx = loader(false)) {
      assertThrows(ClassNotFoundException.class, () -> noJucx.loadClass(UcxProbe.JUCX_CLASS));
      List<String> seen = callIn(noJucx, Job.class);
      assertEquals("host-shm 3", seen.get(0));
      assertEquals("host-relay 3", seen.get(1));
      assertTrue(seen.get(2).contains("org.openucx:jucx"), seen.get(2));
    }
  }

  /**
   * Probing UCX makes a UCP context, which prints UCX's own errors when /dev/shm is nearly full: a
   * one-host group used to probe it at its formation. In a class loader of its own (a process's
   * first probe), a one-host group leaves UCX unprobed; a group across hosts probes it.
   */
  @Test
  void onlyAGroupAcrossHostsProbesUcx() throws Exception {
    try (URLClassLoader fresh = loader(true)) {
      List<String> seen = callIn(fresh, ProbeJob.class);
      assertEquals("host-shm, UCX probed: false", seen.get(0));
      assertTrue(seen.get(1).endsWith(", UCX probed: true"), seen.get(1));
    }
  }

  /** A class loader of the test class path, with or without the JUCX jar, loading nothing from this one. */
  private static URLClassLoader loader(boolean withJucx) throws Exception {
    List<URL> urls = new ArrayList<>();
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    for (String e : cp.split(File.pathSeparator)) {
      if (!e.isEmpty() && (withJucx || !e.contains("jucx"))) {
        urls.add(new File(e).toURI().toURL());
      }
    }
    return new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
  }

  /** Runs {@code job} as loaded by {@code loader}. */
  private static List<String> callIn(ClassLoader loader, Class<?> job) throws Exception {
    ClassLoader previous = Thread.currentThread().getContextClassLoader();
    try {
      Thread.currentThread().setContextClassLoader(loader);
      @SuppressWarnings("unchecked")
      Callable<List<String>> c = (Callable<List<String>>) loader.loadClass(job.getName()).getDeclaredConstructor()
          .newInstance();
      return c.call();
    } finally {
      Thread.currentThread().setContextClassLoader(previous);
    }
  }

  /** Runs in a fresh class loader: a one-host group, then one across hosts, each with whether UCX was probed. */
  public static final class ProbeJob implements Callable<List<String>> {
    @Override
    public List<String> call() throws Exception {
      Field probed = UcxTransport.class.getDeclaredField("probed");
      probed.setAccessible(true);
      List<String> out = new ArrayList<>();
      for (boolean acrossHosts : new boolean[] {false, true}) {
        String backend = Ranks.values(Ranks.run(2, Ranks.conf(), r -> acrossHosts ? "node-" + r : "localhost",
            Communicator::backend)).get(0);
        out.add(backend + ", UCX probed: " + probed.getBoolean(null)); // the ranks' threads have ended
      }
      return out;
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
