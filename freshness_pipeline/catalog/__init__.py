"""The job catalog: the jobs, the tables they read and write, and the job graph."""
