"""Finding the executor's channel without Spark: beside a directory another user took, and only on a
socket the executor itself holds."""

import os
import socket
import threading

import pytest


def _listen(path):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    return server


def test_a_channel_beside_a_taken_directory_is_found_by_the_executors_pid(tmp_path, monkeypatch):
    from gpucoll import _channel
    taken = tmp_path / "gt"
    os.symlink(str(tmp_path), str(taken))  # not the user's own directory: the executor went elsewhere
    fresh = tmp_path / "gt-5f"
    fresh.mkdir(mode=0o700)
    monkeypatch.delenv("GPUCOLL_CHANNEL", raising=False)
    monkeypatch.delenv("GPUCOLL_CHANNEL_DIR", raising=False)
    monkeypatch.setattr(_channel, "channel_dir", lambda: str(taken))
    assert _channel.find_socket() is None
    assert "link" in _channel.channel_dir_problem()
    other = fresh / ("exec-%d.sock" % (os.getppid() + 100000))
    server = _listen(str(other))  # a socket of another process's name is not this task's executor
    try:
        assert _channel.find_socket() is None
        mine = fresh / ("exec-%d.sock" % os.getppid())
        server2 = _listen(str(mine))
        try:
            assert _channel.find_socket() == str(mine)
        finally:
            server2.close()
    finally:
        server.close()


def test_a_socket_held_by_another_process_than_its_name_says_is_refused(tmp_path):
    from gpucoll import _channel
    from gpucoll.errors import CommunicatorStateError
    forged = tmp_path / ("exec-%d.sock" % os.getppid())
    server = _listen(str(forged))
    server.settimeout(5)

    def hang_up():  # whoever connects gets no answer
        try:
            server.accept()[0].close()
        except OSError:
            pass
    t = threading.Thread(target=hang_up)
    t.start()
    try:
        with pytest.raises(CommunicatorStateError, match="held by process %d, not by the executor %d"
                           % (os.getpid(), os.getppid())):
            _channel.Channel(str(forged), 7)
    finally:
        t.join(10)
        server.close()
    # Held by the process its name says: the hello goes through, and the answer is raised.
    own = tmp_path / ("exec-%d.sock" % os.getpid())
    server = _listen(str(own))

    def answer():
        conn, _ = server.accept()
        conn.recv(64)
        conn.sendall(b"ERR IllegalStateException task 7 is not a barrier task running on this executor\n")
        conn.close()
    t = threading.Thread(target=answer)
    t.start()
    try:
        with pytest.raises(Exception, match="task 7 is not a barrier task"):
            _channel.Channel(str(own), 7)
    finally:
        t.join(10)
        server.close()


def test_a_socket_file_nobody_listens_on_is_passed_over_for_the_executors(tmp_path, monkeypatch):
    # An executor killed before it removed its socket leaves exec-<pid>.sock; once that pid is reused by
    # the worker's Python daemon, the walk up the parents meets the dead file before the live executor's.
    from gpucoll import _channel
    daemon, executor = 424241, 424242
    monkeypatch.delenv("GPUCOLL_CHANNEL", raising=False)
    monkeypatch.setenv("GPUCOLL_CHANNEL_DIR", str(tmp_path))
    monkeypatch.setattr(os, "getppid", lambda: daemon)
    monkeypatch.setattr(_channel, "_parent", lambda pid: executor if pid == daemon else 1)
    dead = _listen(str(tmp_path / ("exec-%d.sock" % daemon)))
    dead.close()  # the file stays, nobody listens
    assert (tmp_path / ("exec-%d.sock" % daemon)).exists()
    assert _channel.find_socket() is None
    live = _listen(str(tmp_path / ("exec-%d.sock" % executor)))
    try:
        assert _channel.find_socket() == str(tmp_path / ("exec-%d.sock" % executor))
    finally:
        live.close()


def test_the_bound_socket_paths_keep_their_spaces(tmp_path):
    from gpucoll import _channel
    path = tmp_path / "a dir" / "exec-1.sock"
    path.parent.mkdir()
    server = _listen(str(path))
    try:
        assert str(path) in _channel._bound_sockets()
    finally:
        server.close()
