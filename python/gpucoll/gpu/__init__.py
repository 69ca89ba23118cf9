"""GPU arrays: our kernels launched in the Python process on the executor's routes."""
