package dev.gpucoll.cuda.eligibility;

/** What a call's buffers are, as far as NCCL windows go. */
public enum BufferRegistration {
  /** Not known when predicting for the group, before any call (a prediction then says what it needs). */
  UNKNOWN,
  /** Neither buffer lies in a symmetric window. */
  NONE,
  /** Only the receive buffer is registered (enough from NCCL 2.29 on). */
  RECV_ONLY,
  /** Both buffers lie in symmetric windows. */
  SEND_AND_RECV,
  /** A buffer is plain cudaMalloc memory: it cannot be registered at all. */
  NOT_VMM
}
