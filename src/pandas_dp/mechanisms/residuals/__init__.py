"""ResidualPlanner (Xiao, Ding, Kifer et al. 2023), in two modules.

``planner``: which residuals of a workload to measure, with how much noise, measured and
estimated exactly. ``basis``: the integer orthogonal basis of one attribute's residual
space that each residual is measured through, applied in ``O(n log n)``.
"""
