"""The wire between a Python task and its executor's plugin (``PythonChannel``, ``PythonMailbox`` and
``PythonSession`` on the JVM side). ``PythonWireTest`` reads this file and fails when a name, an
order or an offset differs from the Java side, so both stay one protocol."""

HELLO = "GPUCOLL/1"

# Mailbox layout (bytes), native byte order.
MAGIC = 0x314C4C4F43555047  # "GPUCOLL1"
HEADER_BYTES = 8192
OFF_MAGIC = 0
OFF_REQ_SEQ = 64
OFF_RESP_SEQ = 128
OFF_SLEEPING = 192
OFF_REQUEST = 256   # i32 op, i32 comm, i32 records, i32 flags, i64 a0, a1, a2
OFF_RESPONSE = 512  # i32 status, i32 message bytes, i64 r0, r1, r2
OFF_MESSAGE = 1024
BUFFER_ALIGN = 64   # every record list and buffer in the data area starts at a multiple of it
RECORD_BYTES = 96   # twelve i64: collective, type, op, flags, count, root, send off, send bytes,
                    # recv off, recv bytes, allToAllv counts off, unused

OP_FORM = 1
OP_CALLS = 2
OP_SPLIT = 3
OP_EXPLAIN = 4
OP_REPORT = 5
OP_CLOSE = 6
OP_GROW = 7
OP_DEVICE_FORM = 8
OP_DEVICE_ROUTE = 9
OP_DEVICE_ERROR = 10
OP_DEVICE_ABI = 11
FLAG_REFUSED = 1
FLAG_GROUP = 1

# The Java enums, in ordinal order (the codes on the wire).
COLLECTIVES = ("ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL", "ALL_TO_ALLV", "BROADCAST", "BARRIER")
LOC_ALL_REDUCE = len(COLLECTIVES)
COLLECTIVE_API_NAMES = ("allReduce", "allGather", "reduceScatter", "allToAll", "allToAllv", "broadcast", "barrier")
DATA_TYPES = ("FLOAT32", "FLOAT64", "FLOAT16", "BFLOAT16", "INT32", "INT64", "INT8", "UINT8")
REDUCE_OPS = ("SUM", "PROD", "MIN", "MAX", "AVG")
PAIR_TYPES = ("FLOAT32_INT32", "FLOAT32_INT64", "FLOAT64_INT32", "FLOAT64_INT64",
              "INT32_INT32", "INT32_INT64", "INT64_INT32", "INT64_INT64")
LOC_OPS = ("MAXLOC", "MINLOC")
