"""kplan: what-if planning for the Kubernetes scheduler."""

__version__ = "0.1.0"
