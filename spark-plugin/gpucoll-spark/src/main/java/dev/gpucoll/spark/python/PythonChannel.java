package dev.gpucoll.spark.python;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.TaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The door of this executor's Python tasks: a Unix socket at {@code <dir>/exec-<pid>.sock}, where
 * {@code <dir>} is {@code $GPUCOLL_CHANNEL_DIR} or {@code /tmp/gpucoll-<uid>}, a directory only the
 * executor's user may enter (0700, checked to be its own, not a link). A Python worker finds it by
 * walking up its parent processes to the executor JVM (the worker is its child, or its daemon's),
 * says which running task it serves, and gets that task's {@link PythonSession}. A peer of another
 * user is refused even where the directory's mode would let it in.
 *
 * <p>Wire (one line each way, then the mailbox): {@code GPUCOLL/1 <taskAttemptId>\n} answered by
 * {@code OK <mailbox path> <data bytes>\n} or {@code ERR <kind> <message>\n}.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class PythonChannel implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PythonChannel.class);
  static final String DIR_ENV = "GPUCOLL_CHANNEL_DIR";
  static final String HELLO = PythonWire.HELLO;

  private final Path dir;
  private final Path socketPath;
  private final Path shmDir;
  private final ServerSocketChannel server;
  private final String user;
  private final Map<Long, TaskContext> tasks = new ConcurrentHashMap<>();
  private final Set<SocketChannel> open = ConcurrentHashMap.newKeySet();
  private final AtomicInteger sessions = new AtomicInteger();
  private final Thread acceptor;

  private PythonChannel(Path dir, Path shmDir) throws IOException {
    this.dir = dir;
    this.shmDir = shmDir;
    this.user = Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS).getName();
    // Bound by its absolute path: the Python side looks for a listener under that name in /proc/net/unix.
    this.socketPath = dir.toAbsolutePath().resolve("exec-" + ProcessHandle.current().pid() + ".sock");
    Files.deleteIfExists(socketPath); // a dead JVM's socket of the same pid
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socketPath));
    Files.setPosixFilePermissions(socketPath, PosixFilePermissions.fromString("rw-------"));
    acceptor = new Thread(this::acceptLoop, "gpucoll-python-channel");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** Opens the channel of this executor, or says why it cannot (the Python tasks then get that reason). */
  public static PythonChannel open(Path shmDir) throws IOException {
    String fromEnv = System.getenv(DIR_ENV);
    if (fromEnv != null && !fromEnv.isBlank()) {
      return openIn(Path.of(fromEnv), shmDir);
    }
    return openIn(usableDefaultDir(defaultDir()), shmDir);
  }

  /**
   * {@code dir} when it is (or can be made) this user's private directory; else, when another user
   * took the name first, a fresh private directory beside it, {@code <dir>-<random>}, made with
   * mkdir's O_EXCL semantics, so nothing planted there can block or redirect the channel. The
   * Python side finds the socket in either (by the executor's pid, checked on the connection).
   */
  static Path usableDefaultDir(Path dir) throws IOException {
    try {
      ownPrivateDir(dir);
      return dir;
    } catch (IOException taken) {
      Path fresh = Files.createTempDirectory(dir.getParent(), dir.getFileName() + "-",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      LOG.warn("gpucoll: the Python tasks' channel directory {} is not usable ({}); this executor's channel is in {}"
          + " instead", dir, taken.getMessage(), fresh);
      return fresh;
    }
  }

  /** The channel in {@code dir} (made or checked owner-only), its mailboxes in {@code shmDir}. */
  static PythonChannel openIn(Path dir, Path shmDir) throws IOException {
    ownPrivateDir(dir);
    return new PythonChannel(dir, shmDir);
  }

  static Path defaultDir() throws IOException {
    Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    return Path.of("/tmp", "gpucoll-" + uid);
  }

  /** Creates {@code dir} 0700, or checks that the one there is a directory of this user, 0700, not a link. */
  static void ownPrivateDir(Path dir) throws IOException {
    Set<PosixFilePermission> owner = PosixFilePermissions.fromString("rwx------");
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      try {
        Files.createDirectories(dir.getParent());
        Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(owner));
      } catch (java.nio.file.FileAlreadyExistsException raced) {
        // another executor of this user made it: checked below
      }
    }
    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException(dir + " is not a directory (or is a link)");
    }
    Object uid = Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    Object mine = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    if (!uid.equals(mine)) {
      throw new IOException(dir + " belongs to uid " + uid + ", not to this executor's uid " + mine);
    }
    Files.setPosixFilePermissions(dir, owner);
  }

  Path socketPath() {
    return socketPath;
  }

  /** From the executor plugin's onTaskStart, on the task's thread: the tasks a Python worker may serve. */
  public void taskStarted(TaskContext task) {
    if (task instanceof BarrierTaskContext) {
      tasks.put(task.taskAttemptId(), task);
    }
  }

  public void taskEnded(TaskContext task) {
    if (task != null) {
      tasks.remove(task.taskAttemptId());
    }
  }

  private void acceptLoop() {
    while (server.isOpen()) {
      SocketChannel s;
      try {
        s = server.accept();
      } catch (ClosedChannelException e) {
        return;
      } catch (IOException e) {
        LOG.warn("gpucoll: the Python channel stopped accepting: {}", e.toString());
        return;
      }
      open.add(s);
      Thread t = new Thread(() -> hello(s), "gpucoll-python-hello");
      t.setDaemon(true);
      t.start();
    }
  }

  /** How long a connection may take to say hello: one that never does holds no thread past it. */
  static final long HELLO_TIMEOUT_MILLIS = 10_000;
  private static final java.util.concurrent.ScheduledExecutorService HELLO_DEADLINES =
      java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "gpucoll-python-hello-deadlines");
        t.setDaemon(true);
        return t;
      });

  /** Reads the hello, checks the peer, starts the task's session (on this thread) or answers why not. */
  private void hello(SocketChannel s) {
    java.util.concurrent.ScheduledFuture<?> deadline = HELLO_DEADLINES.schedule(() -> {
      LOG.debug("gpucoll: a Python connection said no hello within {} ms; closed", HELLO_TIMEOUT_MILLIS);
      close(s); // the blocked read below ends with an exception
    }, HELLO_TIMEOUT_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
    try {
      UnixDomainPrincipal peer = s.getOption(ExtendedSocketOptions.SO_PEERCRED);
      if (!peer.user().getName().equals(user)) {
        reply(s, "ERR IllegalStateException a process of user " + peer.user().getName()
            + " may not use the executor of user " + user);
        close(s);
        return;
      }
      String line = readLine(s);
      deadline.cancel(false);
      String[] parts = line == null ? new String[0] : line.split(" ");
      if (parts.length != 2 || !parts[0].equals(HELLO)) {
        reply(s, "ERR IllegalStateException this executor speaks " + HELLO + "; the Python package said '"
            + (line == null ? "" : line) + "': use the gpucoll package of the same version as the jar");
        close(s);
        return;
      }
      long taskId = Long.parseLong(parts[1]);
      TaskContext task = tasks.get(taskId);
      if (task == null) {
        reply(s, "ERR IllegalStateException task " + taskId + " is not a barrier task running on this executor;"
            + " gpucoll.communicator() works inside rdd.barrier().mapPartitions(...) or"
            + " df.mapInPandas(..., barrier=True)");
        close(s);
        return;
      }
      String name = "gpucoll-py-" + ProcessHandle.current().pid() + "-" + sessions.incrementAndGet();
      PythonSession session = new PythonSession(s, task, shmDir, name, () -> open.remove(s));
      PythonMailbox box;
      try {
        box = session.open();
      } catch (IOException | RuntimeException e) {
        reply(s, "ERR IllegalStateException cannot create the task's shared memory in " + shmDir + ": " + e
            + " (spark.gpucoll.host.shmDir)");
        close(s);
        return;
      }
      reply(s, "OK " + box.path + " " + box.dataBytes);
      Thread.currentThread().setName("gpucoll-python-task-" + taskId);
      session.run();
    } catch (IOException | RuntimeException e) {
      LOG.debug("gpucoll: a Python connection failed before its session", e);
      close(s);
    }
  }

  private static String readLine(SocketChannel s) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(256);
    while (b.hasRemaining()) {
      int before = b.position();
      if (s.read(b) < 0) {
        return null;
      }
      for (int i = before; i < b.position(); i++) {
        if (b.get(i) == '\n') {
          return new String(b.array(), 0, i, StandardCharsets.UTF_8);
        }
      }
    }
    return null;
  }

  private static void reply(SocketChannel s, String line) throws IOException {
    ByteBuffer b = ByteBuffer.wrap((line.replace('\n', ' ') + "\n").getBytes(StandardCharsets.UTF_8));
    while (b.hasRemaining()) {
      s.write(b);
    }
  }

  private void close(SocketChannel s) {
    open.remove(s);
    try {
      s.close();
    } catch (IOException e) {
      // already gone
    }
  }

  @Override
  public void close() {
    try {
      server.close();
    } catch (IOException e) {
      // the socket file goes below either way
    }
    for (SocketChannel s : open) {
      close(s);
    }
    try {
      Files.deleteIfExists(socketPath);
    } catch (IOException e) {
      LOG.debug("gpucoll: could not remove {}", socketPath, e);
    }
  }
}
