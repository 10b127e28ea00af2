"""Tests of p4kit-switch (a package, so that module names like test_cli do not clash across folders)."""
