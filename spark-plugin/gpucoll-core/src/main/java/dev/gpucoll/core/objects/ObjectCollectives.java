package dev.gpucoll.core.objects;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Collectives on objects of any size, like PyTorch's {@code all_gather_object}: each object is
 * serialized, the ranks exchange lengths first (one 8-byte element each), then the bytes, sized
 * per rank. Built on the communicator's own collectives with host buffers.
 *
 * <p>A rank whose object cannot be serialized does not leave the others waiting: it sends a
 * negative length instead, and then every rank raises an {@link ObjectSerializationException}
 * naming the failed ranks and the classes of their objects. The communicator stays usable.
 *
 * <p>Like the communicator, an instance is driven by one thread at a time, and every rank must
 * make the same calls in the same order.
 */
public final class ObjectCollectives {
  /** Longest failure text sent to the other ranks (a serializer's message can be long). */
  static final int MAX_ERROR_BYTES = 2000;

  private final Communicator comm;
  private final ObjectSerializer serializer;

  /** Object collectives with Java serialization. */
  public ObjectCollectives(Communicator comm) {
    this(comm, new JavaObjectSerializer());
  }

  public ObjectCollectives(Communicator comm, ObjectSerializer serializer) {
    if (comm == null) {
      throw new IllegalArgumentException("communicator is null");
    }
    if (serializer == null) {
      throw new IllegalArgumentException("serializer is null");
    }
    this.comm = comm;
    this.serializer = serializer;
  }

  public Communicator communicator() {
    return comm;
  }

  public ObjectSerializer serializer() {
    return serializer;
  }

  /**
   * Every rank's object, in rank order (copies made by the serializer, this rank's too). The
   * bytes travel in one allGather padded to the longest object, as PyTorch does, because every
   * backend takes host buffers for allGather.
   */
  public <T> List<T> allGatherObjects(T value) {
    String op = "allGatherObjects";
    Encoded mine = encode(value);
    long[] lengths = agreeOnLengths(op, Collective.ALL_GATHER, mine);
    int size = comm.size();
    long longest = Arrays.stream(lengths).max().orElse(0);
    byte[] all = new byte[arrayLength(op, Collective.ALL_GATHER, longest * size, lengths)];
    byte[] padded = Arrays.copyOf(mine.bytes(), (int) longest);
    comm.allGather(CommBuffer.of(padded), CommBuffer.of(all), longest, DataType.UINT8);
    List<T> out = new ArrayList<>(size);
    for (int r = 0; r < size; r++) {
      out.add(decode(op, Collective.ALL_GATHER, all, (int) (r * longest), (int) lengths[r], r));
    }
    return out;
  }

  /**
   * The object of {@code root} on every rank. Root gets its own {@code value} back; the others get
   * a deserialized copy (their {@code value} is ignored and may be null).
   */
  public <T> T broadcastObject(T value, int root) {
    String op = "broadcastObject";
    checkRoot(op, Collective.BROADCAST, root);
    boolean isRoot = comm.rank() == root;
    Encoded mine = isRoot ? encode(value) : null;
    long[] length = {isRoot ? mine.status() : 0};
    comm.broadcast(CommBuffer.of(length), CommBuffer.of(length), 1, DataType.INT64, root);
    if (length[0] < 0) {
      byte[] error = isRoot ? mine.error() : new byte[(int) (-length[0] - 1)];
      comm.broadcast(CommBuffer.of(error), CommBuffer.of(error), error.length, DataType.UINT8, root);
      throw failure(op, Collective.BROADCAST, List.of(root),
          List.of(new String(error, StandardCharsets.UTF_8)));
    }
    byte[] bytes = isRoot ? mine.bytes() : new byte[Math.toIntExact(length[0])];
    comm.broadcast(CommBuffer.of(bytes), CommBuffer.of(bytes), bytes.length, DataType.UINT8, root);
    return isRoot ? value : decode(op, Collective.BROADCAST, bytes, 0, bytes.length, root);
  }

  /**
   * Every rank's object, in rank order, on {@code root}; empty on the other ranks. Only root
   * receives object bytes (one allToAllv); the lengths go to every rank so that a failure is
   * known everywhere. A GPU group across hosts runs allToAllv on NCCL, which takes device buffers
   * only: there this fails on every rank saying so, and {@link #allGatherObjects} works.
   */
  public <T> Optional<List<T>> gatherObjects(T value, int root) {
    String op = "gatherObjects";
    checkRoot(op, Collective.ALL_TO_ALLV, root);
    Encoded mine = encode(value);
    long[] lengths = agreeOnLengths(op, Collective.ALL_GATHER, mine);
    int size = comm.size();
    boolean isRoot = comm.rank() == root;
    long[] sendCounts = new long[size];
    sendCounts[root] = mine.bytes().length;
    long[] recvCounts = isRoot ? lengths : new long[size];
    long[] recvDispls = displacements(lengths);
    byte[] all = new byte[isRoot ? arrayLength(op, Collective.ALL_TO_ALLV,
        recvDispls[size - 1] + lengths[size - 1], lengths) : 0];
    if (!isRoot) {
      recvDispls = new long[size];
    }
    comm.allToAllv(CommBuffer.of(mine.bytes()), sendCounts, new long[size], CommBuffer.of(all), recvCounts,
        recvDispls, DataType.UINT8);
    if (!isRoot) {
      return Optional.empty();
    }
    List<T> out = new ArrayList<>(size);
    for (int r = 0; r < size; r++) {
      out.add(decode(op, Collective.ALL_TO_ALLV, all, (int) recvDispls[r], (int) lengths[r], r));
    }
    return Optional.of(out);
  }

  /**
   * This rank's serialized object, or the text of why it could not be serialized. The lengths
   * exchange carries a failure as a negative length, -1 - (bytes of the text).
   */
  private record Encoded(byte[] bytes, byte[] error) {
    long status() {
      return error == null ? bytes.length : -1L - error.length;
    }
  }

  private Encoded encode(Object value) {
    try {
      byte[] bytes = serializer.serialize(value);
      if (bytes == null) {
        throw new IllegalStateException("serializer " + serializer.name() + " returned null");
      }
      return new Encoded(bytes, null);
    } catch (Exception | StackOverflowError e) {
      String cls = value == null ? "null" : value.getClass().getName();
      String text = "rank " + comm.rank() + " cannot serialize its object of class " + cls
          + " with " + serializer.name() + ": " + e;
      byte[] error = text.getBytes(StandardCharsets.UTF_8);
      return new Encoded(new byte[0], error.length <= MAX_ERROR_BYTES ? error
          : Arrays.copyOf(error, MAX_ERROR_BYTES));
    }
  }

  /** Every rank's length; if any rank failed, every rank throws naming all who failed. */
  private long[] agreeOnLengths(String op, Collective collective, Encoded mine) {
    int size = comm.size();
    long[] lengths = new long[size];
    long[] status = {mine.status()};
    comm.allGather(CommBuffer.of(status), CommBuffer.of(lengths), 1, DataType.INT64);
    int longestError = 0;
    List<Integer> failedRanks = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      if (lengths[r] < 0) {
        failedRanks.add(r);
        longestError = (int) Math.max(longestError, -lengths[r] - 1);
      }
    }
    if (failedRanks.isEmpty()) {
      return lengths;
    }
    byte[] myError = Arrays.copyOf(mine.error() == null ? new byte[0] : mine.error(), longestError);
    byte[] errors = new byte[longestError * size];
    comm.allGather(CommBuffer.of(myError), CommBuffer.of(errors), longestError, DataType.UINT8);
    List<String> texts = new ArrayList<>();
    for (int r : failedRanks) {
      texts.add(new String(errors, r * longestError, (int) (-lengths[r] - 1), StandardCharsets.UTF_8));
    }
    throw failure(op, collective, failedRanks, texts);
  }

  private ObjectSerializationException failure(String op, Collective collective,
      List<Integer> failedRanks, List<String> texts) {
    return new ObjectSerializationException(comm.rank(), collective,
        op + " failed: " + String.join("; ", texts), failedRanks);
  }

  /** Where each rank's bytes start in the gathered array. */
  private static long[] displacements(long[] lengths) {
    long[] displs = new long[lengths.length];
    for (int r = 1; r < lengths.length; r++) {
      displs[r] = displs[r - 1] + lengths[r - 1];
    }
    return displs;
  }

  /** {@code total} as an array length; too large fails on every rank alike (all know the lengths). */
  private int arrayLength(String op, Collective collective, long total, long[] lengths) {
    if (total > Integer.MAX_VALUE - 8) {
      throw new CollectiveException(comm.rank(), collective, op + ": the objects need " + total
          + " bytes, more than one Java array holds (lengths " + Arrays.toString(lengths) + ")");
    }
    return (int) total;
  }

  private void checkRoot(String op, Collective collective, int root) {
    if (root < 0 || root >= comm.size()) {
      throw new CollectiveException(comm.rank(), collective, op + ": root " + root
          + " is not a rank of this group of " + comm.size());
    }
  }

  @SuppressWarnings("unchecked")
  private <T> T decode(String op, Collective collective, byte[] bytes, int offset, int length, int from) {
    try {
      byte[] slice = offset == 0 && length == bytes.length ? bytes
          : Arrays.copyOfRange(bytes, offset, offset + length);
      return (T) serializer.deserialize(slice);
    } catch (Exception | StackOverflowError e) {
      throw new CollectiveException(comm.rank(), collective, op + ": cannot deserialize the object"
          + " of rank " + from + " (" + length + " bytes) with " + serializer.name() + ": " + e, e);
    }
  }
}
