package dev.gpucoll.cuda.nccl;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** The real NCCL 2.28.3 logs under src/test/resources/nccl-logs (see the README there). */
final class RecordedLogs {
  private RecordedLogs() {}

  static List<String> lines(String machine, String caseName) {
    String path = "/nccl-logs/" + machine + "/" + caseName + ".log";
    try (InputStream in = RecordedLogs.class.getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalArgumentException("no recorded log " + path);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static NcclLogSummary parse(String machine, String caseName) {
    return NcclLogParser.parse(lines(machine, caseName));
  }
}
