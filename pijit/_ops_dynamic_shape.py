"""Ops whose result size depends on the values of their inputs (nonzero, unique, masked_select,
bincount, ...) and their primitives. They read their inputs on the host, so a captured graph
breaks where one is called and resumes after it."""

__all__ = []
