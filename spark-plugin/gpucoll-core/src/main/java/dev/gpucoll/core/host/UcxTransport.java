package dev.gpucoll.core.host;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.UcxUtils;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * {@link PeerTransport} over UCX through JUCX: one UCP context per process (tag matching), one
 * worker per communicator (a worker serves one thread at a time, as a communicator does), an
 * endpoint per peer from the worker address the peer published, with peer error handling so a
 * dead peer fails the requests towards it instead of leaving them pending. UCX itself is the
 * operating system's ({@code libucp.so.0}, Debian: libucx0); JUCX's jar carries only its JNI part.
 */
final class UcxTransport implements PeerTransport {
  private static final Logger LOG = Logger.getLogger(UcxTransport.class.getName());
  private static final Object LOCK = new Object();
  private static UcpContext context;
  private static String unavailable;
  private static boolean probed;

  private final UcpWorker worker;
  private final UcpEndpoint[] endpoints;
  private final String[] failures;
  private final byte[] address;
  /** This worker's address as a key of {@link #OPEN_IN_PROCESS}. */
  private final ByteBuffer self;
  /** The peers' worker addresses (an open worker of this process closes differently, see {@link #close}). */
  private final ByteBuffer[] peerAddresses;
  private boolean closed;

  /** The addresses of this process's open workers. */
  private static final java.util.Set<ByteBuffer> OPEN_IN_PROCESS = java.util.concurrent.ConcurrentHashMap.newKeySet();

  private UcxTransport(int size, String host) {
    this.worker = context(netDevicesFor(host)).newWorker(new UcpWorkerParams());
    this.endpoints = new UcpEndpoint[size];
    this.failures = new String[size];
    ByteBuffer a = worker.getAddress();
    this.address = new byte[a.remaining()];
    a.get(address);
    this.peerAddresses = new ByteBuffer[size];
    this.self = ByteBuffer.wrap(address);
    OPEN_IN_PROCESS.add(self);
  }

  /**
   * A new worker for a communicator of {@code size} ranks whose rank runs at {@code host} (the
   * address its peers reach it by, or null); fails when UCX cannot be used here.
   */
  static UcxTransport open(int size, String host) {
    unavailableReason().ifPresent(why -> {
      throw new IllegalStateException(why);
    });
    return new UcxTransport(size, host);
  }

  /**
   * Empty when this process can use UCX (JUCX loads, the system's libucp links and a context
   * forms); otherwise why not. Probed once per process.
   */
  static Optional<String> unavailableReason() {
    synchronized (LOCK) {
      if (!probed) {
        probed = true;
        try {
          context = quietContext(null);
          UcpWorker probe = context.newWorker(new UcpWorkerParams());
          try {
            // A tag receive is what a JUCX built for a newer UCX gets wrong first (JUCX 1.18.1 on
            // UCX 1.13.1: "invalid memory type parameter"), so the probe posts and cancels one.
            ByteBuffer b = ByteBuffer.allocateDirect(8);
            UcpRequest r = probe.recvTaggedNonBlocking(b, 0, -1L, null);
            probe.cancelRequest(r);
            for (int i = 0; i < 1000 && !r.isCompleted(); i++) {
              probe.progress();
            }
          } finally {
            probe.close();
          }
        } catch (Throwable t) { // NoClassDefFoundError, UnsatisfiedLinkError, UcxException
          unavailable = "UCX cannot be used in this process (" + t
              + "); install UCX on every host (Debian/Ubuntu: apt-get install libucx0, 1.13.1 or later)"
              + " and keep org.openucx:jucx on the class path (the gpucoll-dist jar carries it)";
          context = null;
          LOG.info("gpucoll: " + unavailable);
        }
      }
      return Optional.ofNullable(unavailable);
    }
  }

  /** UCX's log level for this process unless UCX_LOG_LEVEL is set: warnings off, errors shown. */
  static final String QUIET_LOG_LEVEL = "error";

  /**
   * A context for tag messages, on {@code netDevices} (UCX's NET_DEVICES; null: UCX's choice), with UCX's log level at {@link #QUIET_LOG_LEVEL}, unless the
   * environment sets UCX_LOG_LEVEL (it stands then). JUCX 1.15 asks UCX for its 1.15 API, so UCX
   * 1.13.1 warns "UCP API version is incompatible" at every context it makes; every call we make
   * exists in 1.13.1 (the probe tries the one that changed). UCX takes LOG_LEVEL as its process-wide
   * level, as it would from the environment. A UCX that refuses the key gets the context without it.
   */
  static UcpContext quietContext(String netDevices) {
    if (System.getenv("UCX_LOG_LEVEL") == null) {
      try {
        return new UcpContext(params(netDevices).setConfig("LOG_LEVEL", QUIET_LOG_LEVEL));
      } catch (RuntimeException e) { // UcxException: this UCX has no such key
        LOG.fine("gpucoll: UCX refused LOG_LEVEL (" + e + "); its warnings stay on");
      }
    }
    return new UcpContext(params(netDevices));
  }

  private static UcpParams params(String netDevices) {
    UcpParams p = new UcpParams().requestTagFeature();
    for (Map.Entry<String, String> e : settingsFor(netDevices, System.getenv()).entrySet()) {
      p.setConfig(e.getKey(), e.getValue());
    }
    return p;
  }

  /**
   * UCX settings of a context on {@code netDevices} ({@link #netDevicesFor}; null: UCX's choice):
   * NET_DEVICES, and where those are one network interface and no RDMA port (TCP alone) eager
   * messages at every size (RNDV_THRESH=inf): over TCP, UCX's rendezvous adds a round trip per
   * message and copies the data anyway, and the eager protocol took allReduce 1 MiB between two
   * hosts from 1.58x to 1.25x Open MPI's time in one run (docs/bench-host.md). With an RDMA port the
   * rendezvous is what moves large messages without copies, so it stays. A UCX_RNDV_THRESH in the
   * environment stands.
   */
  static Map<String, String> settingsFor(String netDevices, Map<String, String> env) {
    if (netDevices == null) {
      return Map.of();
    }
    boolean tcpOnly = !netDevices.contains(":");
    if (tcpOnly && env.get("UCX_RNDV_THRESH") == null) {
      return Map.of("NET_DEVICES", netDevices, "RNDV_THRESH", "inf");
    }
    return Map.of("NET_DEVICES", netDevices);
  }

  /** Contexts limited to the network devices named by their key (see {@link #netDevicesFor}). */
  private static final Map<String, UcpContext> LIMITED = new HashMap<>();

  /**
   * The context for workers on {@code netDevices} (UCX's NET_DEVICES; null: UCX's own choice, the
   * probed context). A context UCX refuses to limit falls back to the probed one, with the reason logged.
   */
  private static UcpContext context(String netDevices) {
    synchronized (LOCK) {
      if (netDevices == null || context == null) {
        return context;
      }
      return LIMITED.computeIfAbsent(netDevices, devices -> {
        try {
          UcpContext limited = quietContext(devices);
          LOG.info("gpucoll: UCX workers of this process use the network devices " + devices
              + " (the interface of the executor's address, and RDMA ports), not every interface");
          return limited;
        } catch (RuntimeException e) { // UcxException
          LOG.warning("gpucoll: UCX refused NET_DEVICES=" + devices + " (" + e + "); its workers use every"
              + " interface UCX picks");
          return context;
        }
      });
    }
  }

  /**
   * What UCX's listeners may bind to for a rank running at {@code host}: the network interface that
   * holds that address (its peers reach it there) and every RDMA port (UCX names them
   * {@code device:port}; not TCP listeners), so a group across hosts listens on no other interface
   * (by default UCX opens a TCP listener on every one, loopback included). Null, for UCX's own choice,
   * when UCX_NET_DEVICES is set (the user's choice stands) or the address is on no local interface.
   */
  static String netDevicesFor(String host) {
    if (host == null || System.getenv("UCX_NET_DEVICES") != null) {
      return null;
    }
    try {
      NetworkInterface nic = NetworkInterface.getByInetAddress(InetAddress.getByName(host));
      if (nic == null) {
        return null;
      }
      while (nic.getParent() != null) { // an alias (eth0:1): UCX names the device
        nic = nic.getParent();
      }
      List<String> devices = new ArrayList<>(List.of(nic.getName()));
      File[] rdma = new File("/sys/class/infiniband").listFiles();
      if (rdma != null) {
        Arrays.sort(rdma);
        for (File device : rdma) {
          String[] ports = new File(device, "ports").list();
          if (ports != null) {
            Arrays.sort(ports);
            for (String port : ports) {
              devices.add(device.getName() + ":" + port);
            }
          }
        }
      }
      return String.join(",", devices);
    } catch (IOException | SecurityException e) { // unknown host, no interface list
      return null;
    }
  }

  @Override
  public byte[] address() {
    return address.clone();
  }

  /**
   * Creates the endpoint to {@code peer}. UCX 1.13 now and then answers "Destination is
   * unreachable" for a reachable worker (seen between workers of one process), so it tries three
   * times; after that the peer counts as failed and every request towards it fails.
   */
  @Override
  public void connect(int peer, byte[] peerAddress) {
    ByteBuffer a = ByteBuffer.allocateDirect(peerAddress.length).put(peerAddress).flip();
    peerAddresses[peer] = ByteBuffer.wrap(peerAddress.clone());
    RuntimeException last = null;
    for (int attempt = 0; attempt < 3 && endpoints[peer] == null; attempt++) {
      try {
        endpoints[peer] = worker.newEndpoint(new UcpEndpointParams().setUcpAddress(a.duplicate())
            .setPeerErrorHandlingMode().setErrorHandler((ep, status, message) -> {
              if (failures[peer] == null) {
                failures[peer] = "UCX reports the connection broken (status " + status + ": " + message + ")";
              }
            }));
      } catch (RuntimeException e) { // UcxException
        last = e;
        java.util.concurrent.locks.LockSupport.parkNanos(50_000_000L);
      }
    }
    if (endpoints[peer] == null) {
      failures[peer] = "cannot create a UCX endpoint to it: " + (last == null ? "?" : last.getMessage());
    }
  }

  /** A request and the error its callback saw. */
  private static final class Pending extends UcxCallback implements Request {
    UcpRequest request;
    final ByteBuffer pinned; // kept reachable while UCX reads or writes it
    volatile String error;
    volatile boolean finished;
    volatile long received;

    Pending(ByteBuffer pinned) {
      this.pinned = pinned;
    }

    @Override
    public void onSuccess(UcpRequest r) {
      received = r.getRecvSize();
      finished = true;
    }

    @Override
    public void onError(int status, String message) {
      error = "UCX status " + status + ": " + message;
      finished = true;
    }

    @Override
    public boolean done() {
      return finished; // set by the callback, after the received size
    }

    @Override
    public String error() {
      return error;
    }

    @Override
    public long received() {
      // JUCX sets the size on the request around its callback; whichever is later holds it.
      return Math.max(received, request == null ? 0 : request.getRecvSize());
    }
  }

  @Override
  public Request send(int peer, long tag, ByteBuffer data) {
    Pending p = new Pending(data);
    UcpEndpoint ep = endpoints[peer];
    if (ep == null) {
      p.error = failures[peer] != null ? failures[peer] : "no endpoint to rank " + peer;
      p.finished = true;
      return p;
    }
    try {
      p.request = ep.sendTaggedNonBlocking(UcxUtils.getAddress(data) + data.position(), data.remaining(), tag, p);
    } catch (RuntimeException e) { // UcxException: e.g. the peer's endpoint is already gone
      p.error = (failures[peer] != null ? failures[peer] + "; " : "") + e.getMessage();
      p.finished = true;
    }
    return p;
  }

  @Override
  public Request recv(int peer, long tag, ByteBuffer into) {
    Pending p = new Pending(into);
    try {
      p.request = worker.recvTaggedNonBlocking(UcxUtils.getAddress(into) + into.position(), into.remaining(), tag,
          -1L, p);
    } catch (RuntimeException e) {
      p.error = e.getMessage();
      p.finished = true;
    }
    return p;
  }

  @Override
  public boolean progress() {
    try {
      return worker.progress() > 0;
    } catch (Exception e) {
      throw new IllegalStateException("UCX progress failed: " + e, e);
    }
  }

  @Override
  public void cancel(Request r) {
    Pending p = (Pending) r;
    if (p.request != null && !p.done()) {
      worker.cancelRequest(p.request);
    }
  }

  @Override
  public String peerFailure(int peer) {
    return failures[peer];
  }

  @Override
  public String describe() {
    String tls = System.getenv("UCX_TLS");
    return "UCX worker (JUCX, the system's libucp" + (tls == null ? "" : ", UCX_TLS=" + tls) + ")";
  }

  /**
   * Closes every endpoint, then the worker. Endpoints close forced (a peer in another process may be
   * gone, and UCX 1.13.1 asserts when it destroys a worker whose endpoint to a dead peer was flushed:
   * requests left on it), except those to a worker of this process that is still open: a forced
   * close resets the connection under that worker while it may still send, and UCX 1.13.1's TCP
   * transport then now and then aborts the process (an assertion on a closed endpoint), so those
   * close with a flush, an orderly disconnect. Each close is progressed for at most a second; a
   * worker destroyed with a close still in flight aborts the process in UCX 1.13, so a worker
   * whose closes did not finish goes to {@link Reaper}, which progresses it until they do (the
   * peer answers) and destroys it then.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    OPEN_IN_PROCESS.remove(self);
    long deadline = System.nanoTime() + 1_000_000_000L;
    UcpRequest[] closing = new UcpRequest[endpoints.length];
    for (int p = 0; p < endpoints.length; p++) {
      if (endpoints[p] != null) {
        try {
          boolean orderly = failures[p] == null && peerAddresses[p] != null && OPEN_IN_PROCESS.contains(peerAddresses[p]);
          closing[p] = orderly ? endpoints[p].closeNonBlockingFlush() : endpoints[p].closeNonBlockingForce();
        } catch (RuntimeException e) {
          closing[p] = null;
        }
      }
    }
    while (System.nanoTime() < deadline && unfinished(closing) > 0) {
      progress();
    }
    Arrays.fill(endpoints, null);
    if (unfinished(closing) > 0) {
      Reaper.adopt(worker, closing);
      return;
    }
    worker.close();
  }

  /**
   * Workers whose endpoint closes outlived {@link #close}'s second (a peer that does not progress
   * its own worker for a while): one daemon thread, running while it holds any, progresses each
   * (its owner no longer touches it) every 50 ms and destroys it once its closes finished; after 10
   * minutes it is left as it is.
   */
  private static final class Reaper {
    private static final long GIVE_UP_NANOS = 10L * 60 * 1_000_000_000L;

    private record Adopted(UcpWorker worker, UcpRequest[] closing, long since) {}

    private static final java.util.List<Adopted> PENDING = new java.util.ArrayList<>();
    private static Thread thread;

    static synchronized int count() {
      return PENDING.size();
    }

    static synchronized void adopt(UcpWorker worker, UcpRequest[] closing) {
      PENDING.add(new Adopted(worker, closing, System.nanoTime()));
      if (thread == null) {
        thread = new Thread(Reaper::run, "gpucoll-ucx-reaper");
        thread.setDaemon(true);
        thread.start();
      }
    }

    private static void run() {
      while (true) {
        synchronized (Reaper.class) {
          PENDING.removeIf(Reaper::finished);
          if (PENDING.isEmpty()) {
            thread = null;
            return;
          }
        }
        java.util.concurrent.locks.LockSupport.parkNanos(50_000_000L);
      }
    }

    /** Progresses {@code a} once; destroys it and answers true when its closes finished. */
    private static boolean finished(Adopted a) {
      try {
        a.worker().progress();
      } catch (Exception e) {
        LOG.warning("gpucoll: progress of a closing UCX worker failed (" + e + "); it stays open");
        return true;
      }
      if (unfinished(a.closing()) == 0) {
        a.worker().close();
        return true;
      }
      if (System.nanoTime() - a.since() > GIVE_UP_NANOS) {
        LOG.warning("gpucoll: a UCX worker's endpoint closes did not finish in 10 minutes; it stays open");
        return true;
      }
      return false;
    }
  }

  /** Workers the reaper still holds (tests). */
  static int closingWorkers() {
    return Reaper.count();
  }

  private static int unfinished(UcpRequest[] requests) {
    int n = 0;
    for (UcpRequest r : requests) {
      if (r != null && !r.isCompleted()) {
        n++;
      }
    }
    return n;
  }
}
