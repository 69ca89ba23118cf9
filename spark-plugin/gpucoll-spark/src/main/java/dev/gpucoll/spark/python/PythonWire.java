package dev.gpucoll.spark.python;

/**
 * The wire between a Python task and its executor's plugin: generated from python-wire.txt by
 * scripts/PythonWireGen.java, as python/gpucoll/_wire.py is (edit the table, not this file).
 */
final class PythonWire {
  private PythonWire() {}
  static final String HELLO = "GPUCOLL/1";

  // ---- the mailbox's layout (bytes), native byte order ----
  /** "GPUCOLL1", little-endian. */
  static final long MAGIC = 0x314C4C4F43555047L;
  static final int HEADER_BYTES = 8192;
  static final int OFF_MAGIC = 0;
  static final int OFF_REQ_SEQ = 64;
  static final int OFF_RESP_SEQ = 128;
  /** the session sleeps on the socket: the Python side sends a wake byte. */
  static final int OFF_SLEEPING = 192;
  /** i32 op, i32 comm, i32 records, i32 flags, i64 a0, a1, a2. */
  static final int OFF_REQUEST = 256;
  /** i32 status, i32 message bytes, i64 r0, r1, r2, r3. */
  static final int OFF_RESPONSE = 512;
  static final int OFF_MESSAGE = 1024;
  /** every record list and buffer in the data area starts at a multiple of it. */
  static final int BUFFER_ALIGN = 64;
  /** twelve i64: collective, type, op, flags, count, root, send off, send bytes, recv off, recv bytes, counts off, 0. */
  static final int RECORD_BYTES = 96;

  // ---- requests (the request's op) ----
  static final int OP_FORM = 1;
  static final int OP_CALLS = 2;
  static final int OP_SPLIT = 3;
  static final int OP_EXPLAIN = 4;
  static final int OP_REPORT = 5;
  static final int OP_CLOSE = 6;
  static final int OP_GROW = 7;
  /** the Python process's GPU joins: its facts and workspace handle gathered, the group's routes made. */
  static final int OP_DEVICE_FORM = 8;
  /** the route of one call on the Python process's GPU: a0 = collective | type << 8 | op << 16, a1 = count. */
  static final int OP_DEVICE_ROUTE = 9;
  /** a kernel error record the Python process found: the GPU communicator's exception for it. */
  static final int OP_DEVICE_ERROR = 10;
  /** the kernels' layout (key=value lines in the data area, r0 bytes), before the workspace is made. */
  static final int OP_DEVICE_ABI = 11;

  // ---- flags ----
  /** a call record's: the caller refused its arguments (its reason in place of its send buffer). */
  static final int FLAG_REFUSED = 1;
  /** an OP_CALLS request's: its records run as one group. */
  static final int FLAG_GROUP = 1;

  /** MAXLOC / MINLOC's collective code in a call record, after the collectives. */
  static final int LOC_ALL_REDUCE = 7;
}
