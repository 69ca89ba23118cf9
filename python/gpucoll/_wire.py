"""The wire between a Python task and its executor's plugin (``PythonChannel``, ``PythonMailbox`` and
``PythonSession`` on the JVM side). Generated from spark-plugin/gpucoll-spark/python-wire.txt and the
Java API's enums by its scripts/PythonWireGen.java: edit the table, not this file."""

HELLO = "GPUCOLL/1"

# ---- the mailbox's layout (bytes), native byte order ----
# "GPUCOLL1", little-endian
MAGIC = 0x314C4C4F43555047
HEADER_BYTES = 8192
OFF_MAGIC = 0
OFF_REQ_SEQ = 64
OFF_RESP_SEQ = 128
# the session sleeps on the socket: the Python side sends a wake byte
OFF_SLEEPING = 192
# i32 op, i32 comm, i32 records, i32 flags, i64 a0, a1, a2
OFF_REQUEST = 256
# i32 status, i32 message bytes, i64 r0, r1, r2, r3
OFF_RESPONSE = 512
OFF_MESSAGE = 1024
# every record list and buffer in the data area starts at a multiple of it
BUFFER_ALIGN = 64
# twelve i64: collective, type, op, flags, count, root, send off, send bytes, recv off, recv bytes, counts off, 0
RECORD_BYTES = 96

# ---- requests (the request's op) ----
OP_FORM = 1
OP_CALLS = 2
OP_SPLIT = 3
OP_EXPLAIN = 4
OP_REPORT = 5
OP_CLOSE = 6
OP_GROW = 7
# the Python process's GPU joins: its facts and workspace handle gathered, the group's routes made
OP_DEVICE_FORM = 8
# the route of one call on the Python process's GPU: a0 = collective | type << 8 | op << 16, a1 = count
OP_DEVICE_ROUTE = 9
# a kernel error record the Python process found: the GPU communicator's exception for it
OP_DEVICE_ERROR = 10
# the kernels' layout (key=value lines in the data area, r0 bytes), before the workspace is made
OP_DEVICE_ABI = 11

# ---- flags ----
# a call record's: the caller refused its arguments (its reason in place of its send buffer)
FLAG_REFUSED = 1
# an OP_CALLS request's: its records run as one group
FLAG_GROUP = 1

# ---- the Java API's enums in ordinal order (the codes on the wire) ----
COLLECTIVES = ("ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL", "ALL_TO_ALLV", "BROADCAST", "BARRIER")
COLLECTIVE_API_NAMES = ("allReduce", "allGather", "reduceScatter", "allToAll", "allToAllv", "broadcast", "barrier")
ALL_REDUCE = 0
ALL_GATHER = 1
REDUCE_SCATTER = 2
ALL_TO_ALL = 3
ALL_TO_ALLV = 4
BROADCAST = 5
BARRIER = 6
# MAXLOC / MINLOC's collective code in a call record, after the collectives
LOC_ALL_REDUCE = 7
DATA_TYPES = ("FLOAT32", "FLOAT64", "FLOAT16", "BFLOAT16", "INT32", "INT64", "INT8", "UINT8")
REDUCE_OPS = ("SUM", "PROD", "MIN", "MAX", "AVG")
PAIR_TYPES = ("FLOAT32_INT32", "FLOAT32_INT64", "FLOAT64_INT32", "FLOAT64_INT64", "INT32_INT32", "INT32_INT64", "INT64_INT32", "INT64_INT64")
LOC_OPS = ("MAXLOC", "MINLOC")
