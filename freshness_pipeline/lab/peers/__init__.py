"""Peers written without this project's code: what a Dagster user would build instead,
measured beside it by the experiment. Nothing here imports the project."""
