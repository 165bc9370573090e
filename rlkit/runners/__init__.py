"""The commands assembled: each runner wires a pipeline's parts (env, feedback source, logger,
run directory) for ``rlkit`` and the experiments; nothing below imports it."""
