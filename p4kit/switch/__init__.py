"""p4kit/switch package."""
