package dev.gpucoll.core.config;

import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * One typed configuration key: its name, documentation, default and parser. Entries are declared
 * once in {@link GpuCollConf}; docs/configs.md is generated from them.
 */
public final class ConfigEntry<T> {
  private final String key;
  private final String doc;
  private final String defaultText;
  private final Function<String, T> parser;
  private final List<String> allowed;
  private final boolean internal;

  ConfigEntry(String key, String doc, String defaultText, Function<String, T> parser, List<String> allowed) {
    this(key, doc, defaultText, parser, allowed, false);
  }

  ConfigEntry(String key, String doc, String defaultText, Function<String, T> parser, List<String> allowed,
      boolean internal) {
    this.key = key;
    this.internal = internal;
    this.doc = doc;
    this.defaultText = defaultText;
    this.parser = parser;
    this.allowed = List.copyOf(allowed);
    parser.apply(defaultText); // a bad default is a programming error: fail at class load
  }

  public String key() {
    return key;
  }

  public String doc() {
    return doc;
  }

  public String defaultText() {
    return defaultText;
  }

  /**
   * True for the {@code spark.gpucoll.internal.*} keys: knobs of the project's own GPU checks, not
   * for users and not in docs/configs.md.
   */
  public boolean internal() {
    return internal;
  }

  /** Allowed values for enumerated keys; empty for free-form keys. */
  public List<String> allowed() {
    return allowed;
  }

  /**
   * The value in {@code settings}, or the default.
   *
   * @throws InvalidSettingException for a value that does not parse, naming the key, the value and
   *     what is allowed
   */
  public T get(Map<String, String> settings) {
    String raw = settings.getOrDefault(key, defaultText).trim();
    try {
      return parser.apply(raw);
    } catch (RuntimeException e) {
      throw new InvalidSettingException(key, raw, e.getMessage());
    }
  }
}
