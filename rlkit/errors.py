"""Errors that name what is wrong, so bad input never fails deep inside numpy or torch."""


class RlkitError(Exception):
    """Base class of every error rlkit raises on purpose."""


class InvalidDataError(RlkitError, ValueError):
    """Trajectories, segments or rewards that cannot be used (NaN, wrong shape, out of range)."""


class InvalidLabelError(RlkitError, ValueError):
    """Preference labels outside [0, 1] or off the declared ordinal scale."""


class FileFormatError(RlkitError, ValueError):
    """A saved file that is damaged, incomplete or of another kind than expected."""


class IncompatibleModelError(RlkitError, ValueError):
    """A saved reward model whose spaces do not match the environment it is used with."""


class ConfigError(RlkitError, ValueError):
    """A setting that does not fit its config: a config file or override off the command's schema,
    a config field out of range, an unknown option name."""


class WrongTypeError(RlkitError, TypeError):
    """A value of the wrong kind: a float where an int is needed, an off-policy algorithm where an
    on-policy one is, an env without the interface a caller needs."""


class StateError(RlkitError, RuntimeError):
    """An operation that cannot run now: a step before ``reset`` or past the episode's end, a
    helper process (ffmpeg, the web server) that failed, agents that wait on each other."""


class UnknownKeyError(RlkitError, KeyError):
    """A name looked up where it does not exist (an agent not in the game)."""
