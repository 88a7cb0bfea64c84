"""The search room: the MCTS core (`core`, `tree`), the search agents (`mcts`, `guide`),
the best response (`best_response`, `br_kernels`), and the agents that combine a network
with a lookahead (`afterstate`, `selfplay`).
"""
