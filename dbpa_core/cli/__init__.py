"""The command line's handlers beside ``dbpa_core.__main__`` (which parses the arguments and maps exit codes)."""
