"""gpucoll: the collectives of spark-gpu-collectives from a PySpark barrier task.

Inside ``rdd.barrier().mapPartitions(f)`` or ``df.mapInPandas(f, schema, barrier=True)``, with the
gpucoll jar on ``--jars`` and ``spark.plugins=dev.gpucoll.spark.GpuCollectivesPlugin``::

    import gpucoll
    comm = gpucoll.communicator()
    comm.all_reduce(grad)            # in place, sum over ranks

The group is the one a Java task of the same stage gets: formed by the plugin in milliseconds, with
its path report, UI tab and metrics.
"""

from ._version import __version__
from .communicator import Communicator
from .errors import (CollectiveError, CollectiveMismatchError, CollectiveTimeoutError, CommunicatorStateError,
                     InvalidArgumentError, UnsupportedArrayError)
from ._task import communicator
from . import _pyspark_line

_pyspark_line.check()

__all__ = ["__version__", "communicator", "Communicator", "CollectiveError", "CollectiveMismatchError",
           "CollectiveTimeoutError", "CommunicatorStateError", "InvalidArgumentError", "UnsupportedArrayError"]
