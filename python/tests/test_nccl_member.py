"""gpucoll.gpu._nccl.NcclMember against stand-ins of CuPy's NCCL module: the unique id reaches
NcclCommunicator in the form that CuPy release takes (bytes, or a tuple of signed chars)."""

import os
import sys
import types

import pytest

from gpucoll.gpu import _nccl


def fake_binding(id_type):
    formed = []

    class NcclCommunicator:
        def __init__(self, ndev, comm_id, rank):
            if not isinstance(comm_id, id_type):  # as CuPy's Cython signature refuses it
                raise TypeError("Argument 'commId' has incorrect type (expected %s, got %s)"
                                % (id_type.__name__, type(comm_id).__name__))
            formed.append((ndev, comm_id, rank))

        def check_async_error(self):
            pass

        def abort(self):
            pass

        def destroy(self):
            pass

        allReduce = allGather = reduceScatter = broadcast = send = recv = None

    return types.SimpleNamespace(NcclCommunicator=NcclCommunicator, get_version=lambda: 22809), formed


@pytest.fixture
def cupy_stand_in(monkeypatch):
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(setDevice=lambda d: None))
    monkeypatch.setitem(sys.modules, "cupy", cupy)


@pytest.mark.parametrize("id_type", [bytes, tuple])
def test_the_unique_id_reaches_nccl_in_the_form_cupy_takes(monkeypatch, cupy_stand_in, id_type):
    binding, formed = fake_binding(id_type)
    monkeypatch.setattr(_nccl, "_binding", binding)
    uid = os.urandom(128)
    member = _nccl.NcclMember(uid, 1, 2, 0, 5.0)
    try:
        (ndev, comm_id, rank), = formed
        assert (ndev, rank) == (2, 1)
        assert bytes(b & 0xFF for b in comm_id) == uid
        if id_type is tuple:
            assert all(-128 <= b <= 127 for b in comm_id)  # ncclUniqueId is char[128]
    finally:
        member.close()
