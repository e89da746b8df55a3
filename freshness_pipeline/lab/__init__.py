"""The lab beside the product: the freshness experiment and its simulators, the benchmarks,
and the reliability campaigns (chaos, soak). The product never imports it; the CLI is its
only entry point."""
