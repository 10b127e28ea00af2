"""p4kit-cli: simple_switch_CLI's commands and syntax, spoken as P4Runtime to any P4Runtime server.

values.py turns what users type into numbers; session.py holds the connection, the P4Info names and
the entry handles simple_switch_CLI shows (P4Runtime has none); shell.py is the command interpreter;
main.py the command line.
"""
