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
