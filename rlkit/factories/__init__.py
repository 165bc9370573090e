"""Building envs, agents, teachers and reward models from configs; below the algorithms that use
them (``prefrl``, ``ail``, ``apec``) and the commands."""
