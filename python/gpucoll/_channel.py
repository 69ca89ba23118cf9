"""The Python task's side of the executor's local channel: finding the executor's socket, the hello,
and the shared-memory mailbox over which every call travels (``_wire`` has the layout)."""

import mmap
import os
import platform
import select
import socket
import struct
import threading
import time

import numpy as np

from . import _wire as w
from .errors import CommunicatorStateError, from_java

_X86 = platform.machine() in ("x86_64", "AMD64", "i686", "i386")
_REQUEST = struct.Struct("@iiii")
_RECORD = struct.Struct("@12q")
_RESPONSE = struct.Struct("@iiqq")
# One call in place: its record, then its buffer at the first aligned offset after it.
_IN_PLACE_OFF = -(-w.RECORD_BYTES // w.BUFFER_ALIGN) * w.BUFFER_ALIGN
_FENCE_LOCK = threading.Lock()

# Spark's setting and message for a job without the plugin (``MissingPlugin`` on the JVM side says the same).
PLUGIN_CLASS = "dev.gpucoll.spark.GpuCollectivesPlugin"


def missing_plugin(where):
    return ("gpucoll: GpuCollectivesPlugin is not enabled " + where + ": set spark.plugins=" + PLUGIN_CLASS
            + " (with the gpucoll jar on --jars). A Python task reaches its group only through the plugin")


def _fence():
    # A locked instruction is a full fence on x86 and the lock's acquire/release orders memory
    # elsewhere: Python has no fence of its own.
    _FENCE_LOCK.acquire()
    _FENCE_LOCK.release()


def channel_dir():
    d = os.environ.get("GPUCOLL_CHANNEL_DIR")
    return d if d else "/tmp/gpucoll-%d" % os.getuid()


def _parent(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return 0
    return int(stat[stat.rindex(b")") + 2:].split()[1])


def _bound_sockets():
    """The set of paths Unix sockets of this network namespace are bound to (``/proc/net/unix``), or
    None where that cannot be read."""
    try:
        with open("/proc/net/unix") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return None
    # The path is the last field and may hold spaces.
    return {parts[7] for parts in (line.split(None, 7) for line in lines) if len(parts) >= 8}


def find_socket():
    """The socket of the executor JVM this process descends from (the worker is its child, or its
    Python daemon's), or None. ``$GPUCOLL_CHANNEL`` names one directly. Where another user took the
    channel directory's name first, the executor made ``<directory>-<random>`` instead: found among
    the bound sockets by the executor's pid (``Channel`` checks the pid on the connection). A file
    nobody listens on (an executor killed before it could remove it, whose pid an ancestor of this
    worker now has) is passed over."""
    named = os.environ.get("GPUCOLL_CHANNEL")
    if named:
        return named
    d = channel_dir()
    bound = _bound_sockets()
    listened = (lambda p: os.path.abspath(p) in bound) if bound is not None else os.path.exists
    ancestors = []
    pid = os.getppid()
    for _ in range(8):
        if pid <= 1:
            break
        path = os.path.join(d, "exec-%d.sock" % pid)
        if listened(path):
            return path
        ancestors.append(pid)
        pid = _parent(pid)
    if "GPUCOLL_CHANNEL_DIR" not in os.environ and bound:
        for pid in ancestors:
            for path in bound:
                parent, name = os.path.split(path)
                if name == "exec-%d.sock" % pid and parent.startswith(d + "-") and _own_dir(parent):
                    return path
    return None


def _own_dir(path):
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.getuid() and os.path.isdir(path) and not os.path.islink(path)


def channel_dir_problem():
    """Why the channel directory cannot be this user's (another user made it, or it is a link), or None."""
    d = channel_dir()
    try:
        st = os.lstat(d)
    except OSError:
        return None
    if st.st_uid != os.getuid():
        return "%s belongs to uid %d, not to this user (uid %d)" % (d, st.st_uid, os.getuid())
    if not os.path.isdir(d) or os.path.islink(d):
        return "%s is not a directory (or is a link)" % d
    return None


def _socket_pid(path):
    """The executor pid a channel socket's name says, or None."""
    name = os.path.basename(path)
    if name.startswith("exec-") and name.endswith(".sock") and name[5:-5].isdigit():
        return int(name[5:-5])
    return None


class Channel:
    """One task's session with its executor: the socket (hello, wake bytes, liveness) and the mailbox."""

    def __init__(self, path, task_attempt_id):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
            # The executor itself listens there: a socket someone else bound under its name is refused.
            peer_pid = struct.unpack("3i", self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                struct.calcsize("3i")))[0]
            expected = _socket_pid(path)
            if expected is not None and peer_pid != expected:
                raise OSError("the socket is held by process %d, not by the executor %d" % (peer_pid, expected))
            self.sock.sendall(("%s %d\n" % (w.HELLO, task_attempt_id)).encode())
            line = self._read_line()
        except OSError as e:
            self.sock.close()
            raise CommunicatorStateError("gpucoll: cannot reach the executor's plugin at %s: %s" % (path, e))
        if not line.startswith("OK "):
            self.sock.close()
            if line.startswith("ERR "):
                kind, _, message = line[4:].partition(" ")
                raise from_java(kind, message)
            raise CommunicatorStateError("gpucoll: the executor's plugin answered '%s'" % line)
        _, box, data_bytes = line.split(" ")
        self.spin_iterations = 0  # until the group forms: the executor then says whether waits spin
        self._map(box, int(data_bytes))
        self.seq = 0
        self.closed = False

    def _read_line(self):
        buf = b""
        while not buf.endswith(b"\n"):
            part = self.sock.recv(4096)
            if not part:
                return buf.decode() or "the connection closed"
            buf += part
        return buf[:-1].decode()

    def _map(self, path, data_bytes):
        fd = os.open(path, os.O_RDWR)
        try:
            self.mm = mmap.mmap(fd, w.HEADER_BYTES + data_bytes)
        finally:
            os.close(fd)
        self.data_bytes = data_bytes
        self.h64 = np.frombuffer(self.mm, np.int64, w.HEADER_BYTES // 8)
        self.h32 = np.frombuffer(self.mm, np.int32, w.HEADER_BYTES // 4)
        self.data = np.frombuffer(self.mm, np.uint8, data_bytes, w.HEADER_BYTES)
        if int(self.h64[w.OFF_MAGIC // 8]) != w.MAGIC:
            raise CommunicatorStateError("gpucoll: the executor's mailbox %s is not of this package's version" % path)

    def ensure(self, data_bytes):
        """Grows the mailbox to hold ``data_bytes`` of records and buffers."""
        if data_bytes <= self.data_bytes:
            return
        size = max(data_bytes, 2 * self.data_bytes)
        self.request(w.OP_GROW, 0, a=(size,))
        path = self.message()
        grown = int(self.h64[(w.OFF_RESPONSE + 8) // 8])
        # The old mapping goes with its last view (a caller's result may still be one).
        self._map(path, grown)
        self.seq = 0

    def request(self, op, comm, records=0, flags=0, a=()):
        """Sends one request and waits for its answer; raises the executor's error as a Python exception."""
        if self.closed:
            raise CommunicatorStateError("gpucoll: the communicator's session with its executor is closed")
        _REQUEST.pack_into(self.mm, w.OFF_REQUEST, op, comm, records, flags)
        if a:
            struct.pack_into("@%dq" % len(a), self.mm, w.OFF_REQUEST + 16, *a)
        seq = self.seq + 1
        self.seq = seq
        self.h64[w.OFF_REQ_SEQ // 8] = seq
        _fence()  # the store of reqSeq before the load of the sleeping word (the session's Dekker pair)
        if self.h32[w.OFF_SLEEPING // 4]:
            try:
                self.sock.send(b"w")
            except OSError:
                pass  # the wait below finds the session gone
        self._await(seq)
        if not _X86:
            _fence()
        status, n, r0, r1 = _RESPONSE.unpack_from(self.mm, w.OFF_RESPONSE)
        if status != 0:
            kind, _, message = bytes(self.mm[w.OFF_MESSAGE:w.OFF_MESSAGE + n]).decode().partition("\n")
            raise from_java(kind, message, None if r0 < 0 else int(r0),
                            w.COLLECTIVE_API_NAMES[r1] if 0 <= r1 < len(w.COLLECTIVE_API_NAMES) else None)

    def in_place(self, coll, code, op, count, buf, comm):
        """One collective in place on ``buf`` (its bytes): the fast path of a single call."""
        n = buf.nbytes
        if _IN_PLACE_OFF + n > self.data_bytes:
            self.ensure(_IN_PLACE_OFF + n)
        _RECORD.pack_into(self.mm, w.HEADER_BYTES, coll, code, op, 0, count, 0, _IN_PLACE_OFF, n, _IN_PLACE_OFF, n, -1, 0)
        data = self.data
        data[_IN_PLACE_OFF:_IN_PLACE_OFF + n] = buf
        try:
            self.request(w.OP_CALLS, comm, 1, 0)
        except Exception as e:
            e.sent = True
            raise
        buf[:] = self.data[_IN_PLACE_OFF:_IN_PLACE_OFF + n]

    def _await(self, seq):
        h = self.h64
        i = w.OFF_RESP_SEQ // 8
        if h[i] == seq:
            return
        for _ in range(self.spin_iterations):
            if h[i] == seq:
                return
        start = time.monotonic()
        pause = 0.0002
        while h[i] != seq:
            if time.monotonic() - start < 0.005:
                os.sched_yield()
                continue
            # Past the short wait the call is a long one (a rendezvous, a slow peer): sleep on the
            # socket, which the executor only ever closes, so a session that died is seen at once.
            ready, _, _ = select.select([self.sock], [], [], pause)
            pause = min(2 * pause, 0.005)
            if ready and not self.sock.recv(1):
                self.closed = True
                raise CommunicatorStateError("gpucoll: the executor ended this task's session (the task was"
                                             " killed, or the executor stopped) during the call")

    def spins(self, yes):
        """Spin before yielding only where each waiter of this host has a core (the executor decides)."""
        self.spin_iterations = 200 if yes else 0

    # ---- the device member's requests (gpu/_member.py) ----

    def _data_text(self, n):
        return bytes(self.data[:n]).decode()

    def device_abi(self):
        """The kernels' layout from the executor's kernel table, name -> value."""
        self.request(w.OP_DEVICE_ABI, 0)
        out = {}
        for line in self._data_text(self.result(0)).split("\n"):
            key, eq, value = line.partition("=")
            if eq:
                out[key] = int(value)
        return out

    def device_form(self, comm, records):
        """Gathers this rank's device record with its peers'; the executor's answer as key=value lines."""
        raw = records.encode()
        self.ensure(len(raw))
        self.data[:len(raw)] = memoryview(raw)
        self.request(w.OP_DEVICE_FORM, comm, a=(len(raw),))
        return self._data_text(self.result(0))

    def device_route(self, comm, key, count):
        """(kind, grid, block, "kernel\\nalgorithm") of one call."""
        self.request(w.OP_DEVICE_ROUTE, comm, a=(key, count))
        return self.result(0), self.result(1), self.result(2), self.message()

    def device_error(self, comm, coll, record):
        """Raises the exception the executor makes of a kernel's error record."""
        self.data[:len(record)] = memoryview(record)
        self.request(w.OP_DEVICE_ERROR, comm, a=(coll,))

    def result(self, k):
        return int(self.h64[(w.OFF_RESPONSE + 8) // 8 + k])

    def message(self):
        n = int(self.h32[(w.OFF_RESPONSE + 4) // 4])
        return bytes(self.mm[w.OFF_MESSAGE:w.OFF_MESSAGE + n]).decode()

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass
