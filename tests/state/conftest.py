"""The simulated API server with a hand-set clock, shared with the several-replicas tests."""

from tests.replicas.conftest import sim_loop, start_state_sim

__all__ = ["sim_loop", "start_state_sim"]
