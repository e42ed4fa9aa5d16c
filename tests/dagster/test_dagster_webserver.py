"""Smoke test: dagster-webserver serves privgate's Definitions; GraphQL shows the gate checks,
the block rules as blocking. Started on 127.0.0.1 on a free port with a temporary DAGSTER_HOME
and stopped by its process id."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

QUERY = """{ assetNodes { assetKey { path } assetChecksOrError { __typename
  ... on AssetChecks { checks { name blocking } } } } }"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session_pids(sid: int) -> list[int]:
    """Processes of session ``sid`` (the webserver and whatever it started), from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # fields after "(comm)": state ppid pgrp session ...
            out.append(int(entry.name))
    return out


def _post(url: str, query: str) -> dict:
    req = urllib.request.Request(
        url, data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


@pytest.mark.skipif(shutil.which("dagster-webserver") is None, reason="dagster-webserver not on PATH")
def test_webserver_graphql_lists_blocking_gate_checks(example, tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIVGATE_", "DAGSTER_"))}
    env.update(
        DAGSTER_HOME=str(home),
        DAGSTER_DISABLE_TELEMETRY="1",
        PRIVGATE_DAGSTER_DATA_DIR=str(example["root"]),
        PRIVGATE_GATE_CONFIG=str(example["gate"]),
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    log = (tmp_path / "webserver.log").open("w")
    proc = subprocess.Popen(
        ["dagster-webserver", "-m", "privgate.dagster", "-h", "127.0.0.1", "-p", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail("webserver exited: " + (tmp_path / "webserver.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(base + "/server_info", timeout=5) as resp:
                    info = json.loads(resp.read())
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail("webserver did not come up: " + (tmp_path / "webserver.log").read_text()[-3000:])
                time.sleep(1)
        assert info["dagster_webserver_version"]
        data = _post(base + "/graphql", QUERY)
        assert "errors" not in data, data
        nodes = {"/".join(n["assetKey"]["path"]): n for n in data["data"]["assetNodes"]}
        assert set(nodes) == {
            "real_data",
            "synthetic_release",
            "published_release",
            "synthetic_release_privacy_scorecard",
            "synthetic_release_latest_release",
        }
        checks = {c["name"]: c["blocking"] for c in nodes["synthetic_release"]["assetChecksOrError"]["checks"]}
        assert checks == {
            "gate_decision": True,
            "common_rows__threshold_block": True,
            "hitting_rate__threshold_block": True,
            "common_rows__threshold_warn": False,
            "authenticity__trend_warn": False,
        }
        # the latest-release view lists the same checks
        assert {
            c["name"]: c["blocking"] for c in nodes["synthetic_release_latest_release"]["assetChecksOrError"]["checks"]
        } == checks
    finally:
        proc.send_signal(signal.SIGTERM)  # by its pid; dagster-webserver exits on SIGTERM
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
        # anything the webserver started (its code server) and left behind: stop it by pid
        for pid in _session_pids(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert proc.returncode is not None
