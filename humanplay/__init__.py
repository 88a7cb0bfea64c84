"""Human play: a person against agents, in the terminal (`terminal`) or a browser (`web`),
over one game loop (`session.Session`). Entry point: play.py at the repository root."""
