"""Agents of 24/7 behind one interface (`agents.base.Agent`), built by spec string."""

from .base import (Agent, AgentRecipe, check_spec, compile_jobs, make, parse_agent, parse_spec, register,
                   registered)

__all__ = ["Agent", "AgentRecipe", "check_spec", "compile_jobs", "make", "parse_agent", "parse_spec", "register", "registered"]
