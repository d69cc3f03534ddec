"""The discrete Gaussian mechanism, in two modules.

``discrete``: the exact sampler, :class:`~.discrete.DiscreteGaussian` (variance, tails,
interval half-widths) and the plans of σ per release. ``calibration``: the (ε, δ) curves of
the discrete and analytic Gaussians, and the smallest σ for a target (ε, δ).
"""
