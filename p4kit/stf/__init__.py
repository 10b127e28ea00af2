"""p4kit/stf package."""
