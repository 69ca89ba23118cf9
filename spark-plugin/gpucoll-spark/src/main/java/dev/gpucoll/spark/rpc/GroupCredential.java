package dev.gpucoll.spark.rpc;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.concurrent.atomic.AtomicLong;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The secret that proves a rendezvous message comes from a task the driver gave it to, whatever
 * spark.authenticate says: every message to the driver's {@link RendezvousService} carries an
 * HMAC-SHA256 with it (sealed by {@link RpcMessages#seal}), and each of the driver's answers one
 * bound to its request.
 *
 * <p>It reaches the tasks only inside their serialized task, as the local property {@link
 * #PROPERTY} of the job: never over the plugin's endpoint, which any process that knows the
 * driver's address can reach when Spark's authentication is off. Spark's executors can learn
 * the SparkConf from the driver, so the conf cannot carry it either. Each credential is derived
 * from a master secret that never leaves the driver, so the driver verifies any credential id
 * without keeping a list, and no credential expires while a job still runs.
 *
 * <p>Scope: one credential per job of our API, and one per application for stages built on
 * {@code rdd.barrier()} directly ({@link #PROPERTY}, set on the thread that creates the
 * SparkContext; threads it starts later inherit it). A job's credential is set on the submitting
 * thread when the job's partitions are computed, before Spark copies the thread's local properties
 * into the job, as {@link #JOB_PROPERTY}, naming the checked RDD of that job
 * ({@code dev.gpucoll.spark.barrier.BackendCheckedRDD}, which picks a task's credential): it stays
 * on the thread afterwards (nothing of ours runs there once Spark has copied it), so a task takes it
 * only where its own partition was computed through that RDD; any other task, a later plain {@code
 * rdd.barrier()} job's from the same thread among them, takes the application's. A credential per stage attempt
 * cannot reach the tasks: Spark numbers the stages only after it has copied the job's
 * properties. The MAC covers the group id (stage and attempt) and round of each message, so a
 * message of one group does not count in another.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class GroupCredential {
  /**
   * The job's local property: outside spark.gpucoll.* (it is no setting), and naming a secret so
   * that Spark's event log redacts it (with the stand-in the driver plugin puts in the SparkConf).
   */
  public static final String PROPERTY = "gpucoll.internal.groupSecret";
  /** A job of our API's credential: {@code <id of its checked RDD>/} then {@link #property()}. */
  public static final String JOB_PROPERTY = "gpucoll.internal.jobGroupSecret";
  static final int MAC_BYTES = 32;
  static final int MAX_ID_CHARS = 64;
  private static final String HMAC = "HmacSHA256";
  private static final int KEY_BYTES = 32;
  /** Mac.getInstance costs more than a small message's MAC: one instance per thread, keyed per use. */
  private static final ThreadLocal<Mac> MACS = ThreadLocal.withInitial(() -> {
    try {
      return Mac.getInstance(HMAC);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available in this JVM", e); // required of every JVM
    }
  });

  private final String id;
  private final SecretKeySpec key;

  GroupCredential(String id, byte[] key) {
    if (!validId(id)) {
      throw new IllegalArgumentException("gpucoll group credential id must have 1 to "
          + MAX_ID_CHARS + " characters and no ':'");
    }
    this.id = id;
    this.key = new SecretKeySpec(key.clone(), HMAC);
  }

  /** 1 to {@link #MAX_ID_CHARS} characters without ':' (the property's separator, and the driver's round keys'). */
  static boolean validId(String id) {
    return id != null && !id.isEmpty() && id.length() <= MAX_ID_CHARS && id.indexOf(':') < 0;
  }

  /** Names the credential (not secret): the driver derives its key from it. */
  public String id() {
    return id;
  }

  /** The local property's value: the id and the key. */
  public String property() {
    return id + ":" + Base64.getEncoder().encodeToString(key.getEncoded());
  }

  /** {@link #JOB_PROPERTY}'s value for the job whose partitions {@code rddId} computes. */
  public String jobProperty(int rddId) {
    return rddId + "/" + property();
  }

  /** Reads {@link #property()}; null for null or anything malformed. */
  public static GroupCredential parse(String property) {
    if (property == null) {
      return null;
    }
    int colon = property.indexOf(':');
    if (colon <= 0) {
      return null;
    }
    try {
      byte[] key = Base64.getDecoder().decode(property.substring(colon + 1));
      String id = property.substring(0, colon);
      return key.length == KEY_BYTES && validId(id) ? new GroupCredential(id, key) : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** HMAC-SHA256 over the parts, in order. */
  byte[] mac(byte[]... parts) {
    Mac mac = MACS.get();
    try {
      mac.init(key);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("an HmacSHA256 key was refused", e); // any non-empty key serves
    }
    for (byte[] p : parts) {
      mac.update(p);
    }
    return mac.doFinal();
  }

  /** Whether {@code mac} is the MAC of the parts (compared in constant time). */
  boolean verifies(byte[] mac, byte[]... parts) {
    return mac != null && mac.length == MAC_BYTES && MessageDigest.isEqual(mac, mac(parts));
  }

  /** The driver's side: derives every credential from its master secret. */
  public static final class Issuer {
    public static final String APPLICATION_ID = "app";
    private final GroupCredential master;
    private final AtomicLong jobs = new AtomicLong();

    public Issuer() {
      byte[] secret = new byte[KEY_BYTES];
      new SecureRandom().nextBytes(secret);
      this.master = new GroupCredential("master", secret);
    }

    /** The credential of stages built on {@code rdd.barrier()} directly. */
    public GroupCredential application() {
      return forId(APPLICATION_ID);
    }

    /** A fresh credential for one job of our API. */
    public GroupCredential nextJob() {
      return forId("job" + jobs.incrementAndGet());
    }

    /** The credential named {@code id} (any id: only the driver can derive its key); null if malformed. */
    public GroupCredential forId(String id) {
      if (!validId(id)) {
        return null;
      }
      return new GroupCredential(id, master.mac(("gpucoll group credential " + id).getBytes(StandardCharsets.UTF_8)));
    }
  }
}
