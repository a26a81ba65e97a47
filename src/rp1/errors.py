"""Errors raised on bad user input; the CLI turns them into one line and exit code 2."""


class ConfigError(ValueError):
    """A value given by the user is unknown, of the wrong type or out of range."""
