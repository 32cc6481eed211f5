"""The areas of docs/tools/plot_benchmarks.py, one module per group of pages under docs/benchmarks/,
each turning its results into the tables of docs/results/summary.md and PNG plots; common holds
what they share. Importing the package selects matplotlib's Agg backend, so no display is needed.
"""
import matplotlib

matplotlib.use("Agg")
