package dev.gpucoll.cuda.check;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Ranks as processes of this JVM's class path on this machine: each runs {@code main} with its own
 * arguments and environment (e.g. NCCL_HOSTID, so that NCCL takes it for a host of its own) and
 * reports through lines that start with "RESULT ". Bounded: a process still running at the deadline
 * is killed and named.
 */
final class ProcessRanks {
  private ProcessRanks() {}

  /**
   * Starts {@code ranks} processes and waits for all of them (at most {@code limit} in all): every
   * RESULT line (without its prefix, in rank order), and a "FAIL ..." line for each process that
   * did not finish or exited non-zero, then its other output lines, each as "FAIL rank R output: ...".
   */
  static List<String> run(Class<?> main, int ranks, Duration limit, IntFunction<List<String>> args,
      IntFunction<Map<String, String>> env) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    List<Process> procs = new ArrayList<>();
    List<List<String>> outputs = new ArrayList<>();
    List<Thread> readers = new ArrayList<>();
    try {
      for (int r = 0; r < ranks; r++) {
        List<String> command = new ArrayList<>();
        command.add(java);
        // The parent's JVM options (heap, JavaCPP's cache folder), not its debugging agents.
        ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
            .filter(a -> !a.startsWith("-agentlib") && !a.startsWith("-javaagent")).forEach(command::add);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(args.apply(r));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().putAll(env.apply(r));
        Process p = pb.start();
        procs.add(p);
        List<String> lines = new ArrayList<>();
        outputs.add(lines);
        Thread reader = new Thread(() -> {
          try (BufferedReader br = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String l;
            while ((l = br.readLine()) != null) {
              synchronized (lines) {
                lines.add(l);
              }
            }
          } catch (Exception ignored) {
            // the process ended
          }
        });
        reader.setDaemon(true);
        reader.start();
        readers.add(reader);
      }
      long deadline = System.nanoTime() + limit.toNanos();
      List<String> out = new ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        Process p = procs.get(r);
        boolean finished = p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (!finished) {
          p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        readers.get(r).join(5000);
        boolean failed = !finished || p.exitValue() != 0;
        if (failed) {
          out.add("FAIL process rank " + r + (finished ? " exited with " + p.exitValue()
              : " did not finish within " + limit.toSeconds() + " s"));
        }
        synchronized (outputs.get(r)) {
          for (String l : outputs.get(r)) {
            if (l.startsWith("RESULT ")) {
              out.add(l.substring(7));
            } else if (failed) {
              out.add("FAIL rank " + r + " output: " + l);
            }
          }
        }
      }
      return out;
    } finally {
      procs.forEach(Process::destroyForcibly);
    }
  }
}
