"""beluga: behavioral learning generalization analysis."""

__version__ = "0.1.0"
