"""The market stream: a company universe, a deterministic event generator and a replayer."""
