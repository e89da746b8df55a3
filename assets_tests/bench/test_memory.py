"""The memory bench attributes each Dagster process to its role by command line."""

import pytest

from freshness_pipeline.bench.memory import role_of

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
