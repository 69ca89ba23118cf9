package dev.gpucoll.linalg;

/** The indices [from, to), 0-based; empty when {@code from == to}. */
public record IndexRange(int from, int to) {
  public IndexRange {
    if (from < 0 || to < from) {
      throw new IllegalArgumentException("[" + from + ", " + to + ") is not a range of indices");
    }
  }

  public int size() {
    return to - from;
  }

  public boolean isEmpty() {
    return from == to;
  }

  public boolean contains(int i) {
    return i >= from && i < to;
  }

  @Override
  public String toString() {
    return "[" + from + ", " + to + ")";
  }
}
