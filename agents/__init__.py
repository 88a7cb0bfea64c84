"""Agents of 24/7 behind one interface (`agents.base.Agent`), built by spec string."""

from .base import Agent, check_spec, make, parse_spec, register, registered

__all__ = ["Agent", "check_spec", "make", "parse_spec", "register", "registered"]
