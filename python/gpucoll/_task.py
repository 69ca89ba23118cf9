"""``gpucoll.communicator()``: this barrier task's member of its group, one per task attempt."""

from . import _wire as w
from ._channel import Channel, channel_dir, channel_dir_problem, find_socket, missing_plugin
from .communicator import Communicator
from .errors import CommunicatorStateError

_WHERE = "rdd.barrier().mapPartitions(f) or df.mapInPandas(f, schema, barrier=True)"
# (task attempt id, Communicator): a Python worker serves many tasks one after another.
_current = None


def communicator():
    """The communicator of the current barrier task; the first call in a task forms the group with
    the other ranks (or confirms the one the plugin kept from an earlier stage), later calls in the
    same task return it."""
    global _current
    try:
        from pyspark import BarrierTaskContext, TaskContext
    except ImportError:
        raise CommunicatorStateError("gpucoll.communicator() needs PySpark: call it inside " + _WHERE)
    task = TaskContext.get()
    if task is None:
        raise CommunicatorStateError("gpucoll.communicator() was called outside a Spark task (on the driver?);"
                                     " call it inside " + _WHERE)
    if not isinstance(task, BarrierTaskContext):
        raise CommunicatorStateError("gpucoll.communicator() was called in partition %d of stage %d, which is not"
                                     " a barrier stage; collectives need every task running at once: use %s"
                                     % (task.partitionId(), task.stageId(), _WHERE))
    attempt = task.taskAttemptId()
    if _current is not None:
        if _current[0] == attempt:
            comm = _current[1]
            if comm.closed:
                raise CommunicatorStateError("the communicator of partition %d in stage %d was closed earlier in"
                                             " this task; a stage forms one group, a later stage forms a new one"
                                             % (task.partitionId(), task.stageId()))
            return comm
        _current[1]._ch.close()  # an earlier task of this worker: its session ends with it
        _current = None
    path = find_socket()
    if path is None:
        problem = channel_dir_problem()
        if problem:
            raise CommunicatorStateError("gpucoll: this task finds no channel of its executor: %s (another user"
                                         " made it before the executors started; the executor's log says where"
                                         " its channel is, or why it has none)" % problem)
        raise CommunicatorStateError(missing_plugin("on this executor (no channel of its JVM in %s)" % channel_dir()))
    ch = Channel(path, attempt)
    try:
        ch.request(w.OP_FORM, 0)
    except BaseException:
        ch.close()
        raise
    ch.spins(ch.result(2) == 1)
    comm = Communicator(ch, 0, ch.result(0), ch.result(1), ch.message())
    _current = (attempt, comm)
    return comm
