"""The six ELT jobs: their specs, SQL, run-config resolution and the Spark run itself."""
