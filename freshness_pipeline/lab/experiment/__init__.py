"""The freshness experiment: the harness, the staleness sampler, the report and the simulators."""
