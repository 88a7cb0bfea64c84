"""Self-play chunks on a Ray cluster (``selfplay.executor: ray``).

`training.teacher.teacher_games` decides the chunks, their seeds and their files, and hands
the missing ones here with the function that plays one (`training.teacher.play_chunk`;
passed in, so that this module does not import its caller): each chunk is one job of an
`evaluation.ray_executor` pool, played in a Ray actor and returned whole to the driver,
which stores it exactly as a local run does. An actor lost mid-chunk has its chunk played
again by another (nothing of it was kept).

The network of a generation's search (``ismcts:net=PATH,...``) is a file on the driver.
Its bytes are published once per call with ``ray.put``; each node writes one local copy,
and the actors there build their agents from it. The object store carries the network
to the nodes, so the run directory need not be shared between machines.

Ray is imported only by `evaluation.ray_executor`, loaded here when a chunk is played.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterator

from agents import parse_spec

NETWORK_PARAMETER = "net"  # the spec parameter naming a generation's network file


def network_file(spec: str) -> str | None:
    """The network file a search spec reads (``net=PATH``), if any."""
    path = parse_spec(spec)[2].get(NETWORK_PARAMETER)
    return str(path) if path is not None else None


def with_local_network(spec: str, copies: dict[str, str]) -> str:
    """`spec` with its network file replaced by this node's copy of it."""
    path = network_file(spec)
    if path is None:
        return spec
    name, _, rest = spec.strip().partition(":")
    parts = [f"{NETWORK_PARAMETER}={copies[path]}" if p.partition("=")[0].strip() == NETWORK_PARAMETER else p
             for p in (p.strip() for p in rest.split(",")) if p]
    return f"{name}:{','.join(parts)}"


def chunk_specs(arguments: tuple) -> list[str]:
    """The agent specs with a network among a chunk's arguments: a spec (the teacher, the
    cheap teacher) or a tuple of specs (the league's opponents)."""
    found = []
    for argument in arguments:
        for item in argument if isinstance(argument, tuple) else (argument,):
            if isinstance(item, str) and f"{NETWORK_PARAMETER}=" in item and network_file(item) is not None:
                found.append(item)
    return found


class ChunkPlayer:
    """A pool actor's handler: plays one chunk job ``(index, play, play's arguments)``,
    every spec among the arguments reading this node's copy of its network."""

    def __init__(self, copies: dict[str, str]):
        self.copies = copies

    def __call__(self, job):
        _, play, arguments = job
        local = {spec: with_local_network(spec, self.copies) for spec in chunk_specs(arguments)}

        def here(argument):
            if isinstance(argument, tuple):
                return tuple(local.get(item, item) for item in argument)
            return local.get(argument, argument) if isinstance(argument, str) else argument

        return play(*map(here, arguments))


def warm_chunk_agents(specs: list[str], copies: dict[str, str]) -> None:
    """Compile (or load) the engine's kernels and those of the chunks' agents on this node."""
    from evaluation.ray_executor import warm_node

    warm_node((), [with_local_network(spec, copies) for spec in specs])


def map_chunks_on_ray(play: Callable[..., Any], chunks: dict[int, tuple], workers: int = 0,
                      address: str | None = None) -> Iterator[tuple[int, Any]]:
    """Play the chunks ``{index: arguments}`` on Ray, each as ``play(*arguments)`` (a
    picklable function; the specs among its arguments, `chunk_specs`, name the networks to
    publish), in `workers` actors
    (0 = one per CPU of the cluster at `address`, None = a local Ray instance); yield
    ``(index, games)`` as each chunk finishes."""
    from evaluation.ray_executor import map_on_ray

    # the teachers (warmed on every node) and every spec whose network the nodes need
    specs = sorted({chunk[0] for chunk in chunks.values()} |
                   {spec for chunk in chunks.values() for spec in chunk_specs(chunk)})
    files = [path for path in map(network_file, specs) if path is not None]
    warm = functools.partial(warm_chunk_agents, specs)
    jobs = [(index, play, chunk) for index, chunk in chunks.items()]
    for (index, _, _), games in map_on_ray(ChunkPlayer, jobs, workers, address, files, warm):
        yield index, games
