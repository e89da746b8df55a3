"""The memory bench attributes each Dagster process to its role by command line."""

import pytest

from freshness_pipeline.lab.bench.memory import role_of

PY = "/work/main/.venv/bin/python3"


@pytest.mark.parametrize(
    ("cmdline", "role"),
    [
        (f"{PY} -m dagster_webserver --port 3077 --host 127.0.0.1", "webserver"),
        (f"{PY} -m dagster._daemon run --log-level info", "daemon"),
        (f"{PY} /x/bin/dagster-daemon run -w workspace.yaml", "daemon"),
        (f"{PY} -m dagster api grpc --lazy-load-user-code --socket /tmp/s", "code server"),
        (f"{PY} -m dagster code-server start --socket /tmp/s", "code server"),
        # a run launched through the code server, and its log tailers
        (
            f"{PY} -B -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=18, "
            "pipe_handle=26) --multiprocessing-fork",
            "run workers",
        ),
        (f"{PY} /x/dagster/_core/execution/scripts/watch_orphans.py 5699 6028", "run workers"),
        ("tail -F -c +0 /tmp/h/storage/r/compute_logs/x.err", "run workers"),
        (f"{PY} /x/bin/dagster dev -w workspace.yaml --host 127.0.0.1", "other"),
        # as `dagster dev` starts them: an option names the code server (run D, 2026-11-22)
        (
            f"{PY} -m dagster_webserver --port 3077 --dagster-log-level info "
            "--code-server-log-level warning --instance-ref {}",
            "webserver",
        ),
        (
            f"{PY} -m dagster._daemon run --log-level info --shutdown-pipe 5 "
            "--instance-ref {} --code-server-log-level warning",
            "daemon",
        ),
    ],
)
def test_role_of(cmdline: str, role: str):
    assert role_of(cmdline) == role


FORK_SERVER = (
    f"{PY} -B -c from multiprocessing.forkserver import main; main(9, 10, "
    "['freshness_pipeline.definitions'], **{'sys_path': ['/x'], 'main_path': '/x/bin/dagster'})"
)


def test_the_fork_server_and_the_runs_forked_from_it():
    """run_start.py: a code server's fork server and its children share one command line;
    the children are the run workers."""
    code_server = f"{PY} -m dagster api grpc --socket /tmp/s"
    assert role_of(FORK_SERVER, parent_cmdline=code_server) == "run fork server"
    assert role_of(FORK_SERVER, parent_cmdline=FORK_SERVER) == "run workers"


HISTOGRAM = """\
12345:
 num     #instances         #bytes  class name (module)
-------------------------------------------------------
   1:        200000       52428800  [B (java.base@17.0.13)
   2:         50000        1200000  java.lang.String (java.base@17.0.13)
   3:           100           4000  org.apache.spark.sql.connect.service.SessionHolder
   4:            10            400  org.apache.spark.sql.connect.service.SessionHolder
Total        250110       53633200
"""


def test_a_class_histogram_is_read_per_class():
    from freshness_pipeline.lab.bench.memory import parse_class_histogram

    found = parse_class_histogram(HISTOGRAM)
    assert found["[B"] == (200000, 52428800)
    assert found["java.lang.String"] == (50000, 1200000)
    # one class under two loaders is two rows: summed
    assert found["org.apache.spark.sql.connect.service.SessionHolder"] == (110, 4400)
    assert "Total" not in found and len(found) == 3


def test_growth_names_the_classes_that_grew_most_first():
    from freshness_pipeline.lab.bench.memory import histogram_growth

    before = {"a": (1, 1024 * 1024), "b": (10, 10 * 1024 * 1024), "gone": (5, 5)}
    after = {"a": (3, 3 * 1024 * 1024), "b": (9, 9 * 1024 * 1024), "new": (40, 40 * 1024 * 1024)}
    rows = histogram_growth(before, after)
    assert [r.name for r in rows] == ["new", "a"]  # b shrank: left out
    assert (rows[0].mib_before, rows[0].mib_after, rows[0].instances_after) == (0, 40, 40)
    assert rows[1].instances_before == 1
    assert histogram_growth(before, after, top=1)[0].name == "new"


def test_the_class_histogram_of_a_real_jvm(tmp_path):
    """jcmd reads a live JVM's objects: a sleeping one holds strings like any other."""
    import subprocess
    import time

    from freshness_pipeline.lab.bench.memory import class_histogram, parse_class_histogram

    source = tmp_path / "Sleep.java"
    source.write_text(
        "public class Sleep { public static void main(String[] a) throws Exception "
        '{ System.out.println("up"); Thread.sleep(60000); } }'
    )
    jvm = subprocess.Popen(["java", str(source)], stdout=subprocess.PIPE, text=True)
    try:
        assert jvm.stdout is not None and jvm.stdout.readline().strip() == "up"
        time.sleep(0.5)
        found = parse_class_histogram(class_histogram(jvm.pid) or "")
        assert found["java.lang.String"][0] > 0
    finally:
        jvm.kill()
        jvm.wait()
