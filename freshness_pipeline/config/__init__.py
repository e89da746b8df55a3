"""Settings: every user-settable value, validated and built once at an entry point."""
