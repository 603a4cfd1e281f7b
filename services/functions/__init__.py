"""Function components: uploaded user workspaces, built and run in isolated, autoscaled worker processes.

Nothing is imported here, so a worker process (``services.functions.worker``) starts light.
"""
