"""More math: Bessel functions, matrix_exp, batch_dot, population_count, multilabel margin loss,
more random distributions, and their primitives."""

__all__ = []
