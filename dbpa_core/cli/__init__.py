"""The command line's handlers beside ``dbpa_core.__main__`` (which parses the arguments and maps exit codes)."""

#: The exit codes of every command (``python -m dbpa_core --help`` and the module docstring of ``__main__``):
#: 0 ran, 1 a change with ``--fail-on-change``, 2 bad input, 3 could not finish.
EXIT_OK, EXIT_CHANGE, EXIT_BAD_INPUT, EXIT_FAILED = 0, 1, 2, 3


def open_store(path):
    """The sample store of ``--store`` (``$DBPA_STORE`` or the default when not given); a store refused as
    bad input (a folder, a device, another program's file, a path too long) names the option that chose it."""
    import os

    from ..data.store import SampleStore

    try:
        return SampleStore(path) if path else SampleStore()
    except ValueError as error:
        named = "--store" if path else "$DBPA_STORE" if os.environ.get("DBPA_STORE") else "the default store"
        raise ValueError(str(error).replace("`store`", f"`{named}`", 1)) from None
