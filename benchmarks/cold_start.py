"""Cold start: how long a fresh clone takes to do its first things, while numba compiles.

    python benchmarks/cold_start.py              # every row, cold then warm (about 10 min)
    python benchmarks/cold_start.py --quick      # without the whole-quickstart rows
    python benchmarks/cold_start.py --json       # one JSON object

Each row runs in a fresh Python process whose numba cache (``NUMBA_CACHE_DIR``) is a new,
empty temporary directory, so every kernel it needs is compiled, as on a fresh clone.
The *warm* column runs the same row again in a new process over the cache the cold run
left: what every later run costs. Rows:

* ``engine``: ``import engine``, then the first ``GameState.new(2).step(...)``;
* ``env``: the first step of the PettingZoo env ``env.env()``;
* ``vector``: the first step of ``gymnasium.make_vec(..., num_envs=64)``;
* ``greedy`` / ``ismcts``: the first move of ``agents.make("greedy")`` / ``"ismcts"``;
* ``quickstart_iteration``: ``configs/quickstart.yaml``'s trainer built and its first
  iteration run (its first evaluation is at iteration 10, so no evaluation);
* ``quickstart``: the whole ``python train.py --config configs/quickstart.yaml``;
* ``evaluate``: ``python evaluate.py --agents greedy random ismcts:iterations=200 --games 40``
  (default workers: one per core);
* ``exploit``: ``python evaluate.py exploit --target greedy --games 20``;
* ``hint``: the first ``hint`` of the terminal game (``python play.py``): the session
  built and its board drawn (setup), then the default hint agent's hint
  (``ismcts:time=1``: one second of search) as the terminal prints it, asked at once
  (the terminal starts compiling the hint's search parts as the game opens);
* ``web_page``: ``python play.py --web``, timed until ``GET /`` answers 200 (the page: the
  server answers at once and warms the engine up in the background, so about the imports);
* ``web_move``: ``python play.py --web``, timed until the first AI move is answered, driven
  as the page does: ``GET /api/state`` (asked again while it answers 503 "warming up") starts
  a game against the default opponent (greedy), then ``POST /api/move`` plays the person's
  first legal move and the time stops when its answer holds the AI's reply;
  ``web_move_selfplay``: the same with ``--opponents selfplay:time=0.5``, the opponent a
  user picks for a real game.

The web rows stop the server with SIGINT (its Ctrl-C) once timed. Their CPU time is the
server's and its workers' until then, so it holds whatever warm-up the server ran in the
background meanwhile (a server that warms up before it answers, as before the page
answered at once, shows its whole warm-up in both rows).

Where the cold time goes: every child (and every worker process it starts) runs with a
``sitecustomize`` of this script's that logs each numba compile (a cache miss: the kernel,
its argument types, seconds, process id) to a file; each row reports how many kernels
were compiled, in how many processes, and how many of them more than once (a worker
compiling what its parent or another worker already compiled). ``--kernels`` prints the
compiles of each cold row, slowest first. The hook is the benchmark's, not the
checkout's, so ``--root`` measures an older commit the same way.

Each row reports wall time and CPU time (user + system of the process, all threads): on a
loaded machine the wall time stretches but the CPU time holds, so compare CPU times.
The rows run from this checkout (``PYTHONPATH`` is its root), whatever is installed;
``--root DIR`` measures another one instead, e.g. an older commit checked out with
``git worktree add /tmp/old <commit>``, to compare the two in one session.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import machine_info  # noqa: E402

# Each row's child code: `setup` is timed apart from `first` (the part that compiles).
ROWS = {
    "engine": ("import engine",
               "g = engine.GameState.new(2, seed=0); g.step(g.legal_actions()[0])"),
    "env": ("import env",
            "e = env.env(); e.reset(seed=0); import numpy as np; "
            "e.step(int(np.flatnonzero(e.last()[0]['action_mask'])[0]))"),
    "vector": ("import gymnasium, env, numpy as np",
               "v = gymnasium.make_vec('TwentyFourSeven-v0', num_envs=64); o, _ = v.reset(seed=0); "
               "v.step(o['action_mask'].argmax(axis=1))"),
    "greedy": ("import agents, engine; from engine.view import PlayerView",
               "g = engine.GameState.new(2, seed=0); agents.make('greedy', seed=0).act(None, PlayerView(g, 0))"),
    "ismcts": ("import agents, engine; from engine.view import PlayerView",
               "g = engine.GameState.new(2, seed=0); "
               "agents.make('ismcts:iterations=200', seed=0).act(None, PlayerView(g, 0))"),
    "hint": ("from humanplay import terminal; from humanplay.session import Session; "
             "s = Session.new(['greedy'], seed=0); terminal.board_text(s.view, s)",
             # the terminal starts compiling the hint's parts as the game opens (where there is
             # `compile_ahead`); the person asks for a hint at once
             "getattr(s, 'compile_ahead', lambda: None)(); terminal.hint_text(s.hint())"),
    "quickstart_iteration": (
        "import torch; from train import make_trainer; from training.config import load_config; "
        "cfg = load_config('configs/quickstart.yaml', []); torch.set_num_threads(cfg.torch_threads)",
        "make_trainer(cfg, torch.device('cpu')).run_iteration()"),
}
QUICKSTART_ROWS = ("quickstart",)
# Rows that run one of the project's commands whole (`{out}`: a fresh temporary directory).
COMMANDS = {
    "quickstart": ["train.py", "--config", "configs/quickstart.yaml", "--runs", "{out}"],
    "evaluate": ["evaluate.py", "--agents", "greedy", "random", "ismcts:iterations=200", "--games", "40",
                 "--out", "{out}/evaluate"],
    "exploit": ["evaluate.py", "exploit", "--target", "greedy", "--games", "20", "--out", "{out}/exploit"],
}
# `play.py --web` (with these arguments), timed until its page / its first AI move answers
WEB_ROWS = {"web_page": [], "web_move": [], "web_move_selfplay": ["--opponents", "selfplay:time=0.5"]}
COMMAND_ROWS = ("evaluate", "exploit", *WEB_ROWS)
COMPILE_NOTICE = "compiling numba kernels"  # the start of the notice, in every version of it
COMPILE_LOG = "COLD_START_COMPILE_LOG"  # the environment variable naming the compile log

# Imported by every child process (PYTHONPATH holds its directory): logs numba's compiles.
# numba fires "numba:compile" only when a kernel is compiled, not loaded from the cache.
_SITECUSTOMIZE = """
import os
if os.environ.get("COLD_START_COMPILE_LOG"):
    import json, time
    from numba.core import event

    class _CompileLog(event.Listener):
        depth = 0
        starts = []

        def on_start(self, ev):
            self.depth += 1
            self.starts.append(time.perf_counter())

        def on_end(self, ev):
            self.depth -= 1
            seconds = time.perf_counter() - self.starts.pop()
            dispatcher = ev.data.get("dispatcher")
            func = getattr(dispatcher, "py_func", None)
            name = getattr(func, "__module__", "?") + "." + getattr(func, "__qualname__", "?")
            line = json.dumps({"pid": os.getpid(), "kernel": name, "args": str(tuple(ev.data.get("args", ()))),
                               "seconds": seconds, "depth": self.depth})
            with open(os.environ["COLD_START_COMPILE_LOG"], "a") as f:
                f.write(line + "\\n")

    event.register("numba:compile", _CompileLog())
"""

_CHILD = """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
{setup}
t1, c1 = time.perf_counter(), time.process_time()
{first}
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({{"setup_s": t1 - t0, "first_s": t2 - t1, "setup_cpu_s": c1 - c0, "first_cpu_s": c2 - c1}}))
"""


def hook_dir() -> str:
    """A directory holding the compile-logging ``sitecustomize`` (made once per process)."""
    global _HOOK_DIR
    if _HOOK_DIR is None:
        _HOOK_DIR = tempfile.mkdtemp(prefix="cold_start_hook_")
        Path(_HOOK_DIR, "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return _HOOK_DIR


_HOOK_DIR = None


def child_env(root: Path, cache_dir: str, compile_log: str | None = None) -> dict:
    """The environment of a measured child: `root` on the path, an own numba cache, and
    with `compile_log`, every numba compile of it and its workers logged there."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=str(root))
    env.pop("NUMBA_DISABLE_JIT", None)
    env.pop(COMPILE_LOG, None)
    if compile_log:
        env.update(PYTHONPATH=os.pathsep.join([str(root), hook_dir()]), **{COMPILE_LOG: compile_log})
    return env


def read_compile_log(path: str) -> list[dict]:
    """The compiles a child logged (one dict per compile), none if it compiled nothing."""
    try:
        return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def compile_summary(compiles: list[dict], parent_pid: int | None = None) -> dict:
    """Counts over a compile log: compiles, distinct (kernel, argument types), processes
    that compiled, and `repeated`: compiles of a (kernel, types) another process of the
    same run had compiled too (a worker redoing its parent's or a sibling's work)."""
    seen: dict[tuple, set] = {}
    for c in compiles:
        seen.setdefault((c["kernel"], c["args"]), set()).add(c["pid"])
    pids = {c["pid"] for c in compiles}
    top = [c for c in compiles if c["depth"] == 0]
    return {"compiles": len(compiles), "kernels": len({c["kernel"] for c in compiles}),
            "signatures": len(seen), "processes": len(pids),
            "repeated": sum(len(p) - 1 for p in seen.values()),
            "compile_s": sum(c["seconds"] for c in top),
            "parent_compiles": sum(c["pid"] == parent_pid for c in compiles) if parent_pid else None}


def run_child(root: Path, args: list[str], cache_dir: str, timeout: float, compile_log: str | None = None) -> dict:
    """Run `python args` in a fresh process in `root` over `cache_dir`; wall and CPU seconds
    (the child's user + system time, all its threads and children), stdout, stderr, pid."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], cwd=root, env=child_env(root, cache_dir, compile_log),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "stdout": stdout, "stderr": stderr, "pid": proc.pid}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _first_legal_action(state: dict) -> int:
    """The person's first legal move in a state of the web API, as play.js sends it
    (action id = cell * 10 + value - 1; 490 = pass)."""
    if state["can_pass"]:
        return 490
    cell, values = next(iter(state["legal"].items()))
    return int(cell) * 10 + values[0] - 1


def _first_ai_move(base: str, deadline: float) -> bool:
    """One try at what the page does first: ``GET /api/state`` (the current game, a new one
    against the default opponent), then ``POST /api/move`` with the person's first legal
    move. True once the answer holds the AI's reply; False while the server is not ready
    (not listening yet, or 503 while it warms up); raises on any other answer."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # a browser's cookie
    timeout = max(deadline - time.perf_counter(), 1.0)
    try:
        with opener.open(f"{base}/api/state", timeout=timeout) as reply:
            state = json.loads(reply.read())
    except urllib.error.HTTPError as err:
        if err.code == 503:
            return False
        raise RuntimeError(f"GET /api/state answered {err.code}: {err.read()[:300]!r}") from None
    except OSError:
        return False
    body = json.dumps({"game": state["game"], "action": _first_legal_action(state)}).encode()
    request = urllib.request.Request(f"{base}/api/move", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with opener.open(request, timeout=timeout) as reply:
        moved = json.loads(reply.read())
    if not moved["replies"]:
        raise RuntimeError(f"the answer to the first move holds no AI reply: {moved['moves']}")
    return True


def _page_answers(base: str, deadline: float) -> bool:
    """True once ``GET /`` answers 200 (the page)."""
    try:
        with urllib.request.urlopen(f"{base}/", timeout=max(deadline - time.perf_counter(), 1.0)) as reply:
            return reply.status == 200
    except OSError:  # not listening yet (or an old server still warming up before it answers)
        return False


def run_web(root: Path, name: str, cache_dir: str, timeout: float, compile_log: str | None = None) -> dict:
    """Start ``play.py --web`` in `root` and time row `name` (`WEB_ROWS`): until ``GET /``
    answers 200 (web_page) or until the first AI move is answered (web_move); then stop it
    (SIGINT, its Ctrl-C). CPU time: the server's and its workers' (children's rusage,
    counted once they are reaped)."""
    reached = _page_answers if name == "web_page" else _first_ai_move
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="cold_start_web_") as saves:
        start = time.perf_counter()
        deadline = start + timeout
        proc = subprocess.Popen([sys.executable, "play.py", "--web", "--port", str(port), "--save-dir", saves,
                                 *WEB_ROWS[name]],
                                cwd=root, env=child_env(root, cache_dir, compile_log), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        answered, error = None, None
        try:
            while answered is None:
                if proc.poll() is not None or time.perf_counter() > deadline:
                    break  # it exited (a start-up failure: its output says why) or never answered
                try:
                    if reached(base, deadline):
                        answered = time.perf_counter() - start
                    else:
                        time.sleep(0.1)
                except (RuntimeError, OSError, KeyError, ValueError) as exc:  # a wrong answer: the row fails
                    error = f"{type(exc).__name__}: {exc}"
                    break
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                output, _ = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _ = proc.communicate()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if answered is None:
        why = error or (f"exited ({proc.returncode})" if proc.returncode not in (None, -signal.SIGINT)
                        else "never answered")
        output = f"{output}\nplay.py --web: {name} {why} after {time.perf_counter() - start:.0f} s"
    return {"wall_s": answered, "cpu_s": cpu, "stdout": "", "stderr": output, "pid": proc.pid,
            **({} if answered is not None else {"failed": output.strip().splitlines()[-1]})}


def measure_row(root: Path, name: str, cache_dir: str, timeout: float) -> dict:
    """One row in one process: whole-process wall/CPU, and the child's own split into
    setup (imports) and first use (where the compiling happens)."""
    with tempfile.TemporaryDirectory(prefix="cold_start_out_") as tmp:
        log = os.path.join(tmp, "compiles.jsonl")
        if name in WEB_ROWS:
            out, parts = run_web(root, name, cache_dir, timeout, log), {}
        elif name in COMMANDS:
            args = [a.replace("{out}", tmp) for a in COMMANDS[name]]
            out, parts = run_child(root, args, cache_dir, timeout, log), {}
        else:
            setup, first = ROWS[name]
            out = run_child(root, ["-c", _CHILD.format(setup=setup, first=first)], cache_dir, timeout, log)
            parts = json.loads(out["stdout"].strip().splitlines()[-1])
        compiles = read_compile_log(log)
    notices = sum(COMPILE_NOTICE in line for line in out["stderr"].splitlines())
    if "failed" in out:
        parts["failed"] = out["failed"]
    return {"wall_s": out["wall_s"], "cpu_s": out["cpu_s"], **parts, "compile_notice": notices > 0,
            "compile_notices": notices, **compile_summary(compiles, out["pid"]), "compile_log": compiles}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="skip the rows that run whole commands (quickstart, evaluate, exploit, web_page, "
                             "web_move: minutes)")
    parser.add_argument("--rows", nargs="+", choices=[*ROWS, *QUICKSTART_ROWS, *COMMAND_ROWS],
                        help="only these rows (default: every row; --quick: all but the command rows)")
    parser.add_argument("--kernels", action="store_true", help="list each cold row's compiles, slowest first")
    parser.add_argument("--no-warm", action="store_true", help="cold runs only")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    names = args.rows or [*ROWS, *(() if args.quick else (*QUICKSTART_ROWS, *COMMAND_ROWS))]
    root = args.root.resolve()
    if not (root / "engine" / "kernels.py").is_file():
        parser.error(f"--root {root} is not a checkout of this project (no engine/kernels.py)")

    if not args.timeout > 0:
        parser.error(f"--timeout must be > 0 seconds, got {args.timeout}")

    machine = {**machine_info(), "load_average_before": os.getloadavg()[0]}
    result = {"root": str(root), "machine": machine, "rows": {}}
    if not args.json:
        print(f"{'row':22s} {'cold wall':>10s} {'cold CPU':>9s} {'first use':>10s} {'warm wall':>10s} "
              f"{'warm CPU':>9s}  notices cold/warm  compiled: kernels sigs in-procs repeated", flush=True)
    for name in names:
        with tempfile.TemporaryDirectory(prefix="cold_start_numba_") as cache:
            row = {"cold": measure_row(root, name, cache, args.timeout)}
            if not args.no_warm:
                row["warm"] = measure_row(root, name, cache, args.timeout)
        result["rows"][name] = row
        if not args.json:
            print(_format_row(name, row), flush=True)
            if args.kernels:
                print(_format_kernels(row["cold"]["compile_log"]), flush=True)
    result["machine"]["load_average_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(result))
    else:
        m = result["machine"]
        print(f"times in s; CPU = user + system of the whole process and its workers. 'first use' = the row's "
              f"first call alone (cold, wall); web_page / web_move: wall until the page / the first AI move "
              f"answers. notices: compile notice lines "
              f"printed. compiled (cold run): distinct kernels and (kernel, types) signatures compiled, processes "
              f"that compiled, compiles repeated in another process. machine: {m['cpu']}, {m['cores']} cores, numba {m['numba']}, Python {m['python']}; "
              f"load average {m['load_average_before']:.1f} before, {m['load_average_after']:.1f} after")
    return result


def _format_row(name: str, row: dict) -> str:
    cold, warm = row["cold"], row.get("warm")
    if "failed" in cold:
        return f"{name:22s} failed: {cold['failed']} (CPU {cold['cpu_s']:.1f} s)"
    first = f"{cold['first_s']:10.1f}" if "first_s" in cold else f"{'-':>10s}"
    warm_cols = f"{warm['wall_s']:10.1f} {warm['cpu_s']:9.1f}" if warm else f"{'-':>10s} {'-':>9s}"
    notices = f"{cold['compile_notices']}/{warm['compile_notices'] if warm else '-'}"
    compiled = f"{cold['kernels']:7d} {cold['signatures']:4d} {cold['processes']:8d} {cold['repeated']:8d}"
    return f"{name:22s} {cold['wall_s']:10.1f} {cold['cpu_s']:9.1f} {first} {warm_cols}  {notices:>17s}  {compiled}"


def _format_kernels(compiles: list[dict]) -> str:
    """One line per compiled (kernel, types): seconds (with the kernels it compiled inside
    it), how many processes compiled it; slowest first."""
    rows: dict[tuple, list] = {}
    for c in compiles:
        rows.setdefault((c["kernel"], c["args"]), []).append(c)
    lines = []
    for (kernel, types), group in sorted(rows.items(), key=lambda kv: -max(c["seconds"] for c in kv[1])):
        lines.append(f"    {max(c['seconds'] for c in group):6.1f} s  x{len(group)}  {kernel}{types[:100]}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
