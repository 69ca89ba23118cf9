"""As a user deploys it: a standalone Master and Worker as separate processes (Spark's own
launcher), the job through ``spark-submit --jars <the one jar> --py-files <the package>``; and the
same job without the plugin, refused with the plugin's message."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile

import pytest

from conftest import PLUGIN, ROOT, dist_jar

JOB = os.path.join(os.path.dirname(__file__), "jobs", "every_collective.py")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_home():
    import pyspark
    return os.path.dirname(pyspark.__file__)


def _wait_for(path, text, proc, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError("%s exited: %s" % (proc.args, open(path).read()[-2000:]))
        if os.path.exists(path) and text in open(path).read():
            return
        time.sleep(0.2)
    raise AssertionError("no '%s' in %s after %d s: %s" % (text, path, seconds, open(path).read()[-2000:]))


@pytest.fixture(scope="module")
def cluster():
    work = tempfile.mkdtemp(prefix="gpucoll-standalone-")
    home = _spark_home()
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    port = _free_port()
    url = "spark://127.0.0.1:%d" % port
    procs = []
    try:
        master_log = os.path.join(work, "master.log")
        procs.append(subprocess.Popen([os.path.join(home, "bin", "spark-class"), "org.apache.spark.deploy.master.Master",
                                       "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())],
                                      stdout=open(master_log, "w"), stderr=subprocess.STDOUT, env=env))
        _wait_for(master_log, "I have been elected leader", procs[0])
        worker_log = os.path.join(work, "worker.log")
        procs.append(subprocess.Popen([os.path.join(home, "bin", "spark-class"), "org.apache.spark.deploy.worker.Worker",
                                       "--cores", "3", "--memory", "3g", "--work-dir", os.path.join(work, "work"),
                                       "--webui-port", str(_free_port()), url],
                                      stdout=open(worker_log, "w"), stderr=subprocess.STDOUT, env=env))
        _wait_for(worker_log, "Successfully registered with master", procs[1])
        package = os.path.join(work, "gpucoll.zip")
        with zipfile.ZipFile(package, "w") as z:
            for base, _, files in os.walk(os.path.join(ROOT, "python", "gpucoll")):
                for f in files:
                    if f.endswith(".py"):
                        full = os.path.join(base, f)
                        z.write(full, os.path.relpath(full, os.path.join(ROOT, "python")))
        yield {"url": url, "home": home, "env": env, "package": package, "work": work}
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


def _submit(cluster, *conf, timeout=240):
    # A clean environment: the package reaches the executors through --py-files alone.
    env = {k: v for k, v in cluster["env"].items() if k != "PYTHONPATH"}
    args = [os.path.join(cluster["home"], "bin", "spark-submit"), "--master", cluster["url"],
            "--jars", dist_jar(), "--py-files", cluster["package"], "--conf", "spark.executor.cores=1",
            "--conf", "spark.executor.memory=768m", "--conf", "spark.cores.max=3", "--conf", "spark.gpucoll.timeout=60s"]
    for c in conf:
        args += ["--conf", c]
    return subprocess.run(args + [JOB, "3"], capture_output=True, text=True, timeout=timeout, env=env)


def test_every_collective_through_spark_submit(cluster):
    done = _submit(cluster, "spark.plugins=" + PLUGIN)
    lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    rows = json.loads(lines[0][len("RESULT "):])
    assert [r["rank"] for r in rows] == [0, 1, 2]
    assert all(r["size"] == 3 and r["bad"] == [] and r["backend"].startswith("host") for r in rows), rows


def test_without_the_plugin_the_job_is_refused_naming_it(cluster):
    done = _submit(cluster, "spark.task.maxFailures=1")
    assert done.returncode != 0
    assert "GpuCollectivesPlugin is not enabled" in done.stderr and "spark.plugins=" + PLUGIN in done.stderr, \
        done.stderr[-5000:]
