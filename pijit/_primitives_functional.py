"""MindSpore's composite-function utilities (HyperMap, Map, Partial, MultitypeFuncGraph), gradient
hooks as primitives, checks (Assert, CheckNumerics) and a few creation primitives."""

__all__ = []
