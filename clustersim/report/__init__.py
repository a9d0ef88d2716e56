"""Rendering of results: tables, plots, HTML."""
