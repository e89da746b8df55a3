"""Everything known about Hudi tables on disk: locations, the timeline and commit metadata,
footers, pending files, write options and declared input tables."""
