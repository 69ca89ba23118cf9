package dev.gpucoll.core.config;

/**
 * A {@code spark.gpucoll.*} value that does not parse. The message says it all (key, value, what is
 * allowed), so it carries no cause: the parser's own exception would only repeat it.
 */
public final class InvalidSettingException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final String key;
  private final String value;

  InvalidSettingException(String key, String value, String reason) {
    super("gpucoll: invalid value '" + value + "' for " + key + ": " + reason);
    this.key = key;
    this.value = value;
  }

  /** The setting's key, e.g. {@code spark.gpucoll.timeout}. */
  public String key() {
    return key;
  }

  /** The value as given (trimmed). */
  public String value() {
    return value;
  }
}
