package dev.gpucoll.core.config;

import java.nio.file.Files;
import java.nio.file.Path;

/** Writes docs/configs.md from {@link GpuCollConf}: {@code ConfigDocs <path>}. */
public final class ConfigDocs {
  private ConfigDocs() {}

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args.length > 0 ? args[0] : "docs/configs.md");
    Files.writeString(out, GpuCollConf.markdown());
    System.out.println("wrote " + out.toAbsolutePath());
  }
}
