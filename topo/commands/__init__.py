"""Subcommands of the `tributary` command, one module each."""
