package dev.gpucoll.spark.python;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.TaskContext$;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a Python task's session ends on the executor: the socket closed under a waiting session
 * (what the channel does at spark.stop() and executor shutdown) is a normal end, logged at DEBUG
 * at most; a socket that fails is a failure, logged as a WARN with its cause.
 */
class PythonSessionEndTest {
  @TempDir Path shm;
  private final List<LogEvent> events = new CopyOnWriteArrayList<>();
  private final Logger logger = (Logger) LogManager.getLogger(PythonSession.class);
  private final AbstractAppender capture = new AbstractAppender("session-end", null, null, true, Property.EMPTY_ARRAY) {
    @Override
    public void append(LogEvent event) {
      events.add(event.toImmutable());
    }
  };

  @BeforeEach
  void listen() {
    capture.start();
    logger.addAppender(capture);
  }

  @AfterEach
  void stopListening() {
    logger.removeAppender(capture);
    capture.stop();
  }

  @Test
  void theSocketClosedUnderAWaitingSessionEndsItQuietly() throws Exception {
    Path path = shm.resolve("channel.sock");
    try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      server.bind(UnixDomainSocketAddress.of(path));
      try (SocketChannel python = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
        SocketChannel executorSide = server.accept();
        CountDownLatch ended = new CountDownLatch(1);
        Thread session = run(executorSide, ended);
        Thread.sleep(200); // past its 5 ms of spinning and yielding: the session sleeps in a read of the socket
        executorSide.close(); // as PythonChannel.close() at spark.stop()
        assertTrue(ended.await(10, TimeUnit.SECONDS), "the session did not end when its socket closed");
        session.join(10_000);
      }
    }
    List<LogEvent> loud = events.stream().filter(e -> e.getLevel().isMoreSpecificThan(Level.INFO)).toList();
    assertTrue(loud.isEmpty(), "a normal end logged above DEBUG: "
        + loud.stream().map(e -> e.getLevel() + " " + e.getMessage().getFormattedMessage()).toList());
  }

  @Test
  void aSocketThatFailsIsAWarnWithItsCause() throws Exception {
    CountDownLatch ended = new CountDownLatch(1);
    Thread session = run(new FailingChannel(), ended);
    assertTrue(ended.await(10, TimeUnit.SECONDS), "the session did not end when its socket failed");
    session.join(10_000);
    List<LogEvent> warns = events.stream().filter(e -> e.getLevel() == Level.WARN).toList();
    assertEquals(1, warns.size(), events.toString());
    assertTrue(warns.get(0).getThrown() instanceof IOException
        && warns.get(0).getThrown().getMessage().equals(FailingChannel.WHY), String.valueOf(warns.get(0).getThrown()));
  }

  private Thread run(SocketChannel socket, CountDownLatch ended) throws IOException {
    PythonSession s = new PythonSession(socket, TaskContext$.MODULE$.empty(), shm, "end-test-" + System.nanoTime(), ended::countDown);
    s.open();
    Thread t = new Thread(s, "python-session-end-test");
    t.start();
    return t;
  }

  /** A socket whose reads fail as a broken connection's do. */
  private static final class FailingChannel extends SocketChannel {
    static final String WHY = "Connection reset by peer";

    FailingChannel() {
      super(SelectorProvider.provider());
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
      throw new IOException(WHY);
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
      throw new IOException(WHY);
    }

    @Override
    public SocketChannel bind(SocketAddress local) {
      throw new UnsupportedOperationException();
    }

    @Override
    public <T> SocketChannel setOption(SocketOption<T> name, T value) {
      throw new UnsupportedOperationException();
    }

    @Override
    public <T> T getOption(SocketOption<T> name) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Set<SocketOption<?>> supportedOptions() {
      return Set.of();
    }

    @Override
    public SocketChannel shutdownInput() {
      return this;
    }

    @Override
    public SocketChannel shutdownOutput() {
      return this;
    }

    @Override
    public java.net.Socket socket() {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean isConnected() {
      return true;
    }

    @Override
    public boolean isConnectionPending() {
      return false;
    }

    @Override
    public boolean connect(SocketAddress remote) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean finishConnect() {
      return true;
    }

    @Override
    public SocketAddress getRemoteAddress() {
      return null;
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
      throw new IOException(WHY);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
      throw new IOException(WHY);
    }

    @Override
    public SocketAddress getLocalAddress() {
      return null;
    }

    @Override
    protected void implCloseSelectableChannel() {}

    @Override
    protected void implConfigureBlocking(boolean block) {}
  }
}
