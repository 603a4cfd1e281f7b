"""A sample Agentic OPD workspace: a rollout processor, a reward processor, and misbehaving ones for tests."""
