"""Self-play chunks on a Ray cluster (``selfplay.executor: ray``).

`training.teacher.teacher_games` decides the chunks, their seeds and their files, and hands
the missing ones here with the function that plays one (`training.teacher.play_chunk`;
passed in, so that this module does not import its caller): each chunk is one job of an
`evaluation.ray_executor` pool, played in a Ray actor and returned whole to the driver,
which stores it exactly as a local run does. An actor lost mid-chunk has its chunk played
again by another (nothing of it was kept).

The network of a generation's search (an `agents.search.mcts.GuidedSearch`: a network path
and the search settings) is a file on the driver. Its bytes are published once per call
with ``ray.put``; each node writes one local copy, and the actors there build their
agents from it (the same record with the path of that copy). The object store carries
the network to the nodes, so the run directory need not be shared between machines.

Ray is imported only by `evaluation.ray_executor`, loaded here when a chunk is played.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Iterator

from agents.search.mcts import GuidedSearch


def chunk_searches(arguments: tuple) -> list[GuidedSearch]:
    """The network-guided searches among a chunk's arguments: the teacher, or the league's
    opponents (a tuple)."""
    found = []
    for argument in arguments:
        for item in argument if isinstance(argument, tuple) else (argument,):
            if isinstance(item, GuidedSearch):
                found.append(item)
    return found


def with_local_network(search, copies: dict[str, str]):
    """`search` reading this node's copy of its network (anything else as it is)."""
    if isinstance(search, GuidedSearch):
        return dataclasses.replace(search, net=copies[search.net])
    return search


class ChunkPlayer:
    """A pool actor's handler: plays one chunk job ``(index, play, play's arguments)``,
    every search among the arguments reading this node's copy of its network."""

    def __init__(self, copies: dict[str, str]):
        self.copies = copies

    def __call__(self, job):
        _, play, arguments = job

        def here(argument):
            if isinstance(argument, tuple):
                return tuple(with_local_network(item, self.copies) for item in argument)
            return with_local_network(argument, self.copies)

        return play(*map(here, arguments))


def warm_chunk_agents(teachers: list, copies: dict[str, str]) -> None:
    """Compile (or load) the engine's kernels and those of the chunks' agents on this node."""
    from evaluation.ray_executor import warm_node

    warm_node((), [with_local_network(teacher, copies) for teacher in teachers])


def map_chunks_on_ray(play: Callable[..., Any], chunks: dict[int, tuple], workers: int = 0,
                      address: str | None = None) -> Iterator[tuple[int, Any]]:
    """Play the chunks ``{index: arguments}`` on Ray, each as ``play(*arguments)`` (a
    picklable function; the searches among its arguments, `chunk_searches`, name the
    networks to publish), in `workers` actors (0 = one per CPU of the cluster at `address`,
    None = a local Ray instance); yield ``(index, games)`` as each chunk finishes."""
    from evaluation.ray_executor import map_on_ray

    # the teachers (warmed on every node) and every search whose network the nodes need
    teachers = list(dict.fromkeys(chunk[0] for chunk in chunks.values()))
    files = sorted({search.net for chunk in chunks.values() for search in chunk_searches(chunk)})
    warm = functools.partial(warm_chunk_agents, teachers)
    jobs = [(index, play, chunk) for index, chunk in chunks.items()]
    for (index, _, _), games in map_on_ray(ChunkPlayer, jobs, workers, address, files, warm):
        yield index, games
