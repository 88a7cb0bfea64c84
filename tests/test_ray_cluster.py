"""A real two-node Ray cluster with token authentication, started the way docs/ray.md
tells a user to: ``ray start --head`` and ``ray start --address`` (a second raylet on this
machine), then evaluate.py and train.py pointed at it with ``--ray-address``: their games
are those of one machine, also when the second node is lost in the middle of a game, and
a driver without the token is told the fix.

The cluster is this module's own: its ports are free ones picked here, its temp directory
(where Ray keeps the address that a bare ``ray.init()`` would pick up) and HOME (where Ray
looks for a token) are fresh ones, so it cannot meet the local instance of test_ray.py.
Its processes are stopped by process group, never with ``ray stop`` (which stops every
Ray on the machine), at the end of the module, whatever happened.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", exc_type=ImportError)
# one cluster for the module, so its tests run in one xdist worker (maybe beside test_ray.py's
# local instance, which it cannot meet)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray-cluster")]

from agents.base import _REGISTRY, Agent, register

ROOT = Path(__file__).resolve().parents[1]
THIS = str(Path(__file__).resolve())  # evaluate.py --import THIS: the `holdfirst` agent
START_TIMEOUT = 120  # seconds `ray start` may take (about 10 s each on an idle machine)
RUN_TIMEOUT = 420  # seconds a driver run on the cluster may take
NODE_MEMORY = 80 * 2**20  # each node's object store (bytes): the runs here pass only small objects
AUTH_VARIABLES = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")


@dataclass
class Cluster:
    address: str
    root: Path  # the cluster's temp directory, HOME and token file live here
    driver_env: dict  # a driver that has the token (in the token file, as docs/ray.md sets it up)
    groups: list  # the process group of each node's `ray start` (its daemons stay in it)


def _register(name):
    def wrap(cls):
        return _REGISTRY[name] if name in _REGISTRY else register(name)(cls)

    return wrap


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def ray_cli() -> list[str]:
    """The `ray` command of this Python (the one the project is installed in)."""
    script = Path(sys.executable).with_name("ray")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "ray.scripts.scripts"]


def base_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in AUTH_VARIABLES}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), RAY_USAGE_STATS_ENABLED="0")
    return env


def start_node(args: list[str], env: dict, groups: list) -> None:
    """`ray start ARGS` in a process group of its own, recorded before it can fail."""
    proc = subprocess.Popen(ray_cli() + ["start", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, text=True)
    groups.append(proc.pid)
    try:
        out, _ = proc.communicate(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"`ray start {' '.join(args)}` did not finish in {START_TIMEOUT} s:\n{out[-3000:]}")
    if proc.returncode != 0 or "Ray runtime started" not in out:
        pytest.fail(f"`ray start {' '.join(args)}` failed (exit {proc.returncode}):\n{out[-3000:]}")


def processes() -> dict[int, tuple[int, int, str]]:
    """{pid: (parent pid, process group, command line)} of this machine's processes."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (name) ": state, ppid, pgrp, ...
        table[int(entry.name)] = (int(fields[1]), int(fields[2]), cmdline)
    return table


def cluster_processes(groups: list, root: Path) -> set[int]:
    """The cluster's processes: those of each node's `ray start` process group, their
    descendants (Ray's workers run in sessions of their own), and any process naming the
    cluster's temp directory (only this module's cluster's)."""
    table = processes()
    found = {pid for pid, (_, group, cmd) in table.items() if group in groups or str(root) in cmd}
    while True:
        children = {pid for pid, (parent, _, _) in table.items() if parent in found} - found
        if not children:
            return found
        found |= children


def stop_cluster(groups: list, root: Path) -> None:
    """End every process of the cluster: SIGTERM, a moment, then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = cluster_processes(groups, root)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if pids and sig == signal.SIGTERM:
            time.sleep(2)


@pytest.fixture(scope="module")
def cluster():
    # a short path: Ray's unix sockets live under it (at most 107 characters)
    root = Path(tempfile.mkdtemp(prefix="raycl-", dir="/tmp" if os.path.isdir("/tmp") else None))
    groups: list[int] = []
    try:
        token = secrets.token_hex(32)
        token_file = root / "auth_token"
        token_file.write_text(token)
        (root / "home").mkdir()
        env = base_env(root / "home")
        gcs, client, head_agent, node_agent = free_ports(4)
        common = ["--num-cpus", "1", "--temp-dir", str(root / "ray"), "--object-store-memory", str(NODE_MEMORY),
                  "--disable-usage-stats"]
        # the head finds the token in a file, the second node in RAY_AUTH_TOKEN (docs/ray.md: either)
        start_node(["--head", "--port", str(gcs), "--ray-client-server-port", str(client), "--include-dashboard",
                    "false", "--dashboard-agent-listen-port", str(head_agent), *common],
                   dict(env, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token_file)), groups)
        address = f"127.0.0.1:{gcs}"
        start_node(["--address", address, "--dashboard-agent-listen-port", str(node_agent), *common],
                   dict(env, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token), groups)
        yield Cluster(address, root, dict(env, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token_file)), groups)
    finally:
        stop_cluster(groups, root)
        shutil.rmtree(root, ignore_errors=True)


def run(cmd: list[str], env: dict, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def ancestors(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of each process above `pid`, its parent first."""
    table, found = processes(), []
    while pid in table and table[pid][0] > 1:
        pid = table[pid][0]
        found.append((pid, table.get(pid, (0, 0, ""))[2]))
    return found


@_register("holdfirst")
class HoldFirstAgent(Agent):
    """Plays the lowest legal action. In a game on the node whose raylet is `raylet`, it
    creates the file `marker` and then never moves (the node is taken down meanwhile);
    in a game on another node of a Ray cluster, it first waits (up to 5 minutes) for that
    file, so that the other node is sure to get a game to lose. Outside Ray it just plays."""

    def __init__(self, raylet: int = 0, marker: str = "") -> None:
        super().__init__()
        self.raylet, self.marker = raylet, marker

    def act(self, observation, view) -> int:
        above = ancestors(os.getpid())
        if any(pid == self.raylet for pid, _ in above):
            Path(self.marker).touch()
            threading.Event().wait()
        if any(cmd.startswith("ray::") for _, cmd in above):
            deadline = time.monotonic() + 300
            while not os.path.exists(self.marker) and time.monotonic() < deadline:
                time.sleep(0.05)
        return int(view.legal_actions()[0])


NODES = """
import json, sys, time, ray
ray.init(address=sys.argv[1], logging_level="error")
deadline = time.monotonic() + 60
while True:
    nodes = [(n["NodeID"], n["Alive"], n["Resources"].get("CPU", 0)) for n in ray.nodes()]
    if sum(alive for _, alive, _ in nodes) >= 2 or time.monotonic() > deadline:
        break
    time.sleep(0.5)
print(json.dumps(nodes))
"""

NO_TOKEN = """
import sys, time
from evaluation.ray_executor import connect
start = time.monotonic()
try:
    connect(sys.argv[1])
except ValueError as exc:
    print(f"connect: {time.monotonic() - start:.2f} {exc}")
from evaluation import cli as evaluate  # then the command line's account of it, on stderr
sys.exit(evaluate.main(sys.argv[2:]))
"""


def evaluate_cmd(out: Path, agents: list[str], *extra: str) -> list[str]:
    return [sys.executable, str(ROOT / "evaluate.py"), "--agents", *agents, "--games", "4", "--seed", "31",
            "--out", str(out), "--bootstrap", "20", "--no-plots", "--no-progress", *extra]


def selfplay_config(tmp_path: Path, **selfplay) -> Path:
    """The tiny self-play config of test_selfplay.py, one generation (the warm start's 32
    games: two chunks of 16), without the evaluation games."""
    import yaml

    from tests.test_selfplay import TINY

    data = yaml.safe_load(yaml.safe_dump(TINY))
    data.update(iterations=1)
    data["eval"]["opponents"] = []
    data["selfplay"].update(warm_start_games=32, **selfplay)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# --- the tests, in this order: the last one takes the second node down ----------------------------
def test_the_cluster_has_two_alive_nodes(cluster):
    done = run([sys.executable, "-c", NODES, cluster.address], cluster.driver_env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    nodes = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(nodes) == 2 and all(alive and cpus == 1 for _, alive, cpus in nodes), nodes


def test_a_driver_without_the_token_is_told_the_fix_in_one_line(cluster, tmp_path):
    (tmp_path / "home").mkdir()
    env = base_env(tmp_path / "home")  # no RAY_AUTH_* and no ~/.ray/auth_token: what a new shell has
    arguments = evaluate_cmd(tmp_path / "out", ["random", "greedy"], "--executor", "ray", "--ray-address",
                             cluster.address)[2:]
    done = run([sys.executable, "-c", NO_TOKEN, cluster.address, *arguments], env, timeout=120)
    assert done.returncode == 2, done.stderr[-3000:]
    # within seconds (Ray alone retries for about 20 s, then says only that it cannot connect)
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("connect: ")]
    seconds, message = line.removeprefix("connect: ").split(" ", 1)
    assert float(seconds) < 10, done.stdout
    assert message.startswith(f"the Ray cluster at {cluster.address} has token authentication on and this process "
                              "sent no token: set RAY_AUTH_MODE=token"), done.stdout
    assert "RAY_AUTH_TOKEN" in message and "docs/ray.md" in message
    assert done.stderr.strip().splitlines()[-1] == f"error: {message}", done.stderr[-3000:]


def test_a_selfplay_generation_on_the_cluster_stores_the_games_of_one_machine(cluster, tmp_path):
    from training.config import load_config
    from training.teacher import teacher_games

    config = selfplay_config(tmp_path, executor="ray", ray_address=cluster.address, workers=0)
    done = run([sys.executable, str(ROOT / "train.py"), "--config", str(config), "--runs", str(tmp_path / "ray")],
               cluster.driver_env)
    assert done.returncode == 0, done.stderr[-3000:]
    # the same generation's games on this machine (training.selfplay: generation 0 is the warm start)
    cfg = load_config(config)
    teacher_games(cfg.selfplay.teacher, cfg.selfplay.warm_start_games, cfg.seed * 10_007, cfg.num_players,
                  cfg.team, workers=1, progress=False, store=tmp_path / "local", exposure=cfg.net.exposure)
    on_ray = sorted((tmp_path / "ray" / "tiny" / "games" / "gen_000").glob("chunk_*.npz"))
    here = sorted((tmp_path / "local").glob("chunk_*.npz"))
    assert len(on_ray) == 2 and [p.name for p in on_ray] == [p.name for p in here]
    for a, b in zip(on_ray, here):
        with np.load(a) as x, np.load(b) as y:
            assert x.files == y.files
            for key in x.files:
                np.testing.assert_array_equal(x[key], y[key], err_msg=f"{a.name}: {key}")


def test_a_tournament_on_the_cluster_plays_again_the_game_of_a_node_lost_mid_run(cluster, tmp_path):
    """evaluate.py on the cluster; once the second node is in the middle of a game (the
    `holdfirst` agent there), that node's raylet is killed (SIGKILL, as when a machine
    goes away). Its game is played again on the head node, and games.csv is the one
    ``--workers 1`` writes."""
    (raylet,) = [pid for pid, (_, group, cmd) in processes().items()
                 if group == cluster.groups[1] and cmd.split(" ")[0].endswith("/raylet")]
    marker = tmp_path / "second-node-is-playing"
    agents = ["random", f"holdfirst:raylet={raylet},marker={marker}"]
    log = open(tmp_path / "evaluate.log", "w")
    driver = subprocess.Popen(evaluate_cmd(tmp_path / "ray", agents, "--executor", "ray", "--ray-address",
                                           cluster.address, "--import", THIS, "--move-time-limit", "600"),
                              cwd=ROOT, env=cluster.driver_env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not marker.exists():
            assert driver.poll() is None, (tmp_path / "evaluate.log").read_text()[-3000:]
            assert time.monotonic() < deadline, f"the second node played no game in {RUN_TIMEOUT} s"
            time.sleep(0.05)
        os.kill(raylet, signal.SIGKILL)
        assert driver.wait(RUN_TIMEOUT) == 0, (tmp_path / "evaluate.log").read_text()[-3000:]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(30)
        log.close()
    from evaluation import EvalConfig, run_evaluation

    serial = EvalConfig().override(agents=agents, games=4, seed=31, workers=1, out=str(tmp_path / "serial"),
                                   bootstrap=20, plots=False, progress=False, imports=[THIS]).validate()
    run_evaluation(serial, echo=lambda *a: None)
    assert sorted(json.loads(line)["game"] for line in open(tmp_path / "ray" / "games.jsonl")) == list(range(4))
    assert (tmp_path / "ray" / "games.csv").read_text() == (tmp_path / "serial" / "games.csv").read_text()
