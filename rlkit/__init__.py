"""rlkit: reward learning from feedback of any granularity."""
