package dev.gpucoll.core.host;

import java.nio.ByteBuffer;

/**
 * Tagged point-to-point messages between the ranks of one group across hosts, as
 * {@link HostUcxCommunicator} needs them: non-blocking sends and receives matched by (source,
 * tag), completed by {@link #progress()} on the calling thread. {@link UcxTransport} is the real
 * one; tests use an in-process fake. Buffers are direct and stay untouched until their request is
 * done.
 */
interface PeerTransport extends AutoCloseable {

  /** One send or receive in flight. */
  interface Request {
    boolean done();

    /** Why it failed (peer gone, truncated, cancelled), or null. Meaningful once {@link #done()}. */
    String error();

    /** Bytes received, once a receive is done. */
    long received();
  }

  /** This rank's address, published to the peers through the rendezvous. */
  byte[] address();

  /** Makes {@code peer} reachable at {@code address} (its {@link #address()}). */
  void connect(int peer, byte[] address);

  /** Sends bytes [position, limit) of {@code data} to {@code peer} under {@code tag}. */
  Request send(int peer, long tag, ByteBuffer data);

  /** Receives the message {@code peer} sent under {@code tag} into [position, limit) of {@code into}. */
  Request recv(int peer, long tag, ByteBuffer into);

  /** Drives the transport; true when something completed. */
  boolean progress();

  /** Cancels a request that is not done; it is done (with an error) after later progress. */
  void cancel(Request r);

  /** Why {@code peer} can no longer be reached (its process died, the connection broke), or null. */
  String peerFailure(int peer);

  /** A name for reports, e.g. the UCX version and transports. */
  String describe();

  @Override
  void close();
}
