"""The command line's handlers beside ``dbpa_core.__main__`` (which parses the arguments and maps exit codes)."""

#: The exit codes of every command (``python -m dbpa_core --help`` and the module docstring of ``__main__``):
#: 0 ran, 1 a change with ``--fail-on-change``, 2 bad input, 3 could not finish.
EXIT_OK, EXIT_CHANGE, EXIT_BAD_INPUT, EXIT_FAILED = 0, 1, 2, 3
