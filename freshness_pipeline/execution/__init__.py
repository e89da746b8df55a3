"""A job's execution: the run contract resolved against Hudi metadata, its SQL, the Spark
run that reads exactly its files and commits its watermark, and the oracles it answers to.
The jobs themselves (their declarations and graph) are the catalog's."""
