"""The search room: the Monte Carlo tree search core in numba (`core`, over the tree
layout of `tree`), the search agents (`mcts`: ismcts, pimc, cheat, and `GuidedSearch`),
a network as a search's guide (`guide`), the best response (`best_response`, its kernels
in `br_kernels`), and the agents that combine a network with a lookahead (`afterstate`,
`selfplay`). The settings record they share is `agents.settings`."""
