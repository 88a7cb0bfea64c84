"""Loading a checkpoint never runs code stored in it: every path that reads one
(agents, search agents, train.py --resume, training configs, evaluate.py) refuses a
file holding anything but tensors and plain data, with a clear error, before any of it
runs. The training state round-trips through that restricted format."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import agents
from training import cli as train
from agents.networks import NetConfig, PolicyValueNet, load_net, read_checkpoint, resolve_device, save_checkpoint
from engine.files import atomic_write
from training.config import config_from_dict, load_config, save_config

REPO = Path(train.__file__).parents[1]
SHIPPED = REPO / "models" / "selfplay_2p.pt"
REFUSED = "refusing to load"


class Payload:
    """Unpickling this touches `marker` (the pickle calls os.system)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "payload_ran"
    yield path
    assert not path.exists(), "the checkpoint's payload ran"


def malicious_checkpoint(path: Path, marker: Path) -> Path:
    """A file shaped like a checkpoint whose pickle runs a command when loaded unsafely."""
    net = PolicyValueNet(NetConfig(channels=8, blocks=1))
    torch.save({"format": "twentyfourseven-checkpoint-v1", "net_config": {"channels": 8, "blocks": 1},
                "model": net.state_dict(), "notes": Payload(marker)}, path)
    return path


def test_the_malicious_file_does_run_its_payload_when_loaded_unsafely(tmp_path, marker):
    """The fixture is real: plain pickle loading runs the command (so the other tests,
    which find no marker, show that the safe loader stopped it)."""
    evil = malicious_checkpoint(tmp_path / "evil.pt", marker)
    torch.load(evil, weights_only=False)
    assert marker.exists()
    marker.unlink()


@pytest.mark.parametrize("load", [
    lambda path: read_checkpoint(path),
    lambda path: load_net(path),
    lambda path: agents.make(f"checkpoint:{path}"),
    lambda path: agents.make(f"ismcts:net={path},iterations=8"),
    lambda path: agents.check_spec(f"checkpoint:{path}"),
], ids=["read_checkpoint", "load_net", "checkpoint_agent", "network_ismcts", "check_spec"])
def test_every_loader_refuses_a_malicious_checkpoint(tmp_path, marker, load):
    evil = malicious_checkpoint(tmp_path / "evil.pt", marker)
    with pytest.raises(ValueError, match=REFUSED) as info:
        load(evil)
    assert "posix.system" in str(info.value) or "os.system" in str(info.value)


def test_a_malicious_extra_key_in_a_real_checkpoint_is_refused(tmp_path, marker):
    """A copy of a shipped network with one more key holding the payload."""
    payload = read_checkpoint(SHIPPED)
    payload["extra"] = Payload(marker)
    doctored = tmp_path / "doctored.pt"
    torch.save(payload, doctored)
    with pytest.raises(ValueError, match=REFUSED):
        agents.make(f"checkpoint:{doctored}")
    with pytest.raises(ValueError, match=REFUSED):
        agents.make(f"ismcts:net={doctored},iterations=8,prior=3")


def tiny_config(**changes):
    from test_training import TINY  # pytest puts tests/ on sys.path

    data = {**TINY, **changes}
    return config_from_dict(data)


def test_resume_refuses_a_run_whose_checkpoint_is_malicious(tmp_path, marker):
    run = tmp_path / "runs" / "tiny"
    run.mkdir(parents=True)
    save_config(run / "config.yaml", tiny_config())
    malicious_checkpoint(run / "checkpoint.pt", marker)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    with pytest.raises(ValueError, match=REFUSED):
        train.main(["--resume", str(run)])
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


@pytest.mark.slow  # two fresh interpreters
def test_cli_resume_and_evaluate_refuse_a_malicious_checkpoint(tmp_path, marker):
    run = tmp_path / "runs" / "tiny"
    run.mkdir(parents=True)
    save_config(run / "config.yaml", tiny_config())
    evil = malicious_checkpoint(run / "checkpoint.pt", marker)
    for command in (["train.py", "--resume", str(run)],
                    ["evaluate.py", "--agents", f"checkpoint:{evil}", "random", "--games", "2"]):
        out = subprocess.run([sys.executable, *command], capture_output=True, text=True, cwd=REPO, timeout=300)
        assert out.returncode != 0, command
        assert REFUSED in out.stderr, (command, out.stderr[-2000:])
        assert "Traceback" not in out.stderr, (command, out.stderr[-2000:])


def test_a_training_config_naming_a_malicious_checkpoint_is_refused_at_load_time(tmp_path, marker):
    evil = malicious_checkpoint(tmp_path / "evil.pt", marker)
    config = tmp_path / "c.yaml"
    config.write_text("name: c\neval: {opponents: [random]}\n")
    with pytest.raises(ValueError, match=r"eval\.opponents\[1\].*" + REFUSED):
        load_config(config, [f"eval.opponents=[random, 'checkpoint:{evil}']"])
    # the warm start's teacher must be a search agent; a network-guided one naming the file is refused too
    with pytest.raises(ValueError, match=r"selfplay\.warm_start_teacher.*" + REFUSED):
        load_config(config, ["algorithm=selfplay", f"selfplay.warm_start_teacher='ismcts:net={evil}'"])
    with pytest.raises(ValueError, match=REFUSED):
        train.main(["--config", str(config), "--runs", str(tmp_path / "runs"),
                    "--set", f"eval.opponents=['checkpoint:{evil}']"])
    assert not (tmp_path / "runs").exists()


def test_training_state_round_trips_through_the_restricted_format(tmp_path):
    rng = np.random.default_rng(5)
    rng.random(3)
    state = {"f16": np.arange(6, dtype=np.float16).reshape(2, 3), "mask": np.array([True, False]),
             "u64": np.array([2**63 + 5], dtype=np.uint64), "i16": np.zeros((2, 2), dtype=np.int16),
             "empty": np.zeros((0, 4), dtype=np.float32), "rng": rng.bit_generator.state,
             "torch_rng": torch.get_rng_state(), "scalar": np.float64(0.25), "nested": [{"a": np.int64(3)}, (1, None)],
             "pending": {}}
    path = tmp_path / "state.pt"
    save_checkpoint(path, PolicyValueNet(NetConfig(channels=8, blocks=1)), trainer=state)
    torch.load(path, weights_only=True)  # the file needs no allowlist at all
    back = read_checkpoint(path)["trainer"]
    for key in ("f16", "mask", "u64", "i16", "empty"):
        assert back[key].dtype == state[key].dtype and np.array_equal(back[key], state[key]), key
    assert back["scalar"] == 0.25 and back["nested"] == [{"a": 3}, (1, None)] and back["pending"] == {}
    restored = np.random.default_rng()
    restored.bit_generator.state = back["rng"]
    assert np.array_equal(restored.random(4), rng.random(4))
    assert torch.equal(back["torch_rng"], state["torch_rng"])


def test_training_checkpoints_of_the_previous_format_still_load(tmp_path):
    """Before numpy arrays were stored as tensors they were pickled as numpy arrays; those
    files load through a narrow allowlist of numpy's array constructors."""
    net = PolicyValueNet(NetConfig(channels=8, blocks=1))
    old = {"format": "twentyfourseven-checkpoint-v1", "net_config": {**vars(net.config)}, "model": net.state_dict(),
           "trainer": {"buffer": {"obs": np.ones((3, 4), dtype=np.float16), "next": 3},
                       "rng": np.random.default_rng(1).bit_generator.state, "count": np.int64(7)}}
    path = tmp_path / "old.pt"
    torch.save(old, path)
    back = read_checkpoint(path)
    assert back["trainer"]["buffer"]["obs"].dtype == np.float16 and back["trainer"]["count"] == 7
    load_net(path)
    old["trainer"]["objects"] = np.array([1, "x"], dtype=object)  # an object array is not numbers
    torch.save(old, path)
    with pytest.raises(ValueError):
        read_checkpoint(path)


def test_save_refuses_what_could_not_be_loaded_safely(tmp_path):
    net = PolicyValueNet(NetConfig(channels=8, blocks=1))
    with pytest.raises(TypeError, match=r"\['trainer'\]\['odd'\]: cannot store a set"):
        save_checkpoint(tmp_path / "x.pt", net, trainer={"odd": {1, 2}})
    with pytest.raises(TypeError, match="dtype object"):
        save_checkpoint(tmp_path / "x.pt", net, trainer={"odd": np.array([None])})
    assert not list(tmp_path.iterdir()), "nothing written"


def test_shipped_networks_load_with_the_plain_restricted_loader():
    for path in sorted((REPO / "models").glob("*.pt")):
        payload = torch.load(path, weights_only=True)
        assert payload["format"] == "twentyfourseven-checkpoint-v1", path


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("old")

    def failing(f):
        f.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, failing)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f.txt"]
    atomic_write(path, lambda f: f.write(b"new"))
    assert path.read_text() == "new"


def test_every_file_the_product_rewrites_goes_through_one_helper():
    """engine.files.atomic_write (temp file, flush, fsync, replace) is the only place that
    renames a file over another: no other module of the product calls os.replace or
    Path.replace / rename on a temporary file of its own."""
    root = Path(__file__).resolve().parents[1]
    files = [p for d in ("engine", "env", "agents", "training", "evaluation", "humanplay") for p in (root / d).rglob("*.py")]
    files += [root / name for name in ("train.py", "evaluate.py", "play.py")]
    offenders = [f"{p.relative_to(root)}:{i}" for p in files if p.name != "files.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if "os.replace(" in line or "os.rename(" in line or ".replace(path)" in line or "tmp.rename(" in line]
    assert offenders == [], f"write files through engine.files.atomic_write, not by hand: {offenders}"


def test_cuda_on_a_machine_without_it_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # runs on a machine with CUDA too
    for load in (lambda: resolve_device("cuda"), lambda: load_net(SHIPPED, "cuda"),
                 lambda: agents.make(f"checkpoint:{SHIPPED},device=cuda")):
        with pytest.raises(ValueError, match="CUDA is not available"):
            load()
    config = tmp_path / "c.yaml"
    config.write_text("name: c\ndevice: cuda\n")
    with pytest.raises(ValueError, match="CUDA is not available"):
        train.main(["--config", str(config), "--runs", str(tmp_path / "runs")])
    assert not (tmp_path / "runs").exists()


def test_unknown_device_names_are_clear_errors():
    with pytest.raises(ValueError, match="unknown device 'gpu0'"):
        resolve_device("gpu0")
    assert resolve_device("cpu") == torch.device("cpu")
