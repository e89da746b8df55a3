"""The Dagster adapters, and the only ones: assets, raw sources, resources, sensors, automation."""
