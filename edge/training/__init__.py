"""Data-parallel training of a small real model across the sites (`tributary train`): the model and its
gradients (model), the data and its split (data), the number formats gradients travel in (wire), the
allreduce strategies a worker can use (comms), the training loop (loop) and the worker process (worker)."""
